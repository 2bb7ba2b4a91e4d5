"""Whether a tuner running in another process has created its SQLite study yet, asked without racing it."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def study_created(db: Path, study_name: str = "autotune") -> bool:
    """Whether the tuner has set up its storage and study in `db`. Asked read-only: opening the storage
    with Optuna while the tuner is creating it races it to the schema (both insert alembic_version, and
    the tuner loses: 'cannot open study storage')."""
    if not db.exists():
        return False
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT 1 FROM studies WHERE study_name = ?", (study_name,)).fetchone() is not None
    except sqlite3.Error:  # tables not there yet
        return False
    finally:
        con.close()
