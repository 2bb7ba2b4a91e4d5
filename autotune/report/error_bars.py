"""Error bars on simulated figures: the hardware profile's cross-validated error (`autotune calibrate`
writes it to [simulator_error]), and the picks that error cannot tell apart from another point.

A simulated "18.4 min" is "18.4 min +- 8%" when the profile's leave-one-out time error is 8%; a pick
whose time (fastest), energy (least energy; max-slowdown, within its time bound) or both (the other
picks) lie within that error of another point's is a tie, not a ranking (whichever of the two is
simulated): any feasible point for the first two, one within the bound for max-slowdown, a front point
for the others (compared_points). Measured studies carry no simulator
error: their spread over repeats is in report.noise, and picks within it of such a point are ties too
(report.within_noise.noise_ties).

Where the error was measured, and which figures lie outside that, is report.error_scope's; why a calibrated profile
states none is report.error_unknown's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotune.hardware.profile import (ERROR_SCOPE_BY_MODEL, ERROR_SCOPE_NOTE, IGNORED_CALIBRATED_ON_NOTE,
                                       IGNORED_ERROR_NOTE)
from autotune.report.error_scope import (EXTRAPOLATED_KEY, SCOPE_KEY, SCOPE_VALUES_KEY, UNRECORDED_SCOPE,
                                         measured_scope, outside_scope, scope_sentence, scope_values, scope_words,
                                         unrecorded_words, workload_values)
from autotune.report.error_unknown import (WHY_UNKNOWN, outside_calibration, unrecorded_profile, why_unknown,
                                           with_calibrated_on)
from autotune.report.picks import trials_text

if TYPE_CHECKING:  # light module: `autotune space` uses error_suffix without loading the study layer
    from autotune.report.study_points import StudyView

# Which figure decides each pick; the picks that trade both off need both apart to rank. Max-slowdown chooses by
# energy alone among the points within its time bound (trial 63 #17: judged by both, against the front, a lead of
# 0.2% in energy inside +- 3.3% over an off-front point in its bound was no tie, while fastest's lead in time was).
_DECIDED_BY = {"fastest": ("time_s",), "min_energy": ("energy_kj",), "max_slowdown": ("energy_kj",)}
_BOTH = ("time_s", "energy_kj")
# The power error is of the GPU's own power (calibrate's power_w, NVML's reading): "power +- 2.3%" on a GH200 study read
# as the module power its energy and power limit are of, whose error was 3.3% (trial72 #11), now said beside it.
_METRIC_WORDS = {"time_s_pct": "time", "energy_kj_pct": "energy", "tflops_pct": "TFLOP/s",
                 "power_w_pct": "GPU power (the GPU alone, as NVML reads it)",
                 "module_power_w_pct": "module power (GPU, CPU and memory, as the module's sensor reads it: the power "
                                       "this profile's energy and power limit are of)"}
# Said on a module-scope profile only: elsewhere the power limit is the GPU's (power_w_pct's) and the module figure, a
# sum of the GPU and its share of the host, is no power a user sets or reads (energy_kj_pct covers what it adds).
_MODULE_POWER = "module_power_w_pct"


_NOT_PERCENTAGES = (SCOPE_KEY, EXTRAPOLATED_KEY, SCOPE_VALUES_KEY)


def tie_rule_sentence(error: dict | None) -> str:
    """" Picks closer than that error are called ties on their lines." or, where some point is extrapolated,
    " Those show +- ?% (their error is unknown); ..." with the one rule for a lead smaller than the error: a tie where
    both sides' error is known (pick_ties), flagged as one that may not be real where either's is not
    (report.near_ties). Said as two rules, one of them "flagged there", a reader could not tell which applied to a
    pair inside the calibration and one outside it (trial59 #11). Which trials lie outside, and what of them, is
    said by the +- ?% on each figure and, for the picks, by the line before the front table
    (report.outside_calibration): said here too, it made this sentence ~700 characters (trial57 #3)."""
    if not (error or {}).get(EXTRAPOLATED_KEY):
        return " Picks closer than that error are called ties on their lines."
    return (" Those show +- ?% (their error is unknown); on the pick lines, a pick that leads another by less than the "
            "error above is called a tie with it where both figures' error is known, and flagged as a lead that may not "
            "be real where either's is unknown.")


def simulator_error(view: "StudyView") -> dict | None:
    """{'time_s_pct': ..., ...} of the profile when some figure is simulated (empty: not calibrated;
    {WHY_UNKNOWN: ...}: calibrated, with no error it can vouch for, or a study that kept no profile); None else."""
    if not any(p.source == "simulated" or p.energy_source == "simulated" for p in view.points):
        return None
    if not view.profile_recorded:  # a study's figures carry the error of the profile that made them, or none known
        return {WHY_UNKNOWN: unrecorded_profile(view.settings.hardware)}
    error = profile_error(view.settings.hardware)
    if WHY_UNKNOWN in error and view.settings.hardware.calibrated_on:
        simulated = [p for p in view.points if is_simulated(p, "time_s") or is_simulated(p, "energy_kj")]
        nodes = {p.params.get("nodes", 1) for p in simulated}
        outside = outside_calibration(view.settings.hardware.calibrated_on, view.settings.model.name,
                                      {n * view.settings.gpus_per_node for n in nodes}, nodes)
        if outside:
            error[WHY_UNKNOWN] = with_calibrated_on(error[WHY_UNKNOWN], outside)
    elif WHY_UNKNOWN in error and not IGNORED_ERROR_NOTE.search(view.settings.hardware.description):
        # An ignored error's reason names [calibrated_on] among what was edited; else the table's own is said.
        ignored = IGNORED_CALIBRATED_ON_NOTE.search(view.settings.hardware.description)
        if ignored:
            error[WHY_UNKNOWN] = f"{error[WHY_UNKNOWN]}; {ignored.group(0)}"
    scope = measured_scope(error)
    if scope is not None:
        top = view.settings.hardware.gpu.max_sm_clock_mhz
        workload = workload_values(view.settings.workload, view.settings.hardware.cuda)
        outside = {str(p.trial): outside_scope(scope, view.settings.model.name, p.params, top, p.gpus, workload)
                   for p in view.points
                   if is_simulated(p, "time_s") or is_simulated(p, "energy_kj")}  # a measured figure has no simulator error
        error[EXTRAPOLATED_KEY] = {trial: words for trial, words in outside.items() if words}
    error.pop(SCOPE_VALUES_KEY, None)  # said by SCOPE_KEY's words and judged into EXTRAPOLATED_KEY
    return error


def extrapolated(error: dict | None, point) -> bool:
    """Whether `point`'s configuration lies outside what the stated error was measured on."""
    return bool(error) and str(point.trial) in error.get(EXTRAPOLATED_KEY, {})


def profile_error(hardware) -> dict:
    """The error a profile states for its simulated figures: {'time_s_pct': ..., ...}; {} not calibrated;
    {WHY_UNKNOWN: ...} calibrated, with no error it can vouch for (for the study report and `autotune space`)."""
    if not hardware.simulator_error and hardware.calibrated_from:  # a copied table's profile: "not calibrated", as it is
        return {WHY_UNKNOWN: why_unknown(hardware)}
    error = {key: pct for key, pct in hardware.simulator_error.items()
             if key != _MODULE_POWER or hardware.module_scope_energy}
    if error and hardware.error_measured_on:  # recorded as data by calibrate -o: read as such, not from the words
        scope = {key: ({model: {k: list(v) for k, v in lists.items()} for model, lists in values.items()}
                       if key == ERROR_SCOPE_BY_MODEL else list(values))
                 for key, values in hardware.error_measured_on.items()}
        error[SCOPE_KEY], error[SCOPE_VALUES_KEY] = scope_words(scope) + unrecorded_words(scope), scope
        return error
    note = ERROR_SCOPE_NOTE.search(hardware.description)
    if error and note:  # an older calibrate's words: their values as read, and what they do not record said after them
        words = note.group(1).strip()
        scope = scope_values(words)
        error[SCOPE_KEY] = words + unrecorded_words(scope)
        if scope is not None:
            error[SCOPE_VALUES_KEY] = scope
    elif error:  # nothing says where it was measured: shown to hold nowhere, not everywhere
        error[SCOPE_KEY] = UNRECORDED_SCOPE
    return error


def _within(a: float | None, b: float | None, pct: float | None) -> bool:
    if a is None or b is None or pct is None or b == 0:
        return False
    return abs(a / b - 1.0) * 100.0 <= pct


def deciding_figures(pick_name: str) -> tuple[str, ...]:
    """The figures ("time_s", "energy_kj") a pick ranks by: both for the picks that trade them off."""
    return _DECIDED_BY.get(pick_name, _BOTH)


def compared_points(view: "StudyView", pick_name: str) -> list:
    """The points a pick is judged against for a tie (here and in report.within_noise.noise_ties).

    A pick ranked by one figure (fastest: time; least energy: energy) claims to lead every feasible
    configuration in it, whatever its other figure: the runner-up in time that takes more energy is off
    the (time, energy) front, and a time-only study's front holds only the fastest, so against the front
    alone "fastest" would be said of a lead smaller than the error. It is compared with every feasible
    point. Max-slowdown claims the least energy among the points within its time bound, every one of them
    (off the front too: one beaten in both figures by less than the error may be the true least). The picks
    that trade time against energy on the front (knee) claim only to be a better trade-off than the other choices
    on it: a point off it is beaten in both figures by a front point, no trade-off a user would take, so it is
    compared with the front alone. Cost-weighted claims the least cost of every feasible point (its GPUs x time
    term is no figure of the front: front.cost_weighted), so it is compared with every one."""
    if pick_name == "max_slowdown":
        from autotune.report.front import within_slowdown  # here: `autotune space` loads this module alone

        return within_slowdown(view.points, view.pick_parameters.max_slowdown)
    return view.points if len(deciding_figures(pick_name)) == 1 or pick_name == "cost_weighted" else view.front


def _simulated_pair(pick, other, figures) -> bool:
    """Whether the simulator's error bears on this comparison: a deciding figure of either point is
    simulated. Either side, as change_error_pct judges a change: a simulated pick 2% from a measured
    point cannot be ranked against it any better than a measured pick 2% from a simulated one."""
    return any(is_simulated(p, f) for p in (pick, other) for f in figures)


def pick_ties(view: "StudyView", error: dict | None) -> dict[str, list[int]]:
    """{pick: [trials it cannot be told apart from within the simulator's error]}, among the points it
    is judged against (compared_points). Pairs of measured figures are judged against their noise
    instead (report.within_noise.noise_ties)."""
    if not error or WHY_UNKNOWN in error:  # no error known: nothing is called a tie
        return {name: [] for name in view.picks}
    ties = {}
    for name, trial in view.picks.items():
        pick = view.point(trial)
        figures = deciding_figures(name)
        ties[name] = [
            other.trial for other in compared_points(view, name)
            if other.trial != trial and _simulated_pair(pick, other, figures)
            and not extrapolated(error, pick) and not extrapolated(error, other)  # an error not measured ties nothing
            and all(_within(getattr(other, f), getattr(pick, f), error.get(f"{f}_pct")) for f in figures)
        ]
    return ties


def with_ties(rows: list[dict], ties: dict[str, list[int]]) -> list[dict]:
    """Pick rows (report.picks.pick_rows) with `tied_with`: the trials within the simulator's error."""
    return [{**row, "tied_with": ties.get(row["name"], [])} for row in rows]


def error_suffix(error: dict | None, metric: str) -> str:
    """' +- 8%' after a simulated figure; ' +- ?%' when the profile is not calibrated; '' for measured."""
    if error is None:
        return ""
    pct = error.get(f"{metric}_pct")
    return f" +- {pct_text(pct)}%" if pct is not None else " +- ?%"


def pct_text(pct: float) -> str:
    """A stated error as the profile holds it, to one decimal: "3.4", "3". Rounded to whole percent, 2.5
    read as 2 beside the +- 2.5% the ties and marks use."""
    return f"{pct:.1f}".removesuffix(".0")


def is_simulated(point, metric: str) -> bool:
    """Whether a point's "time_s" (its time; "tflops", work over that time) or "energy_kj" (its energy) figure
    came from the simulator."""
    return (point.source if metric in ("time_s", "tflops") else point.energy_source) == "simulated"


def header_bar(error: dict | None, points, metric: str) -> str:
    """The error bar for a column's header: when every figure in it is simulated ("+- ?%" when every one
    is extrapolated)."""
    if not points or not all(is_simulated(p, metric) for p in points):
        return ""
    return " +- ?%" if all(extrapolated(error, p) for p in points) else error_suffix(error, metric)


def point_bar(error: dict | None, point, metric: str) -> str:
    """The error bar after a figure standing alone (a pick's line): a simulated one carries it ("+- ?%"
    where extrapolated), a measured one never carries the simulator's."""
    if not is_simulated(point, metric):
        return ""
    return " +- ?%" if extrapolated(error, point) else error_suffix(error, metric)


def figure_bar(error: dict | None, points, point, metric: str) -> str:
    """The error bar after one figure of a column: its own where the header carries none (mixed sources),
    and "+- ?%" on an extrapolated figure under a header that states an error."""
    header = header_bar(error, points, metric)
    if not header:
        return point_bar(error, point, metric)
    return " +- ?%" if extrapolated(error, point) and header != " +- ?%" else ""


def change_error_pct(error: dict | None, point, base, metric: str) -> float | None:
    """The simulator's stated error, in percent, on a change of "time_s" or "energy_kj" from `base` to
    `point` when either figure is simulated (a change cannot be known better than its figures); None
    for measured figures or a metric the profile states no error for."""
    if not error or not (is_simulated(point, metric) or is_simulated(base, metric)):
        return None
    if extrapolated(error, point) or extrapolated(error, base):
        return None  # the error was not measured on one of them: no change is known to lie within it
    return error.get(f"{metric}_pct")


# The figures every report shows with an error bar: one the calibration did not fit shows "+- ?%",
# which must not be left unexplained.
_SHOWN_WITH_BARS = ("time_s_pct", "energy_kj_pct")


def _error_words(key: str, pct: float) -> str:
    """"time +- 3.4%", "GPU power +- 2.3% (the GPU alone, as NVML reads it)": a metric's words with its qualifier last."""
    words, _, qualifier = _METRIC_WORDS.get(key, key).partition(" (")
    return f"{words} +- {pct_text(pct)}%" + (f" ({qualifier}" if qualifier else "")


def error_sentence(error: dict | None) -> str | None:
    """One line on how far the simulated figures can be trusted, or None for measured studies."""
    if error is None:
        return None
    if not error:
        return ("Simulated figures carry an unknown error (+- ?%): this hardware profile was not calibrated "
                "(`autotune calibrate` measures the simulator's error and writes it to the profile).")
    if WHY_UNKNOWN in error:
        return f"Simulated figures carry an unknown error (+- ?%): this hardware profile was {error[WHY_UNKNOWN]}."
    parts = ", ".join(_error_words(key, value) for key, value in error.items() if key not in _NOT_PERCENTAGES)
    # A mean, not a bound: single left-out figures of the shipped gh200 profile were 10-13% off.
    sentence = (f"Simulated figures carry the profile's leave-one-out error, a mean over the configurations it was "
                f"calibrated on: {parts} (single figures can be further off; the profile's header names the worst); "
                "changes against the baseline within it are marked." + scope_sentence(error) + tie_rule_sentence(error))
    unknown = [_METRIC_WORDS[key] for key in _SHOWN_WITH_BARS if key not in error]
    if unknown:
        words = " and ".join(unknown)
        sentence += (f" The {words} error is unknown (+- ?%): the profile's calibration did not fit {words} "
                     "(no measured figure of it; estimated energy is skipped unless --allow-estimated-energy).")
    return sentence


def tie_sentence(tied_with: list[int]) -> str:
    if not tied_with:
        return ""
    return f"tie with {trials_text(tied_with)} within the simulator's error"
