"""The checks `autotune compare` makes of a pareto.json before it compares anything: every value it reads, for
its type and its range, where it is read (as autotune.checks does for every file the tool reads).

A hand-edited or damaged file is one line naming the key, the value and what is allowed: a time of -106 s,
a ZeRO stage of 7 or a sample count of "2048" turned into "-151.2%", "ZeRO 2 -> 7" and "samples differ"
shown as real; a 1e308 kJ energy into an infinite percentage. Keys added since the first pareto.json
(`inputs`, `node_counts`, `schema_version`, `search`, ...) may be missing; where present they are checked."""

from __future__ import annotations

from autotune.backends.replay import MAX_SOLUTION_FIGURE, MIN_SOLUTION_FIGURE
from autotune.candidate import KNOBS, UNTOUCHED_DEVICE_SETTINGS, knob_value
from autotune.checks import MAX_COUNT, number_problem, shown
from autotune.measure.combine import SEPARATE_COMPONENTS
from autotune.workload import PRECISIONS, WORKLOAD_KEYS

# The knobs every point of a pareto.json names; a study from before the device knobs ran them untouched.
POINT_KNOBS = tuple(knob for knob in KNOBS if knob not in UNTOUCHED_DEVICE_SETTINGS)
# A figure past this is a typo or damage, and keeps every change in percent finite: a 1e308 kJ energy made "+inf%"
# and JSON's invalid `Infinity`. A point's time_s and energy_kj are to process the study's --samples (up to 1e12):
# they are read within replay's bounds for them (MIN_SOLUTION_FIGURE, MAX_SOLUTION_FIGURE), as its study's
# `export --measurements` is replayed.
MAX_FIGURE = float(MAX_COUNT)
_OBJECTIVES = ("time", "energy")
# Where a figure came from, as pareto.json labels it ("none": no trial has figures; "": a point without energy).
SOURCE_LABELS = ("simulated", "measured", "estimated", "unavailable", "none")


def document_problem(document) -> str | None:
    """What is wrong with a pareto.json's value for a comparison (a key missing, a value of the wrong type or out
    of range), as `key = value is ...; it must be ...`; else None."""
    if not isinstance(document, dict):
        return f"it holds a JSON {type(document).__name__}, not an object"
    for check in (_top_problem, _nodes_problem, _workload_problem, _points_problem, _picks_problem, _pick_rows_problem,
                  _objectives_problem, _provenance_problem, _default_limits_problem):
        problem = check(document)
        if problem:
            return problem
    # The sections a later autotune added: each may be missing or null; where present, an object of fields.
    for key, check in (("recommendation_parameters", _parameters_problem), ("simulator_error", _error_problem),
                       ("search", _search_problem), ("inputs", _inputs_problem)):
        section = document.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            return _wrong(key, section, "an object or null")
        if problem := check(section):
            return problem
    return None


def _is(value, kind) -> bool:
    """isinstance, where a bool is no int (JSON's true is not 1)."""
    return isinstance(value, kind) and not isinstance(value, bool)


def _wrong(key: str, value, allowed: str) -> str:
    text = shown(value)  # clipped: a `front` that is an object of every point would fill the screen, not name it
    return f"`{key}` = {text if len(text) <= 80 else text[:77] + '...'} is not {allowed}"


def _number(key: str, value, **bounds) -> str | None:
    problem = number_problem(value, **bounds)
    return f"`{key}` = {shown(value)} {problem}" if problem else None


def _count(key: str, value, low: int = 1) -> str | None:
    return _number(key, value, low=low, high=MAX_COUNT, integer=True, whole_literal=True)


def _top_problem(document: dict) -> str | None:
    # In JSON's words: "`workload` is not a dict" named Python's.
    for key, kind, words in (("model", str, "a string"), ("hardware", str, "a string"), ("workload", dict, "an object"),
                             ("backend", str, "a string"), ("front", list, "a list"), ("recommendations", dict, "an object")):
        if key not in document:
            return f"`{key}` is missing"
        if not _is(document[key], kind):
            return _wrong(key, document[key], words)
    for key in ("source", "energy_source"):
        if key not in document:
            return f"`{key}` is missing"
        if not _labels(document[key]):
            return _wrong(key, document[key], f"one of {', '.join(SOURCE_LABELS)} or a list of them")
    version = document.get("schema_version", 1)
    if not _is(version, int) or version < 1:
        return "`schema_version` is not a whole number >= 1"
    for key in ("calibrated_from", "hardware_file", "model_caveats", "note"):
        if document.get(key) is not None and not isinstance(document[key], str):
            return _wrong(key, document[key], "a string or null")
    if "feasible" in document and not isinstance(document["feasible"], list):
        return _wrong("feasible", document["feasible"], "a list")
    return None


