"""How a replay file fits the study it is replayed in: the flags that replay records measured for another
study (`other_study`), and the records this study cannot use, counted by why (`not_replayed`).

A record is used only where its knobs are a valid candidate of the study. The rest were measured, and a
replay that drops them without a word gives another answer than the file holds (a power-limit study replayed
over the default space loses its lowest limits, and with them its min-energy pick): each is said, with the
flag that takes it in. The space is read off the checks: `enumerate_space` checks every combination of its
knob values, so the values a check holds are the space's.
"""

from __future__ import annotations

import json

from autotune.candidate import KNOBS, params_key
from autotune.hardware import available_hardware
from autotune.models import PRESETS, first_three, model_from_json, params_text, size_differences
from autotune.space.files import nodes_flag
from autotune.counted import counted

# What the records' `study` names where a flag cannot take the name itself: a model or profile that is no preset.
_MODEL_FILE, _PROFILE_FILE, _SPACE_FILE = "MODEL.json", "PROFILE.toml", "SPACE.toml"


def space_values(checks: list) -> dict[str, set]:
    """Each knob's values in the study's space (node counts included)."""
    values: dict[str, set] = {knob: set() for knob in KNOBS}
    for check in checks:
        for knob, value in check.candidate.knobs.to_dict().items():
            values[knob].add(value)
    return values


def sorted_values(values) -> list:
    # "max" beside clock numbers: numbers first, in order, then names.
    return sorted(values, key=lambda v: (isinstance(v, str), v if not isinstance(v, str) else 0, str(v)))


def lacking_values(records: list[dict], values: dict[str, set]) -> dict[str, list]:
    """{knob: the values records hold that the space lacks}, node counts apart (--nodes, not --space, sets them)."""
    lacking: dict[str, set] = {}
    for record in records:
        for knob in KNOBS:
            if knob != "nodes" and record["params"][knob] not in values[knob]:
                lacking.setdefault(knob, set()).add(record["params"][knob])
    return {knob: sorted_values(lacking[knob]) for knob in KNOBS if knob in lacking}


def values_text(lacking: dict[str, list]) -> str:
    """`power_limit 0.35, 0.5 and sm_clock_mhz 1400` (a semicolon would read as the end of the list)."""
    return " and ".join(f"{knob} {', '.join(map(str, values))}" for knob, values in lacking.items())


def nodes_covering(counts) -> str:
    """A --nodes value that holds every count: one count, or the range from the least to the most (a
    range may hold counts without a record: they are left out as unrecorded, not wrongly replayed)."""
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}-{high}"


def other_study(origin: str, theirs: dict, mine: dict, differs: list[str], flags: dict[str, str], records: list[dict],
                checks: list) -> str:
    """The refusal of records measured for another model, hardware or workload, with every flag that replays
    them: a model or profile by name where a flag takes it (a preset, a built-in profile), else a placeholder
    and what it must be (of the sizes the records hold, where they do); --nodes and --space where the
    records hold node counts or knob values this study's lack."""
    given = []
    notes = []
    # A file's path where a name belongs (a hand-written record naming the --model file passed): "MODEL.json is the
    # model file named 'llama3-8b/config.json'" told the user to pass what they had passed (trial61 #7).
    paths = [key for key in differs if key in _PATH_SUFFIX and str(theirs[key]).lower().endswith(_PATH_SUFFIX[key])]
    for key in differs:
        value = theirs[key]
        if key in paths:
            continue
        if key == "model" and value not in PRESETS:
            given.append(f"{flags[key]} {_MODEL_FILE}")
            sized = ", of the sizes the records' study.model_sizes hold" if theirs.get("model_sizes") else ""
            notes.append(f"{_MODEL_FILE} is the model file named '{value}' (no preset has that name){sized}")
        elif key == "hardware" and value not in available_hardware():
            given.append(f"{flags[key]} {_PROFILE_FILE}")
            notes.append(f"{_PROFILE_FILE} is the hardware profile named (or calibrated from) '{value}' (no built-in "
                         "profile has that name)")
        else:
            given.append(f"{flags[key]} {value}")
    values = space_values(checks)
    nodes = {r["params"]["nodes"] for r in records}
    if not nodes <= values["nodes"]:
        given.append(f"--nodes {nodes_covering(nodes)}")
    lacking = lacking_values(records, values)
    if lacking:
        given.append(f"--space {_SPACE_FILE}")
        notes.append(f"{_SPACE_FILE} is the space file they were measured with (this one lacks their {values_text(lacking)})")
    was = ", ".join(f"{key} {theirs[key]}" for key in differs)
    named = ""
    if paths:
        fields_text = " and ".join(f"study.{key} {theirs[key]!r}" for key in paths)
        names_text = " and ".join(repr(str(mine[key])) for key in paths)
        are = _are(len(paths), "are files' paths", "is a file's path")
        named = (f"{fields_text} {are} where records hold a name: if "
                 f"they are this study's, write {names_text} there ({' and '.join(_PATH_NAME[key] for key in paths)})")
    replay = (f"replay it with {' '.join(given)}" + (f", where {'; and '.join(notes)}" if notes else "")) if given else ""
    return (f"{origin} holds figures for {was}, not this study's {', '.join(str(mine[key]) for key in differs)}; "
            + "; else ".join(part for part in (named, replay) if part))


