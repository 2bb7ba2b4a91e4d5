"""What a study's database failing mid-command (after it opened) means, in one line.

Optuna wraps every failed commit in StorageInternalError, whose message blames the data ("invalid data in
the commit, e.g. exceeding max length"), and a later call may end in its own "AssertionError: Should not
reach." What happened is in the database driver's exception further down the chain: SQLite's "database
or disk is full", "attempt to write a readonly database" (the run directory moved or deleted while the
run went on), "database disk image is malformed". Those are a cluster's usual ways for a long study to
die (a quota, a scratch purge, a node losing its file system), and each was a 100-line traceback with
exit status 1 (trial 43 F5). What was committed before stays in the database.

The same words serve a database that cannot be opened (open_failure_line adds a --storage's own causes: a driver
not installed, a server not reached), and the trials/ results a lost study leaves behind are counted here.
"""

from __future__ import annotations

import json
from pathlib import Path

from autotune.counted import counted
from autotune.errors import UserError

_CHAIN_LIMIT = 12  # exceptions followed down __cause__/__context__

_KEPT = "what was evaluated before is kept in it"
_READ_ONLY = "readonly database"  # SQLite's "attempt to write a readonly database"
# (what the driver says, the rest of the line after "the study's database")
_KNOWN = (
    ("database is locked", "is locked by another process (another autotune run, optuna-dashboard, sqlite3, a backup) "
     f"beyond SQLite's wait; {_KEPT}: run the same command again when that is done"),
    ("database or disk is full", f"cannot grow: its disk is full (or over quota); {_KEPT}: free space, then run the same "
     "command again"),
    (_READ_ONLY, "cannot be written (the file or its directory is read-only, or the run directory was moved or deleted "
     f"while the command ran); {_KEPT}: make it writable or put it back, then run the same command again"),
    ("unable to open database file", "cannot be opened any more (its directory moved, deleted or unmounted?); "
     f"{_KEPT}: put it back, then run the same command again"),
    ("disk image is malformed", "is damaged (disk image is malformed: a torn write, a bad block, a copy made mid-write) "
     "and cannot be read whole; restore it from a backup, or start the study over in a new --out"),
    ("disk i/o error", f"failed to read or write (disk I/O error: the file system under it?); {_KEPT}: check that file "
     "system, then run the same command again"),
)


def _chain(exc: BaseException | None) -> list[BaseException]:
    found = []
    while exc is not None and len(found) < _CHAIN_LIMIT and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def _file_size_limited(words: str) -> str | None:
    """SQLite's "disk I/O error" under a file-size limit (`ulimit -f`: Python ignores SIGXFSZ, so the write fails with
    EFBIG, which SQLite does not tell apart): the limit, not the file system, is the likely cause (trial69 #5)."""
    from autotune.atomic_write import file_size_limit_kib

    limit_kib = file_size_limit_kib() if words == "disk i/o error" else None
    if limit_kib is None:
        return None
    return (f"failed to read or write (disk I/O error, where this process may write files of at most {limit_kib} KiB: "
            f"ulimit -f); {_KEPT}: raise the limit (ulimit -f unlimited), then run the same command again")


def storage_failure_line(exc: BaseException, named: str = "the study's database") -> str | None:
    """One line (without the command's prefix) for a failure of the study's database, or None for any other error.
    `named`: the database as the line names it where the command knows which ("the study database PATH")."""
    chain = _chain(exc)
    said = " ".join(str(e).lower() for e in chain)
    for words, rest in _KNOWN:
        if words in said:
            return f"{named} {_file_size_limited(words) or rest}"
    if any(type(e).__name__ == "StorageInternalError" for e in chain):
        inner = next((e for e in reversed(chain) if str(e).strip()), exc)
        return (f"the study's database failed mid-command ({type(inner).__name__}: {' '.join(str(inner).split())[:200]}); "
                f"{_KEPT}: run the same command again once that is fixed")
    return None


# The pip package of each driver module SQLAlchemy may ask for (its module's name is not always the package's).
_DRIVER_PACKAGES = {"psycopg": '"psycopg[binary]"', "psycopg2": "psycopg2-binary", "pymysql": "pymysql",
                    "MySQLdb": "mysqlclient", "mysql": "mysql-connector-python"}
