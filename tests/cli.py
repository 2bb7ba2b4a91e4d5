"""`python -m autotune.cli ARGS` as a user runs it, for the tests of every layer."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys


def autotune(*args, timeout: float = 120, cwd=None, env=None) -> subprocess.CompletedProcess:
    """A real subprocess: output captured as text, a hard timeout, the exit status left to the caller.
    `env`: the whole environment it starts with (default: this one's)."""
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd,
        env=env,
    )


def autotune_main(*args, cwd=None) -> subprocess.CompletedProcess:
    """`autotune.cli.main(ARGS)` in this process, answered as `autotune()` answers: stdout, stderr and the exit
    status main() returns (argparse's own exit included). For the tests that check only messages, files and
    that status: nothing of a separate process (a signal, the console script's handling of Ctrl-C or a closed
    pipe, the environment it starts with) is seen here. It saves the interpreter's start and the imports, about
    a second of each command."""
    from autotune.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main([*map(str, args)])
            except SystemExit as exc:  # argparse's usage errors and --help
                if isinstance(exc.code, str):  # what the interpreter prints of sys.exit("...")
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else 1 if exc.code else 0
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["autotune", *map(str, args)], code, stdout.getvalue(), stderr.getvalue())


def simulated_run(tmp_path_factory, nodes: int, trials: int):
    """A finished simulate study of 7b on `nodes` nodes with `trials` probes, run by the command's main(); its --out."""
    out = tmp_path_factory.mktemp("runs") / f"7b-{nodes}n"
    result = autotune_main("run", "--model", "7b", "--nodes", nodes, "--trials", trials, "--backend", "simulate", "--out", out)
    assert result.returncode == 0, result.stderr
    return out
