"""One study as `autotune compare` reads it: a run directory's pareto.json, checked to hold what a
comparison reads (the front, the picks and the inputs) before anything is compared, so a missing,
damaged or foreign file is one line naming the fix, not a KeyError half-way through a table.

Only pareto.json is read, never study.db: a colleague's copied run directory, or one whose study is in
a --storage database, compares as well as one's own, and nothing is written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autotune.errors import UserError
from autotune.report.compare_checks import document_problem
from autotune.report.pareto_json import PARETO_SCHEMA_VERSION, read_pareto_json

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
