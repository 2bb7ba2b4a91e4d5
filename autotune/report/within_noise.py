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

Only changes within noise are marked, `3.0% more energy (within noise: +- 9%)`: a GPU study's ~1% noise leaves
its real savings as they were.

A simulated figure has no noise but the simulator's stated error (the profile's [simulator_error]):
a change with a simulated side that is no larger than that error is marked the same way,
`0.7% less time (within the simulator's error: +- 20%)`; the simulator cannot tell such a pick from the baseline.
The bound is written "+- 20%" as the error bars write an error ("2.28 min +- 3.4%"): one line used both notations
(trial59 #9).

The same rule judges a pick against the other points (`noise_ties`): a pick whose ranking figure(s)
(error_bars.deciding_figures) lie within the combined noise of another point's is a tie, not a ranking,
`tie with trial 5 within measured noise: time CV 3.1% and 2.8%`, as a pick within the simulator's error
of one is (error_bars.pick_ties). Fastest and least energy are judged against every feasible point, max-slowdown
against every point within its time bound, the picks that trade the two off against the front
(error_bars.compared_points says why).
"""

from __future__ import annotations

import math

from autotune.report.error_bars import change_error_pct, compared_points, deciding_figures, is_simulated, tie_sentence
from autotune.report.front import Point
from autotune.report.near_ties import near_texts
from autotune.report.noise import point_cv
from autotune.report.picks import change_pct, trials_text
from autotune.report.study_points import StudyView
from autotune.report.units import change_words

RULE = ("a change between two measured figures is within noise when its size is at most "
        "100 x sqrt(cv_a^2 + cv_b^2) percent, each figure's CV over repeats, else its within-probe step-time CV")

# Which figure's noise each change carries: TFLOP/kJ on fixed work is energy's inverse.
CHANGE_METRICS = {"energy_saved_pct": "energy", "time_change_pct": "time", "tflop_per_kj_change_pct": "energy"}
# The same figures by the simulator's names ([simulator_error] keys are these with `_pct`).
_SIMULATED_METRICS = {"energy": "energy_kj", "time": "time_s"}
# The noise of each figure a pick ranks by (error_bars.deciding_figures).
_FIGURE_METRICS = {figure: metric for metric, figure in _SIMULATED_METRICS.items()}


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


def bound_text(bound_pct: float) -> str:
    """`+- 21%`, `+- 3.4%`: a noise or error bound as the error bars write one."""
    return f"+- {bound_pct:.0f}%" if bound_pct >= 10 else f"+- {bound_pct:.2g}%"


def _within_mark(words: str, change_pct: float | None, bound_pct: float | None) -> str:
    if not is_within_noise(change_pct, bound_pct):
        return ""
    return f" ({words}: {bound_text(bound_pct)})"


def noise_mark(change_pct: float | None, noise_pct: float | None) -> str:
    """` (within noise: +- 9%)` after a change no larger than its noise; `` otherwise."""
    return _within_mark("within noise", change_pct, noise_pct)


def error_mark(change_pct: float | None, error_pct: float | None) -> str:
    """` (within the simulator's error: +- 20%)` after a change no larger than that error; `` otherwise."""
    return _within_mark("within the simulator's error", change_pct, error_pct)


def _marks(changes: dict, key: str, noise: dict | None, error: dict | None) -> str:
    return noise_mark(changes[key], (noise or {}).get(key)) + error_mark(changes[key], (error or {}).get(key))


# Which way a pick row's change points. pareto.json keeps its signs (readers use them): energy_saved_pct is positive
# where the pick uses less energy (a saving), time_change_pct and tflop_per_kj_change_pct where the pick's figure is
# larger. The reports say the way in words instead (trial57 #9: "+7.7% energy saved, -10.0% time" put a plus on one
# good change and a minus on the other).
_POSITIVE_MEANS_LESS = ("energy_saved_pct",)


def labelled_change_text(changes: dict, key: str, noise: dict | None, label: str, error: dict | None = None,
                         missing: str = "n/a") -> str:
    """`7.7% less energy`, `10.0% less time`, `8.3% more TFLOP/kJ (within noise: +- 9%)`: a change in words, `label`
    naming its figure ("energy", "energy (estimated)"), the mark after the words it qualifies; `the same time`
    where it rounds to 0.0%; `energy unavailable` where there is no change to state (`missing`: units.pct_text's).
    `error` (a row's `simulator_error_pct`) marks a simulated change within the simulator's error."""
    value = changes[key]
    if value is None:
        return f"{label} {missing}"
    # units.change_words says a change whose negative means less: energy_saved_pct's sign is the other way round.
    return f"{change_words(-value if key in _POSITIVE_MEANS_LESS else value)} {label}" + _marks(changes, key, noise, error)


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


def _tie_within_noise(pick: Point, other: Point, figures: tuple[str, ...]) -> dict | None:
    """{"trial": other's, "time_cv": [pick's CV, other's CV], ...} when each of `other`'s deciding figures
    is within the two figures' combined noise of the pick's; None when one is beyond it or no noise of
    it is known."""
    tie = {"trial": other.trial}
    for figure in figures:
        metric = _FIGURE_METRICS[figure]
        gap_pct = change_pct(getattr(other, figure), getattr(pick, figure))
        if not is_within_noise(gap_pct, change_noise_pct(other, pick, metric)):
            return None
        tie[f"{metric}_cv"] = [point_cv(pick, metric)[0], point_cv(other, metric)[0]]
    return tie


def gaps_within_noise(point: Point, other: Point) -> dict[str, float]:
    """{"time" / "energy": the combined noise %} for each figure whose gap between two points is within it, by the
    rule above: what an export of `point` says of a front trial `other` that beats it (trial76 #2: "trial 2 takes
    18.0% less time" where the report called the two a tie within measured noise)."""
    within = {}
    for figure, metric in (("time_s", "time"), ("energy_kj", "energy")):
        noise_pct = change_noise_pct(other, point, metric)
        if is_within_noise(change_pct(getattr(other, figure), getattr(point, figure)), noise_pct):
            within[metric] = noise_pct
    return within


def noise_ties(view: StudyView, simulator_ties: dict[str, list[int]]) -> dict[str, list[dict]]:
    """{pick: [_tie_within_noise entries]}: the points each pick cannot be told apart from within
    measured noise, by the one rule above (is_within_noise of change_noise_pct), among those it is
    judged against (error_bars.compared_points: every feasible point for fastest and least energy, whose
    runner-up may be off the front; every point within its time bound for max-slowdown; the front for the picks
    that trade time against energy).

    A study of mixed sources (a replay of measured and simulated records): a pair with a simulated figure
    is judged by this rule too, the simulated figure adding no noise, so the measured side's CV alone is
    a lower bound of the pair's uncertainty, as it is for a change against a simulated baseline; a gap
    within that bound cannot be a ranking. A pair already tied within the simulator's error
    (`simulator_ties`, error_bars.pick_ties) is said once, there. Two simulated figures have no noise,
    and figures whose noise is unknown (probed once, no step times kept) none either: nothing is tied."""
    ties = {}
    for name, trial in view.picks.items():
        pick, already = view.point(trial), set(simulator_ties.get(name, []))
        found = (_tie_within_noise(pick, other, deciding_figures(name))
                 for other in compared_points(view, name) if other.trial != trial and other.trial not in already)
        ties[name] = [tie for tie in found if tie]
    return ties


def with_noise_ties(rows: list[dict], ties: dict[str, list[dict]]) -> list[dict]:
    """Pick rows with `tied_within_noise` (the trials, as `tied_with` lists the simulator's ties) and
    `tie_noise_cv` (per tied trial, each deciding figure's CVs: [the pick's, the trial's]; 0 for a
    simulated figure, None for one of unknown noise)."""
    return [{**row, "tied_within_noise": [tie["trial"] for tie in ties.get(row["name"], [])],
             "tie_noise_cv": ties.get(row["name"], [])} for row in rows]


def _cv_text(view: StudyView, trial: int, figure: str, cv: float | None) -> str:
    if is_simulated(view.point(trial), figure):
        return "simulated"
    return "unknown" if cv is None else f"{100 * cv:.1f}%"


def _tie_cvs_text(view: StudyView, pick_trial: int, tie: dict) -> str:
    """`time CV 3.1% and 2.8%`: the pick's figure's CV, then the tied trial's."""
    return ", ".join(
        f"{metric} CV {_cv_text(view, pick_trial, figure, tie[f'{metric}_cv'][0])} and "
        f"{_cv_text(view, tie['trial'], figure, tie[f'{metric}_cv'][1])}"
        for figure, metric in (("time_s", "time"), ("energy_kj", "energy")) if f"{metric}_cv" in tie
    )


def noise_tie_sentence(view: StudyView, row: dict) -> str:
    """`tie with trial 5 within measured noise: time CV 3.1% and 2.8%` (several trials: their CVs in the
    same order, `; ` between); '' without such a tie. The CVs, not only the word, so a reader sees how
    loose the ranking is."""
    ties = row.get("tie_noise_cv") or []
    if not ties:
        return ""
    cvs = "; ".join(_tie_cvs_text(view, row["trial"], tie) for tie in ties)
    return f"tie with {trials_text([tie['trial'] for tie in ties])} within measured noise: {cvs}"


def ties_text(view: StudyView, row: dict) -> str:
    """Every tie of a pick row, of any kind, for its line: the simulator's error's, measured noise's, then a lead
    inside the error measured at calibrated configurations where the figures' own is unknown, and a lopsided trade
    against the nearest other pick (report.near_ties)."""
    ties = (tie_sentence(row.get("tied_with") or []), noise_tie_sentence(view, row), *near_texts(view, row))
    return "; ".join(text for text in ties if text)
