"""Error bars on simulated figures: the hardware profile's cross-validated error (`autotune calibrate`
writes it to [simulator_error]), and the picks that error cannot tell apart from another point.

A simulated "18.4 min" is "18.4 min +- 8%" when the profile's leave-one-out time error is 8%; a pick
whose time (fastest), energy (least energy; max-slowdown, within its time bound) or both (the other
picks) lie within that error of another point's is a tie, not a ranking (whichever of the two is
simulated): any feasible point for the first two, one within the bound for max-slowdown, a front point
for the others (compared_points). Measured studies carry no simulator
error: their spread over repeats is in report.noise, and picks within it of such a point are ties too
(report.within_noise.noise_ties).

A profile `autotune calibrate` wrote without [simulator_error] (its left-out error was not reliable,
or not computed) shows "+- ?%" as an uncalibrated one does, but its error sentence says it was
calibrated and why its error is not known, from a note calibrate leaves in its description.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autotune.candidate import SM_CLOCK_UNTOUCHED
from autotune.hardware.profile import (ERROR_SCOPE_BY_MODEL, ERROR_SCOPE_NOTE, IGNORED_CALIBRATED_ON_NOTE,
                                       IGNORED_ERROR_NOTE, with_description_note)
from autotune.report.picks import listed, trials_text
from autotune.counted import counted
from autotune.workload import default_precision

if TYPE_CHECKING:  # light module: `autotune space` uses error_suffix without loading the study layer
    from autotune.report.study_points import StudyView

# Which figure decides each pick; the picks that trade both off need both apart to rank. Max-slowdown chooses by
# energy alone among the points within its time bound (trial 63 #17: judged by both, against the front, a lead of
# 0.2% in energy inside +- 3.3% over an off-front point in its bound was no tie, while fastest's lead in time was).
_DECIDED_BY = {"fastest": ("time_s",), "min_energy": ("energy_kj",), "max_slowdown": ("energy_kj",)}
_BOTH = ("time_s", "energy_kj")
# The power error is of the GPU's own power (calibrate's power_w, NVML's reading): "power +- 2.3%" on a GH200 study read
# as the module power its energy and power limit are of, whose error was 3.3% (trial72 #11).
_METRIC_WORDS = {"time_s_pct": "time", "energy_kj_pct": "energy", "tflops_pct": "TFLOP/s",
                 "power_w_pct": "GPU power (the GPU alone, as NVML reads it)"}


# The key of a simulator_error dict (pareto.json's too) that says why a calibrated profile states no error;
# it holds no percentage, so every figure still shows "+- ?%" and no pick is called a tie.
WHY_UNKNOWN = "why_unknown"

# The note `autotune calibrate -o` appends to the description of a profile it writes without
# [simulator_error]. The description is the one free-text key a profile (and the copy a study keeps of
# it) has: a key of its own would change the profile's schema for a sentence.
_CALIBRATE_NOTE = (r"calibrated \(from [^()]*\), error not (?:known reliably|computed \(--no-loo\)|measured \(fitted to "
                   r"simulated figures, a test of the fit\))")
# Either note says why no error is stated; a recalibration's replaces both (an ignored error's reason is stale once
# calibrate wrote the profile again).
_NOTE = re.compile(f"(?:{_CALIBRATE_NOTE}|{IGNORED_ERROR_NOTE.pattern})")


# The note `autotune calibrate -o` appends to the description of a profile whose error it writes: the models
# and knob values of the configurations that error was measured on. A "+- 2%" a study repeats on every
# figure read as an accuracy for configurations nothing measured (a newcomer's calibration on recompute,
# micro-batch 1 and 4 vouched for an offload_async, micro-batch 8 pick).
_SCOPE = ERROR_SCOPE_NOTE
SCOPE_KEY = "measured_on"  # its key in a simulator_error dict (pareto.json's too): words, not a percentage
# Its words where the profile records no scope (one an older calibrate -o wrote; a study's copy of an older gh200.toml
# that hardware/load.py cannot match to a shipped one), and the one item each simulated point then lists as
# extrapolated: read as measured everywhere, such an error vouched for power limits and ZeRO stages it was never
# measured on (trial67 #12). Nothing shows that it holds for any configuration, so every simulated figure shows +- ?%.
UNRECORDED_SCOPE = "configurations not recorded"
_COVERS_NOTHING = {"model": []}  # measured_scope's scope for it: no model, so no configuration, lies inside it
# The knobs, and the GPU count (all nodes', as [calibrated_on] counts it: no knob, but an error measured on one GPU
# of a node vouched for 8 on it, the node count alike), in the order of the words.
_SCOPE_KNOBS = (("zero_stage", "ZeRO"), ("optimizer_offload", "optimizer offload"), ("activation_checkpointing",
                "checkpointing"), ("sp_degree", "SP"), ("micro_batch", "micro-batch"), ("nodes", "nodes"),
                ("gpus", "GPUs"), ("power_limit", "power limit"), ("sm_clock_mhz", "SM clock"))
# The workload the configurations ran, after the knobs: one configuration's simulated TFLOP/s moved 38% between 30
# and 120 frames, and fp32 ran at a peak nothing measured, each quoted with the error measured at 60 frames in bf16
# (trial72 #3). Not kept per model: a study runs one workload on all its configurations.
_SCOPE_WORKLOAD = (("frames", "frames"), ("text_tokens", "text tokens"), ("precision", "precision"))


def _ordered(values) -> list[str]:
    """Values as a scope holds them: text, numbers by size, then words by name."""
    return [str(v) for v in sorted(values, key=lambda v: (isinstance(v, str), v))]


def _knob_lists(candidates) -> dict[str, list[str]]:
    knobs = [{**c.knobs.to_dict(), "gpus": c.gpus} for c in candidates]
    return {knob: _ordered({k[knob] for k in knobs}) for knob, _ in _SCOPE_KNOBS}


def workload_values(workload, cuda: bool) -> dict[str, str]:
    """{"frames": "60", "text_tokens": "256", "precision": "bf16"}: a study's workload as a scope judges it (a
    precision left out is the hardware's default, which the probes ran)."""
    return {"frames": str(workload.frames), "text_tokens": str(workload.text_tokens),
            "precision": workload.precision or default_precision(cuda)}