def _labels(value) -> bool:
    return value in SOURCE_LABELS or (isinstance(value, list) and bool(value) and all(v in SOURCE_LABELS for v in value))


def _nodes_problem(document: dict) -> str | None:
    if "nodes" not in document:
        return "`nodes` is missing"
    for key in ("nodes", "node_counts", "gpus", "gpu_counts"):  # a count or a list ("nodes", "gpus" of an older file)
        if key in document and not _counts(document[key]):
            what = "node" if key.startswith("node") else "GPU"
            return f"`{key}` is not a {what} count or a list of them (whole numbers >= 1)"
    nodes, gpus = document.get("node_counts", document["nodes"]), document.get("gpu_counts", document.get("gpus"))
    nodes = [nodes] if isinstance(nodes, int) else nodes
    gpus = [gpus] if isinstance(gpus, int) else gpus
    if gpus is not None and len(gpus) == len(nodes) and any(g % n for g, n in zip(gpus, nodes)):
        return f"`gpu_counts` = {shown(gpus)} is not a whole number of GPUs per node of `node_counts` = {shown(nodes)}"
    return None


def _counts(value) -> bool:
    return (_count("", value) is None) or (isinstance(value, list) and bool(value)
                                           and all(_count("", v) is None for v in value))


def _workload_problem(document: dict) -> str | None:
    workload = document["workload"]
    for key, value in workload.items():
        if key in WORKLOAD_KEYS:
            problem = _count(f"workload.{key}", value)
        elif key == "precision":
            problem = None if value is None or value in PRECISIONS else _wrong("workload.precision", value,
                                                                             " or ".join(PRECISIONS))
        else:  # a key of a later autotune: compared as it is, so only a plain value
            problem = None if isinstance(value, str) or _number("", value) is None else _wrong(
                f"workload.{key}", value, "a number or a string")
        if problem:
            return problem
    return None


def _points_problem(document: dict) -> str | None:
    for key in ("front", "feasible"):
        for index, point in enumerate(document.get(key) or []):
            problem = _point_problem(point)
            if problem:
                return f"{key}[{index}] {problem}"
    return None


def _point_problem(point) -> str | None:
    if not isinstance(point, dict):
        return "is not an object"
    if "trial" not in point:
        return "has no trial number"
    if problem := _count("trial", point["trial"], low=0):
        return problem
    trial = f"(trial {point['trial']})"
    params = point.get("params")
    if not isinstance(params, dict) or any(knob not in params for knob in POINT_KNOBS):
        return f"{trial} does not name every knob in `params` ({', '.join(POINT_KNOBS)})"
    for knob, value in params.items():
        if knob not in KNOBS:
            return f"{trial} `params.{knob}` is not a knob (the knobs: {', '.join(KNOBS)})"
        try:
            knob_value(knob, value)
        except ValueError as exc:
            return f"{trial} `params.{knob}` = {shown(value)} {exc}"
    if "time_s" not in point:
        return f"{trial} has no `time_s` number"
    problem = _number("time_s", point["time_s"], low=MIN_SOLUTION_FIGURE, high=MAX_SOLUTION_FIGURE)
    if problem is None and point.get("energy_kj") is not None:
        problem = _number("energy_kj", point["energy_kj"], low=MIN_SOLUTION_FIGURE, high=MAX_SOLUTION_FIGURE)
    if problem is None and "gpus" in point:
        problem = _count("gpus", point["gpus"])
    if problem is None:
        problem = _default_limit_problem("default_power_limit_w", point.get("default_power_limit_w"))
    for key in ("source", "energy_source"):
        if problem is None and point.get(key) not in (None, "", *SOURCE_LABELS):
            problem = _wrong(key, point[key], f"one of {', '.join(SOURCE_LABELS)}")
    return f"{trial} {problem}" if problem else None


def _picks_problem(document: dict) -> str | None:
    trials = {p["trial"] for p in [*(document.get("feasible") or []), *document["front"]]}
    for name, trial in document["recommendations"].items():
        if trial not in trials or not _is(trial, int):
            return f"the {name} pick names trial {shown(trial)}, which no point of `front` or `feasible` is"
    return None


def _pick_rows_problem(document: dict) -> str | None:
    """`picks`, each pick against the baseline: compare reads a row's `name` and `trial` (outside_calibration.py),
    and a hand-edited "knee" or [5] was a traceback, a row naming trial 999 or a pick "bogus" taken without a word
    (trial78 #2). A row is the pick `recommendations` names, with its trial; the list may be missing or null."""
    picks, named = document.get("picks"), document["recommendations"]
    if picks is None:
        return None
    if not isinstance(picks, list):
        return _wrong("picks", picks, "a list of pick objects or null")
    for index, row in enumerate(picks):
        if not isinstance(row, dict):
            return _wrong(f"picks[{index}]", row, "an object")
        name, trial = row.get("name"), row.get("trial")
        if not isinstance(name, str) or name not in named:
            return _wrong(f"picks[{index}].name", name, f"a pick of `recommendations` ({', '.join(named) or 'none'})")
        if not _is(trial, int) or trial != named[name]:
            return _wrong(f"picks[{index}].trial", trial, f"trial {shown(named[name])}, which `recommendations` names "
                                                          f"for the {name} pick")
    return None


