"""The heartbeat of --storage workers (study/heartbeat.py) and the take-over of dead workers' trials, driven on
prepared studies: no second process, no wait for a grace to pass."""

from __future__ import annotations

import contextlib
import sqlite3

import optuna
import pytest
from optuna.trial import TrialState

from autotune.candidate import KNOBS
from autotune.study import open_study
from autotune.study.loop import PROBING_ATTR, take_over_dead_workers
from autotune.study.retries import retry_interrupted

RULE_BROKEN = "async optimizer offload (SuperOffload) needs ZeRO stage 3"
# Trials are asked here, not run by optimize: Optuna's warning that heartbeats are meant for optimize is no finding.
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")


def _study(tmp_path, storage: bool, query: str = "") -> optuna.Study:
    """A --storage study (heartbeat on) or a run directory's own study.db (no heartbeat)."""
    url = f"sqlite:///{tmp_path / 'shared.db'}{query}" if storage else None
    return open_study(tmp_path / "run", url, optuna.samplers.RandomSampler(seed=0))


def _asked(study: optuna.Study) -> optuna.Trial:
    """A trial with a value for every knob (what a retry is queued with)."""
    trial = study.ask()
    for knob in KNOBS:
        trial.suggest_int(knob, 0, 1)
    return trial


def _probing(study: optuna.Study) -> optuna.Trial:
    """Another worker's trial whose probe is under way."""
    trial = _asked(study)
    trial.set_user_attr(PROBING_ATTR, True)
    return trial


def _pruning(study: optuna.Study) -> optuna.Trial:
    """A trial whose worker found its candidate invalid and died before it was PRUNED (_Objective._prune_invalid:
    constraints and reason stored, no probe)."""
    trial = _asked(study)
    trial.set_user_attr("candidate", {"knobs": trial.params})
    trial.set_user_attr("reason", RULE_BROKEN)
    return trial


def _stale(monkeypatch, study: optuna.Study, *trials: optuna.Trial) -> None:
    """The trials' heartbeats are older than the grace (as Optuna's storage reports it)."""
    ids = [t._trial_id for t in trials]
    monkeypatch.setattr(type(study._storage._backend), "_get_stale_trial_ids", lambda self, study_id: ids)


@pytest.mark.parametrize("storage", [False, True], ids=["run-directory", "storage"])
def test_a_trial_its_live_owner_completes_meanwhile_is_no_dead_workers(tmp_path, monkeypatch, storage):
    """Trial80 #1: a trial that stopped being RUNNING between the take-over's two reads, as its owner completed it, was
    announced as "of a worker that is gone ... probing its candidate again", and no retry was ever made."""
    study = _study(tmp_path, storage)
    trial = _probing(study)
    stale_check = optuna.storages.fail_stale_trials

    def owner_completes_it_first(s):
        study.tell(trial, [1.0, 2.0])  # the other worker, alive, finishes its probe
        stale_check(s)  # nothing is stale

    monkeypatch.setattr(optuna.storages, "fail_stale_trials", owner_completes_it_first)
    assert take_over_dead_workers(study, alone=False) == []
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]


def test_a_trial_whose_heartbeat_this_worker_failed_is_taken_over(tmp_path, monkeypatch):
    study = _study(tmp_path, storage=True)
    trial = _probing(study)
    _stale(monkeypatch, study, trial)
    assert take_over_dead_workers(study, alone=False) == [trial.number]
    retry = study.get_trials(states=(TrialState.WAITING,))
    assert [t.system_attrs["failed_trial"] for t in retry] == [trial.number]


def test_a_beat_the_locked_database_refuses_is_skipped(tmp_path):
    """Trial80 #2: a lock held past SQLite's wait (a backup, a sqlite3 shell, a stopped worker mid-write) raised in
    Optuna's heartbeat thread: ~90 lines of traceback before the main thread's one line about the same lock."""
    study = _study(tmp_path, storage=True, query="?timeout=0.1")
    trial = _probing(study)
    with contextlib.closing(sqlite3.connect(tmp_path / "shared.db", isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        study._storage.record_heartbeat(trial._trial_id)  # the heartbeat thread's call: no exception
        other.execute("COMMIT")
    study._storage.record_heartbeat(trial._trial_id)  # the next beat is recorded
    assert study._storage._backend._get_stale_trial_ids(study._study_id) == []


def test_a_dead_workers_trial_found_invalid_is_pruned_by_the_survivor_alone(tmp_path):
    """Trial80 #7: the survivor left it RUNNING; a restart then counted it interrupted and queued a retry of a
    candidate that breaks a rule, left WAITING."""
    study = _study(tmp_path, storage=False)
    trial = _pruning(study)
    assert take_over_dead_workers(study, alone=True) == []  # nothing to probe again: not named
    [pruned] = study.trials
    assert (pruned.state, pruned.user_attrs["reason"]) == (TrialState.PRUNED, RULE_BROKEN)
    assert trial.number == pruned.number


def test_a_restart_prunes_a_trial_found_invalid_and_queues_no_retry(tmp_path):
    study = _study(tmp_path, storage=False)
    _pruning(study)
    probing = _probing(study)
    assert retry_interrupted(study, include_running=True) == 1
    states = {t.number: t.state for t in study.trials}
    assert states[0] == TrialState.PRUNED and states[probing.number] == TrialState.FAIL
    assert [t.user_attrs["retry_of"] for t in study.get_trials(states=(TrialState.WAITING,))] == [probing.number]


def test_a_stale_trial_found_invalid_is_failed_and_not_retried(tmp_path, monkeypatch):
    study = _study(tmp_path, storage=True)
    trial = _pruning(study)
    _stale(monkeypatch, study, trial)
    assert take_over_dead_workers(study, alone=False) == []
    assert [t.state for t in study.trials] == [TrialState.FAIL]  # no WAITING retry
