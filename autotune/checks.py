"""Type and range checks for numbers read from files and flags: one line that names the file, the
key, the value and what is allowed (every input file of the tool uses these, so they read alike).

    checked_number("hardware profile gh200.toml", "[gpu] memory_gib", raw, low=0, low_open=True)
    -> 96.0, or ConfigError: "hardware profile gh200.toml: [gpu] memory_gib = 'fast' is not a number; it must be a number > 0"
"""

from __future__ import annotations

import json
import math
import sys

from autotune.counted import agreeing
from autotune.errors import ConfigError

# A count (layers, samples, steps) past this is a typo; past ~1e308 it would not even fit the floats
# the simulator computes in. Files and flags use it as the upper bound of their whole numbers.
MAX_COUNT = 10**12


def shown(value) -> str:
    """A value as a TOML or JSON file writes it (true, "none", 1.5), not as Python prints it (True, 'none')."""
    return json.dumps(value, default=str)


def _bound(number) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"  # 4294967295 in full, 0.5 not 0.500000


def _allowed(integer: bool, low, high, low_open: bool) -> str:
    kind = "a whole number" if integer else "a number"
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {_bound(low)}")
    if high is not None:
        bounds.append(f"<= {_bound(high)}")
    return f"{kind} {' and '.join(bounds)}".strip()


def whole_literal_problem(value: float, low=None, high=None, low_open: bool = False, *, range_said: str = "") -> str:
    """Why a whole number written with a decimal point or an exponent (2.0, 1e1: a float) is refused, and the
    number to write: the one wording of flags, files and records (trial 63 #22: three wordings). Where the number
    lies outside [low, high] (1e400; 1e3 GPUs of a 4-GPU node) the range is said in its place: the number would
    be refused next. `range_said`: the range in other words than "a whole number >= 1 ..." (a profile's "1..4")."""
    sentence = "is not a whole number; write it without a decimal point or an exponent"
    too_small = low is not None and (value <= low if low_open else value < low)
    side = "small" if too_small else "large" if high is not None and value > high else ""
    if side:
        return f"{sentence}, and it is too {side}: it must be {range_said or _allowed(True, low, high, low_open)}"
    return f"{sentence} ({int(value)})"


def number_problem(value, *, low=None, high=None, low_open: bool = False, integer: bool = False,
                   whole_literal: bool = False) -> str | None:
    """Why `value` is not an allowed number ("is out of range; it must be a number > 0"), or None.
    The wording every check of a file or a flag shares; booleans, NaN and infinities are refused.
    `whole_literal`: a whole number must be written as one, in digits: JSON's and TOML's 64.0 or 1e2 is a
    float, and so is a flag's "1e3" (one rule for files and flags: trial 61 #21)."""
    allowed = _allowed(integer, low, high, low_open)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is not {'a whole number' if integer else 'a number'}; it must be {allowed}"
    if integer and not isinstance(value, int) and not (math.isfinite(value) and value == int(value)):
        return f"is not a whole number; it must be {allowed}"
    if isinstance(value, float) and not math.isfinite(value):  # (an int is finite, and may exceed a float)
        return f"is not finite; it must be {allowed}"
    if integer and whole_literal and isinstance(value, float):  # 1e400 too: an exponent, whatever its size
        return whole_literal_problem(value, low, high, low_open)
    too_low = low is not None and (value <= low if low_open else value < low)
    if too_low or (high is not None and value > high):
        return f"is out of range; it must be {allowed}"
    return None


def _as_number(text: str, integer: bool):
    """int or float as written, else the text itself (which number_problem then refuses)."""
    for convert in ((int, float) if integer else (float,)):  # "1e3" a float, refused where a whole number belongs
        try:
            return convert(text)
        except ValueError:
            continue
    return text


def finite_as_typed(text: str, value):
    """A finite number too large for a float (1e400, which float() reads as inf) as the largest float of its sign:
    the user typed a number, and is told it is out of range with the range, not that it is "not finite"."""
    if isinstance(value, float) and math.isinf(value) and "inf" not in text.lower():
        return math.copysign(sys.float_info.max, value)
    return value


def written_whole(text: str) -> float | None:
    """The whole number `text` writes with a decimal point or an exponent ('2.0', '1e2'; '1e400' as the largest
    float: finite_as_typed), spelt as a flag takes a number (ASCII, no underscore: _spelling_problem), else None
    (digits alone, a fraction, no number): where an input takes its own forms (--nodes 2-8, --time-limit 1:30),
    what tells it to say whole_literal_problem as every whole-number flag does."""
    stripped = text.strip()
    if not stripped.isascii() or "_" in stripped or stripped.lstrip("+-").isdigit():
        return None
    try:
        value = finite_as_typed(stripped, float(stripped))
    except ValueError:
        return None
    return value if math.isfinite(value) and value.is_integer() else None


