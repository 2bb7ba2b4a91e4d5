"""`autotune calibrate [RUN_DIR ...] [--reference gh200-study] -o my-cluster.toml`: fit the simulator's
constants to measurements, print its error before and after and left out, and write the profile."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from autotune.counted import counted
from autotune.commands.flags import add_output_flag, name_or_path_flag, path_flag, text_flag
from autotune.commands.report import add_study_location_options
from autotune.shell import shell_path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="fit the simulator's constants to measured studies or published figures; write a calibrated profile",
        description=(
            "Fit the [simulator] constants of a hardware profile to observations (every probe of measured run "
            "directories, and/or a reference set of published figures), print each observation's error before and "
            "after the fit and its leave-one-out error, and write the calibrated profile with -o."
        ),
    )
    parser.add_argument("run_dirs", type=path_flag, nargs="*", metavar="RUN_DIR", help="measured studies (`autotune run --out`)")
    add_study_location_options(parser, several=True)
    parser.add_argument("--reference", type=name_or_path_flag, metavar="NAME",
                        help="published figures: gh200-study, or a JSON file in its schema")
    parser.add_argument(
        "--hardware", type=name_or_path_flag,
        help="the profile to calibrate: name or TOML (default: the hardware the run directories were measured on, else "
             "the reference's, gh200)",
    )
    # --out listed, not hidden: run spells its output so, users type it here too, and the docs name it (trial 67 #10)
    add_output_flag(parser, "-o", "--output", "--out", aliases=(), type=path_flag, metavar="FILE",
                        help="write the calibrated profile here (TOML; use it with --hardware): a new file, or one an earlier "
                             "calibrate wrote; never a built-in profile or the profile being calibrated")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (loo_mape, fit_mape, constants, ...)")
    parser.add_argument(
        "--loo-by", choices=("configuration", "figure"), default="configuration",
        help="what a leave-one-out fold leaves out: every figure of one configuration (default: the error on a "
             "configuration never measured, as in a study) or one figure at a time (3x slower, and optimistic)",
    )
    parser.add_argument("--no-loo", action="store_true", help="skip the leave-one-out error (quick look; -o then writes no error)")
    parser.add_argument(
        "--hold", metavar="NAME", action="append", default=[], type=text_flag,
        help="keep this constant at the base profile's value (repeat the flag for several: --hold A --hold B), e.g. one that ends on a bound only "
             "because the model lacks a mechanism",
    )
    parser.add_argument(
        "--fit", metavar="NAME", action="append", default=[], type=text_flag,
        help="fit this constant although the reference holds it (repeat the flag for several: --fit A --fit B): a reference names the constants its "
             "figures cannot pin (gh200-study: step_overhead_s) and, calibrated against alone, keeps them at the base "
             "profile's value",
    )
    parser.add_argument(
        "--exclude", metavar="ID", action="append", default=[], type=text_flag,
        help="leave out every figure of this observation (repeat the flag for several: --exclude A --exclude B): a run directory's trial as the report names it "
             "(LI#0, or runs/LI#0), or a reference figure's id (7b-baseline-time); e.g. the wrong one of two "
             "contradicting repeats",
    )
    parser.add_argument("--allow-estimated-energy", action="store_true", help="fit energy a power model estimated, too")
    parser.add_argument("--allow-simulated", action="store_true", help="fit simulated studies too (only to test the fit itself)")
    parser.set_defaults(func=_run)


def _base_hardware(args: argparse.Namespace):
    """The profile to calibrate, and which file it is in words (the report's and the profile header's)."""
    from autotune.calibrate.reference import read_reference, reference_origin
    from autotune.errors import ConfigError, UserError
    from autotune.hardware import figure_differences, hardware_to_dict, load_hardware, stored_hardware

    if args.hardware:
        base = load_hardware(args.hardware)
        return base, base.source
    if args.run_dirs:
        from autotune.calibrate.measured import run_dir_study

        dirs = [d for d in args.run_dirs if d.is_dir()]
        stored = [run_dir_study(d, args.storage, args.study_name).user_attrs.get("settings") for d in dirs]
        # The studies' own profile when they all hold the same one (the file they named may be gone or
        # edited since); descriptions and stated errors aside, as when a study resumes.
        if stored and all(stored):
            kept = [stored_hardware(s, f"the hardware profile of the study in {d}") for d, s in zip(dirs, stored)]
            first = hardware_to_dict(kept[0])
            if all(not figure_differences(first, hardware_to_dict(other)) for other in kept[1:]):
                return _installed_builtin(kept[0], "hardware_profile" in stored[0], len(dirs) > 1)
            # Studies on other nodes: falling back to the reference's profile (gh200) blamed whichever run
            # was not measured on it, and named its profile as the fix.
            if len({k.base_name for k in kept}) > 1:
                named = ", ".join(f"{d} on '{k.name}'" for d, k in zip(dirs, kept))
                raise UserError(f"the run directories were measured on different nodes ({named}); calibrate one kind of "
                                "node at a time")
    if args.reference:
        data, name = read_reference(args.reference)
        try:
            base = load_hardware(data["hardware"])
            return base, base.source
        except ConfigError:
            # Not load_hardware's "or the path of a TOML profile": a reference names its profile (read_reference).
            raise ConfigError(f"{reference_origin(args.reference, name)}: hardware \"{data['hardware']}\" is no built-in profile; pass --hardware "
                              "with the profile file its figures were measured on (a profile of that name, or calibrated "
                              "from it)") from None
    base = load_hardware("gh200")
    return base, base.source


def _installed_builtin(studies, kept_copy: bool, several: bool = False):
    """The studies' profile as the base, in words: this install's built-in where they name one's file in another
    checkout (a colleague's committed study names /their/checkout/autotune/hardware/h100-sxm.toml: read there, a stale
    checkout at that path became the base without a word, trial64 #16) and its figures are those the studies kept;
    else the studies' own copy (what their probes were judged on), said as such. `several`: of several run directories."""
    from autotune.hardware import available_hardware, figure_differences, hardware_flag, hardware_to_dict, load_hardware

    recorded = studies.source
    name = hardware_flag(recorded) if recorded else ""
    here = load_hardware(name) if name in available_hardware() and name != recorded else None
    whose, names = ("the studies'", "the studies name") if several else ("the study's", "the study names")
    own = f"{whose} own copy of {recorded}" if kept_copy and recorded else recorded or studies.name
    if here is None or Path(recorded).resolve() == Path(here.source).resolve():
        return studies, own
    # A study that kept no copy has only the name to go by (as where that path is gone: hardware/load.py).
    differences = figure_differences(hardware_to_dict(studies), hardware_to_dict(here)) if kept_copy else []
    if not differences:
        return here, f"{here.source} (this install's '{name}'; {names} {recorded}, another checkout's)"
    return studies, (f"{own}, another checkout's '{name}', which differs from this install's in "
                     f"{', '.join(differences[:3])}{' and more' if len(differences) > 3 else ''} (--hardware {name} "
                     "calibrates this install's)")


def _check_study_location(args: argparse.Namespace) -> None:
    """--storage and --study-name find the study of the one RUN_DIR that keeps none of its own (run_dir_study):
    given where they would be read for none, or for several (one URL and name are one study: its probes would
    be fitted twice), they are refused, not silently ignored."""
    from autotune.errors import UserError
    from autotune.study.storage import STUDY_NAME, recorded_storage

    given = " and ".join(flag for flag, value in (("--storage", args.storage), ("--study-name", args.study_name != STUDY_NAME
                                                                                 and args.study_name)) if value)
    if not given:
        return
    if not args.run_dirs:
        raise UserError(f"{given} name{'' if ' and ' in given else 's'} the study of a RUN_DIR, and none is given; pass the "
                        "run directory of that study (its `autotune run --out`) before or after the flags")
    if args.storage is None:
        return  # --study-name alone picks the study in each RUN_DIR's study.db, as `autotune report --study-name` does
    without = [d for d in args.run_dirs if d.is_dir() and not (d / "study.db").is_file()]
    if not without:
        raise UserError(f"--storage {recorded_storage(args.storage)} is for the RUN_DIR that holds no study.db, and every "
                        "RUN_DIR given holds its own (its study is read there): drop --storage, or add the run directory "
                        "of the --storage study")
    if len(without) > 1:
        raise UserError(f"{len(without)} RUN_DIRs hold no study.db ({', '.join(map(str, without))}), and --storage with "
                        "--study-name names one study: give one --storage run directory per calibrate (with any that "
                        "hold their own study.db)")


def _without_excluded(observations: list, excluded: list[str]) -> tuple[list, list[str]]:
    """The observations --exclude does not name, and one line per excluded id. A run directory's trial is
    named as the report names it (`LI#0`) or with its directory as given (`runs/LI#0`); an id that names
    nothing is refused: a typo would leave the wrong figure in the fit without a word."""
    from autotune.errors import UserError

    def names(o) -> set[str]:
        number = o.id.rpartition("#")[2] if "#" in o.id else None
        return {o.id} | ({f"{o.source}#{number}"} if number is not None else set())

    # The examples are this calibration's own ids: "LI#0" read as a literal id to a user whose run was sim32.
    examples = [o.id for o in observations if "#" in o.id][:1] + [o.id for o in observations if "#" not in o.id][:1]
    lines = []
    for given in dict.fromkeys(excluded):
        matched = [o for o in observations if given in names(o)]
        if not matched and one_per_flag("--exclude", given):  # an id may hold a comma (a run directory's name)
            raise UserError(f"--exclude {given} names no observation, and --exclude takes one, not a list; "
                            f"{one_per_flag('--exclude', given)}")
        if not matched:
            raise UserError(f"--exclude {given} names no observation: give a run directory's trial as the report names "
                            f"it (RUN#TRIAL, or with its directory) or a reference figure's id, as the report's rows do "
                            f"(here: {', '.join(examples)})")
        sources = sorted({o.source for o in matched})
        if len(sources) > 1:  # two run directories of one name (a/LI, b/LI)
            raise UserError(f"--exclude {given} names trials of {len(sources)} run directories ({', '.join(sources)}); "
                            f"give the directory too, e.g. --exclude {sources[0]}#{given.rpartition('#')[2]}")
        lines.append(f"{given}: {counted(len(matched), 'figure')} left out with --exclude")
    kept = [o for o in observations if not names(o) & set(excluded)]
    return kept, lines


def one_per_flag(flag: str, value: str) -> str | None:
    """What to write instead of a comma list given a repeatable flag (`--hold a,b`: `--hold a --hold b`); None for
    a value that is no list (no comma, or commas alone: refused as the unknown name it is)."""
    parts = [part.strip() for part in value.split(",") if part.strip()] if "," in value else []
    written = " ".join(f"{flag} {shlex.quote(part)}" for part in parts)
    if len(parts) > 1:
        return f"repeat the flag, once for each: {written}"
    return f"drop the comma: {written}" if parts else None


_HEADER = "Calibrated by `autotune calibrate`"  # the first line of every profile -o writes


def _is_calibrated_profile(path: Path) -> bool:
    from autotune.checks import text_head

    return (text_head(path, 4096) or "").startswith(f"# {_HEADER}")


def _check_output(path: Path | None) -> None:
    """Before the fit: a path that cannot be written, or an existing file that calibrate did not write
    itself (a built-in profile above all: every later study would lose its comments and error), is one line."""
    from autotune.commands.paths import writable_file
    from autotune.errors import UserError
    from autotune.hardware import PROFILE_DIR

    if path is None:
        return
    if path.is_dir():
        raise UserError(f"-o {path} is a directory; name a TOML file such as my-cluster.toml")
    # `--hardware` reads a profile under any name, but the file is TOML and its name should say so: `m1.md`
    # reads as a report, and a bare name such as `cpu` is taken by `--hardware cpu` for the built-in profile.
    if path.suffix.lower() != ".toml":
        where = " to a file, not standard output" if str(path) == "-" else ""
        raise UserError(f"-o {path}: the profile is written as TOML{where}; give it a .toml name such as "
                        f"{_toml_name(path)}")
    if path.is_file() and path.resolve().parent == PROFILE_DIR.resolve():
        raise UserError(f"-o {path} is the built-in profile `--hardware {path.resolve().stem}` and would be replaced; give "
                        f"another file name such as {path.resolve().stem}-calibrated.toml")
    writable_file(path, "-o", example="my-cluster.toml", replaces=_is_calibrated_profile,
                  kind="a profile an earlier `autotune calibrate` wrote")


def _toml_name(path: Path) -> str:
    """A .toml name for the profile -o named otherwise. Not one starting with '-' (`-o -` suggested `-.toml`):
    `--hardware -x.toml` reads as an option, and `-` as standard output."""
    stem = path.stem.lstrip("-")
    return f"{stem}.toml" if stem else "my-cluster.toml"


def _check_not_the_base(path: Path | None, base) -> None:
    """The profile being calibrated is the fit's starting point and its 'before' figures: writing over it
    loses both (and the comments that say where its figures come from)."""
    from autotune.errors import UserError

    if path is None or not base.source or Path(base.source).suffix != ".toml":
        return
    if path.resolve() == Path(base.source).resolve():
        raise UserError(f"-o {path} is the profile being calibrated and would be replaced; give another file name "
                        f"such as {path.with_name(path.stem + '-calibrated.toml')}")


def _calibrated_name(path: Path, base) -> str:
    """The name of the profile -o writes: its file's (a study run with `--hardware my-cluster.toml` reads
    as one on `my-cluster` in its reports and pareto.json), not its base's, or it would read as one on the
    base. A file named like a built-in profile would read as that one: `<base>-calibrated` then."""
    from autotune.hardware import available_hardware

    return f"{base.base_name}-calibrated" if path.stem in available_hardware() else path.stem


def _held_constants(args: argparse.Namespace, names: tuple[str, ...], holds: dict[str, str],
                    unpowered: list[str]) -> tuple[list[str], dict, list[str]]:
    """The constants kept at the base profile's value: --hold's, those the reference cannot pin (`holds`, with
    its reasons) and the power constants no power figure pins (`unpowered`) unless --fit asks for them; the
    second, those of the reference alone; the third, those held for want of a power figure."""
    from autotune.errors import UserError

    for flag, given in (("--hold", args.hold), ("--fit", args.fit)):
        unknown = sorted(set(given) - set(names))
        listed = next((value for value in unknown if one_per_flag(flag, value)), None)
        if listed is not None:
            raise UserError(f"{flag} {listed}: {flag} takes one constant, not a list; {one_per_flag(flag, listed)}")
        if unknown:
            raise UserError(f"{flag} {', '.join(unknown)}: no such simulator constant; one of {', '.join(names)}")
    both = sorted(set(args.hold) & set(args.fit))
    if both:
        raise UserError(f"--hold and --fit both name {', '.join(both)}; give each constant one of them")
    not_held = sorted(set(args.fit) - set(holds) - set(unpowered))
    if not_held:  # it would change nothing: every informed constant is fitted unless held
        held_here = f"the reference holds only {', '.join(holds)}" if holds else "no --reference holds a constant here"
        held_here += f" (and, for want of a power figure, {', '.join(unpowered)})" if unpowered else ""
        raise UserError(f"--fit {', '.join(not_held)}: {held_here}, and every constant the figures inform is fitted "
                        "unless held, so --fit changes nothing; leave it out")
    # Only when the reference is all there is: figures of the user's own (gradient accumulation, say)
    # may pin what the reference cannot, and a constant they push onto a bound must still warn.
    by_reference = {} if args.run_dirs else {n: why for n, why in holds.items() if n not in args.fit + args.hold}
    without_power = [n for n in unpowered if n not in args.fit + args.hold + list(by_reference)]
    return args.hold + list(by_reference) + without_power, by_reference, without_power


def _run(args: argparse.Namespace) -> int:
    from autotune.atomic_write import write_text_atomic
    from autotune.calibrate.fit import Calibration
    from autotune.calibrate.measured import load_measured
    from autotune.calibrate.memory_error import memory_document
    from autotune.calibrate.observations import repeated_figures
    from autotune.calibrate.reference import load_reference, measurements_given_as_run, reference_holds
    from autotune.calibrate.report import calibration_document, report_text
    from autotune.calibrate.unseen_power import unseen_power_holds
    from autotune.commands.paths import run_dir_problem
    from autotune.errors import UserError
    from autotune.hardware import dump_hardware

    if not args.run_dirs and not args.reference:
        raise UserError("nothing to calibrate against: pass measured run directories and/or --reference gh200-study")
    seen: dict[Path, Path] = {}
    for run_dir in args.run_dirs:
        # A colleague's measurements.jsonl, or the results folder it came in: the replay route, as --reference says
        # it (trial64 #9), not "pass the --out directory of an `autotune run`". Not with --storage: its study is there.
        problem = (None if args.storage else measurements_given_as_run(run_dir)) or run_dir_problem(run_dir)
        if problem:  # "does not exist", a file of a run directory: as `autotune report` says it
            raise UserError(problem)
        twin = seen.setdefault(run_dir.resolve(), run_dir)
        if twin is not run_dir:  # its probes would weigh twice in the fit and its error
            raise UserError(f"{run_dir} is given twice (also as {twin}); pass each run directory once")
    _check_study_location(args)
    _check_output(args.output)
    base, base_file = _base_hardware(args)
    _check_not_the_base(args.output, base)
    observations, extra = [], {"left_out": [], "skipped": [], "not_run": {}}
    holds: dict[str, str] = {}  # constant -> why the reference's figures cannot pin it
    if args.reference:
        observations += load_reference(args.reference, base)
        holds = reference_holds(args.reference)
    if args.run_dirs:
        measured = load_measured(args.run_dirs, base, args.allow_estimated_energy, args.allow_simulated,
                                 args.storage, args.study_name)
        observations += measured.observations
        extra = {"left_out": measured.left_out, "skipped": measured.skipped, "derived": measured.derived,
                 "default_limits": measured.default_limits,
                 "copies": measured.copies,
                 "not_run": measured.not_run, "memory_estimate": memory_document(measured.peaks),
                 "simulated": sorted(measured.simulated)}
    if args.exclude:
        observations, excluded = _without_excluded(observations, args.exclude)
        extra["skipped"] = extra["skipped"] + excluded
        extra["excluded"] = list(dict.fromkeys(args.exclude))  # kept in the profile's header: its error is without them
    if not observations:
        counts = ", ".join(f"{n} {status}" for status, n in extra["not_run"].items())
        why = extra["left_out"] + ([f"probes without figures ({counts})"] if counts else []) + extra["skipped"]
        raise UserError(
            f"no usable observation: {'; '.join(why) or 'no probe was evaluated'}; "
            "run a measured study (`autotune run --backend launch`) first"
        )
    extra["repeated"] = repeated_figures(observations)
    cal = Calibration(observations, base)
    informed = cal.informed()
    unpowered = unseen_power_holds(observations, informed)
    held, by_reference, without_power = _held_constants(args, cal.names, holds, unpowered)
    fit = cal.fit(tuple(n for n in informed if n not in held))
    # One fold (a single configuration, or figure): its fit sees no figure at all, and the number it gave was the full
    # fit's start refitted a few steps, no prediction (trial54 F8): not computed, and said why.
    one = None if args.no_loo or len(cal.folds(args.loo_by)) > 1 else args.loo_by
    skipped = None if one is None else f"one {one} only: leaving it out leaves nothing to fit on"
    loo = None if args.no_loo or skipped else cal.leave_one_out(fit, args.loo_by)
    document = calibration_document(cal, fit, loo, {"loo_by": None if args.no_loo or skipped else args.loo_by,
                                                    "loo_skipped": skipped, "held": held,
                                                    "held_by_reference": by_reference,
                                                    "held_without_power": without_power, "base_profile": base_file,
                                                    **extra})
    if args.output is not None:
        document["replaced"] = args.output.is_file() and args.output.stat().st_size > 0  # an earlier calibrate's (checked)
        profile, header = _written_profile(args.output, base, fit.constants, document)
        write_text_atomic(args.output, dump_hardware(profile, header))
        document["written"] = str(args.output)
        document["written_name"] = profile.name
        document["written_error"] = dict(profile.simulator_error)
    if args.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(report_text(document))
    if document["reliability_warning"]:
        # On stderr, as every other warning: with --json too, whose stdout holds the document alone (which has it).
        sys.stdout.flush()  # after the tables it speaks of, where both go to one terminal
        print(f"warning: {document['reliability_warning']}", file=sys.stderr)
    if not args.json and args.output is not None:
        unreliable = document["loo_mape"] is not None and document["reliability_warning"]
        unwritten = (f" without [simulator_error] ({_SIMULATED}: a study on it shows +- ?%)" if document.get("simulated")
                     else " without [simulator_error] (its left-out error is not reliable: see the warning)" if unreliable
                     else f" without [simulator_error] (no left-out error: {document['loo_skipped']}; a study on it shows "
                     "+- ?%)" if document.get("loo_skipped")
                     else " without [simulator_error] (--no-loo computed no left-out error: a study on it shows +- ?%)"
                     if document["loo_mape"] is None else "")
        # Studies made on the file it replaces keep their own copy of it (and its error): said, not silent.
        replaced = (" (replacing the profile an earlier calibrate wrote there: studies made on it keep their copy of "
                    "it)") if document["replaced"] else ""
        sys.stdout.write(f"wrote {args.output}{replaced}, profile '{document['written_name']}' calibrated from "
                         f"'{base.base_name}'{unwritten}: use it with --hardware {shell_path(args.output)}\n")
    return 0


# Why a fit to simulated figures (--allow-simulated) writes no error: it tests the fit, and its "0%" read as measured.
_SIMULATED = "fitted to simulated figures: its left-out error is the simulator against itself, not measured"


def _written_profile(path: Path, base, constants: dict, document: dict):
    """The profile -o writes and its header. Its [simulator_error] is the left-out error only where that
    error can be trusted: a study repeats it on every simulated figure ("+- 2%") and calls picks within it
    ties, for configurations never measured. Unreliable (the report's warning) or not computed (--no-loo),
    none is written, so figures show "+- ?%", and a note in the description makes a study's error line say
    why (report/error_bars.py); the header keeps the left-out figures and the warning."""
    from autotune.calibrate.report import profile_error, worst_text
    from autotune.hardware import with_simulator_constants
    from autotune.hardware.profile import scope_table
    from autotune.report.error_scope import with_scope_note
    from autotune.report.error_unknown import calibration_note, with_calibration_note

    loo = profile_error(document) if document["loo_mape"] is not None else None
    warning = document["reliability_warning"]
    simulated = bool(document.get("simulated"))
    trusted = loo is not None and not warning and not simulated
    error = loo if trusted else {}
    # One configuration: the error is not known reliably (said so), not "not computed (--no-loo)".
    note = None if trusted else calibration_note(document["configurations"], len(document["fitted"]),
                                                 len(document["at_bound"]),
                                                 computed=loo is not None or bool(document.get("loo_skipped")),
                                                 simulated=simulated)
    # A name of its own, and the node it describes kept: figures measured on the base's nodes stay its figures.
    profile = replace(with_simulator_constants(base, constants, error=error),
                      name=_calibrated_name(path, base), calibrated_from=base.base_name,
                      error_measured_on=scope_table(document["measured_on_values"]) if trusted else {},
                      calibrated_on={k: tuple(v) for k, v in document.get("calibrated_on", {}).items()},
                      description=with_scope_note(with_calibration_note(base.description, note),
                                                  document["measured_on"] if trusted else None))
    held = document["held"]
    lines = [f"{_HEADER} from {document.get('base_profile') or base.source or base.name} against {document['observations']} observations "
             f"({', '.join(document['sources'])}){'; held at the base values: ' + ', '.join(held) if held else ''}"
             f"{'; left out with --exclude: ' + ', '.join(document['excluded']) if document.get('excluded') else ''}."]
    if loo is None:
        skipped = document.get("loo_skipped")
        lines.append(f"Leave-one-out mean absolute error (%): not computed{': ' + skipped if skipped else ''}")
    else:
        lines.append(f"Leave-one-out mean absolute error (%){'' if trusted else ', not written to [simulator_error]'}: {loo}")
    if simulated:
        lines.append(f"Not a calibration of the node: {_SIMULATED} ({', '.join(document['simulated'])}; --allow-simulated).")
    header = "\n".join(lines) + worst_text(document) + ("" if trusted or loo is None or not warning else f"\nWarning: {warning}")
    return profile, header