def scope_of(candidates) -> dict:
    """{"model": ["7b", "32b"], "zero_stage": ["3"], ..., "gpus": ["8"], ..., "frames": ["60"], ..., "by_model": {"7b":
    {"zero_stage": ["3"], ..., "gpus": ["4"], ...}, ...}}: the models (by size), knob values (numbers by size, words
    by name), GPU counts and workload the configurations a calibration measured cover, and each model's own knob
    values and GPU counts; what `calibrate -o` records in the profile's [error_measured_on] and its description's note
    says in words. By model, as docs/calibration.md's "an error measured on one GPU vouches for no figure on 8" asks:
    the union alone vouched for 7b on 64 GPUs, measured on 4 and 8, because 72b ran on 64 (trial72 #3)."""
    candidates = list(candidates)
    models = list(dict.fromkeys(c.model.name for c in sorted(candidates, key=lambda c: c.model.params())))
    workloads = [workload_values(c.workload, c.hardware.cuda) for c in candidates]
    return {"model": models, **_knob_lists(candidates),
            **{key: _ordered({w[key] for w in workloads}) for key, _ in _SCOPE_WORKLOAD},
            ERROR_SCOPE_BY_MODEL: {model: _knob_lists([c for c in candidates if c.model.name == model])
                                   for model in models}}


def scope_words(scope: dict) -> str:
    """"7b/32b with ZeRO 3, optimizer offload none/sync, ..., frames 60, text tokens 256, precision bf16": a scope
    (scope_of's) in words; with each model's own values after its name where they are fewer than all models' ("7b
    (micro-batch 4/8, GPUs 4/8), 32b (...) with ...")."""
    parts = [f"{words} {'/'.join(scope[knob])}" for knob, words in (*_SCOPE_KNOBS, *_SCOPE_WORKLOAD) if knob in scope]
    by_model = scope.get(ERROR_SCOPE_BY_MODEL)
    if not by_model:
        return f"{'/'.join(scope['model'])} with {', '.join(parts)}"

    def named(model: str) -> str:
        own = [f"{words} {'/'.join(by_model[model][knob])}" for knob, words in _SCOPE_KNOBS
               if knob in by_model.get(model, {}) and knob in scope and list(by_model[model][knob]) != list(scope[knob])]
        return f"{model} ({', '.join(own)})" if own else model

    return f"{', '.join(named(model) for model in scope['model'])} with {', '.join(parts)}"


def scope_note(candidates) -> str:
    """"error measured on 7b/32b with ZeRO 3, optimizer offload none/sync, ...": the description's note on what the
    configurations a calibration measured cover (no semicolon: the description's separator)."""
    return f"error measured on {scope_words(scope_of(candidates))}"


