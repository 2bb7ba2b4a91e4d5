"""Where a study lives: SQLite in the run directory by default, any Optuna RDB URL with --storage."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import optuna

from autotune.errors import UserError

STUDY_NAME = "autotune"
DIRECTIONS = ("minimize", "minimize")
METRIC_NAMES = ("time_to_solution_s", "energy_to_solution_kj")


def storage_url(run_dir: Path, storage: str | None) -> str:
    return storage or f"sqlite:///{(run_dir / 'study.db').resolve()}"


def _open_storage(url: str):
    try:
        return optuna.storages.RDBStorage(url)
    except Exception as exc:  # SQLAlchemy raises many kinds; the user needs one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(
            f"cannot open study storage {url!r} ({first}); check the URL, the server and its driver, "
            "or leave out --storage to use RUN_DIR/study.db"
        ) from None


def open_study(run_dir: Path, storage: str | None, sampler) -> optuna.Study:
    """Create the study or load the one already there (resume)."""
    optuna.logging.set_verbosity(logging.WARNING)
    if storage is None:
        run_dir.mkdir(parents=True, exist_ok=True)
    url = storage_url(run_dir, storage)
    study = optuna.create_study(
        storage=_open_storage(url),
        sampler=sampler,
        study_name=STUDY_NAME,
        directions=list(DIRECTIONS),
        load_if_exists=True,
    )
    if study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(list(METRIC_NAMES))  # names optuna-dashboard shows
    return study


def load_finished_study(run_dir: Path, storage: str | None = None) -> optuna.Study:
    """The study of an existing run directory, for `report` and `export`."""
    optuna.logging.set_verbosity(logging.WARNING)
    if storage is None and not (run_dir / "study.db").is_file():
        raise UserError(
            f"{run_dir} is not a run directory (no study.db); pass the --out directory of an `autotune run`"
        )
    try:
        return optuna.load_study(study_name=STUDY_NAME, storage=_open_storage(storage_url(run_dir, storage)))
    except KeyError:
        raise UserError(f"no autotune study in {storage or run_dir}; run `autotune run` there first") from None
