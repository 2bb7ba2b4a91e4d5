#!/usr/bin/env bash
# Every check that needs an NVIDIA GPU, within 10 minutes on one H100 (see benchmarks/gpu_check.py):
#   bash benchmarks/gpu_check.sh [OUT_DIR]      # default test-artifacts/gpu_check
# Writes OUT_DIR/gpu_check.json and OUT_DIR/figures.md (the rows for docs/benchmarks.md).
# Exit status: 0 every check ok, 1 some check failed or was skipped, 2 no GPU here (nothing ran).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# Fail fast, before any import of torch: without a GPU there is nothing to check.
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: no nvidia-smi on PATH: this machine has no NVIDIA driver; run it on a GPU node. Nothing was checked." >&2
    exit 2
fi
if ! "$PYTHON" -c 'import sys; from autotune.measure import nvml; sys.exit(0 if nvml.is_available() else 1)'; then
    echo "gpu_check: NVML sees no GPU with energy or power here (see: $PYTHON -m autotune.cli sensors). Nothing was checked." >&2
    exit 2
fi
exec timeout 600 "$PYTHON" benchmarks/gpu_check.py "$@"