# Its key in a simulator_error dict (pareto.json's too): {trial (as a string, JSON's keys): ["power limit 0.7", ...]},
# the points whose configuration holds a model or knob value the error was not measured on. Their figures
# show "+- ?%" and are neither tied nor marked within the error: a power-limited pick's "+- 3.4%" vouched
# for a figure no calibration had measured (the shipped gh200 error holds for power limit 1.0 alone). A pick's
# lead over another pick that is smaller than the measured error is flagged instead (report.near_ties).
EXTRAPOLATED_KEY = "extrapolated"
# Its key in profile_error's dict: the profile's [error_measured_on] (scope_of's), which measured_scope reads; dropped
# from the dict a study's report keeps (simulator_error), whose words are SCOPE_KEY's.
SCOPE_VALUES_KEY = "measured_on_values"
_NOT_PERCENTAGES = (SCOPE_KEY, EXTRAPOLATED_KEY, SCOPE_VALUES_KEY)


def scope_values(scope: str) -> dict[str, list[str]] | None:
    """{"model": ["7b", "32b"], "zero_stage": ["3"], ...} from a scope note's words ("7b/32b with ZeRO 3,
    ..."), or None where they do not read as scope_note writes them (a hand-edited description). For a profile
    from before [error_measured_on]: the words are ambiguous where a model's name holds "/" (every HF config's,
    "... SigLIP so400m/14") or " with ", so the knobs are read after the last " with " (no knob's words hold it)
    and every run of "/"-joined names counts as a model ("a/b/c": a, b, c, a/b, b/c, a/b/c)."""
    models, found, knob_text = scope.rpartition(" with ")
    if not found:
        return None
    names = models.split("/")
    values = {"model": ["/".join(names[i:j]) for i in range(len(names)) for j in range(i + 1, len(names) + 1)]}
    for part in knob_text.split(", "):
        for knob, words in (*_SCOPE_KNOBS, *_SCOPE_WORKLOAD):
            if part.startswith(words + " ") and knob not in values:
                values[knob] = part[len(words) + 1:].split("/")
                break
        else:
            return None
    return values


def measured_scope(error: dict) -> dict[str, list[str]] | None:
    """What a stated error (profile_error's) was measured on, by knob; None where it does not say."""
    if SCOPE_VALUES_KEY in error:
        return error[SCOPE_VALUES_KEY]
    if error.get(SCOPE_KEY) == UNRECORDED_SCOPE:
        return _COVERS_NOTHING
    return scope_values(error[SCOPE_KEY]) if SCOPE_KEY in error else None


def _same_value(value, measured: str) -> bool:
    """A knob value against a scope's word for it: 1 and "1.0" are one power limit."""
    try:
        return float(value) == float(measured)
    except (TypeError, ValueError):
        return str(value) == measured


def _number_first(value: str) -> tuple:
    """Sort key: numbers by size ("2" before "16"), then words by name."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


def outside_scope(scope: dict[str, list[str]], model: str, params: dict, max_clock_mhz: int = 0,
                  gpus: int | None = None, workload: dict | None = None) -> list[str]:
    """["power limit 0.7", "7b with GPUs 64", "frames 30", ...]: what of this configuration (its knobs, `params`, all
    nodes' `gpus`, and the study's `workload`, workload_values') the error was not measured on: judged by its model's
    own values where the scope records them (a value measured on another model only is "7b with GPUs 64"), else by
    all models'. A knob its params do not name (a record from before the knob existed) is not counted against it, nor
    is its GPU count or workload by a scope that does not record one (a profile from before it did: scope_sentence
    says so). A clock cap at the device's highest clock (`max_clock_mhz`, the profile's) is the clock `max` is: the
    simulator gives it the same figures, and it was shown "+- ?%" as an extrapolation."""
    if not scope["model"]:  # _COVERS_NOTHING: not what lies outside, but that nothing was recorded inside
        return [UNRECORDED_SCOPE]
    if max_clock_mhz and params.get("sm_clock_mhz") == max_clock_mhz:
        params = {**params, "sm_clock_mhz": SM_CLOCK_UNTOUCHED}
    if gpus is not None:
        params = {**params, "gpus": gpus}
    outside = [] if model in scope["model"] else [f"model {model}"]
    own = (scope.get(ERROR_SCOPE_BY_MODEL) or {}).get(model, {})
    for knob, words in _SCOPE_KNOBS:
        if knob not in params or knob not in scope:
            continue
        if not any(_same_value(params[knob], v) for v in scope[knob]):
            outside.append(f"{words} {params[knob]}")
        elif knob in own and not any(_same_value(params[knob], v) for v in own[knob]):
            outside.append(f"{model} with {words} {params[knob]}")
    for key, words in _SCOPE_WORKLOAD:
        if workload and key in workload and key in scope and not any(_same_value(workload[key], v) for v in scope[key]):
            outside.append(f"{words} {workload[key]}")
    return outside


def with_scope_note(description: str, note: str | None) -> str:
    """The description with `note` in place of any earlier scope note."""
    return with_description_note(description, _SCOPE, note)


def outside_words(error: dict | None, trials) -> str:
    """"power limit 0.7/0.8, model my-14b": what of `trials`' configurations the stated error was not measured on."""
    if scope_unrecorded(error):  # said after "not measured at", as the knob values are
        return "any configuration the profile records (it predates the record of what its error was measured on)"
    outside = (error or {}).get(EXTRAPOLATED_KEY) or {}
    values: dict[str, set[str]] = {}  # "power limit": {"0.7", "0.8"}, said as "power limit 0.7/0.8"
    for trial in trials:
        for item in outside.get(str(trial), []):
            words, value = item.rsplit(" ", 1)
            values.setdefault(words, set()).add(value)
    return ", ".join(f"{words} {'/'.join(sorted(vs, key=_number_first))}" for words, vs in values.items())


