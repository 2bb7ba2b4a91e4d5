"""Where a launch study's probes write (RUN_DIR/trials/NNNN), and a folder there the tuner cannot write, in one line.

A trial directory or trials/ the tuner cannot write (another user's on a shared run directory, a quota, a read-only
mount) crashed `run` with a traceback as the probe's files were written, exit 1, and the report then counted it as a
probe the user stopped (trial 69 #8). Now it is one line naming the folder and the fix (a UserError: exit 2, the
trial interrupted, so its candidate is probed when the study resumes, every other trial kept), and `run` says it
before any probe where it can (`check_trials_folder`, when the backend starts): trials/ itself, and an empty trial
folder made ahead of its trial. A trial folder that cannot even be listed may be a colleague's finished trial
(umask 077), which no probe writes again: it is left to the probe that would write it.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from autotune.errors import UserError


def unwritable_words(folder: Path, exc: OSError) -> str:
    """"FOLDER cannot be written (why): the fix", for an OSError raised by a write in `folder`: a full disk, a quota or a
    file-size limit as any file write says them (atomic_write.write_fix)."""
    from autotune.atomic_write import write_failure, write_fix

    if exc.errno == errno.EROFS:
        fix = "copy the run directory to a writable file system and resume there"
    elif exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        fix = write_fix(exc)
    else:  # EACCES, EPERM: its owner or mode
        fix = f"make it writable (chmod u+rwx {folder}, as its owner), or move it aside"
    return f"{folder} cannot be written ({write_failure(exc)}), and the probes write their files there: {fix}"


def written_folder(exc: OSError, fallback: Path) -> Path:
    """The folder a failed write was in: the parent of the path the error names (a file, or a folder being made)."""
    return Path(exc.filename).parent if exc.filename else fallback


def probe_files_error(trial_dir: Path, trial_number: int, exc: OSError) -> UserError:
    """The one line for a trial whose probe files could not be written: the study stops there, and the same
    command probes the trial's candidate again once the folder is fixed."""
    return UserError(f"trial {trial_number} was not probed: {unwritable_words(written_folder(exc, trial_dir), exc)}; "
                     "what the study evaluated is kept, and the same command then probes this candidate again")


def check_trials_folder(run_dir: Path) -> None:
    """Refuses, before any probe, a RUN_DIR/trials that cannot be listed or written, and an empty trial folder in it
    that cannot be written (one made ahead of its trial). Nothing to check where there is no trials/ yet."""
    trials = Path(run_dir) / "trials"
    if not os.path.lexists(trials):
        return
    if not trials.is_dir():
        raise UserError(f"{trials} is not a directory, and the probes write their files there (trials/NNNN): move it "
                        "out of the way")
    try:
        folders = [path for path in trials.iterdir() if path.is_dir() and not path.is_symlink()]
        _write_check(trials)
    except OSError as exc:
        raise UserError(f"{unwritable_words(trials, exc)}; nothing was probed") from None
    for folder in sorted(folders):
        try:
            if any(folder.iterdir()):
                continue  # a probe's files: a finished trial's, never written again
        except OSError:
            continue  # not even listable: a colleague's trial, perhaps (see the module docstring)
        try:
            _write_check(folder)
        except OSError as exc:
            raise UserError(f"{unwritable_words(folder, exc)}; nothing was probed") from None


def _write_check(folder: Path) -> None:
    """Trying is the only honest test (commands/paths.directory_problem): modes say nothing to root, nor of a
    read-only mount or a full disk."""
    with tempfile.TemporaryFile(dir=folder, prefix=".write-check-"):
        pass
