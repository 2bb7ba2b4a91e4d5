"""Progress: a bar on a terminal, a line per evaluated trial elsewhere (a SLURM job's output file), each
counting the whole study, not only this session's trials."""

import io
import re

from rich.console import Console

from autotune.backends.base import ProbeResult
from autotune.commands.progress import trial_progress
from tests.cli import autotune_main

PARAMS = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
          "micro_batch": 2, "nodes": 4, "power_limit": 1.0, "sm_clock_mhz": "max"}


def _run(out, trials):
    # The command's main() in this process, its stderr not a terminal, as a SLURM job's output file is: the lines.
    # The guided sampler would converge before 9: this is about the count, not the search.
    return autotune_main("run", "--model", "32b", "--nodes", "4", "--trials", trials, "--backend", "simulate", "--out", out,
                         "--sampler", "random")


def _counts(stderr):
    return [line.split(":")[0] for line in stderr.splitlines() if re.match(r"trial \d+ \(\d+/\d+\): ZeRO-", line)]


def test_an_output_file_gets_a_line_per_trial_and_a_resumed_run_counts_the_study(tmp_path):
    first = _run(tmp_path / "run", 5)
    assert first.returncode == 0, first.stderr
    assert [c.split(" (")[1] for c in _counts(first.stderr)] == ["1/5)", "2/5)", "3/5)", "4/5)", "5/5)"]
    second = _run(tmp_path / "run", 9)
    assert second.returncode == 0, second.stderr
    assert f"resuming the study in {tmp_path / 'run'} (5 candidates evaluated so far)" in second.stderr
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
        "trial 4 (2/3): ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, micro-batch 2, 4 nodes: "
        "1.50 min (measured), 12.0 kJ (measured)",
        "trial 6 (3/3): ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, micro-batch 2, 4 nodes, "
        "power limit 0.7 x default: oom: CUDA out of memory",
    ]


def test_a_terminal_gets_the_bar():
    out = io.StringIO()
    _show(Console(file=out, force_terminal=True, width=120))
    text = out.getvalue()
    assert "3/3" in text and "#6: oom: CUDA out of memory" in text and "trial 4 (" not in text


def test_a_probe_that_starts_says_so_and_the_first_names_the_op_build():
    """A real probe takes minutes (the first, on a fresh machine, builds DeepSpeed's ops first): a SLURM
    job's output file says when each starts, not only when it ends."""
    from autotune.commands.progress import FIRST_PROBE_NOTE

    out = io.StringIO()
    ok = ProbeResult(status="ok", source="measured", energy_source="measured", time_s=90.0, energy_kj=12.0)
    with trial_progress(Console(file=out, force_terminal=False, width=80), total=2, announce_probes=True) as progress:
        for number in (0, 1):
            progress.on_probe_start(number, PARAMS, "")
            progress.on_trial(number, PARAMS, ok, "")
    lines = out.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        f"trial {n}{what}" for n in (0, 1) for what in (": probing ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, "
                                                        "micro-batch 2, 4 nodes", "")]
    assert re.fullmatch(rf"trial 0: probing .* \(started \d\d:\d\d:\d\d; {FIRST_PROBE_NOTE}\)", lines[0]), lines[0]
    assert re.fullmatch(r"trial 1: probing .* \(started \d\d:\d\d:\d\d\)", lines[2]), lines[2]
    with trial_progress(Console(file=io.StringIO(), force_terminal=False), total=2) as progress:
        assert progress.on_probe_start is None  # the simulate backend's milliseconds are not announced


def test_the_study_announces_each_probe_it_runs_and_not_a_stored_one(tmp_path):
    from autotune.backends.simulate import SimulateBackend
    from autotune.commands.options import settings_for
    from autotune.study import open_study, run_study
    from autotune.study.loop import StudyProgress, make_sampler

    started, ended = [], []
    progress = StudyProgress(on_trial=lambda number, params, result, note: ended.append(number) if result else None,
                             on_probe_start=lambda number, params, resumed: started.append(number))
    run_study(open_study(tmp_path, None, make_sampler(0, 3)), settings_for("--model", "7b", "--nodes", "1"),
              SimulateBackend(), 3, progress)
    assert started == ended and len(started) == 3


def test_one_run_gives_every_energy_in_the_unit_of_its_first_figure():
    # 2,024 kJ then 1.08 kWh read as the first being more; one unit keeps the list comparable, and a figure
    # far below the unit still reads non-zero.
    out = io.StringIO()
    with trial_progress(Console(file=out, force_terminal=False, width=200), total=3) as progress:
        for number, energy_kj in enumerate((2_024.0, 3_888.0, 0.0003)):
            progress.on_trial(number, PARAMS, ProbeResult(status="ok", source="simulated", energy_source="simulated",
                                                          time_s=600.0, energy_kj=energy_kj), "")
    energies = [line.split(", ")[-1] for line in out.getvalue().splitlines()]
    assert energies == ["2,024 kJ (simulated)", "3,888 kJ (simulated)", "0.000300 kJ (simulated)"]


LONG_ERROR = ("the probe exited with status 1 without writing a result: ModuleNotFoundError: No module named "
              "'deepspeed'")


def test_a_job_output_file_says_a_failed_probes_whole_reason():
    # trial67 #6: cut at 60 characters, "...without writing a result: Mo" said that a probe failed, never why.
    out = io.StringIO()
    failed = ProbeResult(status="failed", source="measured", energy_source="unavailable", error=LONG_ERROR)
    with trial_progress(Console(file=out, force_terminal=False, width=80), total=1) as progress:
        progress.on_trial(0, PARAMS, failed, LONG_ERROR + "\n")
    assert out.getvalue().splitlines()[0].endswith(f"4 nodes: failed: {LONG_ERROR}")


def test_the_bar_shortens_a_long_reason_and_says_it_did():
    out = io.StringIO()
    failed = ProbeResult(status="failed", source="measured", energy_source="unavailable", error=LONG_ERROR)
    with trial_progress(Console(file=out, force_terminal=True, width=200), total=1) as progress:
        progress.on_trial(0, PARAMS, failed, LONG_ERROR)
    assert f"#0: failed: {LONG_ERROR[:57]}..." in out.getvalue() and "'deepspeed'" not in out.getvalue()


def test_every_worker_of_a_study_gives_energies_in_the_studys_unit_whatever_its_first_probe():
    """Trial80 #6: chosen by each worker's first probe, one worker of a study (its first 5,308 kJ) printed kWh where
    the others (their first about 2,000 kJ) printed kJ. The unit is now the study's: its settings decide it."""
    from autotune.commands.options import settings_for
    from autotune.commands.progress import study_energy_unit
    from autotune.study.valid import valid_checks

    checks = valid_checks(settings_for("--model", "7b", "--nodes", "1-2"))
    unit = study_energy_unit(checks)
    assert unit == study_energy_unit(list(reversed(checks))) == ("kJ", 1.0)  # the baseline's, not the first listed
    for first_kj in (2_006.0, 5_308.0):  # two workers' first probes
        out = io.StringIO()
        with trial_progress(Console(file=out, force_terminal=False, width=200), total=2, energy_unit=unit) as progress:
            for number, energy_kj in enumerate((first_kj, 1_754.0)):
                progress.on_trial(number, PARAMS, ProbeResult(status="ok", source="simulated", energy_source="simulated",
                                                              time_s=600.0, energy_kj=energy_kj), "")
        energies = [line.split(", ")[-1] for line in out.getvalue().splitlines()]
        assert energies == [f"{first_kj:,.0f} kJ (simulated)", "1,754 kJ (simulated)"], energies
