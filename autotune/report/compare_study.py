"""One study as `autotune compare` reads it: a run directory's pareto.json, checked to hold what a
comparison reads (the front, the picks and the inputs) before anything is compared, so a missing,
damaged or foreign file is one line naming the fix, not a KeyError half-way through a table.

Only pareto.json is read, never study.db: a colleague's copied run directory, or one whose study is in
a --storage database, compares as well as one's own, and nothing is written."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from autotune.candidate import KNOBS, UNTOUCHED_DEVICE_SETTINGS, knob_value
from autotune.errors import ConfigError, UserError
from autotune.hardware import HardwareProfile, load_hardware
from autotune.hardware.dump import hardware_to_dict
from autotune.report.compare_checks import document_problem
from autotune.report.inputs import content_sha256
from autotune.report.pareto_json import PARETO_SCHEMA_VERSION, UNREADABLE, read_pareto_json, unreadable_fix


def point_params(point: dict) -> dict:
    """A point's knobs, the device knobs a study from before them ran untouched included; each as a candidate
    holds it (a power limit written 1 is 1.0, as the rest of pareto.json writes it)."""
    params = {**UNTOUCHED_DEVICE_SETTINGS, **point["params"]}
    return {knob: knob_value(knob, params[knob]) for knob in KNOBS}


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
    def gpu_counts(self) -> list[int] | None:
        """The GPUs at each of `node_counts` (pareto.json's `gpu_counts`, or an older file's `gpus`); None where not
        recorded for each."""
        gpus = self.document.get("gpu_counts", self.document.get("gpus"))
        gpus = [gpus] if isinstance(gpus, int) else gpus
        return gpus if isinstance(gpus, list) and len(gpus) == len(self.node_counts) else None

    @cached_property
    def hardware(self) -> HardwareProfile | None:
        """The study's hardware profile, for its power limits in watts (trial59 #10: gh200's 0.7 x default is 476 W,
        h100-sxm's 490 W): the profile its file or name loads here, only where that holds the figures the study
        recorded (`hardware_sha256`); None otherwise (a calibrated or since-edited profile's watts would be another's)."""
        recorded = (self.document.get("inputs") or {}).get("hardware_sha256")
        try:
            profile = load_hardware(self.document.get("hardware_file") or str(self.document["hardware"]))
        except (ConfigError, KeyError):
            return None
        return profile if recorded and content_sha256(hardware_to_dict(profile)) == recorded else None

    def outside_space(self, params: dict) -> dict:
        """{knob: value} of `params`' knob values its searched space lacks (empty where it searched them all; a
        pareto.json older than `inputs` names its node counts alone)."""
        space = {"nodes": self.node_counts, **((self.document.get("inputs") or {}).get("space") or {})}
        return {knob: value for knob, value in params.items() if knob in space and value not in space[knob]}

    def limit_w(self, point: dict) -> float | None:
        """A point's power limit in watts, as its study's report gives them: of the default NVML reported on its
        probe's devices, else of what the study's fractions are of (pareto.json `default_power_limit_w`: the default
        its probes recorded, or its profile's); None where neither is one number (a CPU study, several defaults)."""
        default_w = point.get("default_power_limit_w")
        if default_w is None and self.document.get("default_power_limit_source") is not None:
            default_w = self.document.get("default_power_limit_w")
        return point_params(point)["power_limit"] * default_w if isinstance(default_w, (int, float)) else None

    @property
    def points(self) -> dict[int, dict]:
        """Every point it lists, by trial: the front's and the other feasible ones."""
        return {p["trial"]: p for p in [*self.document.get("feasible", []), *self.document["front"]]}


def pareto_file(given: Path) -> Path:
    """The pareto.json `given` names: the file itself (a team lead handed the file alone), or the one in a run
    directory. Two arguments naming the same file are one study given twice."""
    return given if given.is_file() else given / "pareto.json"


def _run_dirs_in(folder: Path, most: int = 4) -> str:
    """` (it holds the run directories runs/a, runs/b)`: where a user passed the folder above them; else ``."""
    try:
        found = sorted(str(child) for child in folder.iterdir() if (child / "pareto.json").is_file())
    except OSError:  # a folder it may not list: the refusal is said without them
        found = []
    if not found:
        return ""
    more = f" and {len(found) - most} more" if len(found) > most else ""
    return f" (it holds the run directories {', '.join(found[:most])}{more})"


def read_study(given: Path) -> ComparedStudy:
    """The study whose pareto.json `given` is or holds, or UserError naming what is wrong with it and the fix."""
    if not given.exists():
        raise UserError(f"{given} does not exist; pass the --out directory of an `autotune run`, or its pareto.json")
    path = pareto_file(given)
    if path == given and given.suffix != ".json":  # report.html or study.db: not "damaged", just not the file
        raise UserError(f"{given} is not a pareto.json; pass the --out directory of an `autotune run`, or its pareto.json")
    run_dir = path.parent
    where = (f"{given}" if path == given else f"pareto.json in {given}")
    # Where its study is: the run directory's own study.db, else a database only its run's flags name.
    if (run_dir / "study.db").is_file():
        rebuild = f"run `autotune report {run_dir}`, which writes it again from the study (its study.db)"
    else:
        # Not `report {run_dir}`: it has no study.db, and report refuses it (trial 58 F6)
        rebuild = ("no study.db is beside it: run `autotune report RUN_DIR` on its run's --out directory (or with the "
                   "--storage and --study-name its run was given), which writes it again")
    document, unread = read_pareto_json(path)
    if unread == "missing" and (run_dir / "study.db").is_file():
        raise UserError(f"{given} holds no pareto.json; run `autotune report {given}` first")
    if unread == "missing":  # no study here for `report` to read: the folder above the run directories, say
        held = _run_dirs_in(given)
        if held:  # the folder above the run directories: one of them is the fix, not a report of the folder
            raise UserError(f"{given} holds no pareto.json, nor a study.db{held}: pass one of them")
        raise UserError(f"{given} holds no pareto.json, nor a study.db: pass the --out directory "
                        f"of an `autotune run`, or its pareto.json (where the run kept its study in a database, "
                        f"`autotune report {given} --storage URL --study-name NAME` writes one)")
    if unread == UNREADABLE:  # not damaged: `autotune report` rewrites it with the same mode
        raise UserError(f"{where} cannot be read (permission denied): {unreadable_fix(path)}")
    if unread:
        raise UserError(f"{where} cannot be read: {unread}; {rebuild}")
    version = document.get("schema_version") if isinstance(document, dict) else None
    if isinstance(version, int) and version > PARETO_SCHEMA_VERSION:  # its keys may mean something else: not read
        raise UserError(f"{where} has schema_version {version}, written by a newer autotune; this one "
                        f"reads {PARETO_SCHEMA_VERSION}: compare with that newer autotune, or run this one's "
                        f"`autotune report {run_dir}`")
    problem = document_problem(document)
    if problem:
        raise UserError(f"{where} is not a report autotune compare can read: {problem}; {rebuild}")
    return ComparedStudy(given, document)
