"""`autotune report RUN_DIR`: the Pareto front and picks again, as a table, JSON or Markdown, and
report.html with --html. Figures come from the study itself (study.db), and the report rewrites the
files it shows (pareto.json, configs/, report.html when asked for or already there), so they never
disagree with it; a damaged or missing pareto.json is rebuilt, and the report says so. Files of configs/
the user edited are kept (the pick goes beside them: finish.export_picks), and a RUN_DIR that holds
another study's reports than --storage's is refused (study.storage.check_run_dir_is_of), as is another
database than a RUN_DIR's own study.db; a --storage copy of the study a RUN_DIR's pareto.json named another
database for is reported there, and the report says its files now describe the copy. A RUN_DIR that does not
exist is created for a --storage study's reports (one another machine ran). Where the reports cannot be written there
(a read-only run directory, a configs/ or pareto.json this user may not write: a colleague's), the report is shown
and one line says why its files are left as they were, and the fix."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from autotune.counted import agreeing, counted
from autotune.commands.flags import GivenOnce, number_flag, path_flag, storage_shown, study_name_flag, text_flag
from autotune.os_text import shell_text
from autotune.study.storage import STUDY_NAME, storage_flags

FORMATS = ("table", "json", "md")


def add_study_location_options(parser: argparse.ArgumentParser, several: bool = False) -> None:
    """--storage and --study-name, shared by `report`, `export` and `calibrate`: where a run's study is when it
    is not RUN_DIR/study.db. `several`: the command takes several RUN_DIRs (calibrate), and the flags name the
    study of each one that keeps no study.db (calibrate.measured.run_dir_study)."""
    where = ("for the one RUN_DIR that holds no study.db, as its `autotune run --storage` gave it (RUN_DIRs with a "
             "study.db of their own are read there)") if several else "when it is not RUN_DIR/study.db"
    # Given twice, refused: the later URL silently won, and the refusal that followed named it alone (trial 58 F9).
    parser.add_argument("--storage", type=text_flag, metavar="URL", action=GivenOnce, what="the storage", shown=storage_shown,
                        help=f"the study's storage URL, {where}")
    parser.add_argument("--study-name", type=study_name_flag, default=STUDY_NAME, metavar="NAME",
                        help="the study's name in --storage (default: autotune), as `autotune run --study-name` gave it")


def add_pick_options(parser: argparse.ArgumentParser) -> None:
    """--max-slowdown and --eta, shared by `run` and `report`; None means the study's stored choice. The defaults
    in the help are report.picks' DEFAULT_MAX_SLOWDOWN and DEFAULT_ETA (a test holds them equal): importing that
    module here would slow every command's start by a tenth of a second."""
    picks = parser.add_argument_group(
        "picks", "--max-slowdown and --eta are kept in the study: pareto.json and configs/ are (re)written with the picks "
                 "they choose, and later reports and `autotune export --pick max-slowdown|cost-weighted` use them")
    picks.add_argument(
        # Any finite X >= 1 is a pick: a large one is the least-energy pick, which in a scaling study may
        # be hundreds of times slower than the fastest, so no upper bound is principled; the label prints
        # such an X as a multiple (report.picks._meaning), not as millions of percent.
        "--max-slowdown", type=number_flag(low=1.0), metavar="X",
        help="the 'max_slowdown' pick: least energy within X times the fastest time "
             "(default: 1.05, or what the study's last run or report used; export --pick follows it)",
    )
    picks.add_argument(
        "--eta", type=number_flag(low=0.0, high=1.0), metavar="ETA",
        help="the 'cost_weighted' pick minimises ETA x energy + (1 - ETA) x max power per GPU x GPUs x time (Zeus's "
             "cost) over every feasible trial, on the time-energy front or off it; 1 = energy only, 0 = GPU time only "
             "(the fastest where every candidate has the same GPUs; across node counts, the fewest GPU-hours) "
             "(default: 0.5, or what the study's last run or report used)",
    )


def check_pick_options(args: argparse.Namespace) -> None:
    from autotune.report.picks import DEFAULT_ETA, DEFAULT_MAX_SLOWDOWN, check_pick_parameters

    check_pick_parameters(
        DEFAULT_MAX_SLOWDOWN if args.max_slowdown is None else args.max_slowdown,
        DEFAULT_ETA if args.eta is None else args.eta,
    )