def scope_unrecorded(error: dict | None) -> bool:
    """Whether a stated error's profile records no scope (UNRECORDED_SCOPE): no simulated figure is within it."""
    return bool(error) and error.get(SCOPE_KEY) == UNRECORDED_SCOPE


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


def scope_sentence(error: dict | None) -> str:
    """" That error was measured on ...: other configurations' figures extrapolate it." or "". A scope from before
    the GPU count was recorded (no "GPUs" in its words) judges no figure by it, and says so rather than vouch for
    any GPU count."""
    if not error or SCOPE_KEY not in error:
        return ""
    if scope_unrecorded(error):  # as an unrecorded GPU count is said, but here no figure can be judged inside it
        return (f" That error was measured on {UNRECORDED_SCOPE} (the profile predates that record, so no figure is "
                "shown to lie within it; calibrate again to record it): every simulated figure extrapolates it.")
    scope = scope_values(error[SCOPE_KEY])
    # A workload from before it was recorded is said as the GPU count is: the error was quoted at any frames and
    # precision, and a reader must know no figure is judged by them (trial72 #3).
    missing = [what for key, what in (("gpus", "GPU count"), ("frames", "workload (frames, text tokens, precision)"))
               if scope is not None and key not in scope]
    unknown = (f" (its {' and '.join(missing)} not recorded: the profile predates that record, so no figure is judged "
               f"by {'them' if len(missing) > 1 else 'it'}; calibrate again to record it)") if missing else ""
    return f" That error was measured on {error[SCOPE_KEY]}{unknown}: other configurations' figures extrapolate it."


def calibration_note(configurations: int, fitted: int, on_bound: int, computed: bool, simulated: bool = False) -> str:
    """"calibrated (from 3 configurations for 13 constants), error not known reliably": why the profile
    calibrate writes has no [simulator_error] (`computed`: a left-out error was computed, and not trusted;
    `simulated`: the figures fitted were the simulator's own, --allow-simulated)."""
    bound = f", {on_bound} ended on a bound" if on_bound else ""
    why = ("measured (fitted to simulated figures, a test of the fit)" if simulated
           else "known reliably" if computed else "computed (--no-loo)")
    return f"calibrated (from {counted(configurations, 'configuration')} for {counted(fitted, 'constant')}{bound}), error not {why}"


def with_calibration_note(description: str, note: str | None) -> str:
    """The description with `note` in place of any earlier one (a recalibration's is the one that holds, with the
    [calibrated_on] it writes)."""
    return with_description_note(with_description_note(description, IGNORED_CALIBRATED_ON_NOTE, None), _NOTE, note)


def _why_unknown(hardware) -> str:
    """Why a profile states no error, and where to read more: why its [simulator_error] was ignored when read (the
    warning's reason, kept in its description), else why calibrate wrote none (its file's header)."""
    ignored = IGNORED_ERROR_NOTE.search(hardware.description)
    if ignored:
        return f"{ignored.group(0)} ({hardware.source})" if hardware.source else ignored.group(0)
    found = _NOTE.search(hardware.description)
    why = found.group(0) if found else f"calibrated (from '{hardware.calibrated_from}'), error not stated"
    return f"{why}: see its header ({hardware.source})" if hardware.source else f"{why}: see its file's header"


