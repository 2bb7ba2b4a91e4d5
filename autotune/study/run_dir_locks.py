"""A run directory's locks: RUN_DIR/.workers.lock, which every `autotune run` on the directory's own study.db holds
shared while it runs (so a worker can tell it is alone, and `report` that a run is under way), and .reports.lock,
one command at a time writing the reports (commands/finish.reports_turn). Files that hold flock locks, never data
(docs/run-directory.md)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from autotune.errors import UserError
from autotune.os_text import shell_text


WORKERS_LOCK = ".workers.lock"
REPORTS_LOCK = ".reports.lock"
# What each lock is for, as the line that names one says.
_PURPOSES = {WORKERS_LOCK: "the lock by which the run directory's workers see each other",
             REPORTS_LOCK: "the lock by which one command at a time writes the run directory's reports"}


class LockUnusable(UserError):
    """A run directory's lock file that cannot serve: no file, or one this user cannot open. `problem` and `fix`
    apart, for a command that goes on without the lock and says so in its own words (finish.reports_turn)."""

    def __init__(self, problem: str, purpose_said: str, fix: str):
        super().__init__(f"{problem}{purpose_said}; {fix}")
        self.problem, self.fix = problem, fix


def open_run_dir_lock(path: Path):
    """A run directory's lock file (.workers.lock, .reports.lock) opened for flock, created where it is missing.
    flock asks no write permission: read-only, the lock a colleague's run created (0644 under the usual umask) serves
    this user too, where opening it to append was a PermissionError traceback (trial69 #9). A LockUnusable where it is
    no file (a directory: IsADirectoryError) or cannot be opened (or made)."""
    purpose = _PURPOSES.get(path.name, _PURPOSES[WORKERS_LOCK])
    if (path.exists() or path.is_symlink()) and not path.is_file():
        raise LockUnusable(f"{path} is not a regular file", f", where {purpose} belongs",
                           "move it out of the way (autotune makes it again)")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)  # the umask decides, as for every file of a run
    except OSError as exc:
        raise LockUnusable(f"{path} cannot be opened ({exc.strerror or exc})", f": it is {purpose}",
                           f"make it readable to every user of the run directory (chmod a+r {shell_text(str(path))}, as "
                           "its owner), or remove it while no run is under way there") from None
    return os.fdopen(descriptor, encoding="utf-8")


def check_workers_lock(run_dir: Path, storage: str | None) -> None:
    """Before the study opens: a .workers.lock that sole_worker could not open is the run's one line, not one after
    "resuming the study" (a missing one is made there, once the study is this run's)."""
    lock = Path(run_dir) / WORKERS_LOCK
    if storage is None and (lock.exists() or lock.is_symlink()):
        open_run_dir_lock(lock).close()


@contextlib.contextmanager
def sole_worker(run_dir: Path, storage: str | None) -> Iterator[bool]:
    """Whether this worker is the only one on the study while the block runs: only then is a RUNNING
    trial a dead run's, which may be failed and queued again (a live worker's trial may not be).

    The run directory's SQLite study: every worker holds a shared lock on RUN_DIR/.workers.lock while
    it runs; one that can take it exclusively first is alone. A --storage study may have workers on
    other machines: never alone (Optuna's heartbeats retry dead workers' trials there).
    """
    if storage is not None:
        yield False
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    with open_run_dir_lock(run_dir / WORKERS_LOCK) as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except BlockingIOError:
            alone = False
        fcntl.flock(lock, fcntl.LOCK_SH)  # converts ours, or waits for a starting worker's to convert
        try:
            yield alone
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_under_way(run_dir: Path) -> bool:
    """Whether a run of the run directory's own study holds RUN_DIR/.workers.lock now (sole_worker): a report
    then shows the trials finished so far (trial 43 F9: it read as the study's end). Tried for a moment without
    waiting; no lock file, no run."""
    try:
        lock = open(Path(run_dir) / WORKERS_LOCK, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return False
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return False
