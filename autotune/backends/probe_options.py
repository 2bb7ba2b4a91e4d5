"""The probe options of the launch backend and their allowed ranges: one table that both the command
line (`autotune run --repeats ...`, checked while parsing) and `LaunchBackend` (checked when built
from code) read, so the two can never disagree. Imports nothing heavy: `autotune --help` reads it."""

from __future__ import annotations

from autotune.checks import MAX_COUNT, checked_number
from autotune.errors import ConfigError

# keyword of LaunchBackend -> (its flag, its default, its bounds for checks.checked_number / flags.number_flag)
MAX_PROBE_S = 7 * 24 * 3600.0  # a week: longer is a typo (and overflows the collectives' C int timeout)
# A probe starts Python, torch and DeepSpeed before its first step: under a second none ever started, and a
# --probe-timeout of 1e-300 killed every probe at its start, each a trial spent (a newcomer's trial).
MIN_PROBE_TIMEOUT_S = 1.0
PROBE_OPTIONS: dict[str, tuple[str, float | int, dict]] = {
    "probe_timeout_s": ("--probe-timeout", 900.0, {
        "low": MIN_PROBE_TIMEOUT_S, "high": MAX_PROBE_S,
        "fix": "seconds a probe may run, its start (Python, torch, DeepSpeed) included"}),
    "warmup_steps": ("--warmup-steps", 2, {"low": 0, "high": MAX_COUNT, "integer": True}),
    "probe_steps": ("--probe-steps", 5, {"low": 1, "high": MAX_COUNT, "integer": True}),
    "probe_seconds": ("--probe-seconds", 0.0, {"low": 0, "high": MAX_PROBE_S}),
    "repeats": ("--repeats", 1, {"low": 1, "high": MAX_COUNT, "integer": True}),
}
LAUNCHERS = ("auto", "torchrun", "deepspeed", "srun")
DEFAULT_LAUNCHER = "auto"


def probe_default(option: str):
    return PROBE_OPTIONS[option][1]


def probe_bounds(option: str) -> dict:
    return PROBE_OPTIONS[option][2]


def check_probe_options(**values) -> dict:
    """The values, converted, or a ConfigError naming the flag, the value and the range."""
    checked = {
        name: checked_number("launch backend", PROBE_OPTIONS[name][0], value, **probe_bounds(name))
        for name, value in values.items()
    }
    check_window_fits(checked.get("probe_seconds", 0.0), checked.get("probe_timeout_s", MAX_PROBE_S))
    return checked


def check_window_fits(probe_seconds: float, probe_timeout_s: float) -> None:
    """A measured window as long as the timeout kills every probe before it ends: refused once, here."""
    if probe_seconds >= probe_timeout_s:
        raise ConfigError(f"--probe-seconds {probe_seconds:g} is not shorter than --probe-timeout {probe_timeout_s:g}: every "
                          "probe would be killed before its window ends; raise --probe-timeout (start-up and warm-up need "
                          "time too) or lower --probe-seconds")
