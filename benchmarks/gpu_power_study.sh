#!/usr/bin/env bash
# A real guided study on one NVIDIA GPU where the power limit trades time for energy:
#   bash benchmarks/gpu_power_study.sh [RUN_DIR] [TRIALS]   # default runs/gpu-power-study, 10
# The 1.5B-class model (benchmarks/models/qwen2.5-1.5b.json), 8 frames + 256 text tokens, global batch 4,
# over benchmarks/spaces/one_gpu_power.toml (ZeRO 0/2, checkpointing none/recompute, power limit
# 1.0/0.7/0.5/0.35) with --backend launch: every figure is a measured probe. Needs root or CAP_SYS_ADMIN
# to set power limits, and fits in about 10 minutes on one H100. Then prints the report and writes the
# probes as replayable measurements (RUN_DIR/measurements.jsonl).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
RUN_DIR=${1:-runs/gpu-power-study}
TRIALS=${2:-10}
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_power_study: no nvidia-smi on PATH: this machine has no NVIDIA driver; run it on a GPU node." >&2
    exit 2
fi
"$PYTHON" -m autotune.cli run --backend launch --model benchmarks/models/qwen2.5-1.5b.json --hardware h100-sxm \
    --nodes 1 --gpus-per-node 1 --space benchmarks/spaces/one_gpu_power.toml \
    --frames 8 --text-tokens 256 --global-batch 4 --trials "$TRIALS" --probe-timeout 300 --out "$RUN_DIR"
status=$?
# The study's exit status is the script's; the report and the measurements are written either way.
"$PYTHON" -m autotune.cli export "$RUN_DIR" --measurements "$RUN_DIR/measurements.jsonl" || true
exit $status
