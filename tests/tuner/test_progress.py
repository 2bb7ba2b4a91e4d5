"""Progress: a bar on a terminal, a line per evaluated trial elsewhere (a SLURM job's output file), each
counting the whole study, not only this session's trials."""

import io
import re
import subprocess
import sys

from rich.console import Console

from autotune.backends.base import ProbeResult
from autotune.commands.progress import trial_progress

PARAMS = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
          "micro_batch": 2, "nodes": 4, "power_limit": 1.0, "sm_clock_mhz": "max"}


def _run(out, trials):
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "4", "--trials", str(trials),
         "--backend", "simulate", "--out", str(out),
         "--sampler", "random"],  # the guided sampler would converge before 9: this is about the count, not the search
        capture_output=True, text=True, timeout=120,
    )


def _counts(stderr):
    return [line.split(":")[0] for line in stderr.splitlines() if re.match(r"trial \d+ \(\d+/\d+\): ZeRO-", line)]


def test_an_output_file_gets_a_line_per_trial_and_a_resumed_run_counts_the_study(tmp_path):
    first = _run(tmp_path / "run", 5)
    assert first.returncode == 0, first.stderr
    assert [c.split(" (")[1] for c in _counts(first.stderr)] == ["1/5)", "2/5)", "3/5)", "4/5)", "5/5)"]
    second = _run(tmp_path / "run", 9)
    assert second.returncode == 0, second.stderr
    assert "resuming" in second.stderr
    assert [c.split(" (")[1] for c in _counts(second.stderr)] == ["6/9)", "7/9)", "8/9)", "9/9)"]


def _show(console):
    ok = ProbeResult(status="ok", source="measured", energy_source="measured", time_s=90.0, energy_kj=12.0)
    oom = ProbeResult(status="oom", source="measured", energy_source="unavailable", error="CUDA out of memory")
    with trial_progress(console, total=3, done=1) as progress:
        progress.on_trial(4, PARAMS, ok, "")
        progress.on_trial(5, PARAMS, None, "pruned: does not fit")  # not evaluated: no line, no count
        progress.on_trial(6, {**PARAMS, "power_limit": 0.7}, oom, "CUDA out of memory")


def test_the_lines_say_the_knobs_and_outcome_of_each_evaluated_trial():
    out = io.StringIO()
    _show(Console(file=out, force_terminal=False, width=80))
    assert out.getvalue().splitlines() == [
        "trial 4 (2/3): ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, micro-batch 2, 4 node(s): "
        "1.5 min (measured), 12 kJ (measured)",
        "trial 6 (3/3): ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, micro-batch 2, 4 node(s), "
        "power limit 0.7 x default: oom CUDA out of memory",
    ]


def test_a_terminal_gets_the_bar():
    out = io.StringIO()
    _show(Console(file=out, force_terminal=True, width=120))
    text = out.getvalue()
    assert "3/3" in text and "#6: oom CUDA out of memory" in text and "trial 4 (" not in text
