"""Argparse types for numeric flags: each value is checked for type and range while the command line
is parsed, before any file is read or any study opened, with the wording of `autotune.checks`:

    --repeats 0   ->  autotune run: error: argument --repeats: '0' is out of range; it must be a whole number >= 1
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from autotune.atomic_write import NAME_MAX_BYTES, PATH_MAX_BYTES
from autotune.checks import MAX_COUNT, flag_number
from autotune.commands.paths import CWD_GONE, current_directory_gone
from autotune.os_text import escaped_bytes, os_text


class WrittenWhole(int):
    """A whole number typed with a decimal point or an exponent ('2.0', '1e3'), kept with its text for the check that
    knows the flag's range and refuses it (checks.whole_literal_problem): --gpus-per-node's range is the profile's,
    read after the command line, and '1e3' suggested '(1000)', which that range then refused (trial 63 #22)."""

    written: str


def number_flag(*, low=None, high=None, low_open: bool = False, integer: bool = False, fix: str = "",
                range_later: str = ""):
    """An argparse `type=`: the flag's text as an int (integer=True) or a float within the bounds.
    NaN and infinities are refused, and so is '1.5' where a whole number belongs. `fix`: what the value is,
    said after the range (checks.checked_number's, so one bounds table serves both). `range_later`: the range, in
    words, of a flag whose range is known later (--gpus-per-node's, the profile's node): any whole number passes to
    that check, which says the range in one wording for 0, 9 and 10**14 alike (trial 65 #10, #17), written '2.0' or
    '1e3' as a WrittenWhole; what is no whole number is refused here, with the range in these words."""

    def convert(text: str):
        value, problem = flag_number(text, low=low, high=high, low_open=low_open, integer=integer)
        if problem and range_later:
            typed, _ = flag_number(text, integer=True)  # in digits: 99999999999999 is whole, and only too large
            if typed is not None:
                return typed
            number = flag_number(text, low=low, low_open=low_open)[0]  # 1e13 too: its range is said later
            if number is not None and number.is_integer():
                whole = WrittenWhole(number)
                whole.written = text
                return whole
            problem = f"{problem.rpartition('it must be ')[0]}it must be {range_later}"
        if problem:
            raise argparse.ArgumentTypeError(f"{text!r} {problem}{f'; {fix}' if fix else ''}")
        # -0 is 0: `--eta -0` (a script's negated weight) was kept as -0.0, "eta -0" in every report (trial71 #7)
        return abs(value) if value == 0 else value

    convert.__name__ = "whole number" if integer else "number"  # argparse names the type in some errors
    return convert


def whole_number_flag(*, low=None, high=MAX_COUNT, range_later: str = ""):
    return number_flag(low=low, high=high, integer=True, range_later=range_later)


def text_flag(text: str) -> str:
    """A name or path flag: an empty value (an unset shell variable, `--out ""`) is refused, not taken
    as the current directory or as 'not given'."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a value (an unset shell variable?)")
    return text


def study_name_flag(text: str) -> str:
    """An Optuna study name: what optuna-dashboard lists; Optuna's table holds at most 512 characters."""
    text = text_flag(text)
    try:
        # Under an ASCII locale (LC_ALL=C PYTHONUTF8=0) a UTF-8 name arrives as surrogate escapes, which SQLite
        # cannot store, and were refused as not printable (trial 45): the name is what was typed, in any locale.
        text = os_text(text)
    except UnicodeDecodeError:
        raise argparse.ArgumentTypeError(
            f"holds bytes that are not UTF-8 text ({escaped_bytes(text)}): a study name is stored as text; type it in "
            "UTF-8 or use ASCII letters") from None
    if len(text) > 512 or not text.isprintable():
        raise argparse.ArgumentTypeError("is not a study name: printable characters, at most 512")
    if text != text.strip():  # ' spaced ' made a study that `--study-name spaced` never found
        raise argparse.ArgumentTypeError(f"starts or ends with spaces, which a later --study-name {text.strip()} would "
                                         "not find; drop them")
    return text



def path_flag(text: str) -> Path:
    """A file or folder path: one whose name cannot exist (a part longer than the file system takes, a loop of
    links) is refused here; the checks that look at it raised OSError or RuntimeError, a traceback (trial 37 F1)."""
    path = Path(text_flag(text))
    home = _unexpanded_home(text)
    if home:
        raise argparse.ArgumentTypeError(home)
    long = next((part for part in path.parts if len(os.fsencode(part)) > NAME_MAX_BYTES), None)
    if long is not None:
        raise argparse.ArgumentTypeError(f"has a name of {len(os.fsencode(long))} bytes ({long[:20]}...), longer than a file "
                                         f"system takes ({NAME_MAX_BYTES}); give a shorter one")
    if not path.is_absolute() and current_directory_gone():  # abspath and resolve below ask for it
        raise argparse.ArgumentTypeError(f"is relative, but {CWD_GONE} or give an absolute path")
    whole = len(os.fsencode(os.path.abspath(path)))
    if whole >= PATH_MAX_BYTES:  # every part short enough, the whole too long: OSError in the first check (trial 43 F9)
        raise argparse.ArgumentTypeError(f"is a path of {whole} bytes, longer than the system takes ({PATH_MAX_BYTES - 1}); "
                                         "give a shorter one")
    try:
        path.resolve()
    except (OSError, RuntimeError) as exc:  # a loop of symbolic links: Python 3.11 raises RuntimeError
        raise argparse.ArgumentTypeError(f"cannot be followed ({getattr(exc, 'strerror', None) or exc}); give another "
                                         "path") from None
    if path.parts[:1] and path.parts[0].startswith("~"):  # `./~/x`, a folder really named ~: Path drops the ./, and "~/x" reads as home's
        return Path(os.path.abspath(path))
    return path


def _unexpanded_home(text: str) -> str | None:
    """Why a path starting with `~` or `~user` is refused, else None. The shell leaves such a ~ alone in quotes and
    after `=` (`--out=~/x`); taken as written it made a folder ./~ that the run's messages named "~/x", read as the
    home folder's, one `rm -rf ~...` away from the real one (trial 45 §12)."""
    first, _, rest = text.partition("/")
    if not first.startswith("~"):
        return None
    home = "$HOME" if first == "~" else os.path.expanduser(first)
    instead = f"give {home}{'/' if rest else ''}{rest}, or" if home != first else "give its full path, or"
    return (f"starts with {first}, a home folder the shell did not expand (it leaves a ~ in quotes or after '=' as "
            f"it is); {instead} ./{text} for a folder really named {first}")


def name_or_path_flag(text: str) -> str:
    """A preset's name or a file's path (--model, --hardware, --space): a path as path_flag checks it. A bare
    name (`tiny`: no folder, no suffix) needs no current directory: where that is gone, no file of that name can
    be reached, and the loader, which knows the presets, takes it or says it is unknown."""
    if "/" not in text and not Path(text).suffix and current_directory_gone():
        return text_flag(text)
    path_flag(text)
    return text


def add_output_flag(parser, *names: str, aliases: tuple[str, ...], **kwargs) -> None:
    """An output flag under its canonical `names` (what --help shows) and, hidden, the `aliases` the other commands'
    output flags are spelt with: a newcomer's trial typed `export --out` (run's) and `run -o` (export's) and met
    "unrecognized arguments". Given twice, under any spelling, it is refused: the later one silently won."""
    parser.add_argument(*names, action=GivenOnce, **kwargs)
    dest = parser._actions[-1].dest
    if not aliases:  # no option strings would make a positional argument
        return
    parser.add_argument(*aliases, dest=dest, action=GivenOnce, type=kwargs.get("type"), metavar=kwargs.get("metavar"),
                        default=kwargs.get("default"), help=argparse.SUPPRESS)


class GivenOnce(argparse.Action):
    """A flag that two values of are a mistake, refused: an output (the later one silently won), a --storage (two
    databases of a study cannot both be meant). `what` names it in the refusal. Other flags keep argparse's (and
    GNU's) rule that the last one given wins, which a script that appends to a command line relies on."""

    def __init__(self, *args, what: str = "the output", shown=str, **kwargs):
        self.what, self.shown = what, shown
        super().__init__(*args, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        earlier = getattr(namespace, self.dest, None)
        if earlier is not None and earlier != self.default:
            parser.error(f"argument {option_string}: {self.what} is given twice ({self.shown(earlier)}, then "
                         f"{self.shown(values)}); give it once")
        setattr(namespace, self.dest, values)


def storage_shown(url: str) -> str:
    """A --storage URL as a refusal shows it: its password hidden, as every message and pareto.json show one."""
    from autotune.study.storage import recorded_storage  # Optuna's import: only on this way out

    return recorded_storage(url)


text_flag.__name__ = name_or_path_flag.__name__ = path_flag.__name__ = study_name_flag.__name__ = "value"
