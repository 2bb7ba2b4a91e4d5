"""Output paths checked before any work: a run directory or an export file that cannot be written is
one line and exit 2 before a study is opened or a probe started, not a traceback at the end."""

from __future__ import annotations

import tempfile
from pathlib import Path

from autotune.errors import UserError


def missing_directories(path: Path) -> list[Path]:
    """`path` and those of its parents that do not exist yet, deepest first."""
    return [p for p in (path, *path.parents) if not p.exists()]


def remove_empty(created: list[Path]) -> None:
    """Remove the directories of `created` (deepest first) that are still empty: a command that fails
    leaves nothing behind of a directory it made."""
    for made in created:
        try:
            made.rmdir()
        except OSError:
            break


def directory_problem(path: Path) -> str | None:
    """Create `path` (and its parents) if needed and prove a file can be written there; else why not.

    Trying is the only honest test: permission bits say nothing to root, and /proc, read-only mounts
    or a full disk refuse whoever asks."""
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return f"{blocker} is a file, not a directory"
    created = missing_directories(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        remove_empty(created)
        return f"cannot write in {path} ({exc.strerror or exc})"
    return None


def writable_directory(path: Path, what: str, fix: str = "choose a writable directory") -> Path:
    """`path` as a directory files can be written in, created if needed; `what` names it ("--out")."""
    path = Path(path)
    problem = directory_problem(path)
    if problem:
        raise UserError(f"{what} {path}: {problem}; {fix}")
    return path


def writable_file(path: Path, what: str, example: str = "knee.json") -> Path:
    """`path` as a file that can be written: not a directory, in a writable directory (created if needed).
    `example`: a file name of the kind expected, suggested when `path` is a directory."""
    path = Path(path)
    if path.is_dir() or str(path).endswith("/"):
        raise UserError(f"{what} {path} is a directory; give a file name such as {path / example}")
    if path.exists() and not path.is_file():  # a device (/dev/null), pipe or socket: the rename would replace it
        raise UserError(f"{what} {path} is not a regular file (a device, pipe or socket); give a file name such as "
                        f"{path.parent / example}")
    if _is_sqlite_database(path):  # a run's study.db (or any study storage): replacing it loses every trial
        raise UserError(f"{what} {path} is an SQLite database (a study's storage?) and would be replaced, its trials "
                        f"lost; give another file name such as {path.parent / example}")
    problem = directory_problem(path.parent)
    if problem:
        raise UserError(f"{what} {path}: {problem}; choose a writable path")
    return path


def _is_sqlite_database(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def check_run_outputs(run_dir: Path, what: str) -> None:
    """What a run or report writes in its run directory (pareto.json, report.html, configs/), checked
    before any study is opened: a directory where a file goes is one line now, not a traceback after
    the last probe."""
    run_dir = Path(run_dir)
    for name in ("pareto.json", "report.html"):
        path = run_dir / name
        if path.exists() and not path.is_file():
            raise UserError(f"{what} {run_dir}: {path} is not a regular file (the report writes it); move it out of the way")
    configs = run_dir / "configs"
    if configs.exists() and not configs.is_dir():
        raise UserError(f"{what} {run_dir}: {configs} is not a directory (the picks' DeepSpeed configs go there); "
                        "move it out of the way")
