"""`python -m autotune.cli ARGS` as a user runs it, for the tests of every layer."""

from __future__ import annotations

import subprocess
import sys


def autotune(*args, timeout: float = 120, cwd=None) -> subprocess.CompletedProcess:
    """A real subprocess: output captured as text, a hard timeout, the exit status left to the caller."""
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def simulated_run(tmp_path_factory, nodes: int, trials: int):
    """A finished simulate study of 7b on `nodes` nodes with `trials` probes, run as a user runs it; its --out."""
    out = tmp_path_factory.mktemp("runs") / f"7b-{nodes}n"
    result = autotune("run", "--model", "7b", "--nodes", nodes, "--trials", trials, "--backend", "simulate", "--out", out)
    assert result.returncode == 0, result.stderr
    return out
