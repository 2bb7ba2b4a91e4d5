"""`autotune sensors`: what energy sources this machine has (filled in by the measurement library)."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("sensors", help="list the energy and power sources of this machine")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--sample", type=float, metavar="SECONDS", help="sample every available source")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.errors import UserError

    raise UserError("autotune sensors is not available yet in this build")
