#!/usr/bin/env bash
# A real launch study on one NVIDIA GPU, stopped mid-trial and resumed (what scancel and a job's time
# limit do to a study on a cluster):
#   bash benchmarks/gpu_resume_check.sh [RUN_DIR]      # default runs/gpu-resume-check
# One trial of two repeats over benchmarks/spaces/one_gpu_power.toml (the 1.5B-class model, global batch
# 4). The first run gets SIGTERM once trial 0's first repeat has written its result; the second run, the
# same command, resumes: its retry of trial 0 must take over that repeat (the retry's log.txt says "took
# over repeat 1 of 2 from trial 0") and probe only the second. Then prints the report.
# Exit status: 0 when all of that held, 1 when something did not (the logs say what), 2 no GPU here.
# Needs root or CAP_SYS_ADMIN where a proposed candidate sets a power limit. About 2 minutes on one H100
# once DeepSpeed's ops are built.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
RUN_DIR=${1:-runs/gpu-resume-check}
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_resume_check: no nvidia-smi on PATH: this machine has no NVIDIA driver; run it on a GPU node." >&2
    exit 2
fi
if [ -e "$RUN_DIR" ]; then
    echo "gpu_resume_check: $RUN_DIR exists; give a new run directory (this check starts a study from nothing)." >&2
    exit 2
fi
study=("$PYTHON" -m autotune.cli run --backend launch --model benchmarks/models/qwen2.5-1.5b.json --hardware h100-sxm
       --nodes 1 --gpus-per-node 1 --space benchmarks/spaces/one_gpu_power.toml
       --frames 8 --text-tokens 256 --global-batch 4 --trials 1 --repeats 2 --probe-timeout 300 --out "$RUN_DIR")
mkdir -p "$RUN_DIR"
first_log="$RUN_DIR/first-run.log"
# The tuner itself in the background (not a function or subshell): the SIGTERM below must reach it.
"${study[@]}" >"$first_log" 2>&1 &
pid=$!
# Stop the first run once trial 0's first repeat is on disk: its second is then starting.
for _ in $(seq 1 400); do
    [ -f "$RUN_DIR/trials/0000/result-1.json" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
done
sleep 1
kill -TERM "$pid" 2>/dev/null
wait "$pid"
first=$?
echo "gpu_resume_check: first run stopped with exit $first (143: SIGTERM, as scancel)"
cat "$first_log"
echo "gpu_resume_check: resuming"
"${study[@]}" 2>&1 | tee "$RUN_DIR/resume.log"
resumed=${PIPESTATUS[0]}
"$PYTHON" -m autotune.cli report "$RUN_DIR" || true
ok=1
[ "$first" = 143 ] || { echo "gpu_resume_check: FAILED: the first run exited $first, not 143"; ok=0; }
[ "$resumed" = 0 ] || { echo "gpu_resume_check: FAILED: the resumed run exited $resumed"; ok=0; }
grep -q "took over repeat 1 of 2 from trial 0" "$RUN_DIR"/trials/*/log.txt \
    || { echo "gpu_resume_check: FAILED: the resume did not take over trial 0's first repeat"; ok=0; }
[ "$ok" = 1 ] && echo "gpu_resume_check: ok" && exit 0
exit 1
