"""The terminal report: the Pareto front as a table and the picks, drawn with rich."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from autotune.report.study_points import StudyView

PICK_LABELS = {"fastest": "fastest", "min_energy": "least energy", "knee": "knee"}


KNOB_COLUMNS = (
    ("zero_stage", "ZeRO"),
    ("optimizer_offload", "opt offload"),
    ("activation_checkpointing", "ckpt"),
    ("sp_degree", "SP"),
    ("micro_batch", "mb"),
    ("nodes", "nodes"),
)


def _knobs(params: dict) -> str:
    return (
        f"ZeRO-{params['zero_stage']} optimizer offload {params['optimizer_offload']}, "
        f"checkpointing {params['activation_checkpointing']}, SP {params['sp_degree']}, "
        f"micro-batch {params['micro_batch']}, {params['nodes']} node(s)"
    )


def _fmt(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_report(view: StudyView, document: dict, console: Console | None = None) -> None:
    # Piped or captured output gets a wide table instead of rich's 80-column default.
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    source, energy_source = document["source"], document["energy_source"]
    console.print(
        f"[bold]{document['model']}[/] on {document['nodes']} node(s) of {document['hardware']}, "
        f"backend {document['backend']}: time is [bold]{source}[/], energy is [bold]{energy_source}[/]"
    )
    counts = ", ".join(f"{n} {s}" for s, n in document["trials_by_status"].items())
    console.print(f"{document['trials']} trials ({counts})")
    if not view.front:
        console.print("[yellow]No feasible configuration: nothing fits or every probe failed. See `autotune space`.[/]")
        return
    picks_by_trial: dict[int, list[str]] = {}
    for pick, trial in view.picks.items():
        picks_by_trial.setdefault(trial, []).append(PICK_LABELS[pick])
    table = Table(title=f"Pareto front (time vs energy to solution, {energy_source} energy)")
    table.add_column("trial", justify="right")
    for _, title in KNOB_COLUMNS:
        table.add_column(title)
    for column in ("time h", "energy kWh", "TFLOP/s /GPU", "TFLOP /kJ", "mem GiB"):
        table.add_column(column, justify="right")
    table.add_column("pick")
    for p in view.front:
        table.add_row(
            str(p.trial),
            *(str(p.params[knob]) for knob, _ in KNOB_COLUMNS),
            _fmt(p.time_s / 3600, ".2f"),
            _fmt(p.energy_kj / 3600, ".1f"),
            _fmt(p.tflops, ".0f"),
            _fmt(p.tflop_per_kj, ".1f"),
            _fmt(p.peak_mem_gib, ".1f"),
            ", ".join(picks_by_trial.get(p.trial, [])),
        )
    console.print(table)
    base = view.point(view.baseline_trial) if view.baseline_trial is not None else None
    for pick, trial in view.picks.items():
        p = view.point(trial)
        line = f"[bold]{PICK_LABELS[pick]}[/]: trial {trial}, {_knobs(p.params)}"
        if base is not None and base.trial != p.trial:
            saved = 100 * (1 - p.energy_kj / base.energy_kj)
            slower = 100 * (p.time_s / base.time_s - 1)
            line += f"  ({saved:+.1f}% energy saved, {slower:+.1f}% time vs baseline trial {base.trial})"
        console.print(line)
