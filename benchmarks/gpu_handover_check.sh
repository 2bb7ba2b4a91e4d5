#!/usr/bin/env bash
# What a measured study hands on, checked on one NVIDIA GPU (247 s on one H100, DeepSpeed's op build included;
# run it as root, which setting power limits needs):
#   bash benchmarks/gpu_handover_check.sh [OUT_DIR]       # default test-artifacts/gpu_handover
# 1. two workers started at once on one run directory: their probes take turns on the GPU ("another worker's
#    probe runs on ...") and the study ends with --trials probes, each candidate once;
# 2. the same study resumed under --time-limit 4 (minutes; TIME_LIMIT): the next probe is weighed by the longest
#    real probe, so the run stops and says why: exit 75 after 1 more probe, or 2 where none could start (a run as
#    long stops there again, so no job chain may submit it again);
# 3. export --measurements: every probe that set a power limit below the default carries the default NVML
#    read (default_power_limit_w), and a replay of the file runs and hands the same watts on;
# 4. the launch.sh that export writes for a power-limited trial, with torchrun and with the deepspeed
#    launcher (a one-line hostfile): each trains as probed, applies the limit and leaves the GPU at its
#    default limit afterwards.
# Writes OUT_DIR/summary.txt (one line per check: ok | FAILED, why) and each step's log; exit 0 when every check
# held, 1 when one did not, 2 no GPU. A CPU dry run of every step's logic, before a GPU's minutes are spent on it
# (tests/measure/test_gpu_check.py runs it; about a minute):
#   HARDWARE=cpu bash benchmarks/gpu_handover_check.sh /tmp/handover-dry-run
# takes the tiny model, benchmarks/spaces/cpu_dry_run.toml, --global-batch 2, estimated energy, the random sampler
# and --time-limit 3:10; it has no power limit to check, and its summary says so. MODEL, SPACE, WORKLOAD, EXTRA
# (more flags for every run) and TIME_LIMIT change either run's workload.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
HARDWARE=${HARDWARE:-h100-sxm}
if [ "$HARDWARE" = cpu ]; then
    GPU=0
    MODEL=${MODEL:-tiny}
    SPACE=${SPACE:-benchmarks/spaces/cpu_dry_run.toml}
    read -r -a WORKLOAD <<< "${WORKLOAD:---global-batch 2}"
    # No energy sensor here; the guided sampler would converge on two tiny probes before the time limit's step.
    read -r -a EXTRA <<< "${EXTRA:---allow-estimated-energy --sampler random}"
    TIME_LIMIT=${TIME_LIMIT:-3:10}  # 10 s over the reports' 3 minutes: less than a CPU probe's 7-12 s
else
    GPU=1
    MODEL=${MODEL:-benchmarks/models/qwen2.5-1.5b.json}
    SPACE=${SPACE:-benchmarks/spaces/one_gpu_power.toml}
    read -r -a WORKLOAD <<< "${WORKLOAD:---frames 8 --text-tokens 256 --global-batch 4}"
    read -r -a EXTRA <<< "${EXTRA:-}"
    TIME_LIMIT=${TIME_LIMIT:-4}  # 4 minutes leave 1 for a probe, which the GPU's 40-120 s fill
fi
if [ "$GPU" = 1 ] && ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_handover_check: no nvidia-smi on PATH: this machine has no NVIDIA driver; run it on a GPU node." >&2
    exit 2
fi
OUT=$(mkdir -p "${1:-test-artifacts/gpu_handover}" && cd "${1:-test-artifacts/gpu_handover}" && pwd)
RUN="$OUT/study"
if [ -e "$RUN" ]; then
    echo "gpu_handover_check: $RUN exists; give a new OUT_DIR (this check starts a study from nothing)." >&2
    exit 2
fi
: > "$OUT/summary.txt"
failed=0
result() {  # NAME ok|FAILED WHY
    echo "check $1: $2${3:+: $3}" | tee -a "$OUT/summary.txt"
    [ "$2" = ok ] || failed=1
}
autotune() { "$PYTHON" -m autotune.cli "$@"; }
limit_w() { [ "$GPU" = 1 ] && nvidia-smi --query-gpu=power.limit --format=csv,noheader,nounits -i 0 | head -n 1; }
default_w() { [ "$GPU" = 1 ] && nvidia-smi --query-gpu=power.default_limit --format=csv,noheader,nounits -i 0 | head -n 1; }
study=(--backend launch --model "$MODEL" --hardware "$HARDWARE" --nodes 1 --gpus-per-node 1 --space "$SPACE"
       "${WORKLOAD[@]}" "${EXTRA[@]}" --probe-timeout 150 --out "$RUN")
