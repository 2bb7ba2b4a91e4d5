"""What every finished run leaves behind: pareto.json, the picks exported, report.html, the table printed."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from autotune.atomic_write import STUDY_KEPT, FileNotWritten, write_text_atomic
from autotune.errors import UserError
from autotune.export import export_trial, file_sha256
from autotune.export_caveats import pick_caveats
from autotune.os_text import shell_text, texts_of
from autotune.report import pareto_document, study_view, write_pareto_json
from autotune.report.html import write_report_html
from autotune.report.importance import knob_importance
from autotune.report.inputs import study_inputs
from autotune.report.pareto_json import read_pareto_json
from autotune.report.picks import DEFAULT_ETA, DEFAULT_MAX_SLOWDOWN, PICK_FILES
from autotune.report.search import nothing_more_to_evaluate, search_summary
from autotune.report.table import print_report
from autotune.study.storage import STUDY_NAME, absolute_storage, recorded_storage, storage_flags

# The study remembers what its picks were chosen with, so `autotune report` chooses the same ones.
PICK_PARAMETERS_ATTR = "pick_parameters"


def stored_pick_parameters(study, max_slowdown: float | None, eta: float | None,
                           fix: str | None = None) -> tuple[float, float]:
    """Command-line values first, then those the study's last run or report used, then the defaults. A kept one
    edited since (the Optuna API: study.set_user_attr) is refused in one line naming every bad value (trial76 #8:
    one report per value), with `fix`, what replaces them, else the flags that do."""
    from autotune.errors import ConfigError

    # None kept yet (the study has had no report): the defaults.
    stored = study.user_attrs.get(PICK_PARAMETERS_ATTR, {"max_slowdown": DEFAULT_MAX_SLOWDOWN, "eta": DEFAULT_ETA})
    values, problems = {}, {}
    for name, given, low, high in (("max_slowdown", max_slowdown, 1.0, None), ("eta", eta, 0.0, 1.0)):
        try:
            values[name] = given if given is not None else _stored(stored, name, low=low, high=high)
        except ConfigError as why:
            problems[name] = str(why)
    if problems:
        flags = " and ".join("--" + name.replace("_", "-") for name in problems)
        fix = fix or f"pass {flags} to replace {'them' if len(problems) > 1 else 'it'}"
        said = list(dict.fromkeys(problems.values()))  # a wrong shape is one problem of both
        raise ConfigError(f"{'; '.join(said)}; {'they were' if len(said) > 1 else 'it was'} edited since a run kept "
                          f"{'them' if len(said) > 1 else 'it'} (study.set_user_attr): {fix}")
    return values["max_slowdown"], values["eta"]


def _stored(stored, name: str, low: float, high: float | None = None) -> float:
    """A kept pick parameter, checked as its flag is: the Optuna API edits it (study.set_user_attr), and an edited
    one was a traceback of the picks' own range check (trial 66 #5)."""
    from autotune.checks import checked_number, shown
    from autotune.errors import ConfigError

    # A wrong shape or a key gone was taken for the defaults without a word, and the picks changed (trial 68 #4).
    if not isinstance(stored, dict):
        raise ConfigError(f"the study's pick_parameters = {shown(stored)} is not an object of max_slowdown, eta")
    if name not in stored:
        raise ConfigError(f"the study's pick_parameters lacks {name}")
    return checked_number("the study's pick_parameters", name, stored[name], low=low, high=high)


def keep_pick_parameters(study, view) -> None:
    """The --max-slowdown and --eta the picks were chosen with, for later reports and `export --pick`."""
    study.set_user_attr(PICK_PARAMETERS_ATTR, {"max_slowdown": view.pick_parameters.max_slowdown, "eta": view.pick_parameters.eta})


