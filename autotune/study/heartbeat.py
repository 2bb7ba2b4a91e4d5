"""Optuna's heartbeat as the workers of one --storage study use it (storage.py turns it on there).

- A beat that the database refuses (locked by another process past SQLite's wait, a server gone a moment) is
  skipped, not raised: it raised in Optuna's heartbeat thread, whose ~90-line traceback came before the main
  thread's one line about the same lock (trial80 #2). A skipped beat costs nothing while the grace is several
  intervals (storage.heartbeat_seconds), and a database out of reach longer stops the run at its next write, where
  storage_failure.py names the cause in one line and what was evaluated is kept.
"""

from __future__ import annotations

import optuna
import sqlalchemy.exc


class BeatSkippingStorage(optuna.storages.RDBStorage):
    """RDBStorage whose heartbeat thread skips a beat the database refuses (module docstring)."""

    def record_heartbeat(self, trial_id: int) -> None:
        try:
            super().record_heartbeat(trial_id)
        except (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError):
            pass  # the next beat, an interval later, tries again; the main thread says a lasting failure

