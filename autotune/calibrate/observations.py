"""One observation the simulator is calibrated against: a candidate, a metric and its measured value.

An observation is absolute (the candidate's time, energy, TFLOP/s or power) or relative (the ratio of
the candidate's metric to another candidate's, as a published "saving of s%" is); a published bound
(">512 TFLOP/s") counts as an error only when the prediction is on the wrong side of it.
Every value is checked where it is read: one line names the observation, the problem and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.candidate import KNOBS, Candidate, Knobs, knob_value
from autotune.checks import checked_number, refuse_unknown_keys, shown
from autotune.errors import ConfigError

# Metric -> what it is (per GPU where it says so); keys of the error tables.
METRICS = {
    "time_s": "time to solution, s",
    "energy_kj": "energy to solution over every module, kJ",
    "tflops": "model TFLOP/s per GPU",
    "power_w": "mean GPU power per GPU, W",
    "module_power_w": "mean module power per GPU (GPU + host share + memory), W",
}
BOUNDS = ("lower", "upper")


@dataclass(frozen=True)
class Observation:
    id: str
    candidate: Candidate
    metric: str
    value: float  # in the metric's unit, or a ratio when `relative_to` is set
    source: str  # where it came from: "gh200-study", or a run directory
    relative_to: Candidate | None = None
    bound: str | None = None  # "lower": the truth is at least `value`; "upper": at most
    approximate: bool = False
    note: str = ""


def checked_observation(origin: str, key: str, metric, value, relative: bool) -> tuple[str, float]:
    """The metric name and a positive, finite value, or one line saying which record is broken."""
    if metric not in METRICS:
        raise ConfigError(f"{origin}: {key} has metric {metric!r}; use one of {', '.join(METRICS)}")
    what = f"{key} {'ratio' if relative else metric}"
    # Every metric is positive: a zero or negative time, energy or power is a broken record.
    number = checked_number(origin, what, value, low=0.0, low_open=True,
                            fix="a measured figure is a positive number; fix or remove the record")
    return metric, number


def checked_knobs(origin: str, key: str, raw) -> Knobs:
    """Knob values of one configuration: unknown knobs and impossible values are refused, not guessed."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: {key} knobs must be a table of knob values, got {raw!r}")
    refuse_unknown_keys(f"{origin}: {key} knobs", raw, KNOBS, "knob names are those of search_spaces/default.toml")
    values = {}
    for knob, value in raw.items():
        try:
            values[knob] = knob_value(knob, value)
        except ValueError as why:
            raise ConfigError(f"{origin}: {key} {knob} = {shown(value)} {why}; see search_spaces/default.toml") from None
    return Knobs(**values)
