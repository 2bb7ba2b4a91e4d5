"""The calibration report: each observation's error before and after the fit and left out of it, the
mean absolute percentage error per metric and its worst left-out figure, and the fitted constants
(terminal text or JSON)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from autotune.counted import counted
from autotune.calibrate.fit import Calibration, Fit, mape_by_metric, to_unit, worst_by_metric
from autotune.calibrate.memory_error import memory_lines
from autotune.calibrate.unseen_power import unseen_power_text
from autotune.candidate import configuration_text
from autotune.hardware import SIMULATOR_CONSTANTS
from autotune.report.error_scope import scope_of, scope_words

# The [simulator_error] keys a profile carries, from the leave-one-out error of these metrics. The module power's too:
# on GH200 the energy and the power limit are the module's, whose error (3.3%) was printed and not written, so a study
# stated only the GPU's (2.3%) and no report said how far off the power its limit is of was (trial72 #11).
ERROR_KEYS = {"time_s": "time_s_pct", "energy_kj": "energy_kj_pct", "tflops": "tflops_pct", "power_w": "power_w_pct",
              "module_power_w": "module_power_w_pct"}
_SPECS = {spec.name: spec for spec in SIMULATOR_CONSTANTS}


def _rounded(values: dict[str, float], digits: int = 2) -> dict[str, float]:
    return {k: round(float(v), digits) for k, v in values.items()}


# How close to a bound a fitted constant must end to be on it: this share of the way from the bound to the
# constant's default, in the unit the fit searches (logarithmic for constants spanning decades). A share of the whole
# range counted step_overhead_s [0, 5] at 2.8 ms, 1-4% of a CPU study's steps, as "at 0" (trial72 #12), and a CPU
# Adam rate 10x its floor of 1e7 as on it; the default is the constant's expected scale.
BOUND_SHARE = 1e-3


def bound_reached(name: str, value: float) -> str | None:
    """"low" or "high" where the fitted `value` ended on that bound of the constant (BOUND_SHARE), else None."""
    spec, unit = _SPECS[name], to_unit(name, value)
    default = to_unit(name, spec.default)
    for side, edge in (("low", 0.0), ("high", 1.0)):
        # A default on the bound itself leaves no scale of its own: a thousandth of the range then.
        scale = abs(default - edge) or 1.0
        if abs(unit - edge) <= BOUND_SHARE * scale:
            return side
    return None


def at_bound(constants: dict[str, float], names) -> list[str]:
    """Fitted constants that ended on a bound: the data push them further than physics allows, which
    points at a mechanism the model lacks rather than at a better value."""
    return [name for name in names if bound_reached(name, constants[name])]


def at_floor(constants: dict[str, float], on_bound: list[str]) -> list[str]:
    """The constants of `on_bound` that ended at a lower bound of 0: a cost's floor (none of it in the figures)."""
    return [name for name in on_bound if _SPECS[name].low == 0 and bound_reached(name, constants[name]) == "low"]


class Floored(NamedTuple):
    """A constant that ended at its floor of 0 (at_floor): the base profile's value, the fitted one, and what the
    figures show of it (floor_effect): how much the figures it moves would change at `probe` (the base's value, or its
    default where the base has none of it), least, mean and most, in percent, against `scatter_pct`, their mean
    distance from the fit."""
    base: float
    fitted: float
    probe: float = 0.0
    least_pct: float = 0.0
    mean_pct: float = 0.0
    most_pct: float = 0.0
    scatter_pct: float = 0.0

    @property
    def hidden_below(self) -> float:
        """The value under which the constant's mean effect is within the figures' scatter: what they cannot tell
        from 0 (its effect grows about in proportion to it)."""
        return self.probe * self.scatter_pct / self.mean_pct if self.mean_pct > 0 else float("inf")


# Where a cost that ended at 0 would weigh more than in the figures fitted: what the left-out error cannot speak for.
_WEIGHS_MORE = {"step_overhead_s": "more optimizer steps per sample, as with a smaller global batch"}


