"""Apply or restore this node's GPU power limit and SM clock cap from a shell (exported launch.sh uses it).

    python -m autotune.measure.device_cli apply --power-limit 0.8 --sm-clock-mhz 1500 [--gpus N] --record FILE
    python -m autotune.measure.device_cli restore --record FILE
    python -m autotune.measure.device_cli show [--json]

`apply` writes FILE with the previous values *before* changing anything, so `restore` (e.g. from a
shell `trap ... EXIT`) undoes a partial apply too; `restore` without FILE changes nothing and says where it looked
(exit 0: an EXIT trap where no apply ran). Only the
devices CUDA_VISIBLE_DEVICES names (default: all) are touched, and of them with --gpus N the first N.
Exit status 2 with one line on error.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path

from autotune.atomic_write import write_text_atomic
from autotune.candidate import SM_CLOCK_UNTOUCHED
from autotune.commands.flags import number_flag, path_flag, whole_number_flag
from autotune.errors import UserError
from autotune.measure import device_control as dc
from autotune.measure.errors import NEEDS_PRIVILEGE, DeviceControlError, SourceUnavailable
from autotune.usage_errors import OneLineParser, one_line


_CLOCK_MHZ = whole_number_flag(low=1)


def _clock(text: str) -> int | str:
    """`max`, or a clock in MHz with the project's whole-number rule (argparse named its own function: `_clock`)."""
    return text if text == SM_CLOCK_UNTOUCHED else _CLOCK_MHZ(text)


# What restore() reads of each entry, and what makes it one: checked before anything is put back, so that a damaged or
# foreign file is one line naming it, not a traceback from the EXIT trap of a launch.sh with its GPUs left capped.
_RECORD_HELP = ("`python -m autotune.measure.device_cli show` lists each GPU's limit now, and `apply --power-limit 1.0 "
                "--record OTHER.json` puts the default limit back")


class Refusal(Exception):
    """What this command refuses before it changes a device (a --record file apply did not write or cannot write, GPUs
    it cannot find): the reason, said in one line."""


