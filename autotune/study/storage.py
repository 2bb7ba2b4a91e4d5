"""Where a study lives: SQLite in the run directory by default, any Optuna RDB URL with --storage."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import time
import warnings
from pathlib import Path
from urllib.parse import quote, unquote

import optuna

from autotune.counted import counted
from autotune.errors import UserError
from autotune.os_text import shell_text, shown_name
from autotune.study.heartbeat import BeatSkippingStorage, RetryDeadWorkersTrials
from autotune.study.storage_failure import (
    StudyDatabaseLost, kept_probe_results, open_failure_line, reported_study_gone, storage_failure_line,
    unrecorded_probe_results,
)

STUDY_NAME = "autotune"  # a run directory's study.db holds one study; --study-name names others in a shared --storage
METRIC_NAMES = ("time_to_solution_s", "energy_to_solution_kj")
# Shared storage: a worker records a heartbeat every interval while it runs a trial; a trial whose
# heartbeat is older than the grace period belongs to a dead worker and is retried (twice at most; heartbeat.py).
# The environment may shorten them (tests) or lengthen them (a slow shared database).
HEARTBEAT_INTERVAL_ENV, GRACE_PERIOD_ENV = "AUTOTUNE_HEARTBEAT_INTERVAL_S", "AUTOTUNE_HEARTBEAT_GRACE_S"
HEARTBEAT_INTERVAL_S = 30
GRACE_PERIOD_S = 120


def storage_url(run_dir: Path, storage: str | None) -> str:
    return storage or sqlite_url(run_dir / "study.db")


def sqlite_url(path: Path) -> str:
    """The SQLite URL of the file at `path`, absolute. SQLAlchemy decodes %XX in a URL's path and takes a '?' as
    the start of connection options: the study of `--out 'a?b'` went to the file `a`. Both escaped, the URL names
    the file itself."""
    escaped = str(path.resolve()).replace("%", "%25").replace("?", "%3F")
    return f"sqlite:///{escaped}"


def storage_flags(storage: str | None, study_name: str = STUDY_NAME) -> str:
    """The flags that find a study again, for the commands a message suggests (" --storage URL ..."), its password
    hidden: a terminal line ends in job and CI logs, which are often readable by more people than the database."""
    shown = recorded_storage(storage) if storage else None
    hidden = " (its password where it says ***)" if shown and shown != storage else ""
    return ((f" --storage {shell_text(shown)}" if shown else "")
            + (f" --study-name {shell_text(study_name)}" if study_name != STUDY_NAME else "") + hidden)


def recorded_storage(url: str) -> str:
    """A --storage URL as the run directory's pareto.json keeps it, for the messages that send a user back
    to it: its password hidden (SQLAlchemy's `***`), as the file may be shared where the database's is not."""
    import sqlalchemy

    try:
        parsed = sqlalchemy.engine.make_url(url)
    except Exception:  # noqa: BLE001 - no URL SQLAlchemy reads held a study: nothing in it to hide
        return url
    return parsed.render_as_string(hide_password=True) if parsed.password else url


# A SQLite URL whose path is relative: `sqlite:///x.db`, not `sqlite:////abs/x.db` (in memory: `sqlite:///:memory:`).
_RELATIVE_SQLITE = re.compile(r"(sqlite(?:\+\w+)?:///)(?![/:])(.+)", re.DOTALL)


def absolute_storage(url: str) -> str:
    """`url` with a relative SQLite path made absolute, from the working directory as SQLAlchemy reads it: what a run
    directory's pareto.json keeps, for the reports that send a user back to the database from anywhere. A relative
    one sent them to `--storage sqlite:///shared.db`, which fails from any other directory (trial 66 #7)."""
    relative = _RELATIVE_SQLITE.fullmatch(url)
    if relative is None:
        return url
    return f"{relative.group(1)}{quote(os.getcwd(), safe='/')}/{relative.group(2)}"


def _recorded_study(run_dir: Path) -> str:
    """The flags that name a run directory's --storage study, from its pareto.json; "" where it has none."""
    try:
        held = json.loads((Path(run_dir) / "pareto.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return ""
    url = held.get("storage") if isinstance(held, dict) else None
    if not isinstance(url, str) or not url:
        return ""  # a pareto.json from before the URL was recorded
    name = held.get("study_name") if isinstance(held.get("study_name"), str) else STUDY_NAME
    hidden = " (its password where it says ***)" if "***" in url else ""
    return f" --storage {shell_text(url)} --study-name {shell_text(name)}{hidden}"


def _reports_of_own_study_db(run_dir: Path) -> bool | None:
    """Whether the run directory's pareto.json reports a study kept in the directory's own study.db (its `storage`
    null; a --storage study's names its URL); None where it cannot tell: one from before the URL was recorded has no
    such key, whichever storage its run used (trial73 #3: it was taken for a --storage study's)."""
    try:
        held = json.loads((Path(run_dir) / "pareto.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    if isinstance(held, dict) and "storage" not in held:
        return None
    return isinstance(held, dict) and held["storage"] is None


def study_db_gone_line(run_dir: Path) -> str:
    """The refusal of a RUN_DIR whose pareto.json reports its own study.db, which is not there: `export` and
    `calibrate` said its run kept the study in a --storage database, and sent the user to a URL there never was."""
    return (f"RUN_DIR {run_dir} holds no study.db, though its pareto.json is of the directory's own study.db (moved or "
            f"removed?); put study.db back in {run_dir}, or pass --storage URL where the study is kept now"
            f"{kept_probe_results(run_dir)}")


# What a worker sees when another one created Optuna's schema while it was creating it too: SQLite
# ("table studies already exists", "UNIQUE constraint failed: alembic_version.version_num", or the
# file locked by the other's transaction), PostgreSQL and MySQL ("duplicate key", "Duplicate entry").
_SCHEMA_RACE_MESSAGES = ("already exists", "unique constraint failed", "duplicate key", "duplicate entry", "database is locked")
CREATE_ATTEMPTS = 4


def _lost_schema_race(exc: Exception) -> bool:
    return any(message in str(exc).lower() for message in _SCHEMA_RACE_MESSAGES)


def _check_sqlite(url: str, must_exist: bool, given: bool = True) -> Path | None:
    """The file a SQLite URL names, checked (None for another database): what SQLite would not say in a line of
    its own. An in-memory URL (sqlite://, sqlite:///, :memory:) keeps
    the study only while a connection lives: Optuna's tables vanish between connections, every probe with
    them. A missing file is created on connect (a mistyped URL given to `report` became an empty database),
    and a file without Optuna's tables gets them (an empty study.db became 112 KiB of schema): `must_exist`
    (a read) refuses both. A missing directory is only "unable to open database file". `given`: the URL
    is the user's --storage, not RUN_DIR/study.db."""
    import sqlalchemy

    try:
        parsed = sqlalchemy.engine.make_url(url)
    except Exception:  # noqa: BLE001 - not a URL at all: RDBStorage says so in its own words below
        if given and not _URL_SCHEME.match(url):
            _refuse_a_path(url)
        return None
    if parsed.get_backend_name() != "sqlite":
        return None
    _check_sqlite_options(url, parsed)
    if parsed.database in (None, "", ":memory:"):
        raise UserError(
            f"--storage {url!r} is an in-memory SQLite database: the study and its probes would be lost; name a file "
            "(sqlite:///runs/study.db) or leave out --storage to use RUN_DIR/study.db"
        )
    path = Path(parsed.database)  # relative to the working directory, as SQLAlchemy reads it
    _check_can_be_looked_up(url, path)
    if given and path.is_dir():  # "there is no database at" a directory, or SQLite's "unable to open database file"
        raise UserError(f"--storage {url!r} names the directory {path.resolve()}, not a database file; "
                        f"{_database_in(path)}")
    if path.is_file():
        _check_readable(url, path, given, must_exist)
    if must_exist and not path.is_file():
        raise UserError(f"--storage {url!r}: there is no database at {path.resolve()}; pass the URL the run used "
                        "(a relative sqlite:///PATH is read from the current directory)")
    if must_exist and not _holds_optuna_tables(path):
        kept = "" if given else kept_probe_results(path.parent)
        if kept:  # a run directory's study.db that a crash or a full disk emptied: its --out is the one passed
            raise StudyDatabaseLost(f"{path} holds no Optuna study (an empty or foreign SQLite file: a crash or a "
                                    f"full disk can leave one; left as it was); restore it from a copy, or start a new "
                                    f"study with --out NEW_DIR{kept}", "no Optuna study in it: an empty or foreign SQLite file")
        where = f"--storage {url!r}" if given else str(path)
        raise UserError(f"{where} holds no Optuna study (an empty or foreign SQLite file; left as it was); pass "
                        + ("the URL the run used" if given else "the --out directory of an `autotune run`, or --storage "
                           "with the URL its study is in"))
    if not path.parent.is_dir():
        raise UserError(f"--storage {url!r}: the directory {path.parent.resolve()} does not exist; create it or name a "
                        "file in an existing one")
    if not must_exist:
        _check_writable(url, path, given)
    return path


# What a URL starts with (sqlite:, postgresql+psycopg2:); a --storage without one is a path.
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _refuse_a_path(text: str) -> None:
    """A --storage that is a file's path (`--storage runs/x/study.db`) read "Could not parse SQLAlchemy URL" (trial
    58 F11): it is said to be a path, with the URL of that file."""
    path, is_dir = Path(text), False
    with contextlib.suppress(OSError):  # a name too long to look up: its URL is refused as such (_check_sqlite)
        is_dir = path.is_dir()
    fix = _database_in(path) if is_dir else f"pass --storage {shell_text(_clipped(sqlite_url(path)))}, the URL of that file"
    raise UserError(f"--storage {_clipped(text)!r} is a path, not a database URL; {fix}")


def _clipped(text: str) -> str:
    """A --storage as a refusal shows it: whole where it fits a line, else its start and end."""
    return text if len(text) <= 120 else f"{text[:100]}...{text[-12:]}"


def _check_can_be_looked_up(url: str, path: Path) -> None:
    """A database path the system cannot look up (a name longer than it takes; a folder on the way that cannot be
    read) ended every command in an OSError traceback: one line, naming why."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return  # said below, where a missing file matters
    except OSError as exc:
        raise UserError(f"--storage {_clipped(url)!r}: its file cannot be looked up ({exc.strerror}); name another") from None


def _database_in(folder: Path) -> str:
    """What to pass for a --storage that names a folder: the URL of its study.db, where it has one (a run
    directory: `autotune run`'s default database, which leaving out --storage reads), else a file in it."""
    if (folder / "study.db").is_file():
        return (f"pass --storage {shell_text(sqlite_url(folder / 'study.db'))}, the study.db in it, or leave out "
                "--storage if it is RUN_DIR's own")
    return f"name a database file in it (--storage {shell_text(sqlite_url(folder / 'NAME.db'))})"


def _check_readable(url: str, path: Path, given: bool, read_only: bool) -> None:
    """A database file this user may not read (mode 000, another user's 0600) failed in SQLite's "unable to open
    database file", which `report` and `export` took for a directory moved or unmounted ("put it back"), and `run`
    for one it may not write, whose fix sent the user to `report`, which could not read it either (trial69 #1).
    Opening it is the honest test: modes say nothing to root, and ACLs more than the mode bits. `read_only`: the
    command only reads the study (`report`, `export`); `run` writes it too."""
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        where = f"--storage {url!r}: " if given else ""
        fix, mode = ("readable", "u+r") if read_only else ("readable and writable", "u+rw")
        raise UserError(f"{where}the study database {path.resolve()} cannot be read (permission denied); make it {fix} "
                        f"(chmod {mode} {shell_text(str(path.resolve()))}, as its owner), then run the same command "
                        "again") from None
    except OSError:
        return  # another cause (a FIFO, an I/O error): opening it says what, in SQLite's words


def _with_the_umasks_mode(path: Path) -> None:
    """SQLite creates its file 0644 whatever the umask (its compiled default, less the umask), where every
    other file of a run directory gets what open() gives: under umask 002 a group shares the reports and
    configs but could not resume the study or keep a re-pick (trial 45). The journal SQLite writes beside
    it takes the database's mode."""
    from autotune.atomic_write import new_file_mode

    with contextlib.suppress(OSError):  # a file system without modes (a mount) keeps its own
        path.chmod(new_file_mode())


def _check_writable(url: str, path: Path, given: bool) -> None:
    """A study writes every trial to its database, and SQLite writes a journal beside it: a read-only file or
    folder failed inside Optuna's first commit with a traceback that blamed "invalid data ... exceeding max
    length" (a newcomer's trial: a read-only mount, an immutable file)."""
    for target, what in ((path, "the database"), (path.parent, "its folder, where SQLite writes its journal,")):
        if target.exists() and not os.access(target, os.W_OK):
            reason = "a read-only file system" if _read_only_mount(target) else "no write permission"
            if not path.exists():
                fix = "make it writable, or name a database in a writable folder"
            elif given:
                fix = "make it writable, or copy the database to a writable place and pass that URL (`autotune report` reads it as it is)"
            else:
                fix = "make it writable, or copy the run directory to a writable place and resume there (`autotune report` reads it as it is)"
            where = f"--storage {url!r}: " if given else ""
            raise UserError(f"{where}{what} {target.resolve()} cannot be written ({reason}), and the study writes "
                            f"every trial there; {fix}")


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# What SQLAlchemy's SQLite driver takes from a URL's query string; without `uri`, it drops any other
# key, with only a Python warning that our logging setting hides.
_PYSQLITE_OPTIONS = frozenset(("uri", "timeout", "isolation_level", "detect_types", "check_same_thread", "cached_statements"))


def _check_sqlite_options(url: str, parsed) -> None:
    """A '?' in a file name (`sqlite:////x/st?x=1.db`) starts a query string to SQLAlchemy: the study
    went to the file `st` while every message named the URL given. Options the driver takes pass;
    with `uri` the rest go to SQLite's own URI, the user's choice. The query is read from the URL as given:
    SQLAlchemy drops a part without '=' (`sqlite:///q?x.db` went to the file `q` without a word; trial 66 #8)."""
    from urllib.parse import parse_qsl

    pairs = parse_qsl(url.partition("?")[2], keep_blank_values=True)
    given = {key for key, _ in pairs} | set(parsed.query)
    ignored = sorted(given - _PYSQLITE_OPTIONS)
    kept_in = Path(parsed.database or ':memory:').resolve()
    if "?" in url and not given:
        # Nothing after the '?' (`sqlite:///q?`, `q?&`): SQLAlchemy drops it, and the study went to the file `q`
        # while every line named the URL given (trial68 #14).
        raise UserError(f"--storage {url!r}: SQLite reads the '?' as the start of connection options (none follow), "
                        f"not as part of the file name, and would keep the study in {kept_in}; write a '?' of the file "
                        f"name as %3F ({'%3F'.join(url.split('?'))}), or drop it")
    _check_sqlite_option_values(url, pairs)
    if not ignored or "uri" in given:
        return
    query = url[url.index("?"):]
    raise UserError(
        f"--storage {url!r}: SQLite would read {query!r} as connection options ({', '.join(ignored)} unknown to it), "
        f"not as part of the file name, and keep the study in {kept_in}; "
        f"write a '?' of the file name as %3F ({'%3F'.join(url.split('?'))})"
    )


# The driver's options SQLAlchemy converts from the URL's text, and what each must be (its error named the value
# in Python's words: "could not convert string to float: 'abc'", or "not 'tuple'" for an option given twice).
_SQLITE_BOOLEANS = frozenset(("true", "false", "yes", "no", "on", "off", "y", "n", "t", "f", "1", "0"))
_SQLITE_OPTION_KINDS = {"timeout": "a number of seconds", "detect_types": "a whole number",
                        "cached_statements": "a whole number", "uri": "true or false", "check_same_thread": "true or false"}


def _sqlite_option_fits(key: str, value: str) -> bool:
    import math

    if key == "timeout":
        try:
            seconds = float(value)
        except ValueError:
            return False
        return math.isfinite(seconds) and seconds >= 0
    if key in ("detect_types", "cached_statements"):
        return value.isascii() and value.isdigit()
    return value.lower() in _SQLITE_BOOLEANS


def _check_sqlite_option_values(url: str, pairs: list[tuple[str, str]]) -> None:
    """Each driver option given once, with a value the driver takes: one line in the project's words."""
    keys = [key for key, _ in pairs]
    for key, value in pairs:
        if keys.count(key) > 1:
            raise UserError(f"--storage {url!r}: the SQLite option {key} is given {keys.count(key)} times; give it once")
        if key in _SQLITE_OPTION_KINDS and not _sqlite_option_fits(key, value):
            raise UserError(f"--storage {url!r}: the SQLite option {key} = {value!r} is not "
                            f"{_SQLITE_OPTION_KINDS[key]}; correct it in the URL")


def _holds_optuna_tables(path: Path) -> bool:
    """Whether the SQLite file at `path` has Optuna's tables, asked read-only. A file SQLite cannot read
    (damaged, not a database) says True: opening it names what is wrong, in SQLite's words."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return True
    return "studies" in tables


def stored_settings(run_dir: Path, study_name: str = STUDY_NAME) -> dict | None:
    """What the study `study_name` in a run directory's study.db is about (StudySettings.to_dict), read-only and
    before anything else reads the options: None where there is no such study, or the file cannot be read (opening
    it later names what is wrong). A resume of another study is said first, not after a check of the new options'
    space that is no matter here (trial 61 #8: "nothing in the space fits in memory ... more --nodes")."""
    import sqlite3

    path = Path(run_dir) / "study.db"
    if not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            row = connection.execute(
                "SELECT a.value_json FROM study_user_attributes a JOIN studies s ON a.study_id = s.study_id "
                "WHERE a.key = 'settings' AND s.study_name = ?", (study_name,)).fetchone()
        settings = json.loads(row[0]) if row else None
    except (sqlite3.Error, ValueError, TypeError, RecursionError):
        return None
    return settings if isinstance(settings, dict) else None


# A day: beyond it the heartbeat thread's wait overflows (1e10 s, a traceback in the thread and no beat again),
# and a dead worker's trial would wait longer than any job runs.
HEARTBEAT_MAX_S = 86_400


def _env_seconds(name: str, default: int) -> int:
    """A whole number of seconds in [1, HEARTBEAT_MAX_S] from the environment, or `default` where it is not
    set: Optuna takes integers alone, and its own complaint blamed the --storage URL (trial 37 F3). ASCII
    digits: "²" is a digit to str.isdigit() and not to int()."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= HEARTBEAT_MAX_S:
        raise UserError(f"{name}={value!r} in the environment is not a whole number of seconds from 1 to "
                        f"{HEARTBEAT_MAX_S}; set it to one (default {default}) or unset it")
    return int(value)


def heartbeat_seconds() -> tuple[int, int]:
    """The heartbeat interval and grace period. A grace no longer than the interval would take a live worker's
    trial for dead between two of its beats, and another worker would probe it again."""
    interval_s = _env_seconds(HEARTBEAT_INTERVAL_ENV, HEARTBEAT_INTERVAL_S)
    grace_s = _env_seconds(GRACE_PERIOD_ENV, GRACE_PERIOD_S)
    if grace_s <= interval_s:
        raise UserError(f"{GRACE_PERIOD_ENV}={grace_s} is not longer than the heartbeat interval of {interval_s} s "
                        f"({HEARTBEAT_INTERVAL_ENV}): a live worker's trial would be taken for dead between beats; set "
                        f"the grace to several intervals (default {GRACE_PERIOD_S}, for {HEARTBEAT_INTERVAL_S})")
    return interval_s, grace_s


def _open_storage(url: str, heartbeat: bool = False, must_exist: bool = False, given: bool = True):
    """`given`: `url` is the user's --storage; else the run directory's own study.db."""
    database = _check_sqlite(url, must_exist, given)
    with warnings.catch_warnings():
        # Optuna 5.0 marks heartbeats experimental; the user needs no warning about our choice.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        kwargs = {}
        if heartbeat:
            interval_s, grace_s = heartbeat_seconds()
            kwargs = {
                "heartbeat_interval": interval_s,
                "grace_period": grace_s,
                "heartbeat_stale_trial_callback": RetryDeadWorkersTrials(max_retry=2),
            }
        created = database is not None and not database.exists()
        for attempt in range(CREATE_ATTEMPTS):
            try:
                rdb = (BeatSkippingStorage if heartbeat else optuna.storages.RDBStorage)(url, **kwargs)
                if created and database.is_file():
                    _with_the_umasks_mode(database)
                return _serialized_if_sqlite(rdb)
            except Exception as exc:  # SQLAlchemy raises many kinds; the user needs one line
                # Workers starting together on an empty database race to create Optuna's tables: the
                # loser sees a table or version row the winner has just made; by the time it tries
                # again the schema is complete, and opening it creates nothing.
                if _lost_schema_race(exc) and attempt < CREATE_ATTEMPTS - 1:
                    time.sleep(0.5 + attempt)
                    continue
                refusal = _open_refusal(exc, url, given, database)
                if created:
                    _remove_if_no_study(database)
                raise refusal from None


def _remove_if_no_study(database: Path) -> None:
    """A database file this command created and could not set up (a file-size limit, a full disk mid-schema) holds
    no study: it is removed, with SQLite's journal, so that the failed command leaves nothing behind, its new --out
    folders included (docs/commands.md; they stayed, holding a study.db of no study, trial69 #11). A file that holds
    a study, or cannot be read to tell (another worker's, made meanwhile), stays."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            studies = connection.execute("SELECT count(*) FROM studies").fetchone()[0] if "studies" in tables else 0
    except (sqlite3.Error, OSError):
        return
    if studies:
        return
    for path in (database, database.with_name(f"{database.name}-journal")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _open_refusal(exc: Exception, url: str, given: bool, database: Path | None) -> UserError:
    """The one line for a database Optuna could not open: SQLite's reason where it is one (locked, full, read-only:
    a healthy file, never "damaged"), a damaged file, a missing driver or an unreachable server (open_failure_line),
    else SQLAlchemy's own first line."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    held = recorded_storage(url) if given else unquote(url.removeprefix("sqlite:///"))
    known = storage_failure_line(exc, f"the study database {held}") if database is not None else None
    if known and not _damaged(first):
        return UserError(known)
    if not given:  # the run directory's own file: no URL to check, and no --storage to leave out
        kept = kept_probe_results(Path(held).parent)
        line = (f"cannot open the study database {held} ({first}); it is damaged or not a study: restore it from a "
                f"copy, or start a new study with --out NEW_DIR{kept}")
        return StudyDatabaseLost(line, f"damaged or not a study: {first}") if kept else UserError(line)
    if database is not None and _damaged(first):
        return UserError(f"cannot open study storage {held!r} ({first}); it is damaged or no study database: pass the "
                         "URL the run used, or restore the file from a copy")
    return UserError(open_failure_line(exc, url, held) or (
        f"cannot open study storage {held!r} ({first}); check the URL (a database URL as Optuna's RDBStorage takes: "
        "sqlite:///PATH, postgresql://USER@HOST/DB), or leave out --storage to use RUN_DIR/study.db"))


def _damaged(said: str) -> bool:
    """Whether SQLite's words say its file is no database it can read (another file, or a damaged one)."""
    return any(words in said for words in ("file is not a database", "malformed"))


def _serialized_if_sqlite(rdb):
    """SQLite transactions that take the write lock when they begin (BEGIN IMMEDIATE).

    Optuna reads a trial "for update" before it changes it, which SQLite cannot lock: two workers that
    pop a queued trial at once (the baseline, a retried trial) both read it WAITING and both run it, and
    the slower one dies on "Cannot tell a COMPLETE trial" (optuna/optuna#4621; two workers on one
    SQLite file did so in 17 of 20 tries). Beginning each transaction with the write lock makes the
    read and the change one step. SQLAlchemy's recipe for pysqlite: the driver's own BEGIN off, ours on.
    """
    import sqlalchemy

    if rdb.engine.name != "sqlite":
        return rdb  # PostgreSQL and MySQL lock the row themselves
    sqlalchemy.event.listen(rdb.engine, "connect", lambda connection, _: setattr(connection, "isolation_level", None))
    sqlalchemy.event.listen(rdb.engine, "begin", lambda connection: connection.exec_driver_sql("BEGIN IMMEDIATE"))
    rdb.engine.dispose()  # connections opened before the listeners close; new ones get them
    return rdb


def _commit_without_fsync(rdb) -> None:
    """SQLite commits that do not wait for the disk (PRAGMA synchronous=OFF). A trial is ~30 commits,
    and at ~10 ms of fsync each they were most of a simulated study's time. A crash of the tuner loses
    nothing; an operating-system crash or power loss may damage the file, so only studies whose
    figures are cheap to compute again (simulated) write this way."""
    import sqlalchemy

    if rdb.engine.name != "sqlite":
        return
    sqlalchemy.event.listen(rdb.engine, "connect", lambda connection, _: connection.execute("PRAGMA synchronous=OFF"))
    rdb.engine.dispose()  # connections opened before the listener close; new ones get the pragma


def open_study(
    run_dir: Path, storage: str | None, sampler, objectives: int = 2, cheap_figures: bool = False,
    study_name: str = STUDY_NAME,
) -> optuna.Study:
    """Create the study or load the one already there (resume). `--storage` means workers may share
    it, so heartbeats are on there; workers on one run directory's SQLite file see each other through
    `sole_worker`. `cheap_figures`: the backend's figures cost nothing to compute again (simulate),
    so SQLite need not wait for the disk on every commit."""
    # Our progress bar reports failed probes; Optuna's own warning would add a traceback per trial.
    optuna.logging.set_verbosity(logging.ERROR)
    if storage is None:
        run_dir.mkdir(parents=True, exist_ok=True)
    url = storage_url(run_dir, storage)
    database = run_dir / "study.db"
    no_study_file = storage is None and (not database.exists() or (database.is_file() and database.stat().st_size == 0))
    if no_study_file:
        # Before opening creates a study.db beside them, or writes Optuna's tables into an empty one (trial 43 F9).
        _check_trials_are_of(run_dir, None, storage)
        _check_reports_are_of_no_study(run_dir, study_name)
    rdb = _open_storage(url, heartbeat=storage is not None, given=storage is not None)
    # Before a new study is created in a shared database or in the run directory's own, or another one resumed here.
    existing = _existing_study(rdb, study_name)
    if existing is None and (gone := reported_study_gone(run_dir, optuna.get_all_study_names(storage=rdb), storage,
                                                         study_name, "--out")):
        raise UserError(gone)  # its reports are all that is left of it: a new study of that name must not replace them
    if storage is None:
        _check_run_dir_holds_no_other_study(run_dir, rdb, study_name)
    if not no_study_file:  # checked above already, against no study: the file held none
        _check_trials_are_of(run_dir, existing, storage)  # before the reports' refusals, whose advice keeps trials/ there
    if storage is None:
        if existing is None and not no_study_file:  # a new study here (a file without one: checked above): reports
            _check_reports_are_of_no_study(run_dir, study_name)  # already here are another's (a --storage run's, a lost study.db's)
    check_run_dir_is_of(run_dir, existing, storage, study_name, "--out")
    if cheap_figures:
        _commit_without_fsync(rdb)
    study = optuna.create_study(
        storage=rdb,
        sampler=sampler,
        study_name=study_name,
        directions=["minimize"] * objectives,
        load_if_exists=True,
    )
    shown = recorded_storage(storage) if storage else None  # in messages: no password in a log
    # What a new study goes to instead: in a shared database, another name; else another directory.
    elsewhere = f"--study-name NEW (a name no study in {shown} has)" if storage else "--out NEW_DIR"
    if study.trials and "settings" not in study.user_attrs:  # autotune sets it before its first trial
        # Checked before anything is written to it: it is somebody else's study.
        raise UserError(f"the study {study_name!r} in {shown or run_dir} was not made by autotune ({counted(len(study.trials), 'trial')} "
                        f"of parameters {', '.join(sorted(study.trials[0].params)) or 'none'}); pass {elsewhere}")
    if len(study.directions) != objectives:  # load_if_exists keeps the stored directions silently
        raise UserError(
            f"the study in {shown or run_dir} has {counted(len(study.directions), 'objective')}, this run asks for "
            f"{objectives}; repeat its --objectives or pass {elsewhere}"
        )
    # A study created beforehand (`optuna create-study --directions minimize maximize`) keeps its directions too:
    # Optuna's samplers and best_trials then steer to MORE energy while autotune's front ranks less (trial74 #11).
    maximized = [name for name, d in zip(METRIC_NAMES, study.directions) if d != optuna.study.StudyDirection.MINIMIZE]
    if maximized:
        raise UserError(f"the study in {shown or run_dir} maximizes {' and '.join(maximized)}; autotune minimizes "
                        f"{' and '.join(METRIC_NAMES[:objectives])}: pass {elsewhere}")
    if study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(list(METRIC_NAMES[:objectives]))  # names optuna-dashboard shows
    return study


def load_finished_study(run_dir: Path, storage: str | None = None, study_name: str = STUDY_NAME) -> optuna.Study:
    """The study of an existing run directory, for `report`, `export` and `calibrate`."""
    optuna.logging.set_verbosity(logging.ERROR)
    if storage is None and not (run_dir / "study.db").is_file():
        kept = kept_probe_results(run_dir)
        own = _reports_of_own_study_db(run_dir)
        if own:  # not a --storage run's: its study.db was moved or removed (trial69 #4)
            raise (StudyDatabaseLost(study_db_gone_line(run_dir), "not there: moved or removed?") if kept
                   else UserError(study_db_gone_line(run_dir)))
        if own is None:  # an older autotune's pareto.json, silent on where its study was kept: both ways named
            line = (f"RUN_DIR {run_dir} holds no study.db, and its pareto.json (an older autotune's) does not record where "
                    f"the study was kept: if its run gave --storage, pass the same --storage URL and --study-name; else "
                    f"its study.db was moved or removed: put it back in {run_dir}{kept}")
            raise StudyDatabaseLost(line, "not there: moved or removed?") if kept else UserError(line)
        if (run_dir / "pareto.json").is_file():  # the run kept its study in a --storage database
            flags = _recorded_study(run_dir)
            raise UserError(f"{run_dir} holds no study.db: its run kept the study in a --storage database; "
                            + (f"pass{flags}" if flags else "pass the same --storage URL and --study-name"))
        if kept:  # no reports yet (a run stopped before them), but its probes' results: the run directory of a study
            raise StudyDatabaseLost(f"RUN_DIR {run_dir} holds no study.db, though its trials/ holds probe results (moved "
                                    f"or removed?); put study.db back in {run_dir}{kept}", "not there: moved or removed?")
        raise UserError(
            f"{run_dir} is not a run directory (no study.db); pass the --out directory of an `autotune run`"
        )
    rdb = _open_storage(storage_url(run_dir, storage), must_exist=True, given=storage is not None)
    shown = recorded_storage(storage) if storage else None  # in messages: no password in a log
    try:
        study = optuna.load_study(study_name=study_name, storage=rdb)
        if study.trials and "settings" not in study.user_attrs:
            raise UserError(f"the study {study_name!r} in {shown or run_dir} was not made by autotune; pass the "
                            "--study-name of an autotune study (autotune report reads only those)")
        check_run_dir_is_of(run_dir, study, storage, study.study_name, "RUN_DIR")
        return study
    except KeyError:
        names = optuna.get_all_study_names(storage=rdb)
        if gone := reported_study_gone(run_dir, names, storage, study_name, "RUN_DIR"):
            raise UserError(gone) from None
        if storage is None and study_name == STUDY_NAME and len(names) == 1:
            # A run directory's own study.db holds one study, whatever --study-name its run gave it
            # (calibrate reads a RUN_DIR's own study.db without the name it gives --storage's study).
            return optuna.load_study(study_name=names[0], storage=rdb)
        raise UserError(f"no autotune study named {shown_name(study_name)} in {shown or run_dir}; "
                        f"{_studies_held(names)}") from None


def _studies_held(names: list[str]) -> str:
    """The fix of a --study-name that its database does not hold: the names it does, as shell words to type back
    (a name with a space was listed bare, and "run `autotune run` there first" followed studies that were there)."""
    if not names:
        return "it holds no study: pass the database the run used, or `autotune run` first"
    words = [shell_text(name) for name in sorted(names)]
    if len(words) == 1:
        return f"it holds {words[0]}: pass --study-name {words[0]}"
    return f"it holds {', '.join(words)}: pass --study-name with the one its `autotune run` was given"


def _check_run_dir_holds_no_other_study(run_dir: Path, rdb, study_name: str) -> None:
    """A run directory's study.db holds one study: a second name there would write its pareto.json,
    configs/ and report.html over the first one's, which `report` then refuses for the first (and
    `report RUN_DIR` finds the directory's study without a name only while it is alone). A study
    already there resumes: a directory that holds two from before this check is left to the reports'
    own check."""
    names = sorted(optuna.get_all_study_names(storage=rdb))
    if not names or study_name in names:
        return
    held = ", ".join(map(shown_name, names))
    raise UserError(
        f"--out {run_dir} holds study {held} (in its study.db); a run directory holds one study's reports, and "
        f"{shown_name(study_name)} would write over them: pass another --out for {shown_name(study_name)} (without "
        f"--out, each --study-name has its own runs/<model>-<nodes>n-<name>), or --study-name {shell_text(names[0])} to "
        f"resume {shown_name(names[0])}"
    )


def _check_trials_are_of(run_dir: Path, study: optuna.Study | None, storage: str | None) -> None:
    """A study writes its probes into RUN_DIR/trials/NNNN, removing what an earlier attempt of that trial left: it
    may not start where trials/ holds results none of its trials made (`study` None: one not created yet), or it
    would measure over them, and with their study.db gone they are all that is left of those probes."""
    unrecorded = unrecorded_probe_results(run_dir, study)
    if not unrecorded:
        return
    where, why = ((recorded_storage(storage), "another study's run directory?") if storage
                  else (Path(run_dir) / "study.db", "a damaged or replaced study.db?"))
    raise UserError(f"{Path(run_dir) / 'trials'} holds the results of {counted(unrecorded, 'probe')} that no study in "
                    f"{where} records ({why}): they are kept; start the study in another --out, or move trials/ aside")


def _check_reports_are_of_no_study(run_dir: Path, study_name: str) -> None:
    """A study new to the run directory's study.db writes no reports over those a pareto.json there lists
    trials of: they are of a study kept elsewhere (--storage) or of a study.db removed since."""
    reason = _reports_of_another_study(run_dir, None, study_name, by_trials=True)
    if reason is None:
        return
    if not (Path(run_dir) / "study.db").exists() and _reports_of_own_study_db(run_dir):
        # Its reports are of the directory's own study.db, gone since: putting it back resumes that study, and
        # there is no --storage URL to pass (trial69 #4).
        raise UserError(f"--out {run_dir} holds the reports (pareto.json, configs/) of a study kept in its own "
                        f"study.db, which is not there (moved or removed?); put study.db back in {run_dir} to resume "
                        f"that study, pass another --out for a new one, or move pareto.json and configs/ out of "
                        f"{run_dir} to start one there")
    raise UserError(f"--out {run_dir} holds the reports of a study its study.db does not hold ({reason}); pass "
                    f"another --out for {study_name!r}, the --storage URL of that study to resume it, or move "
                    f"pareto.json and configs/ out of {run_dir} to start a study there")


def _existing_study(rdb, study_name: str) -> optuna.Study | None:
    try:
        return optuna.load_study(study_name=study_name, storage=rdb, sampler=optuna.samplers.RandomSampler())
    except KeyError:
        return None


def check_run_dir_is_of(run_dir: Path, study: optuna.Study | None, storage: str | None, study_name: str, what: str) -> None:
    """A run directory holds one study's reports (pareto.json, configs/): refuse to write there those of
    another study (`study` None: one not created yet). The name tells two studies of one database apart
    (pareto.json without one is older: not refused on it). Of a --storage database, the name does not tell
    two databases apart (each may hold a study named `autotune`, the default), nor does the URL (a
    database copied, or moved to a server, holds the same study): the trials do. Every feasible trial
    the directory's pareto.json lists must be in `study` with the same knobs and figures, as a finished
    trial never changes (a resumed study, or one with more workers, still has them all), and the model
    and hardware must agree (a resume keeps them too). `storage` None: the directory's own study.db, its
    study by definition but for the name (a damaged trial there is for its reader to name, not this
    check). A missing or damaged pareto.json holds nothing to keep."""
    reason = _reports_of_another_study(run_dir, study, study_name, by_trials=storage is not None)
    if reason is None:
        return
    fix = ("pass --out NEW_DIR for this study" if what == "--out"
           else "pass that study's run directory (the --out of its `autotune run`)")
    where = recorded_storage(storage) if storage else Path(run_dir) / "study.db"
    raise UserError(f"{what} {run_dir} holds the reports of another study than {study_name!r} in {where} ({reason}); "
                    f"{fix}, or move pareto.json and configs/ out of {run_dir} to write this study's reports there")


def _reports_of_another_study(run_dir: Path, study: optuna.Study | None, study_name: str, by_trials: bool) -> str | None:
    """Why the pareto.json in `run_dir` reports another study than `study`; None where it may be this one's."""
    try:
        held = json.loads((Path(run_dir) / "pareto.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(held, dict):
        return None
    if isinstance(held.get("study_name"), str) and held["study_name"] != study_name:
        return f"its pareto.json reports study {held['study_name']!r}"
    if not by_trials:
        return None
    settings = study.user_attrs.get("settings") if study is not None else None
    if isinstance(settings, dict):  # a resume keeps both: told first, as the plainest reason
        theirs = (held.get("model"), held.get("hardware"))
        ours = ((settings.get("model") or {}).get("name"), settings.get("hardware_name"))
        if None not in theirs and theirs != ours:
            return f"its pareto.json is of model {theirs[0]} on {theirs[1]}, this study of {ours[0]} on {ours[1]}"
    listed = held.get("feasible") if isinstance(held.get("feasible"), list) else []
    if study is None and listed:
        return f"its pareto.json lists {counted(len(listed), 'trial')}, and the study is not there yet"
    trials = {} if study is None or not listed else {t.number: t for t in study.get_trials(deepcopy=False)}
    for point in listed:
        if not isinstance(point, dict) or not isinstance(point.get("trial"), int):
            continue
        trial = trials.get(point["trial"])
        if trial is None:
            return f"its pareto.json lists trial {point['trial']}, which this study does not have"
        result = trial.user_attrs.get("result") or {}
        knobs = (trial.user_attrs.get("candidate") or {}).get("knobs", trial.params)
        if knobs != point.get("params") or not all(_same_figure(result.get(k), point.get(k)) for k in ("time_s", "energy_kj")):
            return f"its pareto.json lists trial {point['trial']} with other knobs or figures than this study's"
    return None


def _same_figure(stored, listed) -> bool:
    if isinstance(stored, (int, float)) and isinstance(listed, (int, float)):
        return math.isclose(stored, listed, rel_tol=1e-9)
    return stored == listed