def floor_effect(cal: Calibration, fit: Fit, name: str) -> Floored:
    """`name` (at its floor) back at the base profile's value, the rest as fitted: how much each absolute figure it
    moves changes, against how far those figures lie from the fit. A recipe's micro-batches 1 and 4 left
    step_overhead_s at 0 for a true 50 ms, 0.2-0.6% of every run, under 1% noise, and the user was told only that
    it "ended on a bound" (trial72 #1)."""
    base = cal.base_constants[name]
    probe = base if base > 0 else _SPECS[name].default
    moved = cal.predict({**fit.constants, name: probe})
    absolute = np.array([o.relative_to is None and o.bound is None for o in cal.observations])
    change = 100.0 * np.abs(moved / fit.predictions - 1.0)
    shown = absolute & (change > 1e-6)
    if not shown.any():
        return Floored(base, fit.constants[name], probe)
    scatter = np.abs(cal.pct_errors(fit.predictions))[shown]
    return Floored(base, fit.constants[name], probe, float(change[shown].min()), float(change[shown].mean()),
                   float(change[shown].max()), float(scatter.mean()))


def _floored_text(name: str, f: Floored) -> str:
    """One floored constant's part of the warning: what the figures show of it, why its error is not written, and
    the fix."""
    if f.most_pct > 0:
        shown = (f"at {f.probe:g} it would change the figures it moves by {f.least_pct:.1f}-{f.most_pct:.1f}% (mean "
                 f"{f.mean_pct:.1f}%), against their {f.scatter_pct:.1f}% scatter about the fit: a value under about "
                 f"{f.hidden_below:.2g} hides in that scatter, and these figures cannot tell it from 0")
    else:
        shown = f"at {f.probe:g} it would change no figure fitted"
    where = _WEIGHS_MORE.get(name, "a larger share of a figure")
    return (f"{name} (base {f.base:g}, fitted {f.fitted:.2g}) ended at its floor of 0 ({shown}); the left-out error "
            f"is that of a profile without it, and would not hold where it weighs more ({where}); held at the base "
            "profile's value the other constants must make up for it: where 0 is implausible, hold it at a value you "
            "know or the figures allow (a copy of the base profile with it set so, then --hold NAME, and the error "
            "is written if nothing else warns), else measure configurations that exercise it")


def reliability_warning(configurations: int, fitted: int, on_bound: list[str],
                        floored: dict[str, Floored] | None = None) -> str | None:
    """One line when the stated error cannot be trusted: fewer configurations than constants fitted
    leaves the constants free to fit those few (and the mean over a few left-out folds says little of
    the next candidate); constants on their bounds mean the model could not follow the figures. `floored`:
    those of `on_bound` that ended at 0 (at_floor), with what the figures show of each (floor_effect)."""
    floored = floored or {}
    reasons, fixes = [], []
    if configurations < fitted:
        reasons.append(f"{counted(configurations, 'configuration')} with figures for {counted(fitted, 'constant')} fitted")
        fixes.append("measure more configurations (at least as many as the constants fitted)")
    if on_bound:
        reasons.append(f"{counted(len(on_bound), 'constant')} ended on a bound")
    held = [name for name in on_bound if name not in floored]
    if held:
        # More of the same configurations do not move a constant off its bound (a newcomer's trial: 32
        # configurations for 20 constants, told to measure more): the figures ask for a mechanism it lacks.
        names = ", ".join(held)
        fixes.append(f"hold {names} at the base profile's value (--hold {' --hold '.join(held)}) where the "
                     f"simulator lacks the mechanism the figures ask of it, or check the figures of the configurations "
                     f"that exercise it")
    if floored:
        # A cost at 0 is what the figures show of it, not a mechanism missing: held at the base's value instead (a CPU
        # study's 0.2 s step overhead, longer than its whole measured steps), it pushed three more constants onto
        # their bounds and the left-out error from 37% to 147% (trial61 #6).
        # The fitted value, not a bare "0": the words and bound_reached's judgement say the same (trial72 #12).
        fixes += [_floored_text(name, f) for name, f in floored.items()]
    if not reasons:
        return None
    # Not written (commands/calibrate.py): a "+- 2%" a study repeats on every figure, and ties drawn with
    # it, would claim an accuracy nothing established; "+- ?%" is what is known.
    return (f"{' and '.join(reasons)}: the left-out error is not reliable, so -o does not write it to "
            f"[simulator_error] (a study on the profile shows +- ?%); {'; '.join(fixes)} and calibrate again.")