def build_report(study, max_slowdown: float | None = None, eta: float | None = None, storage: str | None = None):
    """(view, pareto document) of a study; `storage`: its --storage URL, None for the run directory's study.db."""
    from autotune.study.kept_attrs import check_kept_attrs

    check_kept_attrs(study)  # before anything reads them: an edited one was a traceback (trial 68 #18)
    view = study_view(study, *stored_pick_parameters(study, max_slowdown, eta))
    backend = study.user_attrs.get("backend", {})
    # Only where the note gives advice to get more points: it rebuilds the space.
    exhausted = (nothing_more_to_evaluate(study, view.settings, backend.get("name", "unknown"), resume_said=False)
                 if len(view.points) <= 1 else None)
    document = pareto_document(view, backend.get("name", "unknown"), backend.get("reason", ""), knob_importance(study, view),
                               exhausted)
    # How the search ended and what the model says it may have missed (predicted, never on the front).
    document["search"] = search_summary(study, view, backend.get("name", "unknown"))
    document["predicted"] = document["search"].pop("predicted")
    document["study_name"] = study.study_name  # several studies may share one --storage database
    document["inputs"] = study_inputs(study, view.settings)
    # So `autotune report RUN_DIR` can name the database a run directory without study.db needs; null for the
    # directory's own study.db (the key is in every pareto.json, as the README lists it).
    document["storage"] = recorded_storage(absolute_storage(storage)) if storage else None
    return view, texts_of(document)


# What autotune last wrote to each file of configs/ (name: SHA-256), to tell a user's edit from its own. A file it
# does not name (the record lost, damaged, or left behind by `cp configs/*`) is taken for autotune's only where it
# is what autotune writes now: a copy gives every file the copy's time, so no time tells an edit apart (trial78 #8).
WRITTEN_RECORD = ".written.json"


def export_picks(view, run_dir: Path, backend: str, document: dict | None = None) -> str | None:
    """Each pick's config, candidate file and launch.sh in configs/. A pick's three files are the user's
    once one of them is not what autotune last wrote there (a tuned lr, site lines in launch.sh): they are
    kept as they are, and the pick is written beside them as <pick>.new.* (launch.sh names its config, so
    the three go together; a user who moves the kept ones away gets the pick in their place, and the
    .new.* files go). `document`: the pareto document, whose warnings of each pick its launch.sh says
    (export_caveats.pick_caveats), as `autotune export --pick` writes it. Returns the line that says what was kept, or None."""
    if not view.picks:
        return None
    configs = run_dir / "configs"
    configs.mkdir(parents=True, exist_ok=True)
    remove_litter(configs)
    record = written_record(configs)
    named, unrecorded = set(record), record_problem(configs)  # as the pass found it: it records what it writes
    kept, beside = [], []
    for pick, trial in view.picks.items():
        stem = PICK_FILES[pick]
        caveats = pick_caveats(view, document, trial, pick) if document is not None else []
        with tempfile.TemporaryDirectory(dir=configs, prefix=EXPORT_SCRATCH) as scratch:
            fresh = export_trial(view, trial, Path(scratch) / f"{stem}.json", backend, caveats=caveats)
            edited = [p.name for p in fresh if edited_since_written(configs / p.name, p, record)]
            if not edited:
                # A pass stopped between a pick's three renames (SIGTERM, SIGKILL) left one trial's config beside
                # another's candidate and launch.sh, which the next pass took for the user's edits and kept for
                # good (trial 43 F2): while they are written, the record holds the old and the new file as ours.
                for path in fresh:
                    record[path.name] = [*recorded_shas(record, path.name), file_sha256(path.read_bytes())]
                save_written_record(configs, record)
                for path in fresh:  # through write_text_atomic: a link is written through, as export_trial does
                    record[path.name] = file_sha256(path.read_bytes())
                    write_text_atomic(configs / path.name, path.read_text(encoding="utf-8"), mode=path.stat().st_mode & 0o777)
                _remove_stale_new_files(configs, stem, record)
                continue
        record.update({p.name: file_sha256(p.read_bytes()) for p in export_trial(view, trial, configs / f"{stem}.new.json", backend,
                                                                         caveats=caveats)})
        kept += edited
        beside.append(f"{stem}.new.*")
    _remove_unmade_picks(configs, view.picks, record)
    save_written_record(configs, record)
    if not kept:
        return None
    return (f"{configs}: kept {', '.join(kept)}, which differ from {_kept_because(configs, kept, named, unrecorded)}; the "
            f"study's picks are beside them as {', '.join(beside)} (move the kept files away to have them written in "
            "their place)")


