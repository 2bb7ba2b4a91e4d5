"""`autotune report RUN_DIR`: the Pareto table and picks again (pareto.json is rewritten from the study)."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help="print the Pareto front and picks of a run directory")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("--storage", help="the study's storage URL, when it is not RUN_DIR/study.db")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from rich.console import Console

    from autotune.errors import UserError
    from autotune.report import pareto_document, study_view
    from autotune.report.table import print_report
    from autotune.study import load_finished_study

    if not args.run_dir.is_dir():
        raise UserError(f"{args.run_dir} is not a directory; pass the --out directory of an `autotune run`")
    study = load_finished_study(args.run_dir, args.storage)
    if "settings" not in study.user_attrs:
        raise UserError(f"the study in {args.run_dir} has no trials yet; run `autotune run` first")
    view = study_view(study)
    backend = study.user_attrs.get("backend", {})
    print_report(view, pareto_document(view, backend.get("name", "unknown"), backend.get("reason", "")), Console())
    return 0
