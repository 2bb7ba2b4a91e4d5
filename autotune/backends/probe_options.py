"""The probe options of the launch backend and their allowed ranges: one table that both the command
line (`autotune run --repeats ...`, checked while parsing) and `LaunchBackend` (checked when built
from code) read, so the two can never disagree. Imports nothing heavy: `autotune --help` reads it."""

from __future__ import annotations

from autotune.checks import MAX_COUNT, checked_number

# keyword of LaunchBackend -> (its flag, its bounds for checks.number_problem / checked_number)
PROBE_OPTIONS: dict[str, tuple[str, dict]] = {
    "probe_timeout_s": ("--probe-timeout", {"low": 0, "low_open": True}),
    "warmup_steps": ("--warmup-steps", {"low": 0, "high": MAX_COUNT, "integer": True}),
    "probe_steps": ("--probe-steps", {"low": 1, "high": MAX_COUNT, "integer": True}),
    "probe_seconds": ("--probe-seconds", {"low": 0}),
    "repeats": ("--repeats", {"low": 1, "high": MAX_COUNT, "integer": True}),
}


def probe_bounds(option: str) -> dict:
    return PROBE_OPTIONS[option][1]


def check_probe_options(**values) -> dict:
    """The values, converted, or a ConfigError naming the flag, the value and the range."""
    return {
        name: checked_number("launch backend", PROBE_OPTIONS[name][0], value, **PROBE_OPTIONS[name][1])
        for name, value in values.items()
    }
