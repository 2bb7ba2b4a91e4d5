"""A study of one trial says "1 trial", in the terminal and in the Markdown report (trial 54 F11: "1 trials")."""

from __future__ import annotations

from tests.cli import autotune_main


def test_one_trial_is_said_in_the_singular(tmp_path):
    out = tmp_path / "run"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "1 trial (1 ok)" in done.stdout and "1 trials" not in done.stdout
    md = autotune_main("report", out, "--format", "md")
    assert md.returncode == 0 and "1 trial (" in md.stdout and "1 trials" not in md.stdout
