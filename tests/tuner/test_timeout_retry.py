"""A probe that timed out under other probe settings than a resume's is probed again: a `--probe-steps
100000` typo timed its probes out, and the corrected command kept those timeouts final, the baseline
among them (a newcomer's trial). Under the same settings a timeout stays final (a hang may be the
candidate's). The stand-in probe of tests/backends/test_repeat_takeover.py plays the trainer."""

from __future__ import annotations

from optuna.trial import TrialState

from autotune.backends.launch import LaunchBackend
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.retries import (
    TIMED_OUT_UNDER_ATTR,
    is_evaluated,
    queue_setup_retries,
    released_trials,
    retry_words,
    trials_by_number,
)
from tests.backends.test_repeat_takeover import FAKE_PROBE

SETTINGS = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu")


def _backend(tmp_path, probe_steps: int, probe_timeout_s: float = 3.0, **env: str) -> LaunchBackend:
    script = tmp_path / "fake-python"
    if not script.exists():
        script.write_text(FAKE_PROBE)
        script.chmod(0o755)
    return LaunchBackend(run_dir=tmp_path / "run", launcher="torchrun", python=str(script), repeats=1, warmup_steps=1,
                         probe_steps=probe_steps, probe_seconds=0.0, probe_timeout_s=probe_timeout_s, kill_grace_s=1.0,
                         env={"FAKE_CALLS": str(tmp_path / "calls.txt"), **env})


def test_a_timeout_under_other_probe_settings_is_probed_again_and_under_the_same_stays_final(tmp_path):
    settings = settings_for(*SETTINGS)
    study = open_study(tmp_path / "run", None, make_sampler(0, 1))
    typo = _backend(tmp_path, probe_steps=100000, FAKE_HANG_ON="0000/result.json")
    run_study(study, settings, typo, 1)
    (timed_out,) = study.trials
    assert timed_out.state == TrialState.FAIL and timed_out.user_attrs["result"]["status"] == "timeout"
    assert timed_out.user_attrs[TIMED_OUT_UNDER_ATTR] == typo.timeout_settings()
    assert typo.timeout_settings()["--probe-steps"] == 100000 and typo.timeout_settings()["--probe-timeout"] == 3.0

    assert queue_setup_retries(study, typo.timeout_settings()) == []  # the same command: the timeout is final
    assert is_evaluated(study.trials[0], released_trials(study))

    fixed = _backend(tmp_path, probe_steps=2)
    assert queue_setup_retries(study, fixed.timeout_settings()) == [0]
    assert queue_setup_retries(study, fixed.timeout_settings()) == []  # once per trial
    assert not is_evaluated(study.trials[0], released_trials(study))  # its retry counts against --trials instead
    assert run_study(study, settings, fixed, 1) == 1
    retry = study.trials[1]
    assert retry.state == TrialState.COMPLETE and retry.user_attrs["retry_of"] == 0
    assert retry.params == timed_out.params and retry.user_attrs.get("baseline") == timed_out.user_attrs.get("baseline")
    assert retry_words(trials_by_number(study.trials), [0]) == "retry of trial 0, which timed out under other probe settings"
    # The report's "why trials failed" names the retry, as an interrupted trial's reason does (trial77 #7).
    from autotune.report.failed_trials import failure_lines
    from autotune.report.study_points import study_view

    _, lines = failure_lines(study_view(study).trials)
    assert len(lines) == 1 and lines[0].startswith("trial 0 (timeout): ") and lines[0].endswith("; probed again as trial 1")


def test_a_raised_probe_timeout_probes_a_timed_out_candidate_again(tmp_path):
    settings = settings_for(*SETTINGS)
    study = open_study(tmp_path / "run", None, make_sampler(0, 1))
    run_study(study, settings, _backend(tmp_path, probe_steps=2, FAKE_HANG_ON="0000/result.json"), 1)
    assert study.trials[0].user_attrs["result"]["status"] == "timeout"
    assert queue_setup_retries(study, _backend(tmp_path, probe_steps=2, probe_timeout_s=60.0).timeout_settings()) == [0]