def _kept_because(configs: Path, kept: list[str], named: set[str], unrecorded: str | None) -> str:
    """Why export_picks took kept files for a user's: what the record says autotune wrote, or, where the record
    cannot say (record_problem) or does not name one of them, what autotune writes now, with that said."""
    if unrecorded is None and named.issuperset(kept):
        return "what autotune's reports last wrote there (edited, or exported otherwise)"
    why = unrecorded or "does not name them"
    return (f"what autotune writes there now and may be your edits: {configs / WRITTEN_RECORD}, the record of what "
            f"autotune wrote there, {why}")


def configs_problem(run_dir: Path) -> str | None:
    """Why the picks' configs/ in `run_dir` cannot be rewritten: a folder this user may not list or write in (a
    colleague's, chmod 000 or 555), whose listing ended `report`, and `run` after its probes, in a traceback (trial69
    #2). None where it can be, or is not there yet (the reports make it)."""
    from autotune.commands.paths import directory_problem

    configs = run_dir / "configs"
    try:
        os.listdir(configs)
    except (FileNotFoundError, NotADirectoryError):  # made with the reports; a file there is check_run_outputs' to name
        return None
    except OSError as exc:
        return f"cannot list {configs} ({exc.strerror or exc})"
    return directory_problem(configs)


def configs_fix(run_dir: Path) -> str:
    """The fix of a configs_problem: the folder is there, so only its permissions stand in the way; a colleague's
    (a run directory shared in a sticky folder, trial69 #12) is not this user's to chmod."""
    import pwd

    configs = run_dir / "configs"
    try:
        owner = configs.stat().st_uid
    except OSError:
        owner = os.geteuid()
    if owner == os.geteuid():
        return f"make configs/ readable and writable for you (chmod u+rwx {configs})"
    try:
        name = pwd.getpwuid(owner).pw_name
    except KeyError:  # a user this machine does not know (a shared file system's)
        name = f"user {owner}"
    return f"configs/ is {name}'s: have it made writable for you, or copy the run directory"


class ReportsNotWritten(UserError):
    """None of a run directory's reports could be written, and none was: `problem` and `fix` apart, for `report` and
    `run`, which show the report all the same (what the study holds is worth seeing) and say why no file holds it."""

    def __init__(self, line: str, problem: str, fix: str):
        super().__init__(line)
        self.problem, self.fix = problem, fix


def check_configs_writable(run_dir: Path, what: str, then: str = "run the command again") -> None:
    """configs_problem as one line: `run` asks it before its probes, and the reports before they write anything."""
    problem = configs_problem(run_dir)
    if problem:
        fix = configs_fix(run_dir)
        raise ReportsNotWritten(f"{what} {run_dir}: {problem}, where the picks' DeepSpeed configs go; {fix}, then {then}",
                                problem, f"{fix} to write them")


# Refusals a copy of the run directory gets past: the folder or the file is not this user's to write (a colleague's
# pareto.json in a shared, sticky folder: only its owner may replace it), or the file system is read-only.
_NOT_YOURS = (errno.EACCES, errno.EPERM, errno.EROFS)


def _write_first_report(run_dir: Path, document: dict) -> None:
    """pareto.json, the first file the reports write: refused as not this user's, it leaves every report as it was
    (ReportsNotWritten), which a report can say beside the report shown, as for a read-only run directory; it was a
    refusal alone, the report unseen (trial69 #12)."""
    try:
        write_pareto_json(run_dir / "pareto.json", document)
    except FileNotWritten as exc:
        if exc.errno not in _NOT_YOURS:
            raise
        again = shell_text(str(run_dir.parent / "COPY"))
        raise ReportsNotWritten(f"run directory {run_dir}: {exc.problem}: pareto.json, configs/ and report.html there are "
                                f"left as they were; copy the run directory (cp -r {shell_text(str(run_dir))} {again}), "
                                f"then `autotune report {again}` writes them there ({STUDY_KEPT})", exc.problem,
                                "copy the run directory to write them") from None


