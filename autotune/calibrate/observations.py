"""One observation the simulator is calibrated against: a candidate, a metric and its measured value.

An observation is absolute (the candidate's time, energy, TFLOP/s or power) or relative (the ratio of
the candidate's metric to another candidate's, as a published "saving of s%" is); a published bound
(">512 TFLOP/s") counts as an error only when the prediction is on the wrong side of it.
Every value is checked where it is read: one line names the observation, the problem and the fix.
A configuration must be a valid candidate (the space's rules), and two figures of one configuration
must agree as repeats of one measurement do (`repeated_figures`).
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.counted import counted
from autotune.candidate import Candidate, Knobs, checked_knob_table
from autotune.checks import checked_number
from autotune.errors import ConfigError
from autotune.space import check_candidate

# Metric -> what it is (per GPU where it says so); keys of the error tables.
METRICS = {
    "time_s": "time to solution, s",
    "energy_kj": "energy to solution over every module, kJ",
    "tflops": "model TFLOP/s per GPU",
    "power_w": "mean GPU power per GPU, W",
    "module_power_w": "mean module power per GPU (GPU + host share + memory), W",
}
BOUNDS = ("lower", "upper")
# Two figures of one configuration and metric further apart than this are not repeats of one
# measurement (repeated probes of a candidate on one node differ by 1-3%, `autotune run --repeats`):
# one is wrong, or the system changed between them, and a fit through both would fit neither.
REPEAT_TOLERANCE = 0.10


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
    derived: bool = False  # computed from the record's other figures (a GPU power from a GPU-only energy), not read


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
    return checked_knob_table(raw, f"{origin}: {key} knobs")


def checked_candidate(origin: str, key: str, candidate: Candidate, fix: str) -> Candidate:
    """`candidate`, or one line naming the validity rule it breaks, as `autotune space` words it.
    The memory estimate is not asked: a figure shows the configuration ran, and the estimate keeps
    headroom (the GH200 study's 7b-scaled ran in what it puts at 88.3 GiB of 86.4 usable)."""
    check = check_candidate(candidate)
    if check.memory is None:  # a broken rule; one that only exceeds memory has an estimate
        raise ConfigError(f"{origin}: {key} is not a valid candidate: {check.reason}; {fix}")
    return candidate


def _cited(o: Observation) -> str:
    return f"{o.id!r} from {o.source}"


def repeated_figures(observations: list[Observation]) -> list[str]:
    """Figures that give one metric of one configuration more than once (a configuration under two
    names, a candidate two studies measured): one line per set of sources when they agree within
    REPEAT_TOLERANCE (both are fitted, as repeats), a ConfigError naming both figures when not.
    Bounds are left out: two lower bounds of one figure do not contradict each other."""
    groups: dict[tuple, list[Observation]] = {}
    for o in observations:
        if o.bound is None:
            groups.setdefault((o.candidate, o.metric, o.relative_to), []).append(o)
    agreeing: dict[tuple, list] = {}  # sources -> [configurations, largest gap]
    for (candidate, metric, relative_to), same in groups.items():
        if len(same) < 2:
            continue
        low, high = min(same, key=lambda o: o.value), max(same, key=lambda o: o.value)
        apart = high.value / low.value - 1.0
        if apart > REPEAT_TOLERANCE:
            what = f"{metric} ratio" if relative_to is not None else metric
            raise ConfigError(
                f"{_cited(low)} and {_cited(high)} give the {what} of one configuration (model, knobs and "
                f"workload) as {low.value:.5g} and {high.value:.5g}, {apart:.0%} apart, more than repeats of one "
                f"measurement differ ({REPEAT_TOLERANCE:.0%}): one is wrong or the system changed between them; "
                f"leave the wrong one out (--exclude {low.id} or --exclude {high.id}), or measure it again, or "
                "calibrate against each source apart"
            )
        seen = agreeing.setdefault(tuple(sorted({o.source for o in same})), [set(), 0.0])
        seen[0].add(candidate)
        seen[1] = max(seen[1], apart)
    return [f"{_listed(sources)}: {counted(len(configurations), 'configuration')} given more than once, at most {gap:.1%} apart: "
            "fitted as repeats, and left out together" for sources, (configurations, gap) in agreeing.items()]


def _listed(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