def calibrated_on(candidates) -> dict[str, list[str]]:
    """{"model": ["1.5b"], "gpus": ["1"], "nodes": ["1"]}: the models (by size) and the GPU and node counts (by number)
    of the configurations fitted."""
    candidates = sorted(set(candidates), key=lambda c: c.model.params())
    return {"model": list(dict.fromkeys(c.model.name for c in candidates)),
            "gpus": [str(n) for n in sorted({c.gpus for c in candidates})],
            "nodes": [str(n) for n in sorted({c.knobs.nodes for c in candidates})]}


def worst_left_out(cal: Calibration, left_out_pct: np.ndarray) -> dict[str, dict]:
    """Per metric, the left-out figure furthest off: the mean hides it (a trial's CPU study showed a 42.8%
    mean and not the one configuration off by far more), and it is what a user must weigh before trusting
    the profile for a configuration like it. Signed: + the simulator predicted too much."""
    worst = {}
    for metric, i in worst_by_metric(cal.observations, left_out_pct).items():
        o = cal.observations[i]
        worst[metric] = {
            "error_pct": round(float(left_out_pct[i]), 2),
            "id": o.id,
            "source": o.source,
            "configuration": configuration_text(o.candidate),
            "relative_to_baseline": o.relative_to is not None,
        }
    return worst


def calibration_document(cal: Calibration, fit: Fit, loo: np.ndarray | None, extra: dict) -> dict:
    before = cal.pct_errors(cal.predict(cal.base_constants))
    after = cal.pct_errors(fit.predictions)
    left_out = cal.pct_errors(loo) if loo is not None else None
    on_bound = at_bound(fit.constants, fit.fitted)
    scope = scope_of([c for o in cal.observations for c in (o.candidate, o.relative_to) if c is not None])
    rows = []
    for i, o in enumerate(cal.observations):
        rows.append({
            "id": o.id,
            "source": o.source,
            "metric": o.metric,
            "relative_to_baseline": o.relative_to is not None,
            "bound": o.bound,
            "approximate": o.approximate,
            "derived": o.derived,
            "observed": round(o.value, 6),
            "error_before_pct": round(float(before[i]), 2),
            "error_fit_pct": round(float(after[i]), 2),
            "error_loo_pct": None if left_out is None else round(float(left_out[i]), 2),
        })
    return {
        "hardware": cal.base.name,
        "observations": len(cal.observations),
        "sources": sorted({o.source for o in cal.observations}),
        "before_mape": _rounded(mape_by_metric(cal.observations, before)),
        "fit_mape": _rounded(mape_by_metric(cal.observations, after)),
        "loo_mape": None if left_out is None else _rounded(mape_by_metric(cal.observations, left_out)),
        "loo_worst": None if left_out is None else worst_left_out(cal, left_out),
        "constants": {name: float(f"{value:.6g}") for name, value in fit.constants.items()},
        "defaults": {name: float(f"{value:.6g}") for name, value in cal.base_constants.items()},
        "fitted": list(fit.fitted),
        "at_bound": on_bound,
        "configurations": cal.configurations,
        # What the left-out error vouches for: in words (the note a profile -o writes ends its description on) and
        # by model and knob (its [error_measured_on], which reports judge each configuration by).
        "measured_on": f"error measured on {scope_words(scope)}",
        "measured_on_values": scope,
        # What the constants were fitted on, written to every profile -o writes ([calibrated_on]), its error or not: a
        # profile fitted on one 1.5B model on one GPU drove a 32B study on 32 GPUs without a word (trial64 #7).
        "calibrated_on": calibrated_on(c for o in cal.observations for c in (o.candidate, o.relative_to) if c is not None),
        # A sentence when the fit is under-determined or pinned on bounds, else None.
        "reliability_warning": reliability_warning(cal.configurations, len(fit.fitted), on_bound,
                                                   {n: floor_effect(cal, fit, n) for n in at_floor(fit.constants, on_bound)}),
        "per_observation": rows,
        **extra,
    }


