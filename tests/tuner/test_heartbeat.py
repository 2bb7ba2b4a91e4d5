"""The heartbeat of --storage workers (study/heartbeat.py), driven on prepared studies: no second process, no wait
for a grace to pass."""

from __future__ import annotations

import contextlib
import sqlite3

import optuna
import pytest

from autotune.candidate import KNOBS
from autotune.study import open_study
from autotune.study.loop import PROBING_ATTR

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
