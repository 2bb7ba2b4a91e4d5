"""`autotune run`: search, evaluate, report, export."""

from __future__ import annotations

import argparse
from pathlib import Path

from autotune.commands.options import add_study_options, build_settings
from autotune.commands.report import add_pick_options


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="search DeepSpeed configurations for time and energy to solution",
        description="Run (or resume) a multi-objective study and write RUN_DIR/{study.db,pareto.json,configs/}.",
    )
    add_study_options(parser)
    study = parser.add_argument_group("study")
    study.add_argument("--trials", type=int, default=30, help="candidates to evaluate in total, earlier runs included (default: 30)")
    study.add_argument("--seed", type=int, default=0, help="sampler seed: the same seed gives the same study (default: 0)")
    study.add_argument("--out", type=Path, help="run directory (default: runs/<model>-<nodes>n)")
    study.add_argument("--storage", help="Optuna storage URL instead of RUN_DIR/study.db (e.g. postgresql://...)")
    study.add_argument("--backend", default="auto", help="auto (default) or simulate")
    add_pick_options(parser)
    parser.set_defaults(func=_run)


def default_run_dir(args: argparse.Namespace) -> Path:
    model = Path(args.model).stem if args.model.endswith(".json") else args.model
    nodes = str(args.nodes or 4).replace("-", "to")
    return Path("runs") / f"{model}-{nodes}n"


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from autotune.backends.select import choose_backend
    from autotune.errors import UserError
    from autotune.study import open_study
    from autotune.study.loop import make_sampler, run_study, valid_checks
    from autotune.commands.progress import trial_progress
    from autotune.commands.finish import finish_run
    from autotune.commands.report import check_pick_options

    if args.trials < 1:
        raise UserError(f"--trials must be at least 1 (got {args.trials})")
    check_pick_options(args)
    settings = build_settings(args)
    console = Console(stderr=True)
    run_dir = args.out or default_run_dir(args)
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out {run_dir} is a file, not a directory; choose another --out")
    checks = valid_checks(settings)
    backend = choose_backend(args.backend)
    study = open_study(run_dir, args.storage, make_sampler(args.seed, args.trials))
    console.print(f"backend: {backend.describe()}")
    if "settings" in study.user_attrs:
        settings.check_same_as(study.user_attrs["settings"], args.storage or str(run_dir))
        console.print(f"resuming the study in {args.storage or run_dir} ({len(study.trials)} trials so far)")
    study.set_user_attr("backend", {"name": backend.name, "reason": getattr(backend, "reason", "")})
    with trial_progress(console, args.trials) as progress:
        run_study(study, settings, backend, args.trials, progress, checks)
    finish_run(study, run_dir, console, args.max_slowdown, args.eta)
    return 0
