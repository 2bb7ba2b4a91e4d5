"""Measurement noise of each measured figure, as a coefficient of variation (CV = standard deviation /
mean), and its summary over the study. `report.within_noise` applies it to the changes a report states.

A figure's CV, best first:
1. over repeated probes (`--repeats N`, `details["cv"]`): run-to-run noise of time and of energy;
2. over the measured window's steps (result.json `step_time_s.all`, found through `details["repeats"]`):
   the within-probe scatter of step time. It leaves out what differs from one run to the next
   (clocks, heat, other load), so it is a lower bound of run-to-run noise, and it is taken for energy
   too, whose per-step figure no sensor gives (a window's energy scales with its time). It is not
   divided by sqrt(steps): steps in one window are correlated, and run-to-run noise is not in them,
   so the standard error of the mean would promise a precision the probe does not have;
3. none (a replayed record, a probe without its result.json): that figure's noise is unknown.
A simulated figure has no noise (the simulator's error is in report.error_bars).
"""

from __future__ import annotations

import statistics

from autotune.counted import counted
from autotune.backends.probe_outcome import step_time_cv
from autotune.report.front import Point
from autotune.report.study_points import StudyView

METRICS = ("time", "energy")


def trial_cv(row: dict) -> dict | None:
    """{"time": cv, "energy": cv} of one trial's repeats, or None when it was probed once."""
    return (row.get("details") or {}).get("cv")


def noise_summary(view: StudyView) -> dict | None:
    """Median and largest CV over every repeated trial; None when no trial was repeated."""
    rows = [(row, trial_cv(row)) for row in view.trials if trial_cv(row)]
    if not rows:
        return None
    summary = {"trials": len(rows), "repeats": max(len(r["details"].get("repeats", [])) for r, _ in rows)}
    for key in METRICS:
        values = [cv[key] for _, cv in rows if cv.get(key) is not None]
        summary[f"{key}_cv_median"] = statistics.median(values) if values else None
        summary[f"{key}_cv_max"] = max(values) if values else None
    return summary


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def noise_sentence(summary: dict) -> str:
    return (
        f"{counted(summary['trials'], 'trial')} probed {summary['repeats']} times: coefficient of variation of time "
        f"{_pct(summary['time_cv_median'])} median ({_pct(summary['time_cv_max'])} worst), of energy "
        f"{_pct(summary['energy_cv_median'])} median ({_pct(summary['energy_cv_max'])} worst)"
    )


def point_cv(point: Point, metric: str) -> tuple[float | None, str | None]:
    """(CV, basis) of a point's "time" or "energy": basis "repeats", "step_times", "simulated" (CV 0),
    or (None, None) where its noise is unknown."""
    source = point.source if metric == "time" else point.energy_source
    if metric == "energy" and point.energy_kj is None:
        return None, None  # no energy (unavailable): no noise of it either, not its step times'
    if source == "simulated":
        return 0.0, "simulated"
    details = point.extra.get("details") or {}
    repeats_cv = (details.get("cv") or {}).get(metric)
    if repeats_cv is not None:
        return repeats_cv, "repeats"
    step_cv = step_time_cv(details)
    return (step_cv, "step_times") if step_cv is not None else (None, None)


def change_noise_summary(view: StudyView) -> dict | None:
    """pareto.json's `change_noise`: what noise figure the report's marks used, over the feasible
    points; None for a study with no measured figure (simulated: nothing to say)."""
    measured = [p for p in view.points if p.source != "simulated" or p.energy_source != "simulated"]
    if not measured:
        return None
    per_point = [{metric: point_cv(p, metric) for metric in METRICS} for p in measured]
    bases = sorted({basis for cvs in per_point for _, basis in cvs.values() if basis not in (None, "simulated")})
    summary = {
        "basis": (bases[0] if len(bases) == 1 else bases) if bases else "unknown",
        "trials": sum(any(basis not in (None, "simulated") for _, basis in cvs.values()) for cvs in per_point),
        "trials_without": sum(all(basis is None for _, basis in cvs.values()) for cvs in per_point),
    }
    for metric in METRICS:
        values = [cvs[metric][0] for cvs in per_point if cvs[metric][1] not in (None, "simulated")]
        summary[f"{metric}_cv_median"] = statistics.median(values) if values else None
        summary[f"{metric}_cv_max"] = max(values) if values else None
    return summary


def noise_line(document: dict) -> str | None:
    """One line for the top of every report: the noise figure, what it is, and that changes within it
    are marked; None for a simulated study."""
    summary, repeats = document.get("change_noise"), document.get("noise")
    parts = [noise_sentence(repeats)] if repeats else []
    if summary and summary["basis"] not in ("repeats", "unknown"):
        parts.append(
            f"step times vary {_pct(summary['time_cv_median'])} within a probe (CV, median; "
            f"{_pct(summary['time_cv_max'])} worst), taken for energy too; this within-probe scatter is a lower "
            "bound of run-to-run noise (`--repeats N` measures that)"
        )
    if parts:
        return (f"Measurement noise: {'; '.join(parts)}. Changes within two figures' combined noise are marked, "
                # Fastest and min-energy are judged against every feasible point, their runner-up perhaps off the
                # front (within_noise.noise_ties): "another front point" told a reader their ties could not be there.
                "and a pick within it of a point it is ranked against (any feasible point for fastest and min-energy, "
                "a front point for the others) is a tie.")
    if summary:
        return ("Measurement noise: not recorded (probed once, no step times kept), so no change is checked "
                "against it; `--repeats N` measures it.")
    return None
