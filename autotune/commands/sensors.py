"""`autotune sensors`: the energy and power sources of this machine, and why the others are missing;
each GPU's power limits (current, default, allowed) and SM clocks, and whether this process may change them.

Never imports torch; pynvml loads only when NVML is probed. AUTOTUNE_SYSFS_ROOT points the sysfs
sources at another tree (containers with a remapped sysfs, tests).
"""

from __future__ import annotations

import json
import time

from autotune.commands.flags import number_flag
from autotune.errors import UserError

_MAX_SAMPLE_S = 86400.0  # a day: longer is a typo, and time.sleep overflows on huge values
_DEFAULT_PERIOD_S = 0.1


def register(subparsers) -> None:
    import argparse

    from autotune.commands.reference import sensors_text

    parser = subparsers.add_parser(
        "sensors", help="list the energy and power sources of this machine",
        # Broken by hand: the raw formatter keeps the epilog's lines, one a variable, and the description's too.
        description="List the energy and power sources of this machine and why a missing one is missing,\n"
                    "and each GPU's power limits and SM clocks; reads them, changes nothing.",
        epilog_from=sensors_text, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print a JSON object: sources, devices, device settings and GPUs (null where a machine has none to list)")
    parser.add_argument("--sample", type=number_flag(low=0, low_open=True, high=_MAX_SAMPLE_S), metavar="SECONDS",
                        help="sample every available source for SECONDS and add its mean power (W)")
    parser.add_argument("--period", type=number_flag(low=0, low_open=True, high=_MAX_SAMPLE_S), metavar="SECONDS",
                        help=f"sampling period for --sample (default: {_DEFAULT_PERIOD_S:g})")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.measure import EnergyWindow, discover, sysfs_root

    # Checked before anything is read: a period alone would otherwise be silently ignored.
    if args.period is not None and args.sample is None:
        raise UserError(f"--period {args.period:g} sets how often --sample samples; add --sample SECONDS, "
                        f"e.g. --sample 10 --period {args.period:g}")
    period_s = _DEFAULT_PERIOD_S if args.period is None else args.period
    if args.sample is not None and period_s > args.sample:
        raise UserError(f"--period {period_s:g} is longer than --sample {args.sample:g}: the window would hold "
                        "no sample between its ends; give a --period shorter than --sample")
    found = discover()
    rows = []
    for status in found.statuses:
        row = status.to_dict()
        row["available"] = status.available
        rows.append(row)
    if args.sample and found.sources:
        window = EnergyWindow(found.sources, period_s=period_s)
        window.begin()
        time.sleep(args.sample)
        result = window.end()
        by_label = {e.label: e for e in result.entries}
        for row in rows:
            entry = by_label.get(row["label"]) if row["available"] else None
            row["mean_power_w"] = entry.mean_power_w if entry else None  # null: unavailable, never 0 W
            row["sampled_s"] = result.window_s
    found.close()
    devices, devices_reason = _device_settings()
    settable, settable_reason = _settable(devices)
    if args.json:
        from autotune.backends.launchers import local_gpu_count, local_gpu_models

        # The GPUs' memory (nvidia-smi), for a tuner elsewhere to check its hardware profile against this
        # node's; null without nvidia-smi (no claim), [] where it lists none.
        gpus = None if local_gpu_count() is None else [
            {"name": name, "memory_gib": memory_gib} for name, memory_gib in local_gpu_models()]
        print(json.dumps({"sources": rows, "devices": devices, "devices_reason": devices_reason,
                          "device_settings_settable": settable, "device_settings_reason": settable_reason,
                          "gpus": gpus}, indent=2))
    else:
        _print_table(rows, str(sysfs_root()), sampled=bool(args.sample))
        _print_devices(devices, devices_reason, settable, settable_reason)
    return 0


def _device_settings() -> tuple[list[dict], str]:
    """Each GPU's limits and clocks (read-only NVML queries), or why there are none."""
    from autotune.measure import device_control as dc

    try:
        api = dc.nvml_api()
        api.init()
    except Exception as exc:  # noqa: BLE001 - a missing driver is a reason, not a failure
        return [], f"NVML is not usable here ({getattr(exc, 'reason', exc)})"
    try:
        devices = [d.to_dict() for d in dc.read_settings(api)]
        return devices, "" if devices else "NVML sees no GPU"
    except Exception as exc:  # noqa: BLE001
        return [], str(getattr(exc, "reason", exc))
    finally:
        try:
            api.shutdown()
        except Exception:  # noqa: BLE001
            pass


def _settable(devices: list[dict]) -> tuple[bool, str]:
    if not devices:
        return False, "no GPU"
    from autotune.measure.device_control import control_available

    return control_available()


def _print_devices(devices: list[dict], reason: str, settable: bool, settable_reason: str) -> None:
    from rich.table import Table

    from autotune.report.fitted_table import print_table
    from autotune.report.table import stdout_console

    console = stdout_console()
    if not devices:
        console.print(f"GPU power limits and clocks: none ({reason})")
        return
    table = Table(title="GPU power limits and SM clocks (power_limit is a fraction of the default)")
    for column in ("GPU", "name", "scope", "limit W", "default W", "allowed W", "SM clock MHz", "max SM MHz"):
        table.add_column(column)
    for d in devices:
        table.add_row(str(d["index"]), d["name"], d["scope"], f"{d['power_limit_w']:g}", f"{d['default_power_limit_w']:g}",
                      f"{d['min_power_limit_w']:g}-{d['max_power_limit_w']:g}", str(d["sm_clock_mhz"]),
                      str(d["max_sm_clock_mhz"]))
    print_table(console, table)  # the GPU's index names each row
    console.print("this process may change them" if settable else f"[yellow]cannot change them: {settable_reason}[/]")


def _print_table(rows: list[dict], root: str, sampled: bool) -> None:
    from rich.table import Table

    from autotune.report.fitted_table import print_table
    from autotune.report.table import stdout_console

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
    console = stdout_console()
    print_table(console, table, keys=2)  # a source is its kind and label
    if not any(r["available"] for r in rows):
        console.print("No energy sensor here: probes report energy [bold]estimated[/bold] from the "
                      "hardware profile's power model (labelled so everywhere).")
