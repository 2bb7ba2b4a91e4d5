"""The terminal's size as the environment states it. COLUMNS=0, which some wrappers and CI runners export, made
rich draw 0 columns wide: on a terminal every command printed nothing and exited 0 (trial 45 §6). Real
subprocesses on a pty: rich reads the size and the terminal only there."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(*args, **environ: str) -> str:
    """What `python -m autotune.cli ARGS` shows on a pty (of size 0x0: rich's own default, 80 columns, unless
    COLUMNS says otherwise), its escapes left out."""
    leader, follower = os.openpty()
    with subprocess.Popen([sys.executable, "-m", "autotune.cli", *map(str, args)], stdin=subprocess.DEVNULL,
                          stdout=follower, stderr=follower, env={**os.environ, **environ}) as command:
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the command has ended, the pty has no writer left
                break
            if not chunk:
                break
            shown += chunk
        command.wait(timeout=300)
    os.close(leader)
    assert command.returncode == 0, shown
    return ESCAPES.sub("", shown.decode())


@pytest.mark.parametrize("columns", ["0", "-5", "abc"])
def test_a_width_of_no_columns_is_the_terminals_own(columns):
    shown = on_a_terminal("space", "--model", "7b", "--nodes", "1", "--valid", COLUMNS=columns)
    assert "980 of 3072 valid" in shown
    assert "ZeRO" in shown and "nodes" in shown
    assert max(len(line) for line in shown.splitlines()) <= 80  # rich's default for a pty of no size


def test_a_run_under_no_columns_shows_its_lines_and_report(tmp_path):
    shown = on_a_terminal("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "3",
                          "--out", tmp_path / "run", COLUMNS="0")
    assert "backend: simulate" in shown
    assert "3/3" in shown
    assert "Pareto front" in shown


def test_a_run_under_no_lines_draws_its_progress_bar(tmp_path):
    """LINES=0: the bar was drawn as a "..." for each refresh, the bar itself never."""
    shown = on_a_terminal("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "3",
                          "--out", tmp_path / "run", LINES="0")
    assert "trials" in shown and "3/3" in shown
    assert "..." not in shown