_POSTGRES_EXTRA = 'pip install -e ".[postgres]"'  # pyproject's extra for PostgreSQL: psycopg 3


def open_failure_line(exc: BaseException, url: str, shown: str) -> str | None:
    """One line for a --storage database (`shown`: its URL, password hidden) that could not be opened for a cause
    outside the URL's spelling: its driver not installed, a database kind SQLAlchemy does not know, a server not
    reached or that turned the connection away. Each read "check the URL ..., the server and its driver" with
    Optuna's "Failed to import DB access module ... Please install appropriate one", which named no module."""
    import sqlalchemy

    chain = _chain(exc)
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except Exception:  # noqa: BLE001 - no URL: what is wrong with it is the caller's to say
        return None
    kind = parsed.get_backend_name()
    missing = next((e for e in chain if isinstance(e, ModuleNotFoundError) and e.name), None)
    if missing is not None:
        module = missing.name.split(".")[0]
        fix = f"pip install {_DRIVER_PACKAGES.get(module, module)}"
        if kind == "postgresql":
            fix = (f"{_POSTGRES_EXTRA} in autotune's source folder (or {fix})" if module == "psycopg" else
                   f"write the URL as {parsed.set(drivername='postgresql+psycopg').render_as_string()} to use psycopg, "
                   f"which {_POSTGRES_EXTRA} installs, or {fix}")
        return f"--storage {shown!r} needs the {kind} driver {module}, which is not installed: {fix}"
    if any(type(e).__name__ == "NoSuchModuleError" for e in chain):
        return (f"--storage {shown!r}: {parsed.drivername!r} is no database SQLAlchemy knows; write sqlite:///PATH or "
                "postgresql://USER@HOST/DB, or leave out --storage to use RUN_DIR/study.db")
    server = next((e for e in reversed(chain) if type(e).__name__ == "OperationalError"), None)
    if kind != "sqlite" and server is not None:
        said = (str(server).strip().splitlines() or [type(server).__name__])[0][:200]  # the rest: hints, a docs link
        return (f"cannot open study storage {shown!r}: its server was not reached or turned the connection away "
                f"({said}); start the server, or correct the URL's host, port, user, password or database name")
    return None


def read_only_failure(exc: BaseException) -> bool:
    """Whether `exc` is SQLite refusing a write to a database it can only read (the file or its folder read-only)."""
    return any(_READ_ONLY in str(e).lower() for e in _chain(exc))


def trial_folders_with_results(run_dir: Path) -> list[Path]:
    """RUN_DIR/trials/NNNN that hold a probe's result (result.json, or result-1.json ... with repeats); none where
    there is no trials/ (a simulated study's run directory) or it cannot be read. Only the folders a trial writes
    (trial_folder's names): a user's own trials/old/ of earlier results is no trial's, and no probe writes over it,
    yet it blocked every new study there as unrecorded probe results."""
    try:
        return [folder for folder in (Path(run_dir) / "trials").iterdir()
                if _is_trial_folder(folder) and folder.is_dir() and any(folder.glob("result*.json"))]
    except OSError:
        return []


def _is_trial_folder(folder: Path) -> bool:
    """Whether `folder` is named as a trial's directory is (0007, 0123, 12345): '7' or '00007' is no trial's."""
    from autotune.backends.repeat_takeover import trial_folder

    name = folder.name
    return name.isascii() and name.isdigit() and trial_folder(folder.parent, int(name)).name == name


def kept_probe_results(run_dir: Path) -> str:
    """"; the results of its 12 probes are kept in RUN_DIR/trials/*/result.json: `autotune export ...`", or "" where
    none is: a damaged study.db's refusal said "start a new study" alone, as if the measured probes, the expensive
    part of a study, were lost with it (trial 61 #24); then it said they were kept, in files no command read back
    (trial69 #14): `export --measurements` reads them (study/trial_files.py) for a replay that rebuilds the study
    without probing. A probe with repeats writes result-1.json ... result-N.json."""
    from autotune.shell import shell_path

    probes = len(trial_folders_with_results(run_dir))
    if not probes:
        return ""
    measurements = shell_path(f"{Path(run_dir).name or 'probes'}.jsonl")
    return (f"; the results of its {counted(probes, 'probe')} are kept in {Path(run_dir) / 'trials'}/*/result.json: "
            f"`autotune export {shell_path(run_dir)} --measurements {measurements}` reads them back for `autotune run "
            f"--backend replay --measurements {measurements}` (the study's flags, a new --out), which rebuilds the study "
            "without probing")


