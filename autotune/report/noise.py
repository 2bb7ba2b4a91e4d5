"""Measurement noise from repeated probes (`--repeats N`): the coefficient of variation of time and
energy per candidate, and its median and worst over the study. A pick whose saving is smaller than
the noise is not a saving."""

from __future__ import annotations

import statistics

from autotune.report.study_points import StudyView


def trial_cv(row: dict) -> dict | None:
    """{"time": cv, "energy": cv} of one trial's repeats, or None when it was probed once."""
    return (row.get("details") or {}).get("cv")


def noise_summary(view: StudyView) -> dict | None:
    """Median and largest CV over every repeated trial; None when no trial was repeated."""
    rows = [(row, trial_cv(row)) for row in view.trials if trial_cv(row)]
    if not rows:
        return None
    summary = {"trials": len(rows), "repeats": max(len(r["details"].get("repeats", [])) for r, _ in rows)}
    for key in ("time", "energy"):
        values = [cv[key] for _, cv in rows if cv.get(key) is not None]
        summary[f"{key}_cv_median"] = statistics.median(values) if values else None
        summary[f"{key}_cv_max"] = max(values) if values else None
    return summary


def noise_sentence(summary: dict) -> str:
    def pct(value):
        return "n/a" if value is None else f"{100 * value:.1f}%"

    return (
        f"{summary['trials']} trial(s) probed {summary['repeats']} times: coefficient of variation of time "
        f"{pct(summary['time_cv_median'])} median ({pct(summary['time_cv_max'])} worst), of energy "
        f"{pct(summary['energy_cv_median'])} median ({pct(summary['energy_cv_max'])} worst)"
    )
