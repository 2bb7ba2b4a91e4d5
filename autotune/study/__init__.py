"""The Optuna study: sampler, constraints, storage, resume, warm start, and the trial loop."""

from autotune.study.loop import run_study, StudyProgress
from autotune.study.settings import StudySettings
from autotune.study.storage import METRIC_NAMES, open_study, load_finished_study

__all__ = ["METRIC_NAMES", "StudyProgress", "StudySettings", "load_finished_study", "open_study", "run_study"]
