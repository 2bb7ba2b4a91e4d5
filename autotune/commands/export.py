"""`autotune export RUN_DIR --pick knee`: a DeepSpeed JSON config and its launch command."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

from autotune.atomic_write import NAME_MAX_BYTES
from autotune.backends.probe_options import LAUNCHERS
from autotune.counted import counted
from autotune.commands.flags import GivenOnce, add_output_flag, path_flag, whole_number_flag
from autotune.commands.report import add_study_location_options
from autotune.shell import shell_path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "export", help="write the DeepSpeed config of a pick or trial",
        description="Write the DeepSpeed config of a pick or trial of a run directory, with its candidate.json and a "
                    "launch.sh that trains it as the tuner's probe does; or, with --measurements, every probe's result "
                    "for a replay.")
    parser.add_argument("run_dir", type=path_flag, metavar="RUN_DIR",
                        help="the --out directory of an `autotune run` (its default: runs/<model>-<nodes>n)")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--pick",
        type=_pick_flag,
        choices=PICKS,
        help="a recommended point (default: knee; fastest, the only one, in a study of --objectives time); max-slowdown "
             "and cost-weighted as the study's last `autotune run` or `report` chose them, with its --max-slowdown and "
             "--eta (default: 1.05 and 0.5), which export does not take: `autotune report RUN_DIR --max-slowdown X "
             "--eta ETA` changes them, and rewrites pareto.json and configs/",
    )
    choice.add_argument("--trial", type=whole_number_flag(low=0), metavar="N", help="any feasible trial by number")
    choice.add_argument(
        "--measurements", type=path_flag, metavar="FILE", action=GivenOnce,  # given twice: refused, as -o (trial 58 F8)
        help="write every probed candidate's result as JSON lines for `autotune run --backend replay --measurements FILE` "
             "(- for standard output)",
    )
    # --out listed, not hidden: run spells its output so, users type it here too, and the docs name it (trial 67 #10)
    add_output_flag(parser, "-o", "--output", "--out", aliases=(), type=path_flag, metavar="FILE",
                        help="config file (default: RUN_DIR/configs/<pick>.json, or trial-N.json for --trial N); <name>.candidate.json and <name>.launch.sh go "
                             "beside it. An existing file is replaced only if an earlier export wrote it and nobody edited it since (a "
                             "config's DeepSpeed settings against its candidate file, and the two files beside it against what "
                             "the config keeps of them; in configs/, by configs/.written.json); "
                             "never into another run directory's configs/")
    parser.add_argument("--force", action="store_true",
                        help="with --measurements: replace the file an earlier `export --measurements` wrote (without it an "
                             "existing measurements file is kept); any other existing file is never replaced")
    add_study_location_options(parser)
    parser.add_argument("--launcher", choices=LAUNCHERS, default="auto",
                        help="how launch.sh starts the ranks: torchrun, on the node it runs on (a one-node pick); deepspeed, the "
                             "deepspeed launcher on the hosts of a file named hostfile beside it; srun, one step of the SLURM "
                             "allocation it runs in (an SM clock cap by srun --gpu-freq); auto (default): torchrun on one node, "
                             "deepspeed for several")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.commands.finish import stored_pick_parameters
    from autotune.commands.paths import run_dir_problem
    from autotune.errors import UserError
    from autotune.export import PICKS as EXPORTED_PICKS, choose_trial, export_launcher, export_trial
    from autotune.export_caveats import front_leads, off_front_line, pick_caveats
    from autotune.report import pareto_document, study_view
    from autotune.study import load_finished_study
    from autotune.study.storage_failure import StudyDatabaseLost

    problem = run_dir_problem(args.run_dir)  # "does not exist", a file of a run directory: as `autotune report` says
    if problem and args.storage is not None and not args.run_dir.exists() and not args.run_dir.is_symlink():
        # A study another machine or worker ran has no run directory here: `report` creates one (trial 66 #12).
        from autotune.study.storage import STUDY_NAME, storage_flags

        problem = (f"{args.run_dir} does not exist; `autotune report {shell_path(args.run_dir)}"
                   f"{storage_flags(args.storage, args.study_name or STUDY_NAME)}` creates it with the study's reports, "
                   "then export from it")
    if problem:
        raise UserError(problem)
    if args.output is not None and args.measurements is not None:
        raise UserError(f"-o names a config file; --measurements {args.measurements} is the file it writes: drop -o")
    if args.launcher != "auto" and args.measurements is not None:
        raise UserError(f"--launcher {args.launcher} chooses how a pick's launch.sh starts its ranks; --measurements writes "
                        "probe results and no launch.sh: drop --launcher")
    if args.force and args.measurements is None:
        raise UserError("--force replaces an earlier --measurements file; an exported config replaces an earlier export "
                        "without it (and never another file): drop --force")
    if args.output is not None:  # before the study is read: a bad path fails first, in one line
        _check_config_paths(args.output, "-o", args.run_dir)
    if args.measurements is not None:
        _check_measurements_path(args.measurements, args.force)
    try:
        study = load_finished_study(args.run_dir, args.storage, args.study_name)
    except StudyDatabaseLost as lost:  # damaged, emptied or removed: its probes' own files are read instead
        if args.measurements is None:
            raise
        return _write_trial_file_measurements(args.run_dir, args.measurements, lost.reason)
    if "settings" not in study.user_attrs:
        raise UserError(f"the study in {args.run_dir} has no trials yet; run `autotune run` first")
    if args.measurements is not None:
        return _write_measurements(study, args.measurements, args.run_dir)
    # The picks as pareto.json and configs/ name them: with the --max-slowdown and --eta of the last run or report.
    view = study_view(study, *stored_pick_parameters(study, None, None, fix=_pick_parameters_fix(args)))
    exhausted = None
    if not view.points:  # its no-feasible refusal says what evaluates more, where --trials does not (trial54 F2)
        from autotune.report.search import nothing_more_to_evaluate

        exhausted = nothing_more_to_evaluate(study, view.settings, study.user_attrs.get("backend", {}).get("name", "unknown"))
    trial, stem = choose_trial(view, args.pick if args.trial is not None else _pick_of(view, args.pick), args.trial,
                               exhausted, _report_command(args))
    output = args.output or _check_config_paths(args.run_dir / "configs" / f"{stem}.json", "-o's default")
    launcher = export_launcher(args.launcher, view.settings.candidate(view.point(trial).params), trial)
    backend = study.user_attrs.get("backend", {}).get("name", "unknown")
    # What the report warns of this pick (outside the calibration, a near tie), or that a --trial lies off the front,
    # in launch.sh and on stderr.
    leads = front_leads(view, trial)  # the front trials that beat it in both figures, if any
    caveats = [*pick_caveats(view, pareto_document(view, backend, ""), trial, EXPORTED_PICKS.get(stem)),
               *filter(None, [off_front_line(view, trial, leads)])]
    if args.output is None:
        _check_not_edited(output, lambda path: export_trial(view, trial, path, backend, launcher=launcher, caveats=caveats,
                                                            leads=leads))
    with _stop_signals_held() as held:  # the three files and their record are written as one, or not at all
        written = export_trial(view, trial, output, backend, launcher=launcher, caveats=caveats, leads=leads)
        if args.output is None:
            _record_written(written)
        for path in written:
            print(path)  # stdout holds the paths alone, for scripts; what to do with them goes to stderr
        sys.stdout.flush()
    try:
        if held:
            _interrupted_whole(written)
            signal.raise_signal(held[0])  # by its own handler: KeyboardInterrupt, or the end SIGTERM's default makes
        _print_handover(view, trial, written, launcher, caveats)
    except KeyboardInterrupt as stop:
        if not held:
            _interrupted_whole(written)
        stop.said = True  # its line names the files: cli adds no generic one after it
        raise
    return 0


def _print_handover(view, trial: int, written: list[Path], launcher: str, caveats: list[str] = ()) -> None:
    """What to do with the files, on stderr, after what the report warns of the pick (export_caveats.pick_caveats)."""
    from autotune.export import handover_notes, hostfile_sentence, shared_folder_sentence, was_probed
    from autotune.report.power_limit import measured_default_w

    for line in caveats:
        print(line, file=sys.stderr)
    point = view.point(trial)
    candidate = view.settings.candidate(point.params)
    print(f"train it{' as probed' if was_probed(point) else ''}: bash {shell_path(written[-1])}", file=sys.stderr)
    if launcher == "deepspeed":  # see export._hostfile_check
        print(f"  {hostfile_sentence(candidate.knobs.nodes, candidate.gpus_per_node)}", file=sys.stderr)
        print(f"  {shared_folder_sentence(candidate.knobs.nodes)}", file=sys.stderr)
    elif launcher == "srun" and candidate.knobs.nodes > 1:
        print(f"  {shared_folder_sentence(candidate.knobs.nodes, launcher)}", file=sys.stderr)
    print(f"{written[0].name} is the DeepSpeed config; your own training needs beyond it:", file=sys.stderr)
    for note in handover_notes(candidate, measured_default_w(point), launcher):
        print(f"  - {note}", file=sys.stderr)


@contextlib.contextmanager
def _stop_signals_held():
    """Ctrl-C, SIGTERM and SIGHUP wait for the block to end; yields the list of those that came, for the caller to
    act on then. Each file export writes is replaced whole (atomic_write), but the three and their record in
    configs/.written.json are one export: a Ctrl-C between them (a newcomer's trial) left a new launch.sh
    unrecorded, which later exports refused and reports kept as a user's edit ("differs from what autotune last
    wrote there"), or a new config beside an earlier export's launch.sh. Writing them takes milliseconds. A signal
    ignored (nohup's SIGHUP) stays ignored; signal handlers are the main thread's only."""
    import threading

    from autotune.errors import stop_signals

    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = {signum: signal.signal(signum, lambda signum, frame: held.append(signum))
                for signum in stop_signals() if signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        yield held
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupted_whole(written: list[Path]) -> None:
    with contextlib.suppress(OSError):  # a terminal gone with the signal
        print(f"autotune export: interrupted after the export was written whole: {', '.join(map(str, written))}",
              file=sys.stderr)


def _pick_parameters_fix(args) -> str:
    """What replaces the study's kept --max-slowdown and --eta from export, which takes neither flag (trial76 #8: its
    line said "pass --max-slowdown", which export refused)."""
    from autotune.report.picks import DEFAULT_ETA, DEFAULT_MAX_SLOWDOWN
    from autotune.study.storage import STUDY_NAME, storage_flags

    return (f"`autotune report {shell_path(args.run_dir)}{storage_flags(args.storage, args.study_name or STUDY_NAME)} "
            f"--max-slowdown {DEFAULT_MAX_SLOWDOWN:g} --eta {DEFAULT_ETA:g}` (the defaults, or your own; export takes "
            "neither flag) replaces them; then export again")


def _report_command(args) -> str:
    """The `autotune report --json` of the exported study: it lists every feasible trial ("feasible")."""
    from autotune.study.storage import STUDY_NAME, storage_flags

    return f"autotune report {shell_path(args.run_dir)} --json{storage_flags(args.storage, args.study_name or STUDY_NAME)}"


def _pick_of(view, pick: str | None) -> str | None:
    """The --pick to export: a time-only study (--objectives time) has one, the fastest, its default too;
    a pick that ranks by energy is refused there rather than chosen by figures the study never ranked."""
    from autotune.errors import UserError

    if not view.time_only or pick == "fastest":
        return pick
    if pick is None:
        return "fastest"
    # Where no trial has an energy figure, that is the first reason: no energy pick could be chosen at all.
    unavailable = " and has no energy figure (unavailable: no sensor, no estimate)" if view.points and all(
        p.energy_kj is None for p in view.points) else ""
    raise UserError(f"--pick {pick} ranks by energy, and this study ranks by time only (--objectives time){unavailable}: its "
                    "one pick is the fastest; pass --pick fastest, or --trial N for any feasible trial")


PICKS = ("fastest", "min-energy", "knee", "max-slowdown", "cost-weighted")


def _pick_flag(name: str) -> str:
    """pareto.json and --help's prose spell picks min_energy: taken as the flag's min-energy (trial 48 §3). An
    unknown name is refused as given, not as its hyphenated spelling."""
    import argparse

    if name.replace("_", "-") not in PICKS:
        raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from {', '.join(map(repr, PICKS))})")
    return name.replace("_", "-")


def _check_config_paths(output: Path, what: str, run_dir: Path | None = None) -> Path:
    """The config and the two files export writes beside it: each new, empty, or an earlier export's own."""
    from autotune.commands.paths import writable_file
    from autotune.errors import UserError
    from autotune.export import config_stem, edited_beside, export_edit, exported_kind

    default = what != "-o"
    if output.name.startswith("-"):
        raise UserError(_dash_name_problem(output))
    writable_file(output, what, replaces=lambda path: exported_kind(path) == "config",
                  kind="a config an earlier `autotune export` wrote", fix="move it away or pass -o FILE" if default else "")
    # DeepSpeed reads its config file as JSON (hjson), whatever its name: `-o ds.yaml` would hold JSON under a
    # name that tells the user's own tools (and the user) to parse YAML. Any other name is taken (`-o $(mktemp)`).
    if output.suffix.lower() in _OTHER_FORMATS:
        raise UserError(f"-o {output}: the DeepSpeed config is written as JSON; give it a .json name such as "
                        f"{output.with_suffix('.json').name}")
    for suffix, kind, said in ((".candidate.json", "candidate", "candidate file"), (".launch.sh", "launch", "launch script")):
        beside = output.with_name(config_stem(output.name) + suffix)
        size = len(os.fsencode(beside.name))
        if size > NAME_MAX_BYTES:  # is_dir() raised ENAMETOOLONG, a traceback (trial 45 §10)
            raise UserError(f"{what} {output}: the {said} export writes beside it, {beside.name[:20]}...{suffix}, would "
                            f"have a name of {size} bytes, longer than a file system takes ({NAME_MAX_BYTES}); give -o a "
                            "shorter name")
        if beside.is_dir():
            raise UserError(f"{beside} is a directory, and export writes a file there beside {output.name}; remove it or choose another -o")
        writable_file(beside, f"{what} {output}: beside it,", example=f"knee{suffix}",
                      replaces=lambda path, kind=kind: exported_kind(path) == kind,
                      kind=f"a {said} an earlier `autotune export` wrote",
                      fix="move it away or pass -o FILE" if default else "move it away or choose another -o")
    if run_dir is not None:  # -o: the user's own path (after the names' own checks: a link's is_symlink raised on one too long)
        _check_no_link(output)
        _check_not_another_run_dirs(output, run_dir)
        if exported_kind(output) == "config" and (beside := edited_beside(output)) is not None:
            # First: an edited candidate file would read as an edit of the config (export_edit compares the two).
            raise UserError(f"-o {output}: {beside.name} beside it differs from what that export wrote there (its "
                            f"SHA-256 in {output.name}, autotune.written_beside): edited since, and export would replace "
                            "it; move it away to export there, or choose another -o")
        if exported_kind(output) == "config" and (edit := export_edit(output)) is not None:
            raise UserError(f"-o {output}: {edit}: edited since an earlier export wrote it, and export would replace "
                            "it; move it away to export there, or choose another -o")
    _check_no_namesake(output, what)
    return output


def _check_no_link(output: Path) -> None:
    """-o naming a link (to an earlier export, or to nothing): the config went through it, and its candidate.json and
    launch.sh beside the link, so the config the link points to stood beside another pick's two files, and launch.sh
    ran one pick's candidate with another's config (trial76 #11). The three are one export: refused, in one line."""
    from autotune.export import config_stem
    from autotune.errors import UserError

    for path in (output, *(output.with_name(config_stem(output.name) + suffix) for suffix in (".candidate.json", ".launch.sh"))):
        if path.is_symlink():
            target = Path(os.readlink(path))
            fix = (f"pass -o {shell_path(output.parent / target)} (the file it points to)" if path == output else
                   "choose another -o")
            raise UserError(f"-o {output}{'' if path == output else f': {path}'} is a link to {target}{'' if path.exists() else ', which does not exist'}, "
                            "and export writes a config, its candidate.json and launch.sh as one, beside each other; "
                            f"{fix}, or remove the link")


def _check_not_another_run_dirs(output: Path, run_dir: Path) -> None:
    """-o into the configs/ of a run directory: that directory's reports keep their own picks there, and took another
    study's export for a user's edits, kept for good (trial76 #5). Its own RUN_DIR's configs/ is export's default."""
    from autotune.commands.paths import enclosing_run_dir
    from autotune.errors import UserError

    enclosing = enclosing_run_dir(output)
    if enclosing is None or output.parent != enclosing / "configs":
        return
    with contextlib.suppress(OSError):
        if os.path.samefile(enclosing, run_dir):
            return
    raise UserError(f"-o {output}: that is the configs/ folder of another run directory, {enclosing}, whose reports "
                    f"keep that study's picks there; export into {run_dir / 'configs'} (no -o), or choose "
                    "a folder outside a run directory")


def _check_no_namesake(output: Path, what: str) -> None:
    """`-o knee` and `-o knee.json` name their candidate file and launch.sh alike (config_stem): the second export
    replaced the first's launch.sh with one that trains another file, and the first config was left without its
    own (a newcomer's trial). An earlier export's config of the other spelling is refused here, in one line."""
    from autotune.errors import UserError
    from autotune.export import config_stem, exported_kind

    stem = config_stem(output.name)
    spellings = {stem, *(stem + "." + "".join(letters) for letters in itertools.product("jJ", "sS", "oO", "nN"))}
    for name in sorted(spellings - {output.name}):
        other = output.with_name(name)
        if config_stem(name) != stem or exported_kind(other) != "config":
            continue
        with contextlib.suppress(OSError):
            if output.exists() and os.path.samefile(other, output):  # a file system that ignores case: one file
                continue
        raise UserError(f"{what} {output}: {other} is a config an earlier export wrote, and both would have "
                        f"{stem}.candidate.json and {stem}.launch.sh beside them (named without .json), the second "
                        f"export's over the first's; pass -o {shell_path(other)} to replace that export, or another name")


def _dash_name_problem(output: Path) -> str:
    """Why -o may not name a file starting with '-'. `-o -` reads as standard output, as `--measurements -` is, but
    wrote files named -, -.candidate.json and -.launch.sh (trial 45 §4); and launch.sh passes the names to the probe,
    whose argument parser takes `--candidate -x.candidate.json` for an option without its value."""
    if output == STDOUT:
        return ("-o -: export writes a DeepSpeed config and two files beside it (NAME.candidate.json, NAME.launch.sh), "
                "not standard output; give a file name such as knee.json")
    return (f"-o {output}: launch.sh passes the file names to the probe, which reads one starting with '-' as an "
            f"option; give a name such as {output.with_name(output.name.lstrip('-') or 'knee.json')}")


def _check_not_edited(config: Path, export_to) -> None:
    """A pick's files in configs/ that autotune did not write there (a tuned lr, site lines in launch.sh): `run` and
    `report` keep them and write the pick beside them; export, which writes to one place, refuses rather than
    replace them without a word. Judged as report judges them (finish.edited_since_written): by
    configs/.written.json, and for a file it does not name (the record lost, damaged, or a copy made without it:
    trial76 #9, trial78 #8) by what export would write now, `export_to(path)`."""
    from autotune.commands.finish import WRITTEN_RECORD, edited_since_written, record_problem, written_record
    from autotune.errors import UserError

    configs = config.parent
    if not configs.is_dir():
        return
    record = written_record(configs)
    with tempfile.TemporaryDirectory(prefix="autotune-export-") as scratch:  # launch.sh names its files by its own folder
        for fresh in export_to(Path(scratch) / config.name):
            path = config.with_name(fresh.name)
            if not edited_since_written(path, fresh, record):
                continue
            since = (f"what autotune last wrote there ({configs / WRITTEN_RECORD})" if path.name in record else
                     f"what export writes there now, and {configs / WRITTEN_RECORD} "
                     f"{record_problem(configs) or 'has no record of it'}")
            raise UserError(f"{path} differs from {since}: edited since, and export would replace it; move it away to "
                            "export the pick there, or pass -o FILE")


def _record_written(paths: list[Path]) -> None:
    """What export wrote to configs/, in its record: a later report takes the files for autotune's, not a user's."""
    from autotune.commands.finish import file_sha256, save_written_record, written_record

    configs = paths[0].parent
    record = written_record(configs)
    record.update({path.name: file_sha256(path.read_bytes()) for path in paths})
    save_written_record(configs, record)


# Names that say the file is in a format other than JSON.
_OTHER_FORMATS = frozenset((".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".py"))


def _is_measurements_file(path: Path) -> bool:
    """Whether every line of `path` is a replay record (params and status), as `export --measurements` writes them."""
    from autotune.checks import text_head

    text = text_head(path, 64 << 20)
    if not text or not text.endswith("\n"):  # past the limit, or cut short: not ours to replace
        return False
    try:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return False
    return bool(records) and all(isinstance(r, dict) and {"params", "status"} <= r.keys() for r in records)


# `--measurements -`: the records on standard output, for a pipe (`| gzip`, `| ssh host ...`).
STDOUT = Path("-")


def _check_measurements_path(path: Path, force: bool) -> None:
    """A new or empty file; an earlier measurements file only with --force (it may be the only copy of
    probes measured on another cluster, and a replay study built on it could not resume); nothing else;
    or standard output."""
    from autotune.errors import UserError

    if path == STDOUT:
        if getattr(sys.stdout, "name", None) == os.devnull:  # cli.console_main's stand-in for a closed stdout (`>&-`)
            raise UserError("--measurements -: standard output is closed, so the records would be lost; pass a file "
                            "name (--measurements measurements.jsonl) or give the command a standard output")
        return
    from autotune.commands.paths import writable_file

    writable_file(path, "--measurements", example="measurements.jsonl", replaces=_is_measurements_file,
                  kind="a measurements file an earlier export wrote")
    if not force and path.exists() and path.stat().st_size:
        # Said by their source, as what export wrote was (_results_text): a simulated study's file "held 4 probe
        # results". Its simulation gives simulated ones again; only probe results may be the only copy.
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        only_copy = (" (perhaps the only copy of measurements taken elsewhere)"
                     if any(record.get("source") != "simulated" for record in records) else "")
        raise UserError(f"--measurements {path} already holds {_results_text(records)}{only_copy}; give another file name "
                        f"such as {path.with_name(path.stem + '-2' + path.suffix)}, or pass --force to replace it")


def _write_measurements(study, path: Path, run_dir: Path) -> int:
    """One replay record per evaluated candidate (the first evaluation; repeats of it were not probed)."""
    from optuna.trial import TrialState

    from autotune.backends.replay import measurement_record, study_of
    from autotune.study.foreign import foreign_trials
    from autotune.study.outside import outside_reason
    from autotune.study.retries import evaluated_trials
    from autotune.study.settings import StudySettings

    settings = StudySettings.from_dict(study.user_attrs["settings"])
    trials = study.get_trials(deepcopy=False)
    # No probe of this study (outside.py: added or edited by hand; foreign.py: a copied trial, made-up figures, a second
    # record of one probe): out of the evaluated trials, so out of the file too, and said in the run's own words. They
    # were dropped without a word, or called "study.db is damaged there" for a trial added by hand.
    foreign = foreign_trials(study, trials)
    not_probed = {t.number: reason for t in trials if t.state != TrialState.WAITING and "duplicate_of" not in t.user_attrs
                  and (reason := outside_reason(t, foreign)) is not None}
    records, left_out = [], {}
    evaluated = evaluated_trials(study)
    kept = [t for t in _kept_results(study, set(evaluated)) if t.number not in not_probed]
    kept_numbers, kept_written = {t.number for t in kept}, []
    for trial in sorted([*evaluated.values(), *kept], key=lambda t: t.number):
        params = trial.user_attrs["candidate"]["knobs"]
        if (why := _not_the_candidates(trial)) is not None:
            left_out.setdefault(why, []).append(trial.number)
            continue
        record = measurement_record(params, trial.user_attrs["result"], study_of(settings.candidate(params)))
        if record is None:
            continue
        _check_replayable(record, f"trial {trial.number}", path)
        records.append(record)
        if trial.number in kept_numbers:
            kept_written.append(trial.number)
    if left_out:  # on stderr: with `--measurements -` standard output holds the records alone
        print(_left_out_line(left_out), file=sys.stderr)
    if not_probed:
        print(_not_probed_line(not_probed), file=sys.stderr)
    return _write_records(records, path, _results_text(records) + _kept_text(kept_written), run_dir)


def _not_probed_line(not_probed: dict[int, str]) -> str:
    """One line naming the trials left out as no probe of this study, each with the run's and report's reason
    (outside.outside_reason), their common end ("left out of the search, ...") said once, as the report says it."""
    from autotune.study.outside import LEFT_OUT, by_reason

    reasons = {number: reason.removesuffix(LEFT_OUT) for number, reason in not_probed.items()}
    return (f"{counted(len(reasons), 'trial')} left out of the measurements as no probe of this study (as of the search, "
            f"the front and the picks): {by_reason(reasons)}")


def _check_replayable(record: dict, origin: str, path: Path) -> None:
    """The replay reader's own check: a file a replay refuses is not written (its bounds once disagreed)."""
    from autotune.backends.replay import checked_record
    from autotune.errors import ConfigError, UserError

    try:
        checked_record(origin, json.loads(json.dumps(record)))
    except ConfigError as why:
        problem = str(why).split("; see `autotune run --help`")[0]  # the record format is not the user's to fix
        raise UserError(f"--measurements {path}: not written: {problem}, which a replay of it would refuse; a bug "
                        "to report (a study's own results replay)") from None


def _write_trial_file_measurements(run_dir: Path, path: Path, reason: str) -> int:
    """The records of a run directory whose study.db cannot be read, from its probes' own files in trials/
    (study/trial_files.py): what it measured was kept there, and no command read it back (trial69 #14). Said on
    stderr, with the trial directories that give no record and why."""
    from autotune.errors import UserError
    from autotune.study.trial_files import trial_file_records

    numbered, left_out = trial_file_records(run_dir)
    if not numbered:
        raise UserError(f"the study database {run_dir / 'study.db'} cannot be read ({reason}), and no probe in "
                        f"{run_dir / 'trials'} left a result a replay can take ({'; '.join(left_out)}); restore "
                        "study.db from a copy, or start a new study with --out NEW_DIR")
    for number, record in numbered:
        _check_replayable(record, f"trial {number}", path)
    print(f"the study database {run_dir / 'study.db'} cannot be read ({reason}): the records are read from the "
          f"probes' own files in {run_dir / 'trials'}, trials {', '.join(str(number) for number, _ in numbered)}",
          file=sys.stderr)
    if left_out:
        print(f"{counted(len(left_out), 'trial directory', 'trial directories')} left out: {'; '.join(left_out)}", file=sys.stderr)
    records = [record for _, record in numbered]
    return _write_records(records, path, _results_text(records), run_dir)


def _write_records(records: list[dict], path: Path, written: str, run_dir: Path) -> int:
    """The records as JSON lines in `path` (replaced whole), or on standard output; `written` says what they are."""
    from autotune.atomic_write import write_text_atomic

    text = "".join(json.dumps(r) + "\n" for r in records)
    if path == STDOUT:
        try:  # flushed before the line that says they are there (trial76 #12: said, then a full disk at exit)
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # the reader went away: cli ends as a tool killed by SIGPIPE does
        except OSError as exc:
            with contextlib.suppress(OSError, ValueError, AttributeError):  # nothing flushed again at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            print(f"autotune export: --measurements -: the records were not written whole ({exc.strerror or exc} on "
                  f"standard output); run `autotune export {shell_path(run_dir)} --measurements FILE` to write them to a "
                  "file, or again with room on standard output", file=sys.stderr)
            return 1
        print(f"{written} on standard output (replay with --backend replay --measurements FILE)", file=sys.stderr)
        return 0
    write_text_atomic(path, text)
    print(f"{path}: {written} (replay with --backend replay --measurements {shell_path(path)})")
    return 0


def _kept_results(study, evaluated_keys: set[str]) -> list:
    """The FAIL trials whose probe's result the study keeps (killed_after_probe: the run died after the probe, or the
    trial was marked FAIL by hand) and whose candidate no other trial evaluated: the report counts them interrupted,
    "its result kept", and the next run takes the result over. A measurements file without them lost a probe's
    result without a word (trial68 #17). A running trial's worker may still record it: not one of these."""
    from optuna.trial import TrialState

    from autotune.candidate import params_key
    from autotune.study.retries import killed_after_probe, released_trials

    kept, keys, released = [], set(evaluated_keys), released_trials(study)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        candidate = trial.user_attrs.get("candidate")
        knobs = candidate.get("knobs") if isinstance(candidate, dict) else None
        if not killed_after_probe(trial) or trial.number in released or not isinstance(knobs, dict):
            continue
        if (key := params_key(knobs)) not in keys:
            keys.add(key)
            kept.append(trial)
    return kept


def _kept_text(numbers: list[int]) -> str:
    """Which of the records written are the kept results of interrupted trials, as the report names those trials."""
    if not numbers:
        return ""
    listed = ", ".join(map(str, numbers))
    if len(numbers) == 1:
        return f", one the kept result of interrupted trial {listed}"
    return f", {len(numbers)} the kept results of interrupted trials {listed}"


def _results_text(records: list[dict]) -> str:
    """How many records were written, by their source: a simulated study's read "4 probe results", and nothing had
    been probed (trial64 #15). A measured record (its energy estimated too) is a probe's result."""
    simulated = sum(1 for record in records if record.get("source") == "simulated")
    probed = len(records) - simulated
    if not simulated or not probed:
        return counted(len(records), "simulated result" if simulated else "probe result")
    return f"{len(records)} results ({counted(probed, 'probe result')}, {simulated} simulated)"


# Why a probe's failure says nothing of its candidate: a replay would hold it final, as the candidate's own.
_TIMED_OUT = "timed out"
_SETUP = "failed on the set-up"


def _not_the_candidates(trial) -> str | None:
    """Why a trial's result is left out of the measurements, or None to write it. A timeout is a property of the
    probe settings (`--probe-timeout`, `--probe-steps`: a resume with others probes the candidate again) and a
    set-up failure (the study's own record, `setup_failure`) of the cluster, not of the candidate; a replay has no
    such status and cannot probe again, so its record would be a final "failed" (trial 54 F9)."""
    from autotune.study.retries import SETUP_FAILURE_ATTR

    if trial.user_attrs.get(SETUP_FAILURE_ATTR):
        return _SETUP
    if (trial.user_attrs.get("result") or {}).get("status") == "timeout":
        return _TIMED_OUT
    return None


def _left_out_line(left_out: dict[str, list[int]]) -> str:
    """One line: how many results are left out, and why ("3 probe results left out: they timed out (trials 0, 1,
    2) ...")."""
    count = sum(len(numbers) for numbers in left_out.values())
    whys = [f"{why} (trial{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))})"
            for why, numbers in sorted(left_out.items(), key=lambda item: item[1][0])]
    fixes = []
    if _TIMED_OUT in left_out:
        fixes.append("a resume with a longer --probe-timeout probes a timed-out candidate again")
    if _SETUP in left_out:
        fixes.append("a resume after the set-up is fixed probes the set-up's failures again")
    return (f"{count} probe result{'s' if count > 1 else ''} left out: {'they' if count > 1 else 'it'} "
            f"{' or '.join(whys)}, which says nothing of the candidate{'s' if count > 1 else ''}, and a replay would "
            f"hold {'them' if count > 1 else 'it'} final; a replay that proposes such a candidate fails it as \"no "
            f"record\" ({' and '.join(fixes)}: export after it)")
