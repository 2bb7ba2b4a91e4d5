"""pareto.json: the front, every feasible point, the picks and where the figures came from.

Other tools read this file: keep the keys `model`, `nodes`, `gpus`, `hardware`, `backend`, `source`,
`trials`, `front`, `recommendations` stable; add new keys beside them.
"""

from __future__ import annotations

import json
from pathlib import Path

from autotune.report.study_points import StudyView


def _one_or_list(values: list[int]):
    return values[0] if len(values) == 1 else values


def provenance(view: StudyView) -> dict:
    """Where time and energy came from, over every evaluated point."""
    sources = sorted({p.source for p in view.points if p.source})
    energy = sorted({p.energy_source for p in view.points if p.energy_source})
    return {"time": sources, "energy": energy}


def pareto_document(view: StudyView, backend: str, backend_reason: str) -> dict:
    settings = view.settings
    nodes = list(settings.space.nodes)
    sources = provenance(view)
    return {
        "model": settings.model.name,
        "nodes": _one_or_list(nodes),
        "gpus": _one_or_list([n * settings.gpus_per_node for n in nodes]),
        "hardware": settings.hardware.name,
        "backend": backend,
        "backend_reason": backend_reason,
        # "simulated" or "measured" for time; energy may be estimated where a probe had no sensor.
        "source": sources["time"][0] if len(sources["time"]) == 1 else (sources["time"] or ["none"]),
        "energy_source": sources["energy"][0] if len(sources["energy"]) == 1 else (sources["energy"] or ["none"]),
        "workload": settings.workload.to_dict(),
        "trials": len(view.trials),
        "trials_by_status": {s: sum(r["status"] == s for r in view.trials) for s in sorted({r["status"] for r in view.trials})},
        "baseline": view.baseline_trial,
        "front": [p.to_dict() for p in view.front],
        "feasible": [p.to_dict() for p in view.points],
        "recommendations": view.picks,
    }


def write_pareto_json(path: Path, document: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    tmp.replace(path)  # never leave a half-written file for other tools to read
