"""The argparse parser of every command line this project ships (`autotune`, `python -m trainer.probe`,
`python -m autotune.measure.device_cli`): whole flags only, and a usage mistake is one line, exit 2.

Core, not CLI: the probe (trainer/, on every rank) and device_cli import it, and it imports nothing but argparse.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes read like every other bad input: one line naming the problem, exit 2.
    (argparse's default prints the whole usage block first; `--help` still shows it.)
    Subparsers are of this class too (argparse makes them of their parent's class)."""

    def __init__(self, *args, **kwargs):
        # No prefixes: `run --trial 3` (export's flag) silently meant `--trials 3`, and a flag a script
        # half-deleted another one; a whole flag or an error.
        kwargs.setdefault("allow_abbrev", False)
        # argparse's errors come back here as exceptions, where the command line they were found in is known
        # (_explained_errors); every one still ends in error(), one line and exit 2.
        super().__init__(*args, exit_on_error=False, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        self._words = args  # for error(): argparse calls it itself for a missing positional
        with self._explained_errors(args):
            return super().parse_known_args(args, namespace)

    def parse_known_intermixed_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        with self._explained_errors(args):
            return super().parse_known_intermixed_args(args, namespace)

    @contextlib.contextmanager
    def _explained_errors(self, args: list[str]):
        try:
            yield
        except argparse.ArgumentError as err:
            self.error(self._value_read_as_option(err, args) or str(err))

    def _value_read_as_option(self, err: argparse.ArgumentError, args: list[str]) -> str | None:
        """argparse takes a word starting with '-' for an option, never for a value (bar a negative number such as
        -1): `--probe-timeout -inf`, `-o -dash` and `--storage -x` read "expected one argument", which neither
        says the value was seen nor how to give it. None where the next word is one of the parser's options (the
        value was left out) or there is none."""
        if err.message != "expected one argument" or not err.argument_name:
            return None
        spellings = err.argument_name.split("/")
        for typed, value in zip(args, args[1:]):
            if typed in spellings and value.startswith("-") and value not in ("-", "--") \
                    and value.partition("=")[0] not in self._option_string_actions:
                refused = self._refused_value(typed, value)
                if refused:  # the spelling below would only lead to this (trial 62 F7: --time-limit -1:30)
                    return f"argument {typed}: {refused}"
                flag = typed if typed.startswith("--") else next((s for s in spellings if s.startswith("--")), typed)
                return (f"argument {typed}: {value!r} starts with '-', so it reads as an option, not as the value of "
                        f"{typed}; a value starting with '-' is given as {shlex.quote(f'{flag}={value}')}")
        return None

    def _refused_value(self, typed: str, value: str) -> str | None:
        """Why the flag's own check refuses `value` (its type's ArgumentTypeError), or None where it takes it."""
        action = self._option_string_actions.get(typed)
        if action is None or not callable(action.type):
            return None
        try:
            action.type(value)
        except argparse.ArgumentTypeError as why:
            return str(why)
        except (TypeError, ValueError):  # argparse's own wording for these is no better than the spelling
            return None
        return None

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)}{self._name_read_as_option(message)} "
                     f"(see `{self.prog} --help`)\n")

    def _name_read_as_option(self, message: str) -> str:
        """A positional starting with '-' (`autotune report -dash2`, a run directory made with `--out ./-dash2`) is
        taken for an option: "required: RUN_DIR" or "unrecognized arguments: -dash2" named neither the word nor how
        to give it (trial69 #6). The hint where such a word (no option of this parser) is a path on disk, or, with a
        positional missing, starts with one '-' (`--jsn` is more likely a flag mistyped)."""
        missing = message.startswith("the following arguments are required")
        if not (missing or message.startswith("unrecognized arguments")):
            return ""
        for word in getattr(self, "_words", []):
            if (word.startswith("-") and word not in ("-", "--") and word.partition("=")[0] not in self._option_string_actions
                    and not self._negative_number_matcher.match(word)
                    and (os.path.lexists(word) or (missing and not word.startswith("--")))):
                return f"; {word!r} starts with '-', so it reads as an option: give a name starting with '-' as ./{word}"
        return ""


def one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())
