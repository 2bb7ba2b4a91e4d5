"""What a user reads of a stopped and resumed launch study with --repeats N (a SLURM job's output file, or the
bar on a terminal): the stop says which finished repeats of the interrupted trial are kept, and the retry's
start line says it is one and what it takes over. Fast: the stand-in probe of
tests/backends/test_repeat_takeover.py plays the trainer, and abort() stops it as SIGTERM does."""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
from types import SimpleNamespace

import pytest
from rich.console import Console

from autotune.backends.base import ProbeResult
from autotune.backends.launch import LaunchBackend, ProbeInterrupted
from autotune.backends.repeat_takeover import result_name
from autotune.commands.options import settings_for
from autotune.commands.progress import FIRST_PROBE_NOTE, trial_progress
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from tests.backends.test_repeat_takeover import FAKE_PROBE
from tests.cli import autotune_main

SETTINGS = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu")
KNOBS = "ZeRO-0 optimizer offload none, checkpointing none, SP 1, micro-batch 8, 1 node"  # the baseline
PARAMS = {"zero_stage": 0, "optimizer_offload": "none", "activation_checkpointing": "none", "sp_degree": 1,
          "micro_batch": 8, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}


def _backend(tmp_path, repeats: int, **env: str) -> LaunchBackend:
    script = tmp_path / "fake-python"
    if not script.exists():
        tmp_path.mkdir(parents=True, exist_ok=True)
        script.write_text(FAKE_PROBE)
        script.chmod(0o755)
    return LaunchBackend(run_dir=tmp_path / "run", launcher="torchrun", python=str(script), repeats=repeats,
                         warmup_steps=1, probe_steps=2, probe_seconds=0.0, probe_timeout_s=60.0, kill_grace_s=5.0,
                         env={"FAKE_CALLS": str(tmp_path / "calls.txt"), **env})


@contextlib.contextmanager
def _aborted_during(backend: LaunchBackend, repeat: int):
    """abort() (SIGTERM's way) once trial 0's log shows `repeat` started (the stand-in then sleeps)."""
    log = backend.trial_dir(0) / "log.txt"

    def watch():
        deadline = time.time() + 30
        while time.time() < deadline and f"repeat {repeat}/" not in (log.read_text() if log.exists() else ""):
            time.sleep(0.02)
        time.sleep(0.2)
        backend.abort()

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _stopped_study(tmp_path, repeats: int, during: int) -> LaunchBackend:
    """A study of one trial stopped during repeat `during`; the backend that ran it."""
    first = _backend(tmp_path, repeats, FAKE_HANG_ON=f"0000/{result_name(during, repeats)}")
    study = open_study(tmp_path / "run", None, make_sampler(0, 1))
    with _aborted_during(first, during), pytest.raises(ProbeInterrupted):
        run_study(study, settings_for(*SETTINGS), first, 1)
    return first


