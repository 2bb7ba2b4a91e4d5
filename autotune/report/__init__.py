"""Pareto front, recommendations, pareto.json and the terminal, Markdown and HTML reports."""

from autotune.report.front import Point, best_under_slowdown, cost_weighted, knee, pareto_front, recommendations
from autotune.report.study_points import StudyView, study_view
from autotune.report.pareto_json import pareto_document, write_pareto_json

__all__ = [
    "Point",
    "StudyView",
    "best_under_slowdown",
    "cost_weighted",
    "knee",
    "pareto_document",
    "pareto_front",
    "recommendations",
    "study_view",
    "write_pareto_json",
]
