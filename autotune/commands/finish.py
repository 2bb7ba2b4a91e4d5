"""What every finished run leaves behind: pareto.json, the picks exported, report.html, the table printed."""

from __future__ import annotations

import json
from pathlib import Path

from autotune.errors import UserError
from autotune.export import export_trial
from autotune.report import pareto_document, study_view, write_pareto_json
from autotune.report.html import write_report_html
from autotune.report.importance import knob_importance
from autotune.report.picks import DEFAULT_ETA, DEFAULT_MAX_SLOWDOWN, PICK_FILES
from autotune.report.search import search_summary
from autotune.report.table import print_report
from autotune.study.storage import STUDY_NAME, storage_flags

# The study remembers what its picks were chosen with, so `autotune report` chooses the same ones.
PICK_PARAMETERS_ATTR = "pick_parameters"


def stored_pick_parameters(study, max_slowdown: float | None, eta: float | None) -> tuple[float, float]:
    """Command-line values first, then those the study's last run or report used, then the defaults."""
    stored = study.user_attrs.get(PICK_PARAMETERS_ATTR, {})
    return (
        max_slowdown if max_slowdown is not None else stored.get("max_slowdown", DEFAULT_MAX_SLOWDOWN),
        eta if eta is not None else stored.get("eta", DEFAULT_ETA),
    )


def keep_pick_parameters(study, view) -> None:
    """The --max-slowdown and --eta the picks were chosen with, for later reports and `export --pick`."""
    study.set_user_attr(PICK_PARAMETERS_ATTR, {"max_slowdown": view.pick_parameters.max_slowdown, "eta": view.pick_parameters.eta})


def build_report(study, max_slowdown: float | None = None, eta: float | None = None):
    """(view, pareto document) of a study."""
    view = study_view(study, *stored_pick_parameters(study, max_slowdown, eta))
    backend = study.user_attrs.get("backend", {})
    document = pareto_document(view, backend.get("name", "unknown"), backend.get("reason", ""), knob_importance(study, view))
    # How the search ended and what the model says it may have missed (predicted, never on the front).
    document["search"] = search_summary(study, view, backend.get("name", "unknown"))
    document["predicted"] = document["search"].pop("predicted")
    document["study_name"] = study.study_name  # several studies may share one --storage database
    return view, document


def check_same_study_reported(run_dir: Path, study_name: str, what: str) -> None:
    """Refuse to write a study's reports over another study's in the same run directory (studies of one
    shared --storage told apart by --study-name); a pareto.json without a name (older) is not refused."""
    try:
        held = json.loads((run_dir / "pareto.json").read_text()).get("study_name")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return  # missing or damaged: rebuilt from the study
    if isinstance(held, str) and held != study_name:
        fix = "the run directory of" if what == "RUN_DIR" else "--out with a directory of its own for"
        raise UserError(f"{what} {run_dir} holds the reports of study '{held}', not '{study_name}': pass {fix} '{study_name}'")


def export_picks(view, run_dir: Path, backend: str) -> None:
    for pick, trial in view.picks.items():
        export_trial(view, trial, run_dir / "configs" / f"{PICK_FILES[pick]}.json", backend)


def pareto_json_state(path: Path, document: dict) -> str | None:
    """Why the pareto.json at `path` is not `document`: "missing", "damaged (...)", "out of date";
    None when it already holds exactly this document."""
    try:
        stored = json.loads(path.read_text())
    except FileNotFoundError:
        return "missing"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"damaged ({type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else 'unreadable'})"
    return None if stored == json.loads(json.dumps(document)) else "out of date"


def write_outputs(view, document: dict, run_dir: Path, html: bool = True) -> list[Path]:
    """pareto.json, the picks' configs/ and report.html (when asked for, or when one is there to keep
    in step): every file written whole, to a temporary name first, so none can disagree or be half written."""
    write_pareto_json(run_dir / "pareto.json", document)
    export_picks(view, run_dir, document["backend"])
    written = [run_dir / "pareto.json", run_dir / "configs"]
    if html or (run_dir / "report.html").exists():
        written.append(write_report_html(run_dir / "report.html", view, document, run_dir))
    return written


def finish_run(study, run_dir: Path, console, max_slowdown: float | None = None, eta: float | None = None,
               storage: str | None = None, study_name: str = STUDY_NAME) -> dict:
    view, document = build_report(study, max_slowdown, eta)
    keep_pick_parameters(study, view)
    write_outputs(view, document, run_dir)
    print_report(view, document)
    console.print(f"run directory: {run_dir} ({'' if storage else 'study.db, '}pareto.json, report.html, configs/)"
                  + (f"; the study:{storage_flags(storage, study_name)}" if storage else ""))
    return document