# What a record's study.model and study.hardware hold (a name), and the suffix of the file written there instead.
_PATH_SUFFIX = {"model": ".json", "hardware": ".toml"}
_PATH_NAME = {"model": "the model's name as autotune prints it", "hardware": "the profile's `name`"}


def claimed_node(origin: str, node: str, why: str) -> str:
    """The refusal of records measured on `node` where this run's profile names that node only by a calibrated_from
    nothing vouches for (hardware.claimed_node_problem's `why`): its figures may be another node's."""
    again = (f"--hardware {node}" if node in available_hardware() else
             f"--hardware {_PROFILE_FILE}, where {_PROFILE_FILE} is the profile '{node}' they were measured on")
    return (f"{origin} holds figures measured on '{node}' nodes, and {why}: replay it with {again}, or with the profile "
            f"`autotune calibrate -o` wrote from '{node}'")


def other_model_sizes(origin: str, name: str, theirs: dict, mine: dict) -> str:
    """The refusal of records measured for a model of this run's --model's name and other sizes (`study.model_sizes`,
    as replay.model_sizes writes them): a model file or config.json that kept its base's name (a depth-pruned
    variant) would have every figure of the base reported as its own (trial61 #4). Both named by their size."""
    measured, here = (model_from_json(sizes, origin="model_sizes") for sizes in (theirs, mine))
    shown = first_three([f"{size} {there} there, {value} here" for size, there, value in size_differences(theirs, mine)])
    return (f"{origin} holds figures for a model named '{name}' of {params_text(measured.params())} parameters, and this "
            f"run's --model of that name has {params_text(here.params())} ({shown}): every figure would be another "
            f"model's; replay it with the --model it was measured for (the model file or config.json of the sizes its "
            "study.model_sizes hold), or evaluate this model with --backend simulate or launch")


def other_profile(origin: str, theirs: dict, mine: dict) -> str:
    """The refusal of records simulated on another hardware profile than this run's (`study.profile`, as
    replay.profile_of writes it): a calibrated profile's simulation replayed on its base was taken as the base's
    figures, and compare then called the hardware the same while one configuration took 43% longer (trial64 #2)."""
    where = f"profile '{theirs['name']}' (sha256 {theirs['sha256'][:12]})"
    here = f"this run's '{mine['name']}' (sha256 {mine['sha256'][:12]})"
    if theirs["name"] == mine["name"]:  # the same name, other figures: a profile edited, or calibrated under its name
        again = (f"it is another profile of that name (edited since, or another autotune's; its study gave --hardware "
                 f"{theirs['hardware']}): replay it with the profile file it was simulated on")
    elif theirs["hardware"] in available_hardware():
        again = f"replay it with --hardware {theirs['hardware']}"
    else:
        again = (f"replay it with --hardware {_PROFILE_FILE}, where {_PROFILE_FILE} is the profile '{theirs['name']}' its "
                 f"study gave as {theirs['hardware']}")
    return (f"{origin} holds figures simulated on hardware {where}, not on {here}: a simulation is its profile's, "
            f"not its node's; {again}, or simulate this profile (--backend simulate)")


def mixed_studies(path, studies: list[tuple[dict, list[str]]], flags: dict[str, str]) -> str:
    """The refusal of a file holding the records of several studies (`studies`: each one's `study` and its records'
    origins), each named by its lines and the study fields that differ between them: named by model and hardware
    alone, two studies of one model on one node (another --global-batch, say) read alike (trial 44)."""
    differing = [key for key in flags if len({json.dumps(study[key]) for study, _ in studies}) > 1]
    all_sizes = [study.get("model_sizes") for study, _ in studies]
    sizes_differ = len({json.dumps(sizes, sort_keys=True) for sizes in all_sizes}) > 1
    fields = [*differing, *(["model_sizes"] if sizes_differ else [])]
    parts = []
    for (study, origins), sizes in zip(studies, all_sizes):
        values = [f"{key} {study[key]}" for key in differing]
        if sizes_differ:
            values.append(_sizes_text(sizes, all_sizes))
        parts.append(f"{_lines(path, origins)} ({', '.join(values)})")
    # Each study replays with its own flags: those of the fields that differ (the model's sizes are its --model's).
    again = sorted({flags.get(key, flags["model"]) for key in fields}, key=[*flags.values()].index)
    return (f"measurements {path} mixes the records of {len(studies)} studies, whose \"study\" differs in "
            f"{', '.join(fields)}: {'; '.join(parts)}; split it into one file per study and replay each with its own "
            f"{', '.join(again)}")


