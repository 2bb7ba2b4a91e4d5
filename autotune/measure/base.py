"""The one small interface every power or energy source implements, and what discovery reports.

A source reads one sensor on this node. It has at least one of two readings:
- `read_power_w()`: power now (instant or the sensor's short average), or None if it has no power;
- `read_energy_j()`: a cumulative energy counter in joules, monotonic (wrap-around already undone
  by the source), or None if it has no counter.
Optional hooks: `read_temperature_c()` (None by default) and `close()`.

What the source covers is data, not code: `scope` names the hardware it measures (gpu, module,
grace, cpu, sysio, package, dram), `component` says which bucket of the node total it feeds
(gpu, cpu, memory_interconnect, module), and `within` names the scope it is nested in (its energy is
already inside that scope's figure and is never added on top), or None for a top-level source.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from autotune.measure.errors import out_of_range

COMPONENTS = ("gpu", "cpu", "memory_interconnect", "module")
# The most one sensor of a node reads: none (a GPU, a superchip module, a CPU socket) draws 10 kW; the largest, a GB200
# superchip, is rated about 2.7 kW. More is a bad read (an all-ones register), as a negative power is.
MAX_SENSOR_POWER_W = 10_000.0


def checked_power_w(power_w: float, where, reading: str) -> float:
    """`power_w` where it is a power one sensor can read (0 to MAX_SENSOR_POWER_W), else SourceUnavailable naming
    `where` (the file, the GPU) and its `reading` in the sensor's own unit."""
    if power_w < 0:
        raise out_of_range(where, reading, "a negative power")
    if power_w > MAX_SENSOR_POWER_W:
        raise out_of_range(where, reading, f"more than the {MAX_SENSOR_POWER_W:g} W no one sensor of a node draws")
    return power_w


class PowerSource(ABC):
    kind: str = "?"  # nvml / hwmon / rapl

    def __init__(self, *, label: str, scope: str, component: str | None, within: str | None = None,
                 index: int | None = None, unit: str = "W", update_period_s: float = 0.0):
        assert component is None or component in COMPONENTS, component
        self.label, self.scope, self.component, self.within = label, scope, component, within
        self.index = index  # GPU index or socket number on this node, where the sensor has one
        self.unit = unit  # what the sensor itself speaks, for `autotune sensors`
        # How often the sensor refreshes (counter or averaged power): a shorter window is flagged.
        self.update_period_s = update_period_s

    @abstractmethod
    def read_power_w(self) -> float | None:
        """Power now in watts; None when this source only has an energy counter."""

    @abstractmethod
    def read_energy_j(self) -> float | None:
        """Cumulative energy in joules (monotonic, wraps undone); None when there is no counter."""

    def read_temperature_c(self) -> float | None:
        """Optional hook: a temperature that belongs to this source, in degrees Celsius."""
        return None

    def close(self) -> None:
        """Optional hook: release handles."""

    @property
    def counted(self) -> bool:
        """Whether this source's energy is part of the node total (nested sources are not)."""
        return self.component is not None and self.within is None

    def describe(self) -> dict:
        return {"kind": self.kind, "label": self.label, "scope": self.scope, "unit": self.unit,
                "component": self.component, "within": self.within, "index": self.index}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r}, scope={self.scope!r})"


@dataclass(frozen=True)
class SourceStatus:
    """One row of `autotune sensors`: a source found (available) or missing, and why."""

    kind: str
    label: str
    scope: str
    unit: str
    available: bool
    reason: str = ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "label": self.label, "scope": self.scope, "unit": self.unit,
                "available": self.available, "reason": self.reason}


def status_of(source: PowerSource) -> SourceStatus:
    note = "" if source.within is None else f"nested in {source.within}: shown, never added on top"
    return SourceStatus(source.kind, source.label, source.scope, source.unit, True, note)


@dataclass
class ProbeResult:
    """What one vendor module found on this node: live sources and the statuses of missing ones."""

    sources: list
    missing: list

    @property
    def statuses(self) -> list[SourceStatus]:
        return [status_of(s) for s in self.sources] + list(self.missing)


def probe_finds_sources(probe, root) -> bool:
    """Whether `probe(root)` finds a readable source; closes what it opened. Never raises: an
    availability check must not fail for what the user did not ask for."""
    try:
        result = probe(root)
    except Exception:  # noqa: BLE001
        return False
    for source in result.sources:
        source.close()
    return bool(result.sources)
