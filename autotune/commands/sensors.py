"""`autotune sensors`: the energy and power sources of this machine, and why the others are missing.

Never imports torch; pynvml loads only when NVML is probed. AUTOTUNE_SYSFS_ROOT points the sysfs
sources at another tree (containers with a remapped sysfs, tests).
"""

from __future__ import annotations

import json
import time

from autotune.commands.flags import number_flag

_MAX_SAMPLE_S = 86400.0  # a day: longer is a typo, and time.sleep overflows on huge values


def register(subparsers) -> None:
    parser = subparsers.add_parser("sensors", help="list the energy and power sources of this machine")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--sample", type=number_flag(low=0, low_open=True, high=_MAX_SAMPLE_S), metavar="SECONDS",
                        help="sample every available source for SECONDS and add its mean power (W)")
    parser.add_argument("--period", type=number_flag(low=0, low_open=True, high=_MAX_SAMPLE_S), default=0.1, metavar="SECONDS",
                        help="sampling period for --sample (default 0.1)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.measure import EnergyWindow, discover, sysfs_root

    found = discover()
    rows = []
    for status in found.statuses:
        row = status.to_dict()
        row["available"] = status.available
        rows.append(row)
    if args.sample and found.sources:
        window = EnergyWindow(found.sources, period_s=args.period)
        window.begin()
        time.sleep(args.sample)
        result = window.end()
        by_label = {e.label: e for e in result.entries}
        for row in rows:
            entry = by_label.get(row["label"]) if row["available"] else None
            row["mean_power_w"] = entry.mean_power_w if entry else None  # null: unavailable, never 0 W
            row["sampled_s"] = result.window_s
    found.close()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_table(rows, str(sysfs_root()), sampled=bool(args.sample))
    return 0


def _print_table(rows: list[dict], root: str, sampled: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Energy and power sources (sysfs root {root})")
    for column in ("kind", "label", "scope", "unit", "available", "reason / note"):
        table.add_column(column)
    if sampled:
        table.add_column("mean power (W)", justify="right")
    for row in rows:
        cells = [row["kind"], row["label"], row["scope"], row["unit"],
                 "[green]yes[/green]" if row["available"] else "[red]no[/red]", row["reason"]]
        if sampled:
            power_w = row.get("mean_power_w")
            cells.append("-" if power_w is None else f"{power_w:.1f}")
        table.add_row(*cells)
    console = Console()
    console.print(table)
    if not any(r["available"] for r in rows):
        console.print("No energy sensor here: probes report energy [bold]estimated[/bold] from the "
                      "hardware profile's power model (labelled so everywhere).")
