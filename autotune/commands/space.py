"""`autotune space`: every candidate of the space, valid or not, with its memory estimate and reason."""

from __future__ import annotations

import json


def register(subparsers) -> None:
    from autotune.commands.options import add_study_options

    parser = subparsers.add_parser("space", help="list every candidate with its validity and memory estimate")
    add_study_options(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--simulate", action="store_true", help="add simulated time_s, energy_kj, tflops of valid ones")
    parser.set_defaults(func=_run)


def _rows(settings, simulate: bool) -> list[dict]:
    from autotune.simulator import simulate as simulate_candidate
    from autotune.space import enumerate_space

    rows = []
    for check in enumerate_space(settings.space, settings.model, settings.hardware, settings.workload, settings.gpus_per_node):
        row = {
            "params": check.candidate.knobs.to_dict(),
            "valid": check.valid,
            "reason": check.reason,
            "peak_mem_gib": round(check.memory.peak_mem_gib, 3) if check.memory else None,
        }
        if simulate and check.valid:
            step = simulate_candidate(check.candidate)
            row.update({"time_s": step.time_s, "energy_kj": step.energy_kj, "tflops": step.tflops, "source": "simulated"})
        rows.append(row)
    return rows


def _run(args) -> int:
    from autotune.commands.options import build_settings

    settings = build_settings(args)
    rows = _rows(settings, args.simulate)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{settings.model.name} on {settings.hardware.name}: {sum(r['valid'] for r in rows)} of {len(rows)} valid")
    for column in ("ZeRO", "opt offload", "ckpt", "SP", "mb", "nodes", "mem GiB", "valid / reason"):
        table.add_column(column)
    if args.simulate:
        from autotune.report.error_bars import error_suffix

        error = dict(settings.hardware.simulator_error)  # the profile's leave-one-out error: "+- 9%", or "+- ?%"
        for column in (f"time h (sim{error_suffix(error, 'time_s')})", f"energy kWh (sim{error_suffix(error, 'energy_kj')})",
                       f"TFLOP/s (sim{error_suffix(error, 'tflops')})"):
            table.add_column(column, justify="right")
    for r in rows:
        p = r["params"]
        cells = [str(p[k]) for k in ("zero_stage", "optimizer_offload", "activation_checkpointing", "sp_degree", "micro_batch", "nodes")]
        cells += ["-" if r["peak_mem_gib"] is None else f"{r['peak_mem_gib']:.1f}", "valid" if r["valid"] else r["reason"]]
        if args.simulate:
            cells += [f"{r['time_s'] / 3600:.2f}", f"{r['energy_kj'] / 3600:.1f}", f"{r['tflops']:.0f}"] if r["valid"] else ["", "", ""]
        table.add_row(*cells)
    Console().print(table)
    return 0
