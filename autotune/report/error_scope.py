"""What a profile's stated simulator error was measured on (its scope), and which configurations lie outside it.

`autotune calibrate -o` records the models, knob values, GPU counts and workload of the configurations it measured
the error on ([error_measured_on], and a note in words in the description); a study's figure of a configuration
outside them shows "+- ?%" (report.error_bars), and the error sentence says where the error was measured.
"""

from __future__ import annotations

from autotune.candidate import SM_CLOCK_UNTOUCHED
from autotune.hardware.profile import ERROR_SCOPE_BY_MODEL, ERROR_SCOPE_NOTE, with_description_note
from autotune.report.picks import listed
from autotune.workload import default_precision


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
# The knobs, the GPU count (all nodes', as [calibrated_on] counts it: no knob, but an error measured on one GPU
# of a node vouched for 8 on it, the node count alike) and the global batch, in the order of the words. The global
# batch is the workload's, kept per model as the knobs are: with the micro-batch and GPUs it sets the gradient
# accumulation steps, and a study at another --global-batch got the error as if measured there (the GH200 study ran
# one micro-step per step, at global batch 16-128; trial72 #3).
_SCOPE_KNOBS = (("zero_stage", "ZeRO"), ("optimizer_offload", "optimizer offload"), ("activation_checkpointing",
                "checkpointing"), ("sp_degree", "SP"), ("micro_batch", "micro-batch"), ("nodes", "nodes"),
                ("gpus", "GPUs"), ("power_limit", "power limit"), ("sm_clock_mhz", "SM clock"),
                ("global_batch", "global batch"))
# The workload the configurations ran, after the knobs: one configuration's simulated TFLOP/s moved 38% between 30
# and 120 frames, and fp32 ran at a peak nothing measured, each quoted with the error measured at 60 frames in bf16
# (trial72 #3). Not kept per model: a study runs one workload on all its configurations.
_SCOPE_WORKLOAD = (("frames", "frames"), ("text_tokens", "text tokens"), ("precision", "precision"))


def _ordered(values) -> list[str]:
    """Values as a scope holds them: text, numbers by size, then words by name."""
    return [str(v) for v in sorted(values, key=lambda v: (isinstance(v, str), v))]


def _knob_lists(candidates) -> dict[str, list[str]]:
    knobs = [{**c.knobs.to_dict(), "gpus": c.gpus, "global_batch": c.workload.global_batch} for c in candidates]
    return {knob: _ordered({k[knob] for k in knobs}) for knob, _ in _SCOPE_KNOBS}


def workload_values(workload, cuda: bool) -> dict[str, str]:
    """{"frames": "60", "text_tokens": "256", "precision": "bf16", "global_batch": "64"}: a study's workload as a scope
    judges it (a precision left out is the hardware's default, which the probes ran)."""
    return {"frames": str(workload.frames), "text_tokens": str(workload.text_tokens),
            "precision": workload.precision or default_precision(cuda), "global_batch": str(workload.global_batch)}


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
    (micro-batch 4/8, GPUs 4/8), 32b (...) with ..."), and after "with" only what the lists of all models add: a knob
    every model's own values are said for is not said again as their union, which judges none of their figures (the
    union's micro-batches, nodes and GPU counts followed each model's own in 370 characters of scope: trial72 #3)."""
    by_model = scope.get(ERROR_SCOPE_BY_MODEL) or {}

    def own(model: str) -> dict[str, str]:
        lists = by_model.get(model, {})
        return {knob: f"{words} {'/'.join(lists[knob])}" for knob, words in _SCOPE_KNOBS
                if knob in lists and knob in scope and list(lists[knob]) != list(scope[knob])}

    said = {model: own(model) for model in scope["model"]}
    parts = [f"{words} {'/'.join(scope[knob])}" for knob, words in (*_SCOPE_KNOBS, *_SCOPE_WORKLOAD)
             if knob in scope and not (by_model and all(knob in said[model] for model in scope["model"]))]
    if by_model:
        models = ", ".join(f"{model} ({', '.join(said[model].values())})" if said[model] else model
                           for model in scope["model"])
    else:
        models = "/".join(scope["model"])
    return f"{models} with {', '.join(parts)}" if parts else models


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
    if workload and "global_batch" in workload:  # judged with the knobs, by its model's own values
        params = {**params, "global_batch": workload["global_batch"]}
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


def scope_sentence(error: dict | None) -> str:
    """" That error was measured on ...: other configurations' figures extrapolate it." or "". A scope from before
    the GPU count was recorded judges no figure by it, and its words say so (unrecorded_words) rather than vouch for
    any GPU count."""
    if not error or SCOPE_KEY not in error:
        return ""
    if scope_unrecorded(error):  # as an unrecorded GPU count is said, but here no figure can be judged inside it
        return (f" That error was measured on {UNRECORDED_SCOPE} (the profile predates that record, so no figure is "
                "shown to lie within it; calibrate again to record it): every simulated figure extrapolates it.")
    return f" That error was measured on {error[SCOPE_KEY]}: other configurations' figures extrapolate it."


def unrecorded_words(scope: dict | None) -> str:
    """" (its GPU count and workload (...) not recorded: ...; nor its values per model, ...)" after a scope's words
    where the scope predates that record, or "". Judged from the scope's values (profile_error puts it in the words):
    read back from the words, a scope whose models' own lists say their GPU counts looked like one that records none."""
    # A workload from before it was recorded is said as the GPU count is: the error was quoted at any frames and
    # precision, and a reader must know no figure is judged by them (trial72 #3).
    if scope is None:
        return ""
    missing = [what for key, what in (("gpus", "GPU count"), ("global_batch", "global batch"),
                                      ("frames", "workload (frames, text tokens, precision)")) if key not in scope]
    said = [f"its {listed(missing)} not recorded: the profile predates that record, so no figure is judged by "
            f"{'them' if len(missing) > 1 else 'it'}"] if missing else []
    # Without each model's own lists, every model is judged by all models' values: the union vouched for 7b on 64 GPUs
    # because 72b ran there (trial72 #3), and an older scope said nothing of it. (A scope read from words counts a
    # model whose name holds "/" as several: scope_values.)
    if len(scope["model"]) > 1 and ERROR_SCOPE_BY_MODEL not in scope:
        said.append("nor its values per model" if missing else
                    "its values not recorded per model: the profile predates that record")
        said[-1] += ", so a value measured on one of its models counts for all of them"
    return f" ({'; '.join(said)}; calibrate again to record it)" if said else ""
