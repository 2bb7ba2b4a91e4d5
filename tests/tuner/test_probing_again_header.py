"""A resume's header names every trial whose candidate it probes again (trial79 #7): the set-up failures it queues
now, but also the retries an earlier run queued and no run took, and the trials a stopped run left unfinished, which
were said only on their own start lines. The stand-in probe of tests/backends/test_repeat_takeover.py plays the
trainer."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from autotune.backends.launch import LaunchBackend
from autotune.commands.options import settings_for
from autotune.commands.run import probing_again_lines
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.retries import SETUP_FAILURE_ATTR, queue_setup_retries
from tests.tuner.test_launch_resume_repeats import fake_probe_backend

SETTINGS = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu")


def _backend(tmp_path, **env: str) -> LaunchBackend:
    return fake_probe_backend(tmp_path, repeats=1, probe_timeout_s=30.0, kill_grace_s=1.0, **env)


def test_the_header_names_retries_queued_earlier_and_interrupted_trials(tmp_path):
    study = open_study(tmp_path / "run", None, make_sampler(0, 2))
    backend = _backend(tmp_path, FAKE_STATUS="failed")  # a failed result without a failed_rank: the set-up's
    run_study(study, settings_for(*SETTINGS), backend, 2)
    assert [t.user_attrs.get(SETUP_FAILURE_ATTR) for t in study.trials] == [True, True]
    settings = backend.timeout_settings()
    assert queue_setup_retries(study, settings) == [0, 1]  # an earlier resume queued them, and stopped before a probe
    # ... and a run stopped during a probe of another candidate
    study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL, params=study.trials[1].params,
                                              distributions=study.trials[1].distributions,
                                              user_attrs={"interrupted": True}))
    interrupted = study.trials[-1].number

    assert probing_again_lines(study, settings, queue_setup_retries(study, settings), include_running=True) == [
        "probing again the candidates of trials 0, 1: their probes failed on the set-up (the launcher, the nodes or "
        "the trainer's own, before it ran them), not on the candidates",
        f"probing again the candidate of interrupted trial {interrupted}: a stopped run left it unfinished",
    ]
