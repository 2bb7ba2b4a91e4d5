"""benchmarks/search_efficiency.py refuses bad flags in one line, exit 2, before any study runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "search_efficiency.py"


@pytest.mark.parametrize("flags, words", [
    (["--cases", "7b"], "is not MODEL:NODES"),
    (["--cases", "7b:0"], "must be at least 1"),
    (["--seeds", "0"], "out of range"),
    (["--budget", "x"], "not a whole number"),
    (["--merge", "README.md"], "not a results file of this benchmark"),
])
def test_bad_flags_get_one_line_and_exit_2(tmp_path, flags, words):
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(SCRIPT), *flags, "--no-docs", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=SCRIPT.parents[1])
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert words in last and "Traceback" not in done.stderr
    assert not out.exists()
