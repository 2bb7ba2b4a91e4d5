"""`python -m autotune.cli ARGS` as a user runs it, for the tests of every layer."""

from __future__ import annotations

import subprocess
import sys


def autotune(*args, timeout: float = 120, cwd=None) -> subprocess.CompletedProcess:
    """A real subprocess: output captured as text, a hard timeout, the exit status left to the caller."""
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )
