"""One study as `autotune compare` reads it: a run directory's pareto.json, checked to hold what a
comparison reads (the front, the picks and the inputs) before anything is compared, so a missing,
damaged or foreign file is one line naming the fix, not a KeyError half-way through a table.

Only pareto.json is read, never study.db: a colleague's copied run directory, or one whose study is in
a --storage database, compares as well as one's own, and nothing is written."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from autotune.candidate import KNOBS, UNTOUCHED_DEVICE_SETTINGS
from autotune.errors import UserError
from autotune.report.pareto_json import PARETO_SCHEMA_VERSION, read_pareto_json

# The knobs every point of a pareto.json names; a study from before the device knobs ran them untouched.
_POINT_KNOBS = tuple(knob for knob in KNOBS if knob not in UNTOUCHED_DEVICE_SETTINGS)


@dataclass(frozen=True)
class ComparedStudy:
    run_dir: Path
    document: dict  # its pareto.json

    @property
    def node_counts(self) -> list[int]:
        """pareto.json's `node_counts`; an older file has `nodes` alone (a number, or a list for a range)."""
        counts = self.document.get("node_counts", self.document["nodes"])
        return [counts] if isinstance(counts, int) else list(counts)

    @property
    def points(self) -> dict[int, dict]:
        """Every point it lists, by trial: the front's and the other feasible ones."""
        return {p["trial"]: p for p in [*self.document.get("feasible", []), *self.document["front"]]}


def read_study(run_dir: Path) -> ComparedStudy:
    """The study whose reports `run_dir` holds, or UserError naming what is wrong with it and the fix."""
    if not run_dir.exists():
        raise UserError(f"{run_dir} does not exist; pass the --out directory of an `autotune run`")
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory; pass the --out directory of an `autotune run` "
                        f"(the one holding {run_dir.name if run_dir.name == 'pareto.json' else 'pareto.json'}), not a file")
    elsewhere = "" if (run_dir / "study.db").is_file() else " with the --storage and --study-name its run was given"
    rebuild = f"run `autotune report {run_dir}`{elsewhere}, which writes it again from the study"
    document, unread = read_pareto_json(run_dir / "pareto.json")
    if unread == "missing":
        where = "" if (run_dir / "study.db").is_file() else " (nor a study.db: is it the --out directory of an `autotune run`?)"
        raise UserError(f"{run_dir} holds no pareto.json{where}; run `autotune report {run_dir}` first (with --storage and "
                        "--study-name where the run kept its study in a database)")
    if unread:
        raise UserError(f"pareto.json in {run_dir} cannot be read: {unread}; {rebuild}")
    version = document.get("schema_version") if isinstance(document, dict) else None
    if isinstance(version, int) and version > PARETO_SCHEMA_VERSION:  # its keys may mean something else: not read
        raise UserError(f"pareto.json in {run_dir} has schema_version {version}, written by a newer autotune; this one "
                        f"reads {PARETO_SCHEMA_VERSION}: compare with that newer autotune, or run this one's "
                        f"`autotune report {run_dir}`")
    problem = document_problem(document)
    if problem:
        raise UserError(f"pareto.json in {run_dir} is not a report autotune compare can read: {problem}; {rebuild}")
    return ComparedStudy(run_dir, document)


def document_problem(document) -> str | None:
    """What a comparison would trip on in a pareto.json's value (a key missing, a figure not a number), else None.
    Keys added since the first pareto.json (`inputs`, `node_counts`, `schema_version`) may be missing."""
    if not isinstance(document, dict):
        return f"it holds a JSON {type(document).__name__}, not an object"
    for key, kind in (("model", str), ("hardware", str), ("workload", dict), ("backend", str), ("front", list),
                      ("recommendations", dict)):
        if not isinstance(document.get(key), kind):
            return f"`{key}` is {'missing' if key not in document else 'not a ' + kind.__name__}"
    for key in ("source", "energy_source"):
        if not isinstance(document.get(key), (str, list)):
            return f"`{key}` is missing"
    version = document.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return "`schema_version` is not a whole number >= 1"
    for key in ("nodes", "node_counts"):  # `nodes` a count or a list; `node_counts` (newer) a list
        counts = document.get(key, [1])
        if not (_count(counts) or (isinstance(counts, list) and counts and all(map(_count, counts)))):
            return f"`{key}` is not a node count or a list of them"
    if "nodes" not in document:
        return "`nodes` is missing"
    if "inputs" in document and not (document["inputs"] is None or isinstance(document["inputs"], dict)):
        return "`inputs` is not an object"
    for key in ("front", "feasible"):
        for index, point in enumerate(document.get(key) or []):
            problem = _point_problem(point)
            if problem:
                return f"{key}[{index}] {problem}"
    trials = {p["trial"] for p in [*(document.get("feasible") or []), *document["front"]]}
    for name, trial in document["recommendations"].items():
        if trial not in trials:
            return f"the {name} pick names trial {trial!r}, which no point of `front` or `feasible` is"
    return None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _point_problem(point) -> str | None:
    if not isinstance(point, dict):
        return "is not an object"
    if not isinstance(point.get("trial"), int) or isinstance(point.get("trial"), bool):
        return "has no trial number"
    params = point.get("params")
    if not isinstance(params, dict) or any(knob not in params for knob in _POINT_KNOBS):
        return f"(trial {point['trial']}) does not name every knob in `params` ({', '.join(_POINT_KNOBS)})"
    if not _number(point.get("time_s")):
        return f"(trial {point['trial']}) has no `time_s` number"
    if point.get("energy_kj") is not None and not _number(point["energy_kj"]):
        return f"(trial {point['trial']}) has an `energy_kj` that is not a number"
    return None