def _objectives_problem(document: dict) -> str | None:
    objectives = document.get("objectives")
    if objectives is not None and not (isinstance(objectives, list) and objectives
                                       and all(o in _OBJECTIVES for o in objectives)
                                       and len(set(objectives)) == len(objectives)):
        return _wrong("objectives", objectives, 'a list of "time" and "energy"')
    return None


def _parameters_problem(parameters: dict) -> str | None:
    """`recommendation_parameters`: the picks' rules."""
    for key, bounds in (("max_slowdown", {"low": 1.0, "high": MAX_FIGURE}), ("eta", {"low": 0.0, "high": 1.0}),
                        ("max_power_per_gpu_w", {"low": 0.0, "low_open": True, "high": MAX_FIGURE})):
        if key in parameters and parameters[key] is not None:
            problem = _number(f"recommendation_parameters.{key}", parameters[key], **bounds)
            if problem:
                return problem
    return None


# The most watts a default power limit may be where compare reads one (pareto.json `default_power_limit_w`): a
# generous bound past any device's, which keeps a kW-sized typo's watts finite and printable; replay holds a recorded
# one to its profile (backends.replay_figures.default_limit_refusal).
MAX_DEFAULT_LIMIT_W = 100_000.0
_DEFAULT_LIMIT_SOURCES = ("measured", "profile")


def _default_limit_problem(key: str, value) -> str | None:
    return None if value is None else _number(key, value, low=0, low_open=True, high=MAX_DEFAULT_LIMIT_W)


def _default_limits_problem(document: dict) -> str | None:
    """`default_power_limit_w` (a number, the list of several a study's probes recorded, or null) and its
    `default_power_limit_source` (measured, profile, or null); both may be missing (an older pareto.json)."""
    source = document.get("default_power_limit_source")
    if source not in (None, *_DEFAULT_LIMIT_SOURCES):
        return _wrong("default_power_limit_source", source, f"one of {', '.join(_DEFAULT_LIMIT_SOURCES)}, or null")
    watts = document.get("default_power_limit_w")
    for value in (watts if isinstance(watts, list) and source == "measured" else [watts]):
        if problem := _default_limit_problem("default_power_limit_w", value):
            return problem
    if source is not None and watts is None:
        return f"`default_power_limit_w` is null, where `default_power_limit_source` is {source}: it must be in W"
    return None


def _provenance_problem(document: dict) -> str | None:
    # The parts of a node a sensor may miss, each once, as pareto.json writes them: [""], ["gpu", "gpu"] and a
    # 5000-character name were shown as read, an empty cell among them (trial 58 F13).
    left_out = document.get("energy_not_measured")
    if left_out is not None and not (isinstance(left_out, list) and all(p in SEPARATE_COMPONENTS for p in left_out)
                                     and len(set(left_out)) == len(left_out)):
        return _wrong("energy_not_measured", left_out,
                      f"a list of the parts no sensor saw, each once ({', '.join(map(shown, SEPARATE_COMPONENTS))}), or null")
    return None


def _error_problem(error: dict) -> str | None:
    """`simulator_error`: percentages, the words of its scope and {trial: [knob values]} outside it."""
    for key, value in error.items():
        if key == "extrapolated":
            if not (isinstance(value, dict) and all(isinstance(words, list) and all(isinstance(w, str) for w in words)
                                                    for words in value.values())):
                return _wrong("simulator_error.extrapolated", value, "an object of trial: [knob values]")
        elif key in ("measured_on", "why_unknown"):
            if not isinstance(value, str):
                return _wrong(f"simulator_error.{key}", value, "a string")
        else:
            problem = _number(f"simulator_error.{key}", value, low=0, high=MAX_FIGURE)
            if problem:
                return problem
    return None


def _search_problem(search: dict) -> str | None:
    """`search`: whether the study stopped by its rule, and what an unfinished one had under way."""
    for key in ("converged", "unfinished"):
        if search.get(key) is not None and not isinstance(search[key], dict):
            return _wrong(f"search.{key}", search[key], "an object or null")
    for block, key in (("unfinished", "probes"), ("unfinished", "running_elsewhere"), ("unfinished", "succeeded"),
                       ("converged", "probes"), ("converged", "recorded"), ("converged", "unrecorded")):
        value = (search.get(block) or {}).get(key)
        if value is not None and (problem := _count(f"search.{block}.{key}", value, low=0)):
            return problem
    reason = (search.get("unfinished") or {}).get("reason")
    if reason is not None and not isinstance(reason, str):
        return _wrong("search.unfinished.reason", reason, "a string")
    if search.get("sampler") is not None and not isinstance(search["sampler"], str):
        return _wrong("search.sampler", search["sampler"], "a string")
    return None


