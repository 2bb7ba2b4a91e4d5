"""What set each compared study's answer, side by side: which inputs differ, which are the same, and
how each is said (the caveats, what makes a difference in figures not a like-for-like one: compare_caveats).

A comparison is read for what changed between the studies (4 against 8 nodes, a power limit, a seed):
an input that differs unnoticed (another workload, an edited profile) would pass its effect off as the
change the user made. So every input pareto.json records is compared, and the differences are listed
first; the caveats are said, never refused on: a user may mean to compare a simulated study with a
measured one (that is how a simulator is judged)."""

from __future__ import annotations

from autotune.candidate import KNOBS
from autotune.report.compare_study import ComparedStudy
from autotune.report.inputs import measurements_text, probe_settings_text, proposer_text
from autotune.report.pareto_json import hardware_text

# Read where the label below does not say it (the name is the JSON key of `inputs`).
_LABELS = {
    "hardware_sha256": "hardware profile sha256", "node_counts": "nodes", "gpus_per_node": "GPUs per node",
    "gpu_counts": "GPUs", "time_source": "time", "energy_source": "energy",
    "energy_not_measured": "energy no sensor saw", "proposed_by": "trials proposed by", "measurements": "replayed file",
    "probe_settings": "probe settings", "objectives": "ranked by", "max_slowdown": "max-slowdown bound",
    "eta": "cost-weighted eta", "model_caveats": "model caveats", "default_power_limit": "default power limit",
}
_SPACE_KNOBS = tuple(knob for knob in KNOBS if knob != "nodes")  # node counts are `node_counts`
# `energy_not_measured` of a replay: [] there is a file whose records need not name the parts no sensor saw
# (the key is optional in the replay format), not sensors that saw the whole node.
NOT_RECORDED = "not recorded"
# `max_slowdown` and `eta` of a study ranked by time alone: it has no such picks, so no such rule.
UNUSED = "unused: ranked by time only"


def input_label(name: str) -> str:
    """How a table row names an input: `workload samples`, `searched power_limit`, `GPUs per node`."""
    if name.startswith("workload."):
        return "workload " + name.split(".", 1)[1].replace("_", " ")
    if name.startswith("space."):
        return "searched " + name.split(".", 1)[1]
    return _LABELS.get(name, name)


