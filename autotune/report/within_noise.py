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

A simulated figure has no noise but the simulator's stated error (the profile's [simulator_error]):
a change with a simulated side that is no larger than that error is marked the same way,
`-0.7% (within the simulator's error: ±20%)`; the simulator cannot tell such a pick from the baseline.
"""

from __future__ import annotations

import math

from autotune.report.error_bars import change_error_pct
from autotune.report.front import Point
from autotune.report.noise import point_cv
from autotune.report.units import pct_text

RULE = ("a change between two measured figures is within noise when its size is at most "
        "100 x sqrt(cv_a^2 + cv_b^2) percent, each figure's CV over repeats, else its within-probe step-time CV")

# Which figure's noise each change carries: TFLOP/kJ on fixed work is energy's inverse.
CHANGE_METRICS = {"energy_saved_pct": "energy", "time_change_pct": "time", "tflop_per_kj_change_pct": "energy"}
# The same figures by the simulator's names ([simulator_error] keys are these with `_pct`).
_SIMULATED_METRICS = {"energy": "energy_kj", "time": "time_s"}


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


def savings_error(point: Point, base: Point | None, error: dict | None) -> dict | None:
    """{change key: the simulator's stated error %} beside `picks.savings(point, base)`; None without a
    baseline, a simulated side, or a stated error (an unknown one marks nothing)."""
    if base is None or point is base:
        return None
    stated = {key: change_error_pct(error, point, base, _SIMULATED_METRICS[metric]) for key, metric in CHANGE_METRICS.items()}
    return stated if any(v is not None for v in stated.values()) else None


def is_within_noise(change_pct: float | None, noise_pct: float | None) -> bool:
    return change_pct is not None and noise_pct is not None and abs(change_pct) <= noise_pct


def _within_mark(words: str, change_pct: float | None, bound_pct: float | None) -> str:
    if not is_within_noise(change_pct, bound_pct):
        return ""
    return f" ({words}: ±{bound_pct:.0f}%)" if bound_pct >= 10 else f" ({words}: ±{bound_pct:.2g}%)"


def noise_mark(change_pct: float | None, noise_pct: float | None) -> str:
    """` (within noise: ±9%)` after a change no larger than its noise; `` otherwise."""
    return _within_mark("within noise", change_pct, noise_pct)


def error_mark(change_pct: float | None, error_pct: float | None) -> str:
    """` (within the simulator's error: ±20%)` after a change no larger than that error; `` otherwise."""
    return _within_mark("within the simulator's error", change_pct, error_pct)


def _marks(changes: dict, key: str, noise: dict | None, error: dict | None) -> str:
    return noise_mark(changes[key], (noise or {}).get(key)) + error_mark(changes[key], (error or {}).get(key))


def change_text(changes: dict, key: str, noise: dict | None, error: dict | None = None, missing: str = "n/a") -> str:
    """`+3.0% (within noise: ±9%)`, or `-28.6%` for a change beyond its noise; `error` (a row's
    `simulator_error_pct`) marks a simulated change within the simulator's error. `missing`: what a
    change that cannot be stated reads (units.pct_text)."""
    return pct_text(changes[key], missing) + _marks(changes, key, noise, error)


def labelled_change_text(changes: dict, key: str, noise: dict | None, label: str, error: dict | None = None,
                         missing: str = "n/a") -> str:
    """`+3.0% energy saved (within noise: ±9%)`: the mark after the words it qualifies; `energy saved
    unavailable` where there is no change to state."""
    if changes[key] is None:
        return f"{label} {missing}"
    return f"{pct_text(changes[key])} {label}" + _marks(changes, key, noise, error)


def with_noise(rows: list[dict], points: list[Point], baseline_trial: int | None, error: dict | None = None) -> list[dict]:
    """Pick rows (report.picks.pick_rows) with `noise_pct` (the noise each change was judged against,
    None where none is known) and `within_noise` (the changes no larger than it); and, given the
    simulator's error (error_bars.simulator_error), `simulator_error_pct` and `within_simulator_error`
    the same way for changes with a simulated side."""
    by_trial = {p.trial: p for p in points}
    base = by_trial.get(baseline_trial) if baseline_trial is not None else None
    marked = []
    for row in rows:
        point = by_trial[row["trial"]]
        noise, stated = savings_noise(point, base), savings_error(point, base, error)
        within = [key for key in CHANGE_METRICS if is_within_noise(row.get(key), (noise or {}).get(key))]
        within_error = [key for key in CHANGE_METRICS if is_within_noise(row.get(key), (stated or {}).get(key))]
        marked.append({**row, "noise_pct": noise, "within_noise": within,
                       "simulator_error_pct": stated, "within_simulator_error": within_error})
    return marked
