"""What set each compared study's answer, side by side: which inputs differ, which are the same, and
what makes a difference in figures not a like-for-like one (other jobs, a simulator against hardware).

A comparison is read for what changed between the studies (4 against 8 nodes, a power limit, a seed):
an input that differs unnoticed (another workload, an edited profile) would pass its effect off as the
change the user made. So every input pareto.json records is compared, and the differences are listed
first; the caveats are said, never refused on: a user may mean to compare a simulated study with a
measured one (that is how a simulator is judged)."""

from __future__ import annotations

from autotune.candidate import KNOBS
from autotune.report.compare_study import ComparedStudy
from autotune.report.pareto_json import hardware_text

# Read where the label below does not say it (the name is the JSON key of `inputs`).
_LABELS = {
    "hardware_sha256": "hardware profile sha256", "node_counts": "nodes", "gpus_per_node": "GPUs per node",
    "gpu_counts": "GPUs", "time_source": "time", "energy_source": "energy",
    "energy_not_measured": "energy no sensor saw", "proposed_by": "trials proposed by", "measurements": "replayed file",
    "probe_settings": "probe settings", "objectives": "ranked by", "max_slowdown": "max-slowdown bound",
    "eta": "cost-weighted eta", "model_caveats": "model caveats",
}
_SPACE_KNOBS = tuple(knob for knob in KNOBS if knob != "nodes")  # node counts are `node_counts`
# Inputs that change the job itself (what a time or an energy is the cost of), not how it is run.
_JOB_INPUTS = ("model",)


def input_label(name: str) -> str:
    """How a table row names an input: `workload samples`, `searched power_limit`, `GPUs per node`."""
    if name.startswith("workload."):
        return "workload " + name.split(".", 1)[1].replace("_", " ")
    if name.startswith("space."):
        return "searched " + name.split(".", 1)[1]
    return _LABELS.get(name, name)