before_w=$(limit_w)
default_limit_w=$(default_w)
if [ "$GPU" = 1 ]; then
    echo "gpu_handover_check: GPU 0 power limit before: $before_w W (default $default_limit_w W)" | tee "$OUT/limits.txt"
else
    echo "gpu_handover_check: no GPU (HARDWARE=cpu): no power limit to read, apply or check" | tee "$OUT/limits.txt"
fi

# 1. Two workers at once on one run directory.
autotune run "${study[@]}" --trials 3 >"$OUT/worker-a.log" 2>&1 &
a=$!
sleep 2
autotune run "${study[@]}" --trials 3 >"$OUT/worker-b.log" 2>&1 &
b=$!
wait $a; rc_a=$?
wait $b; rc_b=$?
probed=$(ls -d "$RUN"/trials/*/ 2>/dev/null | wc -l)
if [ "$rc_a" = 0 ] && [ "$rc_b" = 0 ] && grep -q "another worker's probe runs on" "$OUT"/worker-?.log "$RUN"/trials/*/log.txt; then
    result two_workers ok "exits $rc_a and $rc_b, $probed trial folders, a wait for the other worker's probe logged"
else
    result two_workers FAILED "exits $rc_a and $rc_b, $probed trial folders; wait logged: $(grep -c "another worker's probe runs on" "$OUT"/worker-?.log "$RUN"/trials/*/log.txt | tr '\n' ' ')"
fi
autotune report "$RUN" >"$OUT/report-after-workers.txt" 2>&1

# 2. Resumed under a short time limit: the longest real probe decides.
autotune run "${study[@]}" --trials 12 --time-limit "$TIME_LIMIT" >"$OUT/time-limit.log" 2>&1
rc=$?
if { [ "$rc" = 75 ] || { [ "$rc" = 2 ] && grep -q "stops here again" "$OUT/time-limit.log"; }; } &&
   grep -qi "time limit" "$OUT/time-limit.log"; then
    result time_limit ok "exit $rc: $(grep -m 1 "^stopped:" "$OUT/time-limit.log")"
else
    result time_limit FAILED "exit $rc (75, or 2 where no probe could start, expected); see time-limit.log"
fi
"$PYTHON" - "$RUN" >>"$OUT/time-limit.log" 2>&1 <<'EOF'
import sys, optuna
study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{sys.argv[1]}/study.db")
for t in study.trials:
    print("trial", t.number, t.state.name, "probe_wall_s", t.user_attrs.get("probe_wall_s"), "params", t.params)
EOF

# 3. The probes as measurements, and a replay of them.
autotune export "$RUN" --measurements "$OUT/measurements.jsonl" >"$OUT/export-measurements.log" 2>&1
rc=$?
watts=$("$PYTHON" - "$OUT/measurements.jsonl" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
limited = [r for r in rows if r["status"] == "ok" and r["params"].get("power_limit", 1.0) < 1.0]
print(len(rows), len(limited), sorted({r.get("default_power_limit_w") for r in limited}, key=str))
EOF
)
echo "measurements: records, ok below the default limit, their default_power_limit_w: $watts" | tee -a "$OUT/export-measurements.log"
if [ "$rc" != 0 ]; then
    result export_measurements FAILED "exit $rc"
elif [ "$GPU" = 0 ]; then
    result export_measurements ok "exit 0 ($watts; no GPU: no watts to check)"
elif echo "$watts" | grep -Eq "^[0-9]+ [1-9][0-9]* \[${default_limit_w%.*}(\.0)?\]$"; then
    result export_measurements ok "$watts"
else
    result export_measurements FAILED "every limited probe should carry default_power_limit_w = $default_limit_w: $watts"
fi
autotune run --backend replay --measurements "$OUT/measurements.jsonl" --model "$MODEL" --hardware "$HARDWARE" \
    --nodes 1 --gpus-per-node 1 --space "$SPACE" "${WORKLOAD[@]}" "${EXTRA[@]}" --trials 12 --out "$OUT/replay" >"$OUT/replay.log" 2>&1
rc=$?
autotune export "$OUT/replay" --pick min-energy >"$OUT/replay-export.log" 2>&1
rc_export=$?
# On a GPU the min-energy pick is one below the default limit: its hand-over gives the watts of the default NVML read.
handed_on=$(grep -m 1 -o "power limit [0-9.]* x default ([0-9.]* W[^)]*)" "$OUT/replay-export.log")
fraction=$(echo "$handed_on" | awk '{print $3}')
if [ "$rc" != 0 ] || [ "$rc_export" != 0 ]; then
    result replay FAILED "replay exit $rc, its export exit $rc_export"
elif [ "$GPU" = 0 ]; then
    result replay ok "replay and its export exit 0 (no GPU: no watts to check)"
elif [ -n "$fraction" ] && echo "$handed_on" | grep -qF "($(awk -v f="$fraction" -v d="$default_limit_w" 'BEGIN {printf "%g", f * d}') W per GPU: of the ${default_limit_w%.*} W default NVML"; then
    result replay ok "replay and its export exit 0: $handed_on"
else
    result replay FAILED "the export should hand on a limit in watts of the ${default_limit_w%.*} W default NVML read: '${handed_on}'"
fi

# 4. The exported launch.sh of a power-limited trial, with torchrun and with the deepspeed launcher.
trial=$("$PYTHON" - "$RUN" <<'EOF'
import sys, optuna
study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{sys.argv[1]}/study.db")
done = [t for t in study.trials if t.state.name == "COMPLETE" and (t.user_attrs.get("result") or {}).get("status") == "ok"]
limited = [t for t in done if t.params.get("power_limit", 1.0) < 1.0]
chosen = (limited or done)[0] if (limited or done) else None
print(f"{chosen.number} {chosen.params.get('power_limit', 1.0)}" if chosen else "")
EOF
)
read -r trial trial_fraction <<< "$trial"
expected_w=$(awk -v f="${trial_fraction:-1}" -v d="${default_limit_w:-0}" 'BEGIN {printf "%.2f", f * d}')
for launcher in torchrun deepspeed; do
    dir="$OUT/launch-$launcher"
    mkdir -p "$dir"
    [ "$launcher" = deepspeed ] && echo "localhost slots=1" > "$dir/hostfile"
    if ! command -v "$launcher" >/dev/null; then  # pip --target DIR installs the script in DIR/bin
        result "launch_sh_$launcher" FAILED "no $launcher command on PATH (pip --target DIR: add DIR/bin to PATH)"
        continue
    fi
    if ! autotune export "$RUN" --trial "$trial" --launcher "$launcher" -o "$dir/trial.json" >"$dir/export.log" 2>&1; then
        result "launch_sh_$launcher" FAILED "export --trial '$trial' --launcher $launcher failed: $(tail -n 1 "$dir/export.log")"
        continue
    fi
    during=""
    ( while sleep 2; do limit_w; done ) >"$dir/limits-during.txt" 2>/dev/null &
    watcher=$!
    timeout 240 bash "$dir/trial.launch.sh" >"$dir/launch.log" 2>&1
    rc=$?
    kill $watcher 2>/dev/null; wait $watcher 2>/dev/null
    after_w=$(limit_w)
    during=$(sort -n "$dir/limits-during.txt" | head -n 1)
    status=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status"))' "$dir/trial.result.json" 2>/dev/null)
    if [ "$GPU" = 0 ]; then
        said="trial $trial, exit $rc, result $status (no GPU: no limit to check)"
        held=1
    else
        said="trial $trial, exit $rc, result $status, limit lowest during ${during:-none read} W (${trial_fraction} x ${default_limit_w} = $expected_w W), after $after_w W"
        # Read every 2 s while it ran: the lowest reading is the applied limit, within NVML's rounding.
        held=$(awk -v d="${during:-0}" -v e="$expected_w" -v a="$after_w" -v b="$before_w" \
               'BEGIN {print (d - e < 1.5 && e - d < 1.5 && a == b) ? 1 : 0}')
    fi
    if [ "$rc" = 0 ] && [ "$status" = ok ] && [ "$held" = 1 ]; then
        result "launch_sh_$launcher" ok "$said"
    else
        result "launch_sh_$launcher" FAILED "$said (before ${before_w:-n/a} W)"
    fi
done
[ "$GPU" = 0 ] || echo "gpu_handover_check: power limit at the end: $(limit_w) W" | tee -a "$OUT/limits.txt"
cat "$OUT/summary.txt"
exit $failed
