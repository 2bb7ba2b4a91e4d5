"""Output paths checked before any work: a run directory or an export file that cannot be written is
one line and exit 2 before a study is opened or a probe started, not a traceback at the end."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from autotune.errors import UserError


# A relative path needs the current directory, which another shell or a scratch cleaner may have removed
# under the command: os.getcwd() (os.path.abspath, Path.resolve) then raised FileNotFoundError (trial 45 §3).
CWD_GONE = "the current directory no longer exists; cd to an existing one"


def current_directory_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


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


_made: list[list[Path]] | None = None  # the folders the running command's output checks created


class CommandOutcome:
    succeeded = False  # set by the command's caller when it returns status 0


@contextmanager
def undone_on_failure() -> Iterator[CommandOutcome]:
    """Around a whole command (cli.main): the folders its output checks created for a path (`-o new/x.json`, as
    `mkdir -p` would) are removed again, where still empty, unless the command succeeds: an input refused after
    the output was checked leaves nothing behind, not even an empty folder."""
    global _made
    outer, _made = _made, []
    outcome = CommandOutcome()
    try:
        yield outcome
    finally:
        made, _made = _made, outer
        if not outcome.succeeded:
            for created in reversed(made):
                remove_empty(created)


def directory_problem(path: Path) -> str | None:
    """Create `path` (and its parents) if needed and prove a file can be written there; else why not.

    Trying is the only honest test: permission bits say nothing to root, and /proc, read-only mounts
    or a full disk refuse whoever asks."""
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return f"{blocker} is a file, not a directory"
    dangling = next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None)
    if dangling is not None:  # mkdir said "File exists" of a path that does not (trial 43 F9)
        return f"{dangling} is a link to {os.readlink(dangling)}, which does not exist (make it, or remove the link)"
    created = missing_directories(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        remove_empty(created)
        return f"cannot write in {path} ({exc.strerror or exc})"
    if _made is not None and created:
        _made.append(created)
    return None


def writable_directory(path: Path, what: str, fix: str = "choose a writable directory") -> Path:
    """`path` as a directory files can be written in, created if needed; `what` names it ("--out")."""
    path = Path(path)
    problem = directory_problem(path)
    if problem:
        raise UserError(f"{what} {path}: {problem}; {fix}")
    return path


def writable_file(path: Path, what: str, example: str = "knee.json", replaces: Callable[[Path], bool] | None = None,
                  kind: str = "", fix: str = "") -> Path:
    """`path` as a file that can be written: not a directory, in a writable directory (created if needed).
    `example`: a file name of the kind expected, suggested when `path` is a directory.
    `replaces`: whether an existing file at `path` is one this command wrote (`kind` names such a file:
    "an earlier export's DeepSpeed config"); any other existing file is refused (check_replaceable), with `fix`
    (default: another file name like `example`)."""
    path = Path(path)
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:  # a folder above it this user may not search (chmod 000): is_dir() raised it (trial69 #2)
        raise UserError(f"{what} {path}: cannot look in {path.parent} ({exc.strerror or exc}); choose a writable path") from None
    if path.is_dir() or str(path).endswith("/"):
        # Not "knee.json/knee.json" for a directory named as the file was meant to be: a name beside it.
        instead = path / example if path.name != example else path.parent / f"{path.stem}-1{path.suffix}"
        raise UserError(f"{what} {path} is a directory; give a file name such as {instead}")
    if path.exists() and not path.is_file():  # a device (/dev/null), pipe or socket: the rename would replace it
        raise UserError(f"{what} {path} is not a regular file (a device, pipe or socket); give a file name such as "
                        f"{example}")  # not in the device's folder (/dev/knee.json)
    if _is_sqlite_database(path):  # a run's study.db (or any study storage): replacing it loses every trial
        raise UserError(f"{what} {path} is an SQLite database (a study's storage?) and would be replaced, its trials "
                        f"lost; give another file name such as {path.parent / example}")
    problem = directory_problem(path.parent)
    if problem:
        raise UserError(f"{what} {path}: {problem}; choose a writable path")
    if replaces is not None:
        check_replaceable(path, what, replaces, kind, example, fix)
    return path


def check_replaceable(path: Path, what: str, ours: Callable[[Path], bool], kind: str, example: str, fix: str = "") -> None:
    """Refuse, in one line, to replace an existing file that this command did not write itself, as `cp -n`
    or git would: a probe's result.json, a run's pareto.json, a built-in profile or a user's own notes
    are lost for good once renamed over. An empty file holds nothing (mktemp) and may be replaced; a
    read-only one was protected on purpose. A link is judged by the file it names (it is written through)."""
    path = Path(path)
    if not path.exists():
        return
    real = path.resolve()
    in_trials = "trials" in (real.parent.name, real.parent.parent.name)
    alternative = Path(example) if in_trials else path.parent / example  # not another file among a probe's
    if alternative == path:
        alternative = path.with_name(f"{path.stem}-2{path.suffix}")
    fix = fix or f"move it away or give another file name such as {alternative}"
    # The rename needs no write permission on the file, nor does root: its mode bits are the owner's word.
    if not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222:
        raise UserError(f"{what} {path} is a read-only file and would be replaced; {fix}")
    if path.stat().st_size == 0 or ours(path):
        return
    raise UserError(f"{what} {path} {_what_it_is(path, real)}, not {kind}, and would be replaced; {fix}")


def _what_it_is(path: Path, real: Path) -> str:
    """What an existing file we refuse to replace is, in the words of a run directory where we can tell."""
    path = Path(os.path.abspath(path))  # a link is named with the file it leads to
    if real.name == "result.json" and re.fullmatch(r"\d+", real.parent.name) and real.parent.parent.name == "trials":
        return "is a probe's measured result" if path == real else f"names a probe's measured result ({real})"
    if "trials" in (real.parent.name, real.parent.parent.name):
        return "is a probe's file in a run's trials/" if path == real else f"names a probe's file ({real})"
    if (real.parent / "study.db").is_file() and real.name in ("pareto.json", "report.html"):
        return f"is a run's {real.name}" if path == real else f"names a run's {real.name} ({real})"
    return "is an existing file" if path == real else f"names an existing file ({real})"


def _is_sqlite_database(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


# What makes a directory a run directory: its study's storage, or the reports of one (a --storage study's).
_RUN_DIR_MARKS = ("study.db", "pareto.json")
_RUN_DIR_FIX = "pass the --out directory of an `autotune run`"


def enclosing_run_dir(path: Path) -> Path | None:
    """The nearest folder above `path` (a run directory's pareto.json, configs/knee.json, trials/0003/result.json)
    that is a run directory, else None."""
    for parent in list(Path(path).parents)[:3]:
        if any((parent / mark).is_file() for mark in _RUN_DIR_MARKS):
            return parent
    return None


def run_dir_problem(run_dir: Path) -> str | None:
    """Why `run_dir`, given as RUN_DIR, cannot be one, in a line that names the directory meant where it can tell (a
    file of a run directory, a folder inside one: `report runs/7b-1n/pareto.json`); None where it may be one (the
    study's storage says the rest: a folder without a study.db may be for a --storage study's reports)."""
    run_dir = Path(run_dir)
    if run_dir.is_dir():
        problem = study_db_problem(run_dir)
        if problem:
            return problem
        if any((run_dir / mark).exists() for mark in _RUN_DIR_MARKS):
            return None
        # With --storage too: its reports went into the run directory's configs/ (configs/configs/).
        enclosing = enclosing_run_dir(run_dir)
        return None if enclosing is None else f"{run_dir} is inside the run directory {enclosing}; pass {enclosing}"
    if not run_dir.exists():
        if run_dir.is_symlink():
            return f"{run_dir} is a link to {os.readlink(run_dir)}, which does not exist; {_RUN_DIR_FIX}"
        return f"{run_dir} does not exist; {_RUN_DIR_FIX}"
    enclosing = enclosing_run_dir(run_dir)
    if enclosing is not None:
        return f"{run_dir} is a file of the run directory {enclosing}; pass the directory, {enclosing}"
    what = "a file" if run_dir.is_file() else "not a directory (a device, pipe or socket)"
    return f"{run_dir} is {what}, not a run directory; {_RUN_DIR_FIX}"


def study_db_problem(run_dir: Path) -> str | None:
    """Why RUN_DIR/study.db is no file a study can be kept in (a directory, a FIFO, a dangling link), else None.
    `report` read it as "no study.db: its run kept the study in a --storage database" (trial 45), and `run`, which
    opened it anyway, blamed a moved directory or the file system and said its trials were "kept in it" (trial69
    #13)."""
    study_db = Path(run_dir) / "study.db"
    if not (study_db.exists() or study_db.is_symlink()) or study_db.is_file():
        return None
    what = (f"a link to {os.readlink(study_db)}, which does not exist" if not study_db.exists()
            else "a directory" if study_db.is_dir() else "not a regular file")
    return (f"{study_db} is {what}, where the run directory's study database belongs; move it out of the way "
            "(the study's database is the file study.db)")


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
