"""`autotune export RUN_DIR --pick knee`: a DeepSpeed JSON config and its launch command."""

from __future__ import annotations

import sys
from pathlib import Path

from autotune.commands.flags import path_flag, whole_number_flag
from autotune.commands.report import add_study_location_options


def register(subparsers) -> None:
    parser = subparsers.add_parser("export", help="write the DeepSpeed config of a pick or trial")
    parser.add_argument("run_dir", type=path_flag, metavar="RUN_DIR",
                        help="the --out directory of an `autotune run` (its default: runs/<model>-<nodes>n)")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--pick",
        choices=("fastest", "min-energy", "knee", "max-slowdown", "cost-weighted"),
        help="a recommended point (default: knee)",
    )
    choice.add_argument("--trial", type=whole_number_flag(low=0), help="any feasible trial by number")
    choice.add_argument(
        "--measurements", type=path_flag, metavar="FILE",
        help="write every probed candidate's result as JSON lines for `autotune run --backend replay --measurements FILE`",
    )
    parser.add_argument("-o", "--output", type=path_flag, help="config file (default: RUN_DIR/configs/<pick>.json)")
    add_study_location_options(parser)
    parser.add_argument("--launcher", choices=("auto", "srun"), default="auto",
                        help="how launch.sh starts the ranks: srun, one step of the SLURM allocation it runs in (an SM clock cap by "
                             "srun --gpu-freq); auto (default): torchrun on one node, the deepspeed launcher on a hostfile for several")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.commands.finish import check_same_study_reported, stored_pick_parameters
    from autotune.commands.paths import writable_file
    from autotune.errors import UserError
    from autotune.export import beyond_the_config, choose_trial, export_trial
    from autotune.report import study_view
    from autotune.study import load_finished_study

    if not args.run_dir.is_dir():
        raise UserError(f"{args.run_dir} is not a directory; pass the --out directory of an `autotune run`")
    if args.output is not None and args.measurements is not None:
        raise UserError(f"-o names a config file; --measurements {args.measurements} is the file it writes: drop -o")
    if args.output is not None:
        writable_file(args.output, "-o")  # before the study is read: a bad path fails first, in one line
    if args.measurements is not None:
        writable_file(args.measurements, "--measurements", example="measurements.jsonl")
    study = load_finished_study(args.run_dir, args.storage, args.study_name)
    if "settings" not in study.user_attrs:
        raise UserError(f"the study in {args.run_dir} has no trials yet; run `autotune run` first")
    if args.measurements is not None:
        return _write_measurements(study, args.measurements)
    if args.output is None:  # into RUN_DIR/configs: that directory's own study only
        check_same_study_reported(args.run_dir, study.study_name, "RUN_DIR")
    # The picks as pareto.json and configs/ name them: with the --max-slowdown and --eta of the last run or report.
    view = study_view(study, *stored_pick_parameters(study, None, None))
    trial, stem = choose_trial(view, args.pick, args.trial)
    output = args.output or writable_file(args.run_dir / "configs" / f"{stem}.json", "the default output")
    for suffix in (".candidate.json", ".launch.sh"):  # written beside the config
        beside = output.with_name(output.stem + suffix)
        if beside.is_dir():
            raise UserError(f"{beside} is a directory, and export writes a file there beside {output.name}; remove it or choose another -o")
    backend = study.user_attrs.get("backend", {}).get("name", "unknown")
    written = export_trial(view, trial, output, backend, launcher=args.launcher)
    for path in written:
        print(path)  # stdout holds the paths alone, for scripts; what to do with them goes to stderr
    notes = beyond_the_config(view.settings.candidate(view.point(trial).params).knobs)
    print(f"train it as probed: bash {written[-1]}", file=sys.stderr)
    if notes:
        print(f"{written[0].name} is the DeepSpeed config; your own training needs beyond it:", file=sys.stderr)
        for note in notes:
            print(f"  - {note}", file=sys.stderr)
    return 0


def _write_measurements(study, path: Path) -> int:
    """One replay record per evaluated candidate (the first evaluation; repeats of it were not probed)."""
    import json

    from autotune.atomic_write import write_text_atomic
    from autotune.backends.replay import measurement_record, study_of
    from autotune.study.settings import StudySettings
    from autotune.study.loop import evaluated_trials

    settings = StudySettings.from_dict(study.user_attrs["settings"])
    records = []
    for trial in sorted(evaluated_trials(study).values(), key=lambda t: t.number):
        params = trial.user_attrs["candidate"]["knobs"]
        record = measurement_record(params, trial.user_attrs["result"], study_of(settings.candidate(params)))
        if record is not None:
            records.append(record)
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in records))
    print(f"{path}: {len(records)} probe results (replay with --backend replay --measurements {path})")
    return 0