class StudyDatabaseLost(UserError):
    """A run directory's own study.db that cannot be read as a study (damaged, emptied, removed) where trials/ keeps
    the results of its probes: `export --measurements` reads those instead. `reason`: what is wrong, in a few words."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def unrecorded_probe_results(run_dir: Path, study) -> int:
    """How many of RUN_DIR/trials/* hold results that no trial of `study` (an Optuna study; None: one not made yet)
    made: a folder not named by one of its trial numbers, or whose candidate.json is not that trial's candidate. A
    new trial of that number would write its probe over them (trial 63 #1: a study.db emptied by a crash, a new
    study started there, and trials/0000 and 0001 were measured again over the lost study's results)."""
    folders = trial_folders_with_results(run_dir)  # read before the trials are: another worker's folder follows its trial
    trials = study.get_trials(deepcopy=False) if study is not None else []
    knobs = {trial.number: (trial.user_attrs.get("candidate") or {}).get("knobs") for trial in trials}
    return sum(not _made_by(folder, knobs) for folder in folders)


def _made_by(folder: Path, knobs: dict[int, dict | None]) -> bool:
    """Whether `folder` is the trial directory of one of the trials whose knobs `knobs` holds, by number."""
    if int(folder.name) not in knobs:
        return False
    try:
        written = json.loads((folder / "candidate.json").read_text(encoding="utf-8"))["knobs"]
    except (OSError, ValueError, TypeError, KeyError):  # none written, or a damaged one: the number alone tells
        return True
    recorded = knobs[int(folder.name)]
    return recorded is None or json.loads(json.dumps(recorded)) == written


def reported_study_gone(run_dir: Path, names: list[str], storage: str | None, study_name: str, what: str) -> str | None:
    """The refusal of a run directory whose reports (pareto.json, configs/) are of study `study_name`, which their
    database (`storage`, None: RUN_DIR's own study.db) no longer holds (`names`: the studies it holds): deleted, by
    `optuna delete-study` most likely. None where pareto.json names another study or database, or the study is there.
    With its study.db's own study deleted, `report` took the one study left there (a --storage run's) and wrote that
    one's reports over the only record of the deleted one (trial74 #6); in a shared database, the line sent the user to
    the study left, which belongs to another run directory and was refused there (trial74 #7). `what`: "RUN_DIR" or
    "--out"."""
    from autotune.os_text import shell_text, shown_name
    from autotune.study.storage import absolute_storage, recorded_storage, sqlite_url

    try:
        held = json.loads((Path(run_dir) / "pareto.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(held, dict) or held.get("study_name") != study_name or study_name in names:
        return None
    url = recorded_storage(absolute_storage(storage)) if storage else None
    if "storage" not in held or held["storage"] != url:
        return None  # another database's reports: check_run_dir_is_of's to say
    where = shell_text(url) if url else "its study.db"
    left = f"it holds {', '.join(map(shown_name, sorted(names)))} now" if names else "it holds no study now"
    back = "pass --storage with the database that holds it now" if url else "put back a study.db that holds it (a backup)"
    if what == "--out":
        fix = f"pass --out NEW_DIR to start {shown_name(study_name)} anew, or {back} to resume it"
    elif url or not names:  # a shared database's other studies are other run directories' (trial74 #7)
        fix = back
    else:  # a --storage run's study in this study.db: its reports belong in a directory of their own
        other = sorted(names)[0] if len(names) == 1 else "NAME"
        fix = (f"{back}, or report {'that study' if len(names) == 1 else 'one of those'} into a directory of its own: "
               f"autotune report NEW_DIR --storage {shell_text(sqlite_url(Path(run_dir) / 'study.db'))} "
               f"--study-name {shell_text(other)}")
    return (f"{what} {run_dir} reports study {shown_name(study_name)} (pareto.json, configs/), which {where} no longer "
            f"holds (deleted from it: `optuna delete-study`?; {left}): those reports, all that is left of it, are kept as "
            f"they are; {fix}")
