"""Optuna's heartbeat as the workers of one --storage study use it (storage.py turns it on there).

- A beat that the database refuses (locked by another process past SQLite's wait, a server gone a moment) is
  skipped, not raised: it raised in Optuna's heartbeat thread, whose ~90-line traceback came before the main
  thread's one line about the same lock (trial80 #2). A skipped beat costs nothing while the grace is several
  intervals (storage.heartbeat_seconds), and a database out of reach longer stops the run at its next write, where
  storage_failure.py names the cause in one line and what was evaluated is kept.
- A dead worker's trial (its heartbeat older than the grace) is failed and its candidate queued again (Optuna's
  RetryHeartbeatStaleTrialCallback), but for one whose candidate was found invalid before its worker died: nothing
  is probed for it, so a retry would only be pruned again (or left WAITING for a budget already spent, trial80 #7).
  The callback keeps which trials this worker failed, so a take-over names those
  alone (loop.take_over_dead_workers): a trial that stopped RUNNING because its live owner finished it is no dead
  worker's (trial80 #1).
"""

from __future__ import annotations

import optuna
import sqlalchemy.exc

from autotune.study.retries import found_invalid


class BeatSkippingStorage(optuna.storages.RDBStorage):
    """RDBStorage whose heartbeat thread skips a beat the database refuses (module docstring)."""

    def record_heartbeat(self, trial_id: int) -> None:
        try:
            super().record_heartbeat(trial_id)
        except (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError):
            pass  # the next beat, an interval later, tries again; the main thread says a lasting failure


class RetryDeadWorkersTrials(optuna.storages.RetryHeartbeatStaleTrialCallback):
    """Optuna's retry of a stale trial, but for one found invalid; `failed` lists every trial this worker failed
    for a dead worker's, in order (Optuna calls back for those alone: a trial another worker failed first is not)."""

    def __init__(self, max_retry: int) -> None:
        super().__init__(max_retry=max_retry)
        self.failed: list[int] = []

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        self.failed.append(trial.number)
        if not found_invalid(trial):
            super().__call__(study, trial)


def fail_dead_workers_trials(study: optuna.Study) -> list[int]:
    """Optuna's fail_stale_trials (what optimize() runs before each trial); returns the numbers of the trials it
    failed here, each a dead worker's, in order. [] on a storage without our heartbeat callback."""
    callback = study._storage.get_heartbeat_stale_trial_callback()  # Optuna's own fail_stale_trials reads it so
    failed = callback.failed if isinstance(callback, RetryDeadWorkersTrials) else []
    before = len(failed)
    optuna.storages.fail_stale_trials(study)
    return failed[before:]