def _inputs_problem(inputs: dict) -> str | None:
    """`inputs`: each of its fields, as compare reads it (a damaged one is not "an older autotune")."""
    if "space" in inputs and (problem := _space_problem(inputs["space"])):
        return problem
    sha = inputs.get("hardware_sha256")
    # null: a study older than profile pinning, which `autotune report` writes for it (not recorded, not damaged)
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        # lowercase, as autotune writes it and compares it: "95407BCED9..." read as "not 64 hexadecimal digits" (F7)
        return _wrong("inputs.hardware_sha256", sha, "a sha256 (64 lowercase hexadecimal digits) or null")
    if "proposed_by" in inputs and (problem := _proposed_problem(inputs["proposed_by"])):
        return problem
    # A count of trials (null: a pareto.json from before the count); -1, 1.5, "2", true were read as 0 (trial 58 F5)
    unrecorded = inputs.get("proposer_not_recorded")
    if unrecorded is not None and (problem := _count("inputs.proposer_not_recorded", unrecorded, low=0)):
        return problem
    settings = inputs.get("probe_settings")
    if settings is not None:
        if not isinstance(settings, dict) or not all(isinstance(flag, str) for flag in settings):
            return _wrong("inputs.probe_settings", settings, "an object of flag: value, or null")
        for flag, value in settings.items():
            if isinstance(value, bool):  # a switch, as a launch study records --allow-estimated-energy
                continue
            if problem := _number(f"inputs.probe_settings.{flag}", value, low=0, high=MAX_FIGURE):
                return problem
    measurements = inputs.get("measurements")
    if measurements is not None:
        if not isinstance(measurements, dict):
            return _wrong("inputs.measurements", measurements, "an object (file, records, sha256) or null")
        for key, kind in (("file", str), ("sha256", str)):
            if not isinstance(measurements.get(key), kind):
                return _wrong(f"inputs.measurements.{key}", measurements.get(key), "a string")
        if problem := _count("inputs.measurements.records", measurements.get("records"), low=0):
            return problem
        left_out = measurements.get("not_replayed")  # optional: the records its space left out (replay_fit.not_replayed)
        if left_out is not None:
            if not isinstance(left_out, dict) or not isinstance(left_out.get("why"), str):
                return _wrong("inputs.measurements.not_replayed", left_out, "an object (records, why) or null")
            if problem := _count("inputs.measurements.not_replayed.records", left_out.get("records")):
                return problem
    return None


def _space_problem(space) -> str | None:
    if not isinstance(space, dict):
        return _wrong("inputs.space", space, "an object of knob: [searched values]")
    missing = [knob for knob in KNOBS if knob not in space]  # pareto.json has listed every knob since `inputs` came
    if missing:
        return f"`inputs.space` lacks {', '.join(missing)}"
    for knob, values in space.items():
        if knob not in KNOBS:
            return f"`inputs.space.{knob}` is not a knob (the knobs: {', '.join(KNOBS)})"
        if not isinstance(values, list) or not values:
            return _wrong(f"inputs.space.{knob}", values, "a list of the values searched")
        for value in values:
            try:
                knob_value(knob, value)
            except ValueError as exc:
                return f"`inputs.space.{knob}` holds {shown(value)}, which {exc}"
    return None


def _proposed_problem(proposed) -> str | None:
    if not isinstance(proposed, list):
        return _wrong("inputs.proposed_by", proposed, "a list of {sampler, seed, trials_budget, ...}")
    for index, who in enumerate(proposed):
        key = f"inputs.proposed_by[{index}]"
        if not isinstance(who, dict):
            return _wrong(key, who, "an object")
        missing = [k for k in ("sampler", "seed", "trials_budget", "autotune_version", "trials") if k not in who]
        if missing:
            return f"`{key}` lacks {', '.join(missing)}"
        if not isinstance(who.get("sampler"), str):
            return _wrong(f"{key}.sampler", who.get("sampler"), "a sampler's name")
        if who.get("seed") is not None and (problem := _count(f"{key}.seed", who["seed"], low=0)):
            return problem
        if who.get("trials_budget") is not None and (problem := _count(f"{key}.trials_budget", who["trials_budget"])):
            return problem
        if who.get("autotune_version") is not None and not isinstance(who["autotune_version"], str):
            return _wrong(f"{key}.autotune_version", who["autotune_version"], "a version string")
        trials = who.get("trials", [])
        if not isinstance(trials, list) or any(_count("", t, low=0) for t in trials):
            return _wrong(f"{key}.trials", trials, "a list of trial numbers")
    return None
