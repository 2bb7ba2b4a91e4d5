"""The progress bar of a resumed run counts the whole study, not only this session's trials."""

import subprocess
import sys


def _run(out, trials):
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "4", "--trials", str(trials),
         "--backend", "simulate", "--out", str(out),
         "--sampler", "random"],  # the guided sampler would converge before 9: this is about the bar, not the search
        capture_output=True, text=True, timeout=120,
    )


def test_a_resumed_run_ends_its_bar_at_the_study_total(tmp_path):
    first = _run(tmp_path / "run", 5)
    assert first.returncode == 0 and "5/5" in first.stderr
    second = _run(tmp_path / "run", 9)
    assert second.returncode == 0, second.stderr
    assert "resuming" in second.stderr and "9/9" in second.stderr and "4/9" not in second.stderr