def profile_error(document: dict) -> dict[str, float]:
    """The [simulator_error] figures a calibrated profile carries: its leave-one-out error."""
    loo = document.get("loo_mape") or {}
    return {key: round(loo[metric], 1) for metric, key in ERROR_KEYS.items() if metric in loo}


def worst_text(document: dict) -> str:
    """The profile header's line on the worst left-out error per metric ("" without leave-one-out): the
    mean in [simulator_error] is what a figure's +- shows; the header keeps how far off the worst one was."""
    worst = document.get("loo_worst")
    if not worst:
        return ""
    return "\nWorst left-out error (%): " + ", ".join(f"{metric} {row['error_pct']:+.1f} ({row['id']})"
                                                     for metric, row in worst.items())


def _mape_line(title: str, mape: dict | None, why_not: str | None = None) -> str:
    if mape is None:
        return f"{title:<28} (not computed: {why_not or '--no-loo'})"
    return f"{title:<28} " + "  ".join(f"{metric} {value:5.1f}%" for metric, value in mape.items())


def _worse_after_fit(document: dict) -> list[str]:
    """A line where a metric's mean error grew in the fit: it minimises one robust loss over every figure
    (log ratios, outliers down-weighted, a weak pull towards each constant's default), not each metric's mean, and
    "calibration made energy worse" read as a fault (a newcomer's trial)."""
    before, after = document.get("before_mape") or {}, document.get("fit_mape") or {}
    worse = [metric for metric in after if metric in before and after[metric] > before[metric] + 0.05]
    if not worse:
        return []
    return [f"  ({', '.join(worse)} grew in the fit: it minimises one robust loss over every figure, outliers "
            "down-weighted and each constant pulled weakly towards its default, not each metric's mean)"]


def _worst_lines(document: dict) -> list[str]:
    """Under the means: per metric, the largest left-out error, its figure and its configuration."""
    worst = document.get("loo_worst")
    if not worst:
        return []
    lines = ["", "worst left out, per metric (the figure furthest off; +: predicted too high)"]
    for metric, row in worst.items():
        lines.append(f"  {metric:<15} {row['error_pct']:+7.1f}%  {row['id']}  ({row['configuration']})")
    return lines


def _row_error(row: dict, pct: float, width: int) -> str:
    """A figure's error in the table: "met" for a bound the prediction respects (shown as "+0.0%", it read as a
    figure predicted exactly: trial72 #2; fit.mape_by_metric leaves it out of the means)."""
    return f"{'met':>{width}}" if row["bound"] and pct == 0.0 else f"{pct:+{width - 1}.1f}%"