def study_inputs(study: ComparedStudy) -> dict:
    """{input: value} of one study, in the order a reader looks for them. An input its pareto.json does not
    record (one older than `inputs`) is left out, not set to None: None is a value (no replayed file)."""
    document = study.document
    recorded = document.get("inputs") or {}
    gpus = document.get("gpu_counts", document.get("gpus"))
    gpus = [gpus] if isinstance(gpus, int) else gpus
    values = {"model": document["model"], "model_caveats": document.get("model_caveats"),
              "hardware": hardware_text(document)}
    if "hardware_sha256" in recorded:
        values["hardware_sha256"] = recorded["hardware_sha256"]
    values["node_counts"] = study.node_counts
    if isinstance(gpus, list) and len(gpus) == len(study.node_counts):
        values["gpus_per_node"] = sorted({g // n for g, n in zip(gpus, study.node_counts)})
        values["gpu_counts"] = gpus
    values.update({f"workload.{key}": value for key, value in document["workload"].items()})
    space = recorded.get("space")
    if isinstance(space, dict):
        values.update({f"space.{knob}": space[knob] for knob in _SPACE_KNOBS if knob in space})
    values.update({"backend": document["backend"], "time_source": document["source"],
                   "energy_source": document["energy_source"]})
    if "energy_not_measured" in document:
        values["energy_not_measured"] = document["energy_not_measured"]
    if isinstance(recorded.get("proposed_by"), list):
        # Who proposed, not which trials: trial numbers are each study's own.
        values["proposed_by"] = [{k: v for k, v in who.items() if k != "trials"} for who in recorded["proposed_by"]
                                 if isinstance(who, dict)]
    for key in ("measurements", "probe_settings"):
        if key in recorded:
            values[key] = recorded[key]
    if "objectives" in document:
        values["objectives"] = document["objectives"]
    parameters = document.get("recommendation_parameters") or {}
    values.update({key: parameters[key] for key in ("max_slowdown", "eta") if key in parameters})
    return values


def compare_inputs(studies: list[ComparedStudy]) -> dict:
    """{"differ": {input: [value of each study]}, "same": {input: value}, "not_recorded": {input: [study numbers]}}:
    inputs every study records, split by whether they agree; and those some study's pareto.json lacks."""
    each = [study_inputs(s) for s in studies]
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
    if name == "hardware_sha256":
        return value[:12]
    if name == "proposed_by":
        return "; then ".join(f"{who.get('sampler')} seed {who.get('seed')} (--trials {who.get('trials_budget')}, "
                              f"autotune {who.get('autotune_version')})" for who in value) or "not recorded"
    if name == "measurements" and isinstance(value, dict):
        return f"{value.get('file')} ({value.get('records')} records, sha256 {str(value.get('sha256'))[:12]})"
    if name == "probe_settings" and isinstance(value, dict):
        return " ".join(f"{flag} {setting:g}" if isinstance(setting, float) else f"{flag} {setting}"
                        for flag, setting in value.items())
    if name == "energy_not_measured":
        return ", ".join(value) if value else "nothing (the sensors saw the whole node)"
    if name == "objectives":
        return " and ".join(value)
    if isinstance(value, list):
        return "/".join(value_text(name, v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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
    lacking = sorted({number for numbers in not_recorded.values() for number in numbers})
    names = ", ".join(dict.fromkeys("the searched space" if name.startswith("space.") else input_label(name)
                                    for name in not_recorded))
    again = "; ".join(f"`autotune report {studies[n - 1].run_dir}`" for n in lacking)
    return (f"Not compared, as the pareto.json of {_numbers(lacking)} does not record it (written by an older autotune): "
            f"{names}; {again} writes it again with them.")


def _sources(study: ComparedStudy) -> set[str]:
    labels = set()
    for key in ("source", "energy_source"):
        value = study.document[key]
        labels.update(value if isinstance(value, list) else [value])
    return labels - {"none", "unavailable"}


def _numbers(numbers: list[int]) -> str:
    return f"study {numbers[0]}" if len(numbers) == 1 else "studies " + ", ".join(map(str, numbers))


def _error_words(document: dict) -> str:
    error = document.get("simulator_error") or {}
    said = [f"{what} +- {error[key]:g}%" for what, key in (("time", "time_s_pct"), ("energy", "energy_kj_pct"))
            if isinstance(error.get(key), (int, float))]
    return ", ".join(said) if said else "not known: the profile's error was not measured"


def caveats(studies: list[ComparedStudy], inputs: dict) -> list[str]:
    """Why a difference in figures is not (only) the difference the user made: said, never refused on."""
    differ = inputs["differ"]
    said = []
    job = [input_label(name) for name in differ if name in _JOB_INPUTS or name.startswith("workload.")]
    if job:
        said.append(f"Not like-for-like: the studies train different jobs ({', '.join(job)} differ), so their times and "
                    "energies are of different work; a change in % is the jobs' difference as much as the configurations'.")
    simulated = [n for n, s in enumerate(studies, 1) if "simulated" in _sources(s)]
    real = [n for n, s in enumerate(studies, 1) if _sources(s) & {"measured", "estimated"}]
    if simulated and real and set(simulated) != set(real):
        by_error: dict[str, list[int]] = {}
        for n in simulated:
            by_error.setdefault(_error_words(studies[n - 1].document), []).append(n)
        errors = "; ".join(f"{_numbers(numbers)}: {words}" for words, numbers in by_error.items())
        said.append(f"Simulated against measured: {_numbers(simulated)} {'has' if len(simulated) == 1 else 'have'} "
                    f"simulated figures, {_numbers(real)} figures from hardware; a difference between them includes the "
                    f"simulator's error ({errors}).")
    estimated = [n for n, s in enumerate(studies, 1) if "estimated" in _sources(s)]
    if estimated:
        said.append(f"Energy of {_numbers(estimated)} is estimated from a power model (no energy sensor), not measured: "
                    "every change computed from it is an estimate too.")
    measured = {n: v for n, v in enumerate(differ.get("energy_not_measured", []), 1) if v is not None}
    if len({tuple(v) for v in measured.values()}) > 1:  # None: no energy measured, nothing left out of it
        parts = "; ".join(f"study {n}: {value_text('energy_not_measured', v)}" for n, v in measured.items())
        said.append(f"Measured energy covers different parts of the node (left out for want of a sensor: {parts}): "
                    "the totals are not of the same parts.")
    if "hardware_sha256" in differ and "hardware" not in differ:
        said.append("The hardware profiles share a name but not their content (sha256 differs): one was edited or "
                    "calibrated, and simulated figures follow its constants.")
    if "objectives" in differ:
        time_only = [n for n, v in enumerate(differ["objectives"], 1) if v == ["time"]]
        said.append(f"{_numbers(time_only).capitalize()} ranked by time only: its picks hold the fastest alone.")
    for name in ("max_slowdown", "eta"):
        if name in differ:
            values = ", ".join(f"{value_text(name, v)} in study {n}" for n, v in enumerate(differ[name], 1))
            pick = "max-slowdown" if name == "max_slowdown" else "cost-weighted"
            said.append(f"The {pick} pick follows a different rule in each study ({input_label(name)} {values}).")
    for n, study in enumerate(studies, 1):
        if study.document.get("note") and not study.document["recommendations"]:
            said.append(f"Study {n} has no picks: {study.document['note']}")
    first = studies[0].document
    copies = [n for n, s in enumerate(studies[1:], 2) if s.document == first]
    if copies:
        said.append(f"{_numbers(copies).capitalize()} {'holds' if len(copies) == 1 else 'hold'} the same pareto.json as "
                    "study 1 (a copy of one run directory?): every change is 0.")
    return said