def read_record(path: Path, device_count: int) -> list[dict]:
    """The entries of a record `apply` wrote, each checked against what restore() reads and this node's devices."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise Refusal(f"--record {path} is not a record `device_cli apply` wrote ({type(exc).__name__}: "
                      f"{getattr(exc, 'strerror', None) or exc}); nothing was restored: {_RECORD_HELP}") from None
    if not isinstance(entries, list):
        raise Refusal(f"--record {path} is not a record `device_cli apply` wrote (not a list of devices); nothing was "
                      f"restored: {_RECORD_HELP}")
    for number, entry in enumerate(entries, 1):
        problem = _entry_problem(entry, device_count)
        if problem:
            raise Refusal(f"--record {path}, entry {number}: {problem}; nothing was restored: {_RECORD_HELP}")
    return entries


def _entry_problem(entry, device_count: int) -> str | None:
    if not isinstance(entry, dict):
        return "is not a device's settings"
    index, limit_w, clock = entry.get("index"), entry.get("previous_power_limit_w"), entry.get("sm_clock_cap_mhz")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < device_count:
        return f"index {index!r} is not one of this node's GPUs (0-{device_count - 1})"
    if entry.get("scope") not in ("gpu", "module"):
        return f"scope {entry.get('scope')!r} is neither gpu nor module"
    if isinstance(limit_w, bool) or not isinstance(limit_w, (int, float)) or not 0 < limit_w < 1e5:  # NaN fails too
        return f"previous_power_limit_w {limit_w!r} is not a power limit in watts"
    if clock is not None and (isinstance(clock, bool) or not isinstance(clock, int) or clock < 1):
        return f"sm_clock_cap_mhz {clock!r} is not a clock in MHz"
    return None


def no_record_line(path: Path) -> str:
    """What a restore that found no record says: where it looked, and where apply put it."""
    return (f"no record at {path.absolute()}: nothing restored (apply writes a relative --record in the directory "
            "apply ran in: run restore from there, or give both one absolute path)")


def _writable_record(path: Path) -> None:
    """Refuse, before NVML, a --record apply could not write (its first write comes before any change)."""
    if path.is_dir():
        raise Refusal(f"--record {path} is a directory: name a file in it, such as {path / '.autotune-device-settings.json'}")
    if not path.parent.is_dir():
        raise Refusal(f"--record {path}: its folder {path.parent} does not exist; create it or name a file in an existing one")
    if path.exists():
        # Not restored since: its entries are the values before that apply, which a new record would replace with the
        # capped ones, and a restore would then put the cap back (a job killed outright, its launch.sh run again).
        raise Refusal(f"--record {path} holds the settings an earlier apply changed and no restore put back (a job "
                      f"killed outright?): `python -m autotune.measure.device_cli restore --record {path}` puts them "
                      "back (a launch.sh's EXIT trap does it now); apply again after it")


def _parser() -> argparse.ArgumentParser:
    # As `autotune`'s: a usage mistake is one line (a bare "error: ..." after the usage block was), and no
    # prefixes (`apply --power 0.8 --rec x.json` parsed). Its subcommands' parsers are of its class.
    parser = OneLineParser(prog="python -m autotune.measure.device_cli", description=__doc__.split("\n\n")[0],
                           allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    apply = commands.add_parser("apply", help="set the power limit (fraction of the default) and SM clock cap",
                                allow_abbrev=False)
    apply.add_argument("--power-limit", type=number_flag(low=0.0, low_open=True, high=1.0), default=1.0,
                       help="fraction of each device's default limit, in (0, 1]")
    apply.add_argument("--sm-clock-mhz", type=_clock, default=SM_CLOCK_UNTOUCHED, help="SM clock cap, or max")
    apply.add_argument("--record", required=True, type=path_flag,
                       help="where the previous values are kept ({host}: this host's name); a file no earlier apply left")
    apply.add_argument("--gpus", type=whole_number_flag(low=1), default=None,
                       help="only the first N of the devices CUDA_VISIBLE_DEVICES names (default: all of them): the ones "
                            "a training of N ranks per node uses")
    restore = commands.add_parser("restore", help="put back what `apply` recorded", allow_abbrev=False)
    restore.add_argument("--record", required=True, type=path_flag,
                         help="the file apply's --record wrote ({host}: this host's name; a relative path is from the "
                              "directory you run in, as apply's was); deleted once restored. Where there is none, "
                              "nothing is changed: one line says where it looked, exit status 0")
    show = commands.add_parser("show", help="each device's power limits and clocks", allow_abbrev=False)
    show.add_argument("--json", action="store_true")
    parser.set_defaults(command_parsers=commands.choices)
    return parser


def _write_record(path: Path, records: list[dict], kept: str) -> None:
    """`kept`: what a failed write leaves safe (its one line ends on it), which differs before and after the change."""
    write_text_atomic(path, json.dumps(records, indent=2) + "\n", kept=kept)


def run(args: argparse.Namespace, api) -> list[str]:
    """The command's output lines."""
    if args.command == "restore":
        if not args.record.is_file():
            return []
        done = dc.restore(api, read_record(args.record, api.device_count()))
        args.record.unlink()
        return done
    if args.command == "show":
        settings = [s.to_dict() for s in dc.read_settings(api)]
        if args.json:
            return [json.dumps(settings, indent=2)]
        return [f"GPU {s['index']} ({s['name']}, {s['scope']} scope): power limit {s['power_limit_w']:g} W "
                f"(default {s['default_power_limit_w']:g}, allowed {s['min_power_limit_w']:g}-{s['max_power_limit_w']:g}); "
                f"SM clock {s['sm_clock_mhz']} MHz (max {s['max_sm_clock_mhz']}"
                + ("; held by a user setting: locked clocks)" if s["sm_clocks_locked"] else ")") for s in settings]
    visible = dc.visible_indices(api)
    if not visible:
        raise Refusal(f"no GPU to set: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')!r} names none of "
                      f"this node's {api.device_count()} GPUs")
    if args.gpus is not None and args.gpus > len(visible):
        raise Refusal(f"--gpus {args.gpus}: only {len(visible)} GPUs are visible here ("
                      + (f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']}" if "CUDA_VISIBLE_DEVICES" in os.environ
                         else "the node's") + "); give the ranks per node the training runs")
    devices = dc.read_settings(api, visible if args.gpus is None else visible[:args.gpus])
    _write_record(args.record, dc.records_before(devices, args.sm_clock_mhz), kept="no GPU was changed")
    try:
        records = dc.apply(api, devices, args.power_limit, args.sm_clock_mhz)
    except dc.RestoreFailed:
        raise  # a GPU may still hold a change: the record is what `restore` needs
    except DeviceControlError:
        # Refused (out of range, no permission): apply changed nothing or put every GPU back (all or nothing). A record
        # left behind made the next apply say an earlier one had changed the GPUs (trial75 #7).
        args.record.unlink(missing_ok=True)
        raise
    # The GPUs are set by now, and the record written before the change still holds their earlier values: the line
    # must not say no GPU was changed, and apply again would be refused until a restore.
    _write_record(args.record, records, kept=f"the GPUs were set: restore them first with `python -m "
                                             f"autotune.measure.device_cli restore --record {args.record}`, which puts "
                                             "back the values it recorded before the change")
    return [f"GPU {r['index']}: power limit {r['power_limit_w']:g} W ({r['scope']} scope, was "
            f"{r['previous_power_limit_w']:g} W)" + (f", SM clock cap {r['sm_clock_cap_mhz']} MHz" if r["sm_clock_cap_mhz"] else "")
            for r in records]


