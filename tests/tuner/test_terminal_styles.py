"""What `autotune --help` and the README say of NO_COLOR and TERM=dumb, on a real terminal (a pseudo-terminal): NO_COLOR
keeps bold and dim and drops colours; TERM=dumb is plain text (trial71 #2: the docs said bold and dim stay for both)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

ESCAPES = re.compile(rb"\x1b\[([0-9;]*)m")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("styles") / "run"
    subprocess.run([sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1",
                    "--trials", "3", "--out", str(out)], capture_output=True, check=True, timeout=300)
    return out


def _styles_on_a_terminal(run_dir, **env) -> set[bytes]:
    """The SGR codes `autotune report` writes to a pseudo-terminal."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "FORCE_COLOR")}
    report = subprocess.Popen([sys.executable, "-m", "autotune.cli", "report", str(run_dir)], stdout=follower,
                              stderr=follower, env={**environ, "TERM": "xterm-256color", **env})
    os.close(follower)
    written = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the report's end of the terminal closed
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    assert report.wait(timeout=120) == 0
    assert b"Pareto front" in written
    return set(ESCAPES.findall(written))


def test_no_color_keeps_bold_and_dim_and_drops_colours(run_dir):
    codes = _styles_on_a_terminal(run_dir, NO_COLOR="1")
    parts = {part for code in codes for part in code.split(b";")}
    assert b"1" in parts and b"2" in parts  # bold, dim
    assert not any(part.startswith((b"3", b"9")) and part != b"3" for part in parts), codes  # no foreground colour


def test_term_dumb_is_plain_text(run_dir):
    assert _styles_on_a_terminal(run_dir, TERM="dumb") - {b"", b"0"} == set()
