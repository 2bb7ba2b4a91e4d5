"""What every finished run leaves behind: pareto.json, the picks exported, the table printed."""

from __future__ import annotations

from pathlib import Path

from autotune.export import export_trial
from autotune.report import pareto_document, study_view, write_pareto_json
from autotune.report.table import print_report

PICK_FILES = {"fastest": "fastest", "min_energy": "min-energy", "knee": "knee"}


def finish_run(study, run_dir: Path, console) -> dict:
    view = study_view(study)
    backend = study.user_attrs.get("backend", {})
    document = pareto_document(view, backend.get("name", "unknown"), backend.get("reason", ""))
    write_pareto_json(run_dir / "pareto.json", document)
    for pick, trial in view.picks.items():
        export_trial(view, trial, run_dir / "configs" / f"{PICK_FILES[pick]}.json", document["backend"])
    print_report(view, document)
    console.print(f"run directory: {run_dir} (study.db, pareto.json, configs/)")
    return document
