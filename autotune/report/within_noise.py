"""Whether a change a report states (a pick against the baseline, a power limit against 1.0, a pick's
payback) is larger than the noise of the two measured figures it compares.

The rule: the change from figure b to figure a, 100 x (a / b - 1), is "within noise" when its size is
at most 100 x sqrt(cv_a^2 + cv_b^2), each CV the figure's own (report.noise: over repeats, else the
within-probe step-time scatter). Why:
- the noise of a ratio of two independent figures is their CVs added in quadrature;
- one standard deviation, because the mark answers "is this difference smaller than the figures' own
  scatter?"; a larger change is shown as it is, which does not make it significant (at two standard
  deviations a 10%-CV CPU study would mark every change under 28%);
- TFLOP/kJ on the fixed workload is energy inverted, so it takes energy's noise;
- a simulated figure adds no noise (CV 0), and neither does a figure of unknown noise, so the combined
  figure is then a lower bound; with none known, or only simulated figures, nothing is marked.

Only changes within noise are marked, `-3.0% (within noise: ±9%)`: a GPU study's ~1% noise leaves
its real savings as they were.
"""

from __future__ import annotations

import math

from autotune.report.front import Point
from autotune.report.noise import point_cv
from autotune.report.units import pct_text

RULE = ("a change between two measured figures is within noise when its size is at most "
        "100 x sqrt(cv_a^2 + cv_b^2) percent, each figure's CV over repeats, else its within-probe step-time CV")

# Which figure's noise each change carries: TFLOP/kJ on fixed work is energy's inverse.
CHANGE_METRICS = {"energy_saved_pct": "energy", "time_change_pct": "time", "tflop_per_kj_change_pct": "energy"}


def change_noise_pct(point: Point, base: Point, metric: str) -> float | None:
    """The combined noise, in percent, of a change between two points' "time" or "energy"; None where
    no noise is known or it is zero (simulated figures)."""
    cvs = [cv for cv, _ in (point_cv(point, metric), point_cv(base, metric)) if cv is not None]
    combined = 100.0 * math.sqrt(sum(cv * cv for cv in cvs))
    return combined if combined > 0 else None


def savings_noise(point: Point, base: Point | None) -> dict | None:
    """{change key: noise %} beside `picks.savings(point, base)`; None without a baseline or any noise figure."""
    if base is None or point is base:
        return None
    noise = {key: change_noise_pct(point, base, metric) for key, metric in CHANGE_METRICS.items()}
    return noise if any(v is not None for v in noise.values()) else None


def is_within_noise(change_pct: float | None, noise_pct: float | None) -> bool:
    return change_pct is not None and noise_pct is not None and abs(change_pct) <= noise_pct


def noise_mark(change_pct: float | None, noise_pct: float | None) -> str:
    """` (within noise: ±9%)` after a change no larger than its noise; `` otherwise."""
    if not is_within_noise(change_pct, noise_pct):
        return ""
    return f" (within noise: ±{noise_pct:.0f}%)" if noise_pct >= 10 else f" (within noise: ±{noise_pct:.2g}%)"


def change_text(changes: dict, key: str, noise: dict | None) -> str:
    """`+3.0% (within noise: ±9%)`, or `-28.6%` for a change beyond its noise."""
    return pct_text(changes[key]) + noise_mark(changes[key], (noise or {}).get(key))


def labelled_change_text(changes: dict, key: str, noise: dict | None, label: str) -> str:
    """`+3.0% energy saved (within noise: ±9%)`: the mark after the words it qualifies."""
    return f"{pct_text(changes[key])} {label}" + noise_mark(changes[key], (noise or {}).get(key))


def with_noise(rows: list[dict], points: list[Point], baseline_trial: int | None) -> list[dict]:
    """Pick rows (report.picks.pick_rows) with `noise_pct` (the noise each change was judged against,
    None where none is known) and `within_noise` (the changes no larger than it)."""
    by_trial = {p.trial: p for p in points}
    base = by_trial.get(baseline_trial) if baseline_trial is not None else None
    marked = []
    for row in rows:
        noise = savings_noise(by_trial[row["trial"]], base)
        within = [key for key in CHANGE_METRICS if is_within_noise(row.get(key), (noise or {}).get(key))]
        marked.append({**row, "noise_pct": noise, "within_noise": within})
    return marked
