"""The argparse parser of every command line this project ships (`autotune`, `python -m trainer.probe`,
`python -m autotune.measure.device_cli`): whole flags only, and a usage mistake is one line, exit 2.

Core, not CLI: the probe (trainer/, on every rank) and device_cli import it, and it imports nothing but argparse.
"""

from __future__ import annotations

import argparse


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes read like every other bad input: one line naming the problem, exit 2.
    (argparse's default prints the whole usage block first; `--help` still shows it.)
    Subparsers are of this class too (argparse makes them of their parent's class)."""

    def __init__(self, *args, **kwargs):
        # No prefixes: `run --trial 3` (export's flag) silently meant `--trials 3`, and a flag a script
        # half-deleted another one; a whole flag or an error.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see `{self.prog} --help`)\n")


def one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())