# NVML's refusal words its fix for a study ("keep power_limit = [1.0] ... in the space"): by hand, the fix is this.
_NEEDS_PRIVILEGE_HERE = ("changing GPU power limits or clocks needs root or CAP_SYS_ADMIN (NVML: no permission); run this "
                         "command as root (sudo) or in a container given CAP_SYS_ADMIN")
_AFTER_REFUSAL = {"apply": ", or train at the default limit and clock without apply; no GPU was changed",
                  "restore": "; the GPUs keep what the record's apply set until a restore as root"}


def _error(args: argparse.Namespace, message: str) -> int:
    """One line prefixed with the subcommand, as `autotune` words its errors ("... apply: error: ..."), exit 2."""
    if message == NEEDS_PRIVILEGE:
        message = _NEEDS_PRIVILEGE_HERE + _AFTER_REFUSAL.get(args.command, "")
    print(f"{args.command_parsers[args.command].prog}: error: {one_line(message)}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the subcommand's usage error: its --help lists its flags, the top level's does not
        args.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "record", None) is not None:  # one record per node when several share a directory
        args.record = Path(str(args.record).replace("{host}", socket.gethostname()))
    if args.command == "apply":
        try:
            _writable_record(args.record)
        except Refusal as exc:
            return _error(args, str(exc))
    if args.command == "restore" and not args.record.is_file():
        # Nothing was applied here: no driver needed to undo nothing (a login node's EXIT trap), so exit 0. Said, as a
        # restore from another directory than apply's found no record, said nothing, and left the GPUs capped (trial77 #5).
        print(f"{args.command_parsers['restore'].prog}: {no_record_line(args.record)}", file=sys.stderr)
        return 0
    api = dc.nvml_api()
    try:
        api.init()
        try:
            lines = run(args, api)
        finally:
            api.shutdown()
    except (DeviceControlError, SourceUnavailable) as exc:
        return _error(args, exc.reason)
    except Refusal as exc:
        return _error(args, str(exc))
    except UserError as exc:  # the record could not be written: its line says what that left (run's `kept`)
        return _error(args, str(exc))
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
