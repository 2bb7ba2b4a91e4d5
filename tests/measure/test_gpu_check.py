"""benchmarks/gpu_check.sh: valid shell, and without a GPU it stops at once, saying so (exit 2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from autotune.measure import nvml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_check.sh"


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], timeout=30).returncode == 0


def test_without_a_gpu_it_fails_fast_and_clearly(tmp_path):
    if nvml.is_available():
        pytest.skip("a GPU is here: run the script itself")
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and "Nothing was checked" in done.stderr
    assert not (tmp_path / "out").exists()