def simulator_error(view: "StudyView") -> dict | None:
    """{'time_s_pct': ..., ...} of the profile when some figure is simulated (empty: not calibrated;
    {WHY_UNKNOWN: ...}: calibrated, with no error it can vouch for); None else."""
    if not any(p.source == "simulated" or p.energy_source == "simulated" for p in view.points):
        return None
    error = profile_error(view.settings.hardware)
    if WHY_UNKNOWN in error and view.settings.hardware.calibrated_on:
        simulated = [p for p in view.points if is_simulated(p, "time_s") or is_simulated(p, "energy_kj")]
        nodes = {p.params.get("nodes", 1) for p in simulated}
        outside = outside_calibration(view.settings.hardware.calibrated_on, view.settings.model.name,
                                      {n * view.settings.gpus_per_node for n in nodes}, nodes)
        if outside:
            error[WHY_UNKNOWN] = _with_calibrated_on(error[WHY_UNKNOWN], outside)
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


def outside_calibration(calibrated_on: dict, model: str, gpu_counts, node_counts=()) -> str | None:
    """"calibrated on 1.5b, 1 GPU, 1 node only: this study's model 32b and 32 GPUs are outside it": where a study's
    model, GPU counts or node counts lie outside what its profile was fitted on ([calibrated_on]), else None. A profile
    fitted on one GPU of a 1.5B model drove a 32B study on 32 GPUs saying only "calibrated (from 10 configurations ...)"
    (trial64 #7): its link, overlap and ZeRO-3 constants were never fitted; nor are its inter-node link's on one node,
    whatever its GPU count (8 GPUs on 1 node passed a study of 8 GPUs on 2: trial65 #7)."""
    if not calibrated_on:
        return None
    gpus = [n for n in sorted(gpu_counts) if str(n) not in calibrated_on["gpus"]]
    nodes = [n for n in sorted(node_counts) if str(n) not in calibrated_on["nodes"]]
    outside = (([] if model in calibrated_on["model"] else [f"model {model}"]) + ([_counts(gpus, "GPU")] if gpus else [])
               + ([_counts(nodes, "node")] if nodes else []))
    if not outside:
        return None
    on = ", ".join(["/".join(calibrated_on["model"]), _counts(calibrated_on["gpus"], "GPU"),
                    _counts(calibrated_on["nodes"], "node")])
    one = len(outside) == 1 and (not gpus or gpus == [1]) and (not nodes or nodes == [1])
    return f"calibrated on {on} only: this study's {listed(outside)} {'is' if one else 'are'} outside it"


def _counts(values, noun: str) -> str:
    """"1 GPU", "8/16 GPUs"."""
    numbers = [str(v) for v in values]
    return f"{'/'.join(numbers)} {noun}{'' if numbers == ['1'] else 's'}"


def _with_calibrated_on(why: str, outside: str) -> str:
    """The profile's reason for no error with what it was calibrated on after calibrate's note ("calibrated (from 10
    configurations ...) on 1.5b, 1 GPU, 1 node only: ... outside it; error not known reliably"), or after a reason of
    another kind. Put in place of its "calibrated", the note's parenthesis followed "outside it" and read as if it
    described the study (trial65 #20)."""
    close = why.find("), ") if why.startswith("calibrated (") else -1
    if close < 0:
        return f"{why}; {outside}"
    return f"{why[:close + 1]} {outside[len('calibrated '):]}; {why[close + 3:]}"


def extrapolated(error: dict | None, point) -> bool:
    """Whether `point`'s configuration lies outside what the stated error was measured on."""
    return bool(error) and str(point.trial) in error.get(EXTRAPOLATED_KEY, {})


def profile_error(hardware) -> dict:
    """The error a profile states for its simulated figures: {'time_s_pct': ..., ...}; {} not calibrated;
    {WHY_UNKNOWN: ...} calibrated, with no error it can vouch for (for the study report and `autotune space`)."""
    if not hardware.simulator_error and hardware.calibrated_from:  # a copied table's profile: "not calibrated", as it is
        return {WHY_UNKNOWN: _why_unknown(hardware)}
    error = dict(hardware.simulator_error)
    if error and hardware.error_measured_on:  # recorded as data by calibrate -o: read as such, not from the words
        scope = {key: ({model: {k: list(v) for k, v in lists.items()} for model, lists in values.items()}
                       if key == ERROR_SCOPE_BY_MODEL else list(values))
                 for key, values in hardware.error_measured_on.items()}
        error[SCOPE_KEY], error[SCOPE_VALUES_KEY] = scope_words(scope), scope
        return error
    scope = _SCOPE.search(hardware.description)
    if error and scope:
        error[SCOPE_KEY] = scope.group(1).strip()
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