def drop_unread_pick_options(args: argparse.Namespace, time_only: bool) -> str | None:
    """A line naming --max-slowdown and --eta given to a study ranked by time alone (--objectives time), which are
    then dropped; None where neither is given or the study ranks energy too. Its one pick is the fastest, which
    neither chooses: they were kept without a word, and a report rewrote pareto.json and configs/ "out of date" for
    them (trial78 #7), where every other flag a run does not read is said (run.ignored_launch_options)."""
    given = [flag for flag, value in (("--max-slowdown", args.max_slowdown), ("--eta", args.eta)) if value is not None]
    if not time_only or not given:
        return None
    args.max_slowdown = args.eta = None
    one = len(given) == 1
    return (f"{' and '.join(given)} {'is' if one else 'are'} not read by a study ranked by time only (--objectives "
            f"time): its one pick is the fastest, which {'it does' if one else 'they do'} not choose; ignored")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="print the Pareto front and picks of a run directory",
        description="Print the Pareto front and picks of a run directory again, from its study, and rewrite its reports "
                    "(pareto.json, configs/, report.html) where they disagree with it; --max-slowdown and --eta "
                    "change its picks for good (see picks).")
    parser.add_argument("run_dir", type=path_flag, metavar="RUN_DIR",
                        help="the --out directory of an `autotune run` (its default: runs/<model>-<nodes>n)")
    add_study_location_options(parser)
    # One or the other: given both (--json --format md), the last won without a word (trial78 #6).
    output = parser.add_mutually_exclusive_group()
    # No default of "table": argparse lets a flag given as its default past the group (--format table --json).
    output.add_argument(
        "--format", choices=FORMATS, default=None,
        help="table (default, for the terminal), json (the pareto.json document) or md (Markdown, for an issue)",
    )
    # As `space`, `sensors` and `calibrate` spell it: a script that passes --json to every command gets JSON here too.
    output.add_argument("--json", dest="format", action="store_const", const="json",
                        help="the same as --format json (not with --format)")
    parser.add_argument("--html", action="store_true", help="also write RUN_DIR/report.html (rewritten anyway when there)")
    add_pick_options(parser)
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.commands.finish import (
        ReportsNotWritten, build_report, configs_fix, configs_problem, keep_pick_parameters, pareto_json_state, reports_turn,
        write_outputs,
    )
    from autotune.commands.paths import check_run_outputs, directory_problem, run_dir_problem, writable_directory
    from autotune.errors import UserError
    from autotune.report.markdown import markdown_report
    from autotune.report.table import print_report
    from autotune.study import load_finished_study
    from autotune.study.run_dir_locks import run_under_way
    from autotune.study.storage_failure import read_only_failure

    created = bool(args.storage) and _create_for_storage_study(args.run_dir)
    problem = run_dir_problem(args.run_dir)
    if problem:
        raise UserError(problem)
    # RUN_DIR's own study.db settles which database its reports are of, before --storage's is opened: opened first,
    # a --storage without the study (or of another) was refused in its own words, as if RUN_DIR had no study.
    if args.storage and names_own_study_db(args.run_dir, args.storage):
        args.storage = None  # RUN_DIR's own study.db by a URL: reported as without --storage, and recorded so
    if args.storage and (args.run_dir / "study.db").is_file():
        refuse_another_storage(args.run_dir, args.storage)
    if not (args.run_dir / "study.db").exists():
        _check_reports_without_study_db(args.run_dir, args.storage)
        if args.storage and not created:
            _refuse_a_folder_of_other_files(args.run_dir)
    check_pick_options(args)
    check_run_outputs(args.run_dir, "RUN_DIR")
    if args.html:
        writable_directory(args.run_dir, "RUN_DIR", fix="--html writes report.html and configs/ there; drop --html or copy the run directory")
    # A colleague's run on a shared or read-only file system: show its report, write nothing there.
    read_only, fix = directory_problem(args.run_dir), "copy the run directory to write them"
    if not read_only and (read_only := configs_problem(args.run_dir)):  # the picks' configs/ alone (trial69 #2)
        configs_fixed = configs_fix(args.run_dir)
        fix = f"{configs_fixed} to write them"
        if args.html:
            raise UserError(f"RUN_DIR {args.run_dir}: {read_only}; --html writes report.html and configs/ there: "
                            f"{configs_fixed}, or drop --html")
    study = load_finished_study(args.run_dir, args.storage, args.study_name)
    if unread := drop_unread_pick_options(args, time_only=len(study.directions) == 1):
        print(f"warning: {unread}", file=sys.stderr)
    recorded_before = _UNRECORDED if read_only else _recorded_storage(args.run_dir)
    if "settings" not in study.user_attrs:
        if study.trials:  # another tool's Optuna study, alone in a study.db (found without its name): not "no trials"
            raise UserError(f"the study {study.study_name!r} in {args.run_dir / 'study.db'} was not made by autotune (its "
                            f"{counted(len(study.trials), 'trial')} {agreeing(len(study.trials), 'holds', 'hold')} no autotune settings); pass the --out directory of an "
                            "`autotune run`")
        raise UserError(f"the study in {args.run_dir} has no trials yet; run `autotune run` first")
    # In turns with a run's workers writing the same files (finish.reports_turn): what is written last is of the
    # study as it stands then.
    with contextlib.ExitStack() as turn:
        if not read_only:
            turn.enter_context(reports_turn(args.run_dir))
        view, document = build_report(study, args.max_slowdown, args.eta, args.storage)
        asked = " and ".join(f"{flag} {value:g}" for flag, value in (("--max-slowdown", args.max_slowdown), ("--eta", args.eta))
                             if value is not None)
        if not read_only and asked:
            try:
                keep_pick_parameters(study, view)  # pareto.json and configs/ now follow them: later reports and export too
            except Exception as exc:  # noqa: BLE001 - only SQLite's read-only refusal is ours to answer here
                if not read_only_failure(exc):
                    raise
                # A colleague's study.db (or one shared 0644, a read-only copy): the report is still worth showing.
                read_only = f"its study database cannot be written (read-only: {args.storage or 'study.db'})"
        if read_only:
            # The README says --eta and --max-slowdown are kept in the study: here they cannot be, and it is said.
            unkept = (f"; {asked} picked this report only, not kept in the study (later reports and export --pick use "
                      "the study's own)") if asked else ""
            print(_left_as_they_were(args.run_dir, read_only, unkept, fix), file=sys.stderr)
        state = None if read_only else pareto_json_state(args.run_dir / "pareto.json", document)
        written, kept = [], None
        if not read_only:
            try:
                written, kept = write_outputs(view, document, args.run_dir, html=args.html)
            except ReportsNotWritten as refused:  # a colleague's pareto.json in a shared folder: nothing was written
                if args.html:  # asked to write report.html: refused, as in a read-only run directory
                    raise
                state, recorded_before = None, _UNRECORDED
                print(_left_as_they_were(args.run_dir, refused.problem, "", refused.fix), file=sys.stderr)
    if kept:
        print(kept, file=sys.stderr)  # the user's edits: kept, and where the study's picks went instead
    if recorded_before is not _UNRECORDED and recorded_before != document["storage"]:
        print(_repointed(args.run_dir, recorded_before, document["storage"]), file=sys.stderr)
    names = ", ".join(p.name + ("/" if p.suffix == "" else "") for p in written)
    if created:
        print(f"created {args.run_dir} for the reports of the study in {storage_shown(args.storage)}: wrote {names}",
              file=sys.stderr)
    elif state is not None:
        # Say so: a tool that read the old file must not go on believing it.
        verb = "rebuilt" if state.startswith("damaged") or state == "missing" else "rewrote"
        print(f"pareto.json in {args.run_dir} was {state}: {verb} {names} from the study ({storage_shown(args.storage) if args.storage else 'study.db'})"
              f"{_still_unreadable(args.run_dir / 'pareto.json')}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif args.format == "md":
        sys.stdout.write(markdown_report(view, document, args.run_dir / "configs"))
    else:  # table, the default
        print_report(view, document)
    if args.html:
        print(f"wrote {args.run_dir / 'report.html'}", file=sys.stderr)
    if args.storage is None and run_under_way(args.run_dir):
        print(f"a run of this study is under way in {args.run_dir}: this report is of the trials finished so far, and the "
              "run writes the reports again when it ends", file=sys.stderr)
    elif args.storage and view.running_probes:  # its workers hold no lock here: the study's probes under way tell
        again = f"autotune report {shell_text(str(args.run_dir))}{storage_flags(args.storage, args.study_name)}"
        print(not_in_report_line(len(view.running_probes), again, where="on the study's workers"), file=sys.stderr)
    return 0


def not_in_report_line(probes: int, again: str, where: str = "on other workers") -> str:
    """What a report says of the probes under way (`where`) when it read the study: `run` of other workers' as it ends,
    `report` of a --storage study's, whose workers hold no lock on RUN_DIR to tell by (trial80 #5)."""
    from autotune.study.storage import heartbeat_seconds

    # A requeued job resumes seconds after its worker died: that trial still reads as running (trial 43 F6).
    grace_s = heartbeat_seconds()[1]
    return (f"{counted(probes, 'probe')} still running {where} {agreeing(probes, 'is', 'are')} not in this report; "
            f"`{again}` once {agreeing(probes, 'it finishes', 'they finish')} (a worker killed a moment ago counts as running "
            f"until its heartbeat is {grace_s} s old; a run of the study started after that probes its trial again)")


def _left_as_they_were(run_dir: Path, problem: str, unkept: str, fix: str) -> str:
    """The line of a report shown without writing its files there, whatever stood in the way."""
    return (f"RUN_DIR {run_dir}: {problem}: the report is shown, and pareto.json, configs/ and report.html there are left "
            f"as they were{unkept}; {fix}")


def _still_unreadable(path: Path) -> str:
    """"; its mode (000) ...: make it readable" where the pareto.json just written cannot be read either: a rewrite keeps
    a file's mode, and "rebuilt" alone sent `compare` users round in a loop (trial69 #3); else ""."""
    from autotune.report.pareto_json import UNREADABLE, read_pareto_json, unreadable_fix

    if read_pareto_json(path)[1] != UNREADABLE:
        return ""
    return f"; its mode ({path.stat().st_mode & 0o777:03o}) lets no one read it yet: {unreadable_fix(path)}"


def _create_for_storage_study(run_dir: Path) -> bool:
    """Create a RUN_DIR that does not exist for a --storage study's reports (a study another machine or worker ran
    has no run directory here), as `-o`/`--out` paths are created (removed again if the report fails: paths.
    undone_on_failure); whether it was created. "does not exist; pass the --out directory" named no fix that works."""
    from autotune.commands.paths import writable_directory

    if run_dir.exists() or run_dir.is_symlink():  # a dangling link is run_dir_problem's to name
        return False
    writable_directory(run_dir, "RUN_DIR")
    return True


# What a --storage study's report writes in RUN_DIR: a folder holding nothing else is one of its reports' (or empty).
_REPORT_FILES = frozenset({"pareto.json", "configs", "report.html", ".reports.lock"})


def _refuse_a_folder_of_other_files(run_dir: Path) -> None:
    """A RUN_DIR that exists, holds no run and other files (`autotune report . --storage URL` in a working folder):
    the reports were written among them without a word, and the pareto.json they left made every later `autotune run
    --out SUBDIR` below it refused as inside a run directory (trial68 #11)."""
    from autotune.errors import UserError

    others = sorted(p.name for p in run_dir.iterdir() if p.name not in _REPORT_FILES)
    if not others:
        return
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    raise UserError(f"RUN_DIR {run_dir} holds no run, but other files ({shown}): the reports (pareto.json, configs/) "
                    "would be written among them, and every `autotune run --out` below it then refused as inside a run "
                    "directory; report into a directory of its own: autotune report NEW_DIR --storage URL (NEW_DIR is "
                    "created)")


def _check_reports_without_study_db(run_dir, storage: str | None) -> None:
    """A RUN_DIR without a study.db whose pareto.json cannot name the --storage database of its study, refused in its
    own words: "its run kept the study in a --storage database" was said of a pareto.json another tool wrote, of
    a damaged one and of one whose study.db was moved away; and another tool's pareto.json was replaced by a
    --storage study's report (a damaged report of autotune's is rebuilt: finish.pareto_json_state)."""
    from autotune.errors import UserError
    from autotune.report.pareto_json import is_report_document, read_pareto_json

    path = run_dir / "pareto.json"
    held, unread = read_pareto_json(path)
    if unread == "missing":
        return
    if not unread and not is_report_document(held):
        raise UserError(f"RUN_DIR {run_dir} holds no study.db, and its pareto.json is not an autotune report (no front "
                        "or recommendations: another tool's file?), which the report would replace; pass the --out "
                        "directory of an `autotune run`, or move pareto.json out of the way")
    if storage is not None:
        return
    if unread:
        raise UserError(f"RUN_DIR {run_dir} holds no study.db, and its pareto.json is {unread}, so it cannot name the "
                        "database its run kept the study in; pass --storage URL and --study-name NAME as its `autotune "
                        "run` gave them (the report rebuilds pareto.json)")
    if "storage" in held and held["storage"] is None:
        from autotune.study.storage import study_db_gone_line

        raise UserError(study_db_gone_line(run_dir))


def names_own_study_db(run_dir, storage: str) -> bool:
    """Whether the --storage URL is an SQLite URL of RUN_DIR/study.db itself."""
    import sqlalchemy

    try:
        parsed = sqlalchemy.engine.make_url(storage)
        if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
            return False
        return Path(parsed.database).samefile(run_dir / "study.db")
    except Exception:  # noqa: BLE001 - not a URL, no such file: not the directory's own database
        return False


def refuse_another_storage(run_dir, storage: str, command: str = "report") -> None:
    """A run directory with a study.db holds that study's reports: a bare `autotune report RUN_DIR` reads it. The
    reports of another database written there (a copy's, or the server a study moved to: the same trials, so the
    check of the study let it through) pointed pareto.json at it, and the next bare report rewrote them from
    study.db again, each time the other study as it stood. `command`: "report", or "run" (`run --storage COPY --out
    RUN_DIR` probed into the copy and wrote its reports there, beside study.db's study; trial74 #9)."""
    from autotune.errors import UserError
    from autotune.study.storage import recorded_storage

    own = run_dir / "study.db"
    elsewhere = ("run it into a directory of its own (--out NEW_DIR), drop --storage to resume " if command == "run" else
                 "report it into a directory of its own (mkdir NEW_DIR, then autotune report NEW_DIR --storage URL), drop "
                 "--storage to report ")
    flag = "--out" if command == "run" else "RUN_DIR"
    raise UserError(
        f"{flag} {run_dir} keeps its study in its own study.db, and its reports (pareto.json, configs/) are of that one; "
        f"--storage {shell_text(recorded_storage(storage))} is another database, whose study a copy or a move may have "
        f"changed since: {elsewhere}{own}, or, where the study moved to that database for good, move {own} out of "
        f"{run_dir} first")


# What _recorded_storage answers where pareto.json says nothing of its storage (missing, damaged, or older).
_UNRECORDED = False


def _recorded_storage(run_dir) -> str | None | bool:
    """The storage RUN_DIR's pareto.json says its reports are of: its URL, None for the directory's own study.db;
    _UNRECORDED where it says nothing."""
    from autotune.report.pareto_json import read_pareto_json

    held, unread = read_pareto_json(run_dir / "pareto.json")
    if unread or not isinstance(held, dict) or "storage" not in held or not isinstance(held["storage"], (str, type(None))):
        return _UNRECORDED
    return held["storage"]


def _repointed(run_dir, before: str | None, now: str | None) -> str:
    """The line that says the reports now describe another storage than pareto.json named: with --storage, the same
    study by the trials pareto.json listed (study.storage.check_run_dir_is_of: a copy or a move of it); without,
    the directory's own study.db, which is its study by definition."""
    def where(url: str | None) -> str:
        if url:
            return f"--storage {shell_text(url)}"
        return "its own study.db" + ("" if (run_dir / "study.db").is_file() else f" (no longer in {run_dir})")

    if now is None:
        return (f"RUN_DIR {run_dir}: its reports (pareto.json, configs/) were of {where(before)} and are now of its own "
                "study.db, the study a bare `autotune report RUN_DIR` reads")
    return (f"RUN_DIR {run_dir}: its reports (pareto.json, configs/) were of {where(before)} and are now of {where(now)} (the "
            f"same study by the trials its pareto.json listed: a copy or a move of it), which `autotune report "
            f"{shell_text(str(run_dir))}` names from now on")