def _sizes_text(sizes: dict | None, all_sizes: list[dict | None]) -> str:
    """One study's model_sizes beside the others': the sizes in which they differ ("llm.layers 48"), or, where they
    differ only in being given, its parameter count."""
    if sizes is None:
        return "no model_sizes"
    differ: dict[str, object] = {}
    for other in all_sizes:
        for size, _, value in size_differences(other or sizes, sizes):
            differ.setdefault(size, value)
    if not differ:
        return f"model_sizes of {params_text(model_from_json(sizes, origin='model_sizes').params())} parameters"
    return first_three([f"{size} {value}" for size, value in differ.items()])


_MOST_SPANS = 4  # a file's studies interleaved line by line would make the line one list of numbers


def _lines(path, origins: list[str]) -> str:
    """"lines 1-3, 7", "entry 4": where a study's records are (a JSON lines file's lines, a JSON list's entries)."""
    where = [origin.removeprefix(f"measurements {path} ").split(" ", 1) for origin in origins]
    word, numbers = where[0][0], sorted(int(number) for _, number in where)
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    shown_spans = [str(low) if low == high else f"{low}-{high}" for low, high in spans[:_MOST_SPANS]]
    more = f" and {len(numbers) - sum(high - low + 1 for low, high in spans[:_MOST_SPANS])} more" if len(spans) > _MOST_SPANS else ""
    plural = {"line": "lines", "entry": "entries"}.get(word, word)
    return f"{word if len(numbers) == 1 else plural} {', '.join(shown_spans)}{more}"


def _are(count: int, plural: str, singular: str) -> str:
    return singular if count == 1 else plural


def _unused(path, records: dict[str, dict], checks: list) -> tuple[int, list[tuple]]:
    """(how many records this study cannot use, [(count, what they are, the detail, the fix)] by cause). A
    record is counted under each of the first two causes it has (knob values the space lacks: a --space fix;
    a node count outside --nodes: a --nodes fix), so one line gives every fix; one with neither is a candidate
    this study rules out (a rule, or the memory estimate here)."""
    values = space_values(checks)
    by_key = {params_key(c.candidate.knobs.to_dict()): c for c in checks}
    unused, lacking, outside, ruled_out = 0, [], [], []
    for key, record in records.items():
        check = by_key.get(key)
        if check is not None and check.valid:
            continue
        unused += 1
        lacks, far = bool(lacking_values([record], values)), record["params"]["nodes"] not in values["nodes"]
        if lacks:
            lacking.append(record)
        if far:
            outside.append(record)
        if not lacks and not far:
            ruled_out.append((record, check))
    causes = []
    if lacking:
        causes.append((len(lacking), f"{_are(len(lacking), 'hold', 'holds')} knob values this space lacks",
                       values_text(lacking_values(lacking, values)), "pass the --space they were measured with"))
    if outside:
        nodes = sorted({record["params"]["nodes"] for record in outside})
        # A --nodes that holds every record's count, those this study replays too.
        every = [record["params"]["nodes"] for record in records.values()]
        causes.append((len(outside), f"{_are(len(outside), 'are', 'is')} for node counts outside this study's "
                                     f"{nodes_flag(sorted(values['nodes']))}",
                       counted(", ".join(map(str, nodes)), "node"), f"pass --nodes {nodes_covering(every)}"))
    if ruled_out:
        record, check = ruled_out[0]
        where = record["origin"].removeprefix(f"measurements {path} ")
        causes.append((len(ruled_out), f"{_are(len(ruled_out), 'are candidates', 'is a candidate')} this study rules out",
                       f"{'first, ' if len(ruled_out) > 1 else ''}{where}: {check.reason}",
                       "`autotune space` gives each candidate's reason"))
    return unused, causes


def _causes_text(unused: int, causes: list[tuple]) -> str:
    if len(causes) == 1:
        _, what, detail, fix = causes[0]
        return f"{_are(unused, 'they', 'it')} {what} ({detail}); {fix}"
    return ", ".join(f"{count} {what} ({detail}; {fix})" for count, what, detail, fix in causes)


def not_replayed(path, records: dict[str, dict], checks: list) -> dict | None:
    """{"records": how many records this study cannot use, "why": by cause (knob values its space lacks, node counts
    outside its --nodes, candidates it rules out), each with its fix}; None where every record is used. Kept in the
    study (replay.measurements_record): its report and compare say it, not the run's start alone (trial64 #6)."""
    unused, causes = _unused(path, records, checks)
    return {"records": unused, "why": _causes_text(unused, causes)} if unused else None


def not_replayed_text(left_out: dict, records: int) -> str:
    """"5 of its 10 records are not replayed: they hold knob values ...": not_replayed's, said."""
    return f"{left_out['records']} of its {records} records {_are(left_out['records'], 'are', 'is')} not replayed: {left_out['why']}"


def none_usable(path, records: dict[str, dict], checks: list) -> str:
    """The refusal of a file no record of which this study can use (every probe would fail "no record"), why."""
    unused, causes = _unused(path, records, checks)
    return (f"measurements {path}: none of its {counted(len(records), 'record')} is a valid candidate of this study: "
            + _causes_text(unused, causes))