def input_values(study: ComparedStudy) -> dict:
    """{input: value} of one study, in the order a reader looks for them. An input its pareto.json does not
    record (one older than `inputs`) is left out, not set to None: None is a value (no replayed file)."""
    document = study.document
    recorded = document.get("inputs") or {}
    gpus = study.gpu_counts
    values = {"model": document["model"], "model_caveats": document.get("model_caveats"),
              "hardware": hardware_text(document)}
    if recorded.get("hardware_sha256") is not None:  # null: its study does not record its profile (see below)
        values["hardware_sha256"] = recorded["hardware_sha256"]
    if "default_power_limit_source" in document:  # what each "x default" is in watts of (pareto_json.default_power_limit)
        values["default_power_limit"] = {"watts": document.get("default_power_limit_w"),
                                         "source": document["default_power_limit_source"]}
    values["node_counts"] = study.node_counts
    if gpus is not None:
        values["gpus_per_node"] = sorted({g // n for g, n in zip(gpus, study.node_counts)})
        values["gpu_counts"] = gpus
    values.update({f"workload.{key}": value for key, value in document["workload"].items()})
    space = recorded.get("space")
    if isinstance(space, dict):
        values.update({f"space.{knob}": space[knob] for knob in _SPACE_KNOBS if knob in space})
    values.update({"backend": document["backend"], "time_source": document["source"],
                   "energy_source": document["energy_source"]})
    if "energy_not_measured" in document:
        values["energy_not_measured"] = _parts_not_measured(document)
    if isinstance(recorded.get("proposed_by"), list):
        # Who proposed, not which trials: trial numbers are each study's own.
        values["proposed_by"] = [{k: v for k, v in who.items() if k not in ("trials", "evaluated")}
                                 for who in recorded["proposed_by"] if isinstance(who, dict)]
    for key in ("measurements", "probe_settings"):
        if key in recorded:
            values[key] = recorded[key]
    if isinstance(values.get("measurements"), dict):  # the file, not what each study's space left out of it (a caveat)
        values["measurements"] = {k: v for k, v in values["measurements"].items() if k != "not_replayed"}
    if "objectives" in document:
        values["objectives"] = document["objectives"]
    parameters = document.get("recommendation_parameters") or {}
    time_only = document.get("objectives") == ["time"]
    values.update({key: UNUSED if time_only else parameters[key] for key in ("max_slowdown", "eta") if key in parameters})
    return values


def _parts_not_measured(document: dict):
    """`energy_not_measured` as it is meant now: None where no energy was measured, whatever an older autotune wrote.
    It wrote [] for every study that measured none (simulated, estimated from a power model: trial73 #9), and [] now
    means that sensors saw the whole node, which no estimate had; so [] counts only where some energy was measured."""
    left_out = document["energy_not_measured"]
    sources = document["energy_source"] if isinstance(document["energy_source"], list) else [document["energy_source"]]
    if left_out == [] and "measured" not in sources:
        return None  # n/a, not "nothing": the report rewrites the key so (pareto_json), compare reads the file as it is
    if left_out == [] and document["backend"] == "replay":
        return NOT_RECORDED
    return left_out


def compare_inputs(studies: list[ComparedStudy]) -> dict:
    """{"differ": {input: [value of each study]}, "same": {input: value}, "not_recorded": {input: [study numbers]}}:
    inputs every study records, split by whether they agree; and those some study's pareto.json lacks."""
    each = [input_values(s) for s in studies]
    names = list(dict.fromkeys(name for values in each for name in values))
    differ, same, not_recorded = {}, {}, {}
    for name in names:
        lacking = [number for number, values in enumerate(each, 1) if name not in values]
        if lacking:
            not_recorded[name] = lacking
            continue
        values = [v[name] for v in each]
        if all(value == values[0] for value in values[1:]):
            same[name] = values[0]
        else:
            differ[name] = values
    return {"differ": differ, "same": same, "not_recorded": not_recorded}


def value_text(name: str, value) -> str:
    """One input's value as a table cell or the `same` line says it."""
    if value is None:
        return "n/a: no energy measured" if name == "energy_not_measured" else "none"
    if name in ("time_source", "energy_source") and value == "none":
        return "no figures"
    if name == "energy_not_measured" and value == NOT_RECORDED:
        return "not recorded (a replayed record need not name the parts no sensor saw)"
    if name == "hardware_sha256":
        return value[:12]
    if name == "proposed_by":  # compare_checks has checked every entry's keys
        return "; then ".join(proposer_text(who) for who in value) or "not recorded"
    if name == "measurements" and isinstance(value, dict):
        return measurements_text(value)
    if name == "probe_settings" and isinstance(value, dict):
        return probe_settings_text(value)
    if name == "energy_not_measured":
        return ", ".join(value) if value else "nothing (the sensors saw the whole node)"
    if name == "default_power_limit" and isinstance(value, dict):
        return default_limit_text(value)
    if name == "objectives":
        return " and ".join(value)
    if isinstance(value, list):
        return "/".join(value_text(name, v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def default_limit_text(value: dict) -> str:
    """"600 W (NVML's, on the probes' devices)", "680 W (the profile's)", "none (no GPU power limit)": the input
    "default power limit", what every "x default" of a study is in watts of."""
    watts, source = value.get("watts"), value.get("source")
    if source is None:
        return "none (no GPU power limit)"
    said = "/".join(f"{w:g}" for w in watts) if isinstance(watts, list) else f"{watts:g}"
    return f"{said} W (NVML's, on the probes' devices)" if source == "measured" else f"{said} W (the profile's)"


def same_sentence(same: dict) -> str:
    """`Same in every study: model 7b; hardware gh200; ...; the searched values of 7 knobs.`: briefly, as the
    inputs that differ are the news. Inputs the same and None (no replayed file in any) go unsaid."""
    space = [name.split(".", 1)[1] for name in same if name.startswith("space.")]
    said = [f"{input_label(name)} {value_text(name, value)}" for name, value in same.items()
            if value is not None and not name.startswith("space.") and name != "model_caveats"]
    if space:
        said.append(f"the searched values of {', '.join(space)}")
    return "Same in every study: " + "; ".join(said) + "." if said else "No input is the same in every study."


def not_recorded_sentence(not_recorded: dict, studies: list[ComparedStudy]) -> str | None:
    """Which studies' pareto.json predate a record, and how to have it: `autotune report` rewrites the file."""
    if not not_recorded:
        return None
    said = []
    # The profile's sha256 is null where the study itself predates profile pinning: no report can add it.
    unpinned = [n for n in not_recorded.get("hardware_sha256", []) if study_without_profile(studies[n - 1])]
    if unpinned:
        said.append(f"Not compared, as the study of {numbers_text(unpinned)} does not record it (made by an older "
                    f"autotune, before studies pinned their profile): {input_label('hardware_sha256')}.")
    rest = {name: [n for n in numbers if not (name == "hardware_sha256" and n in unpinned)]
            for name, numbers in not_recorded.items()}
    rest = {name: numbers for name, numbers in rest.items() if numbers}
    if rest:
        lacking = sorted({number for numbers in rest.values() for number in numbers})
        names = ", ".join(dict.fromkeys("the searched space" if name.startswith("space.") else input_label(name)
                                        for name in rest))
        again = "; ".join(f"`autotune report {studies[n - 1].run_dir}`" for n in lacking)
        said.append(f"Not compared, as the pareto.json of {numbers_text(lacking)} does not record it (written by an "
                    f"older autotune): {names}; {again} writes it again with them.")
    return " ".join(said)


def study_without_profile(study: ComparedStudy) -> bool:
    """A pareto.json that `autotune report` wrote for a study older than profile pinning: `hardware_sha256` null."""
    recorded = study.document.get("inputs") or {}
    return "hardware_sha256" in recorded and recorded["hardware_sha256"] is None


def numbers_text(numbers: list[int]) -> str:
    return f"study {numbers[0]}" if len(numbers) == 1 else "studies " + ", ".join(map(str, numbers))
