"""Apply or restore this node's GPU power limit and SM clock cap from a shell (exported launch.sh uses it).

    python -m autotune.measure.device_cli apply --power-limit 0.8 --sm-clock-mhz 1500 [--gpus N] --record FILE
    python -m autotune.measure.device_cli restore --record FILE
    python -m autotune.measure.device_cli show [--json]

`apply` writes FILE with the previous values *before* changing anything, so `restore` (e.g. from a
shell `trap ... EXIT`) undoes a partial apply too; `restore` without FILE does nothing. Only the
devices CUDA_VISIBLE_DEVICES names (default: all) are touched, and of them with --gpus N the first N. Exit status 2 with one line on error.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path

from autotune.atomic_write import write_text_atomic
from autotune.candidate import SM_CLOCK_UNTOUCHED
from autotune.commands.flags import whole_number_flag
from autotune.measure import device_control as dc
from autotune.measure.errors import DeviceControlError, SourceUnavailable
from autotune.usage_errors import OneLineParser, one_line


def _clock(text: str) -> int | str:
    return text if text == SM_CLOCK_UNTOUCHED else int(text)


def _parser() -> argparse.ArgumentParser:
    # As `autotune`'s: a usage mistake is one line (a bare "error: ..." after the usage block was), and no
    # prefixes (`apply --power 0.8 --rec x.json` parsed). Its subcommands' parsers are of its class.
    parser = OneLineParser(prog="python -m autotune.measure.device_cli", description=__doc__.split("\n\n")[0],
                           allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    apply = commands.add_parser("apply", help="set the power limit (fraction of the default) and SM clock cap",
                                allow_abbrev=False)
    apply.add_argument("--power-limit", type=float, default=1.0, help="fraction of each device's default limit")
    apply.add_argument("--sm-clock-mhz", type=_clock, default=SM_CLOCK_UNTOUCHED, help="SM clock cap, or max")
    apply.add_argument("--record", required=True, help="where the previous values are kept ({host}: this host's name)")
    apply.add_argument("--gpus", type=whole_number_flag(low=1), default=None,
                       help="only the first N of the devices CUDA_VISIBLE_DEVICES names (default: all of them): the ones "
                            "a training of N ranks per node uses")
    restore = commands.add_parser("restore", help="put back what `apply` recorded", allow_abbrev=False)
    restore.add_argument("--record", required=True)
    show = commands.add_parser("show", help="each device's power limits and clocks", allow_abbrev=False)
    show.add_argument("--json", action="store_true")
    parser.set_defaults(command_parsers=commands.choices)
    return parser


def _write_record(path: Path, records: list[dict]) -> None:
    write_text_atomic(path, json.dumps(records, indent=2) + "\n")


def run(args: argparse.Namespace, api) -> list[str]:
    """The command's output lines."""
    if args.command == "restore":
        if not args.record.is_file():
            return []
        done = dc.restore(api, json.loads(args.record.read_text(encoding="utf-8")))
        args.record.unlink()
        return done
    if args.command == "show":
        settings = [s.to_dict() for s in dc.read_settings(api)]
        if args.json:
            return [json.dumps(settings, indent=2)]
        return [f"GPU {s['index']} ({s['name']}, {s['scope']} scope): power limit {s['power_limit_w']:g} W "
                f"(default {s['default_power_limit_w']:g}, allowed {s['min_power_limit_w']:g}-{s['max_power_limit_w']:g}); "
                f"SM clock {s['sm_clock_mhz']} MHz (max {s['max_sm_clock_mhz']})" for s in settings]
    devices = dc.read_settings(api, dc.visible_indices(api) if args.gpus is None else dc.ranks_indices(api, args.gpus))
    _write_record(args.record, dc.records_before(devices, args.sm_clock_mhz))
    records = dc.apply(api, devices, args.power_limit, args.sm_clock_mhz)
    _write_record(args.record, records)
    return [f"GPU {r['index']}: power limit {r['power_limit_w']:g} W ({r['scope']} scope, was "
            f"{r['previous_power_limit_w']:g} W)" + (f", SM clock cap {r['sm_clock_cap_mhz']} MHz" if r["sm_clock_cap_mhz"] else "")
            for r in records]


def _error(args: argparse.Namespace, message: str) -> int:
    """One line prefixed with the subcommand, as `autotune` words its errors ("... apply: error: ..."), exit 2."""
    print(f"{args.command_parsers[args.command].prog}: error: {one_line(message)}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the subcommand's usage error: its --help lists its flags, the top level's does not
        args.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "record", None) is not None:  # one record per node when several share a directory
        args.record = Path(args.record.replace("{host}", socket.gethostname()))
    if args.command == "apply" and not args.power_limit > 0.0:
        return _error(args, f"--power-limit must be a positive fraction of the default limit, got {args.power_limit}")
    if args.command == "restore" and not args.record.is_file():
        return 0  # nothing was applied here: no driver needed to undo nothing (a login node's EXIT trap)
    api = dc.nvml_api()
    try:
        api.init()
        try:
            lines = run(args, api)
        finally:
            api.shutdown()
    except (DeviceControlError, SourceUnavailable) as exc:
        return _error(args, exc.reason)
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