def _spelling_problem(text: str, value) -> str | None:
    """Why a number Python reads is not one a flag takes: int() and float() read '1_0' as 10 (a typo of 1.0 or
    1-0 is as likely) and '５' or '٣' as 5 and 3, digits of other scripts. A flag's number is written as a shell
    script, a SLURM variable or another tool writes it: ASCII digits, no separators."""
    if isinstance(value, str):
        return None  # no number at all: number_problem says so
    if "_" in text:
        return "has an underscore, which a number here does not take: write the number without it"
    if not text.isascii():
        return "has characters other than ASCII: write the number in ASCII digits (0-9)"
    return None


def flag_number(text: str, *, low=None, high=None, low_open: bool = False, integer: bool = False):
    """(value, None) for a flag's text that is an allowed number, else (None, why not): the one reading of a
    number flag, the tuner's (autotune/commands/flags.py) and the probe's (trainer/probe.py) alike."""
    stripped = text.strip()
    value = _as_number(stripped, integer)
    bounds = {"low": low, "high": high, "low_open": low_open, "integer": integer}
    # A whole number in digits, as in a file: "1e3" and "2.0" are refused there, so here too.
    problem = number_problem(finite_as_typed(text, value), **bounds, whole_literal=integer)
    # The range as number_problem says it of no number at all ("is not a number; it must be ...").
    allowed = number_problem(None, **bounds).partition("; ")[2]
    if spelling := _spelling_problem(stripped, value):
        problem = f"{spelling}; {allowed}"
    if not problem and finite_as_typed(text, value) is not value:  # past a float, with no upper bound to pass
        problem = f"is out of range (past {sys.float_info.max:.3g}, the largest number autotune computes with); {allowed}"
    if problem:
        return None, problem
    return (int(value) if integer else float(value)), None


def checked_number(
    origin: str,
    key: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    integer: bool = False,
    whole_literal: bool = False,
    fix: str = "",
) -> int | float:
    """`value` as an int (integer=True) or float, or a ConfigError naming origin, key, value and range.

    Booleans are refused (TOML's `true` is not 1), and so are NaN and infinities."""
    problem = number_problem(value, low=low, high=high, low_open=low_open, integer=integer, whole_literal=whole_literal)
    if problem:
        raise ConfigError(f"{origin}: {key} = {shown(value)} {problem}{f'; {fix}' if fix else ''}")
    return int(value) if integer else float(value)


def refuse_unknown_keys(origin: str, data: dict, known, fix: str) -> None:
    """Unknown keys are refused, not ignored: a typo must not silently leave a default in place."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{origin}: unknown {agreeing(len(unknown), 'key', 'keys')} {', '.join(unknown)}; allowed: {', '.join(sorted(known))}; {fix}")


def complete_table(origin: str, label: str, data, keys, fix: str, not_a_table: str) -> dict:
    """`data`, a table (JSON object, TOML table) of every one of `keys` and nothing else; else a
    ConfigError naming `label` (`[gpu]`, `study`): `not_a_table` when it is no table at all."""
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: {not_a_table}; {fix}")
    refuse_unknown_keys(f"{origin} {label}", data, keys, fix)
    missing = [key for key in keys if key not in data]
    if missing:
        raise ConfigError(f"{origin}: {label} lacks {', '.join(missing)}; {fix}")
    return data


def refuse_duplicate_keys(pairs: list) -> dict:
    """json.loads' object_pairs_hook: a key given twice would silently be its last copy."""
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"{agreeing(len(repeated), 'key', 'keys')} {', '.join(repeated)} {agreeing(len(repeated), 'appears', 'appear')} more than once")
    return dict(pairs)


def text_head(path, limit_bytes: int) -> str | None:
    """The first `limit_bytes` of a text file, or None where it cannot be read as UTF-8 text: what a
    check of who wrote a file reads (a user's multi-GiB file is never read whole). A character the limit
    cuts in two is left out, not taken for a file that is not text."""
    import codecs

    try:
        with open(path, "rb") as file:
            return codecs.getincrementaldecoder("utf-8")().decode(file.read(limit_bytes), final=False)
    except (OSError, UnicodeDecodeError):
        return None
