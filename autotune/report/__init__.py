"""Pareto front, recommendations, pareto.json and the terminal report."""

from autotune.report.front import Point, knee, pareto_front, recommendations
from autotune.report.study_points import StudyView, study_view
from autotune.report.pareto_json import pareto_document, write_pareto_json

__all__ = [
    "Point",
    "StudyView",
    "knee",
    "pareto_document",
    "pareto_front",
    "recommendations",
    "study_view",
    "write_pareto_json",
]