def save_written_record(configs: Path, record: dict[str, str]) -> None:
    write_text_atomic(configs / WRITTEN_RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")


def written_record(configs: Path) -> dict[str, str | list[str]]:
    """{file name: the SHA-256 of what autotune last wrote there, or the list of those it may hold (a pass
    stopped while writing it)}; {} where there is none to read (record_problem says why)."""
    record, _ = _read_written_record(configs)
    return {k: v for k, v in record.items()
            if isinstance(v, str) or (isinstance(v, list) and all(isinstance(sha, str) for sha in v))}


def record_problem(configs: Path) -> str | None:
    """Why configs/.written.json vouches for no file ("is missing", "is damaged (not JSON)"), in words that follow
    its name; None where it reads. A damaged record was read as an empty one without a word (trial78 #8)."""
    return _read_written_record(configs)[1]


def _read_written_record(configs: Path) -> tuple[dict, str | None]:
    try:
        text = (configs / WRITTEN_RECORD).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, "is missing (a copy made without it, such as `cp configs/*`)"
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return {}, "is damaged (not JSON)" if text.strip() else "is empty"
    if not isinstance(record, dict):
        return {}, f"is damaged (a JSON {type(record).__name__}, not an object of file names)"
    if not record:
        return {}, "names no file"
    return record, None


def recorded_shas(record: dict, name: str) -> list[str]:
    value = record.get(name)
    return [value] if isinstance(value, str) else list(value or [])


def written_by_autotune(record: dict, path: Path) -> bool:
    """Whether the file at `path` is one autotune wrote there, by the record (False where unreadable)."""
    try:
        return file_sha256(path.read_bytes()) in recorded_shas(record, path.name)
    except OSError:
        return False


# What a pass writes in configs/ before renaming it into place, left behind by a pass killed outright.
EXPORT_SCRATCH = ".export-"
LITTER_AGE_S = 3600.0  # older than any pass: another worker's pass may be writing its own right now


def remove_litter(configs: Path) -> None:
    """The scratch folders and temporary files (atomic_write's `.NAME.PID.HEX.tmp`) of passes killed outright."""
    now = time.time()
    for path in configs.iterdir():
        name = path.name
        if not (name.startswith(EXPORT_SCRATCH) or (name.startswith(".") and name.endswith(".tmp"))):
            continue
        with contextlib.suppress(OSError):
            if now - path.lstat().st_mtime < LITTER_AGE_S:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def edited_since_written(path: Path, fresh: Path, record: dict[str, str]) -> bool:
    """Whether `path` holds what autotune did not write there: not `fresh` (what it writes now), and not
    what it last wrote by the record. A config that is not JSON any more is damaged, not tuned: it is rewritten."""
    try:
        held = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if held == fresh.read_bytes() or file_sha256(held) in recorded_shas(record, path.name):
        return False
    if path.name.endswith(".json"):
        try:
            json.loads(held)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return False
    return True


def _remove_unmade_picks(configs: Path, picks: dict[str, int], record: dict[str, str]) -> None:
    """The files of a pick the study no longer makes, removed where they are still what autotune wrote:
    a time-only study (--objectives time) reported before it picked the fastest alone has min-energy,
    knee, max-slowdown and cost-weighted configs chosen by energy it never ranked. Edited ones stay."""
    for name, stem in PICK_FILES.items():
        if name in picks:
            continue
        for suffix in (".json", ".candidate.json", ".launch.sh", ".new.json", ".new.candidate.json", ".new.launch.sh"):
            path = configs / f"{stem}{suffix}"
            with contextlib.suppress(OSError):
                if written_by_autotune(record, path):
                    path.unlink()
                    del record[path.name]


def _remove_stale_new_files(configs: Path, stem: str, record: dict[str, str]) -> None:
    """The <pick>.new.* an earlier pass wrote beside edited files, once the pick is written in their place
    (the user moved them over, or put autotune's back): removed where they are still what autotune wrote."""
    for suffix in (".json", ".candidate.json", ".launch.sh"):
        path = configs / f"{stem}.new{suffix}"
        with contextlib.suppress(OSError):
            if written_by_autotune(record, path):
                path.unlink()
                del record[path.name]


def pareto_json_state(path: Path, document: dict) -> str | None:
    """Why the pareto.json at `path` is not `document`: "missing", "damaged (...)", "out of date";
    None when it already holds exactly this document."""
    stored, unread = read_pareto_json(path)
    if unread:
        return unread
    return None if stored == json.loads(json.dumps(document)) else "out of date"


def write_outputs(view, document: dict, run_dir: Path, html: bool = True) -> tuple[list[Path], str | None]:
    """pareto.json, the picks' configs/ and report.html (when asked for, or when one is there to keep
    in step): every file written whole, to a temporary name first, so none can disagree or be half written.
    Returns the paths written, and the line that names the edited files of configs/ kept (export_picks)."""
    # configs/ first: a pareto.json written where the picks' configs then could not be would disagree with them.
    check_configs_writable(run_dir, "run directory",
                           f"`autotune report {shell_text(str(run_dir))}` writes the reports ({STUDY_KEPT})")
    _write_first_report(run_dir, document)
    kept = export_picks(view, run_dir, document["backend"], document)
    written = [run_dir / "pareto.json", run_dir / "configs"]
    if html or (run_dir / "report.html").exists():
        written.append(write_report_html(run_dir / "report.html", view, document, run_dir))
    return written, kept


@contextlib.contextmanager
def reports_turn(run_dir: Path):
    """One worker of a run directory at a time reads the study for its reports and writes them. Two workers
    ending together wrote in the order they finished writing, not reading: the last pareto.json held 5
    trials of a study of 6, a snapshot taken before the other worker's last probe ended (trial 47 #3).
    Read inside the turn, the reports written last are of the study as it stands then."""
    from autotune.study.run_dir_locks import REPORTS_LOCK, LockUnusable, open_run_dir_lock

    path = run_dir / REPORTS_LOCK
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        there = os.path.lexists(path)
        lock = open_run_dir_lock(path)  # read-only: a colleague's lock serves too (trial69 #9)
    except LockUnusable as unusable:
        if there:
            # One this user cannot open (a colleague's of mode 000, or no file) was passed over without a word. The
            # reports are still worth writing: the lock only puts them in turns, so one line says what goes without it.
            print(f"{unusable.problem}: this command writes the reports without it, the lock by which one command at a "
                  "time writes them (another writing them meanwhile may leave its older ones last); "
                  f"{unusable.fix}", file=sys.stderr)
        yield  # else a directory no lock can be made in: writing the reports there says why, in its own words
        return
    except OSError:  # the run directory cannot be made: so says writing the reports there
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, a killed worker's too
        yield


def converged_line(document: dict) -> str | None:
    """The run's own line as its search stops converged, from the report's `search` block: a replay that ended with
    its recording is said there too (search_summary: at_end_of_recording), where the run, which read only the study's
    record of an early stop, said nothing of it beside a report that did. None where it did neither."""
    from autotune.report.search import converged_stop_line  # here: its model's imports are no start-up cost

    converged = (document.get("search") or {}).get("converged")
    if not converged:
        return None
    return converged_stop_line(converged["probes"], document.get("backend") == "simulate", converged.get("recorded", 0),
                               converged.get("unrecorded", 0), bool(converged.get("at_end_of_recording")))


def finish_run(study, run_dir: Path, console, max_slowdown: float | None = None, eta: float | None = None,
               storage: str | None = None, study_name: str = STUDY_NAME, stop_line: bool = False,
               said_first=None) -> dict:
    """The reports of a finished run, written and printed. `stop_line`: say first how the search ended where it
    converged (converged_line), as `autotune run` does. `said_first(view)`: lines printed before all that, told by
    the very read of the study the report is made of (a worker's "not in this report")."""
    not_written = None
    with reports_turn(run_dir):
        view, document = build_report(study, max_slowdown, eta, storage)
        keep_pick_parameters(study, view)
        try:
            _, kept = write_outputs(view, document, run_dir)
        except ReportsNotWritten as refused:  # what the probes found is shown all the same; the refusal ends the run
            kept, not_written = None, refused
    for line in said_first(view) if said_first else ():
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    if stop_line and (line := converged_line(document)):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    print_report(view, document)
    if not_written is not None:
        raise not_written
    if kept:
        console.print(kept, markup=False, highlight=False, soft_wrap=True)
    # configs/ holds the picks' DeepSpeed configs: a study with no pick (every probe failed) writes none.
    configs = ", configs/" if document["picks"] else ""
    console.print(f"run directory: {run_dir} ({'' if storage else 'study.db, '}pareto.json, report.html{configs})"
                  + (f"; the study:{storage_flags(storage, study_name)}" if storage else ""))
    return document
