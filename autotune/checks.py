"""Type and range checks for numbers read from files and flags: one line that names the file, the
key, the value and what is allowed (every input file of the tool uses these, so they read alike).

    checked_number("hardware profile gh200.toml", "[gpu] memory_gib", raw, low=0, low_open=True)
    -> 96.0, or ConfigError: "hardware profile gh200.toml: [gpu] memory_gib = 'fast' is not a number; it must be a number > 0"
"""

from __future__ import annotations

import math

from autotune.errors import ConfigError


def _allowed(integer: bool, low, high, low_open: bool) -> str:
    kind = "a whole number" if integer else "a number"
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        bounds.append(f"<= {high:g}")
    return f"{kind} {' and '.join(bounds)}".strip()


def checked_number(
    origin: str,
    key: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    integer: bool = False,
    fix: str = "",
) -> int | float:
    """`value` as an int (integer=True) or float, or a ConfigError naming origin, key, value and range.

    Booleans are refused (TOML's `true` is not 1), and so are NaN and infinities."""
    allowed = _allowed(integer, low, high, low_open)
    suffix = f"; {fix}" if fix else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        what = "a whole number" if integer else "a number"
        raise ConfigError(f"{origin}: {key} = {value!r} is not {what}; it must be {allowed}{suffix}")
    if integer and not isinstance(value, int):
        if not (math.isfinite(value) and value == int(value)):
            raise ConfigError(f"{origin}: {key} = {value!r} is not a whole number; it must be {allowed}{suffix}")
        value = int(value)
    if not math.isfinite(value):
        raise ConfigError(f"{origin}: {key} = {value!r} is not finite; it must be {allowed}{suffix}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and value > high
    if too_low or too_high:
        raise ConfigError(f"{origin}: {key} = {value!r} is out of range; it must be {allowed}{suffix}")
    return value if integer else float(value)


def refuse_unknown_keys(origin: str, data: dict, known, fix: str) -> None:
    """Unknown keys are refused, not ignored: a typo must not silently leave a default in place."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{origin}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(known))}; {fix}")