def _resumed_lines(tmp_path, repeats: int) -> str:
    """What the resume of _stopped_study prints, its output not a terminal (a SLURM job's output file)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=80)
    study = open_study(tmp_path / "run", None, make_sampler(0, 1))
    with trial_progress(console, total=1, announce_probes=True) as progress:
        assert run_study(study, settings_for(*SETTINGS), _backend(tmp_path, repeats), 1, progress) == 1
    return out.getvalue()


def test_a_stop_during_a_later_repeat_says_the_finished_ones_are_kept(tmp_path):
    first = _stopped_study(tmp_path, repeats=3, during=3)
    assert first.kept_after_interruption() == (
        "trial 0 stopped during repeat 3 of 3: its finished repeats 1, 2 are kept, and the same command takes them over")


def test_a_stop_during_the_first_repeat_or_of_a_single_probe_says_nothing_more(tmp_path):
    assert _stopped_study(tmp_path / "a", repeats=2, during=1).kept_after_interruption() == ""
    assert _stopped_study(tmp_path / "b", repeats=1, during=1).kept_after_interruption() == ""


def test_a_retry_s_start_line_says_what_it_retries_and_takes_over(tmp_path):
    _stopped_study(tmp_path, repeats=2, during=2)
    lines = _resumed_lines(tmp_path, repeats=2).splitlines()
    assert re.fullmatch(rf"trial 1: probing {re.escape(KNOBS)} \(retry of interrupted trial 0; takes over repeat 1 of 2, "
                        rf"runs repeat 2; started \d\d:\d\d:\d\d; {FIRST_PROBE_NOTE}\)", lines[0]), lines[0]
    assert lines[1].startswith(f"trial 1 (1/1): {KNOBS}: ")


def test_the_bar_on_a_terminal_says_it_too():
    # The callback the study calls (as above): a stand-in probe ends before the bar would draw its start.
    out = io.StringIO()
    with trial_progress(Console(file=out, force_terminal=True, width=400), total=1, announce_probes=True) as progress:
        progress.on_probe_start(1, PARAMS, "retry of interrupted trial 0; takes over repeat 1 of 2, runs repeat 2")
    drawn = out.getvalue()
    assert (f"#1: probing {KNOBS} (retry of interrupted trial 0; takes over repeat 1 of 2, runs repeat 2; "
            f"{FIRST_PROBE_NOTE})") in drawn


def test_a_retry_that_takes_nothing_over_still_says_it_is_one(tmp_path):
    _stopped_study(tmp_path, repeats=2, during=1)
    first_line = _resumed_lines(tmp_path, repeats=2).splitlines()[0]
    assert re.fullmatch(rf"trial 1: probing {re.escape(KNOBS)} \(retry of interrupted trial 0; started \d\d:\d\d:\d\d; "
                        rf"{FIRST_PROBE_NOTE}\)", first_line), first_line


def test_the_run_command_says_what_its_stop_kept_and_the_resume_what_it_takes_over(tmp_path, monkeypatch):
    """Through `autotune run`'s main(), its output not a terminal (a SLURM job's output file)."""
    from autotune.backends import select
    from autotune.cli import main

    first = _backend(tmp_path, 2, FAKE_HANG_ON="0000/result-2.json")
    backends = iter([first, _backend(tmp_path, 2)])  # the stopped run's, then the resume's
    monkeypatch.setattr(select, "choose_backend", lambda *args: next(backends))
    run = ["run", *SETTINGS, "--backend", "launch", "--repeats", "2", "--trials", "1", "--allow-estimated-energy",
           "--out", tmp_path / "run"]
    stderr = io.StringIO()
    with _aborted_during(first, 2), contextlib.redirect_stderr(stderr), pytest.raises(ProbeInterrupted):
        main([*map(str, run)])
    said = stderr.getvalue().splitlines()
    run_dir = tmp_path / "run"
    assert said[-2:] == [
        "trial 0 stopped during repeat 2 of 2: its finished repeat 1 is kept, and the same command takes it over",
        f"{run_dir} holds no report yet: `autotune report {run_dir} --html` writes them for every finished trial"]

    resumed = autotune_main(*run)
    assert resumed.returncode == 0, resumed.stderr
    start = next(line for line in resumed.stderr.splitlines() if line.startswith("trial 1: probing"))
    assert "(retry of interrupted trial 0; takes over repeat 1 of 2, runs repeat 2; started " in start, start
    # The header names it too, as it names the set-up failures it probes again (trial79 #7).
    assert "probing again the candidate of interrupted trial 0: a stopped run left it unfinished" in resumed.stderr


def test_a_trial_without_an_energy_figure_says_energy_unavailable_once():
    out = io.StringIO()
    result = ProbeResult(status="ok", source="measured", energy_source="unavailable", time_s=9.76)
    with trial_progress(Console(file=out, force_terminal=False, width=80), total=1) as progress:
        progress.on_trial(0, PARAMS, result, "")
    assert out.getvalue().splitlines() == [f"trial 0 (1/1): {KNOBS}: 9.76 s (measured), energy unavailable"]


def test_an_error_with_brackets_is_drawn_as_written_on_the_bar():
    out = io.StringIO()
    failed = ProbeResult(status="failed", source="measured", energy_source="unavailable", error="x")
    with trial_progress(Console(file=out, force_terminal=True, width=200), total=1) as progress:
        progress.on_trial(0, PARAMS, failed, "[rank0]: RuntimeError [/x]")
    assert "#0: failed: [rank0]: RuntimeError [/x]" in out.getvalue()


def test_the_words_name_one_repeat_or_several():
    from autotune.backends.repeat_takeover import kept_line, taken_over_words

    taken = {r: SimpleNamespace(repeat=r) for r in (1, 2)}
    assert taken_over_words({1: taken[1]}, 2) == "takes over repeat 1 of 2, runs repeat 2"
    assert taken_over_words(taken, 4) == "takes over repeats 1, 2 of 4, runs repeats 3, 4"
    assert taken_over_words(taken, 2) == "takes over repeats 1, 2 of 2, runs none"
    assert taken_over_words({}, 2) == kept_line(0, 1, {}, 2) == ""
    assert kept_line(5, 2, {1: taken[1]}, 2) == (
        "trial 5 stopped during repeat 2 of 2: its finished repeat 1 is kept, and the same command takes it over")


def test_a_retry_of_a_set_up_failure_says_so():
    from autotune.study.retries import SETUP_FAILURE_ATTR, retry_words

    trials = {0: SimpleNamespace(user_attrs={SETUP_FAILURE_ATTR: True}), 1: SimpleNamespace(user_attrs={})}
    assert retry_words(trials, [0]) == "retry of trial 0, which failed on the set-up"
    assert retry_words(trials, [1, 0]) == "retry of interrupted trial 1"
    assert retry_words(trials, []) == ""