def report_text(document: dict) -> str:
    lines = [
        f"calibrating the simulator of '{document['hardware']}' against {document['observations']} observations "
        f"({', '.join(document['sources'])})",
    ]
    if document.get("base_profile"):  # which file: a study names its profile's path on the machine it ran on
        lines.append(f"  base profile: {document['base_profile']}")
    lines += [f"  left out: {line}" for line in document.get("left_out", [])]
    lines += [f"  skipped: {line}" for line in document.get("skipped", [])]
    lines += [f"  derived: {line}" for line in document.get("derived", [])]
    lines += [f"  default limit: {line}" for line in document.get("default_limits", [])]
    if document.get("held_without_power"):
        lines.append(f"  {unseen_power_text(document['held_without_power'])}")
    lines += [f"  copies: {line}" for line in document.get("copies", [])]
    lines += [f"  repeated: {line}" for line in document.get("repeated", [])]
    if document.get("loo_by") == "configuration":
        lines.append("  'left out': predicted by a fit that saw no figure of that configuration (the error quoted)")
    if document.get("not_run"):
        counts = ", ".join(f"{n} {status}" for status, n in document["not_run"].items())
        lines.append(f"  probes without figures ({counts}): they teach the memory estimate, not the simulator; not fitted")
    lines += ["", f"{'observation':<46} {'metric':<15} {'observed':>11} {'before':>8} {'fit':>8} {'left out':>9}"]
    for row in document["per_observation"]:
        observed = f"x{row['observed']:.4g}" if row["relative_to_baseline"] else f"{row['observed']:.5g}"
        marks = ("~" if row["approximate"] else "") + {"lower": ">", "upper": "<"}.get(row["bound"] or "", "")
        loo = (("n/a" if document.get("loo_skipped") else "") if row["error_loo_pct"] is None
               else _row_error(row, row["error_loo_pct"], 9))
        metric = f"{row['metric']} derived" if row.get("derived") else row["metric"]  # 15 wide: "power_w derived"
        lines.append(
            f"{row['id'][:46]:<46} {metric:<15} {marks + observed:>11} {_row_error(row, row['error_before_pct'], 8)} "
            f"{_row_error(row, row['error_fit_pct'], 8)} {loo:>9}"
        )
    lines += [
        "  (xR: a ratio to the study's baseline; ~: published as approximate; >: a lower bound; met: the prediction "
        "respects the bound, which measures no error and counts in no mean)",
        "",
        "mean absolute percentage error",
        _mape_line("  before (base profile)", document["before_mape"]),
        _mape_line("  after the fit", document["fit_mape"]),
        _mape_line(f"  left out, by {document['loo_by']}" if document.get("loo_by") else "  left out", document["loo_mape"],
                   document.get("loo_skipped")),
        *_worse_after_fit(document),
        *_worst_lines(document),
        *memory_lines(document.get("memory_estimate")),
        "",
        # Said whether or not the warning fires: a simulated dry run of a planned study tells how many
        # configurations to measure (docs/calibration.md, "Calibrate on your own cluster").
        f"{len(document['fitted'])} of {len(document['constants'])} constants fitted, from "
        f"{counted(document['configurations'], 'configuration')}: "
        # Which side of the need: "needs at least as many" read as unmet where it was met (trial61 #6).
        + ("enough for a reliable left-out error (at least as many configurations as constants fitted)"
           if document["configurations"] >= len(document["fitted"]) else
           "too few for a reliable left-out error, which needs at least as many configurations as constants fitted"),
        f"{'constant':<30} {'base':>12} {'fitted':>12}  bounds",
    ]
    for name, value in document["constants"].items():
        spec = _SPECS[name]
        fitted = f"{value:.4g}" if name in document["fitted"] else "(held)" if name in document.get("held", []) else "(not fitted)"
        flag = "  <- at its bound" if name in document["at_bound"] else ""
        lines.append(f"{name:<30} {document['defaults'][name]:>12.4g} {fitted:>12}  [{spec.low:g}, {spec.high:g}]{flag}")
    for name, why in (document.get("held_by_reference") or {}).items():
        lines += [f"{name} held at the base profile's value: {', '.join(document['sources'])} cannot pin it "
                  f"(--fit {name} fits it anyway):", f"  {why}"]
    # A cost at its floor of 0 is what the figures show of it (little or none), not more than a mechanism can give.
    floored = at_floor(document["constants"], document["at_bound"])
    pushed = [name for name in document["at_bound"] if name not in floored]
    if pushed:
        lines.append(
            f"{counted(len(pushed), 'constant')} ended on a bound: the figures ask for more than the model's "
            "mechanisms can give there (see docs/simulator.md, Calibration)."
        )
    if floored:
        lines.append(f"{counted(len(floored), 'constant')} ended at {'its' if len(floored) == 1 else 'their'} floor of 0 "
                     f"({', '.join(floored)}): the figures show "
                     "little or none of that cost (the warning says how little).")
    # The reliability warning is not among these lines: the command says it on stderr, as every warning.
    return "\n".join(lines) + "\n"
