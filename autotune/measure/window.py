"""A measurement window over a set of sources: begin, sample in the background, end.

The caller synchronises the device right before `begin()` and right before `end()`
(`torch.cuda.synchronize()` on every local GPU), so the window holds exactly the work it measures;
warm-up steps run before `begin()`. The window cannot sync for the caller: this library never
imports torch.

Energy per source comes from its counter where it has one and from trapezoid integration of its
sampled power otherwise; where both exist both are reported with their disagreement. A window
shorter than a sensor's update period is flagged (default) or extended (`short_window="extend"`,
which adds idle time and says so), never reported silently.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from autotune.measure import hwmon, units
from autotune.measure.errors import WindowError
from autotune.measure.phases import trapezoid_j
from autotune.measure.sampler import DEFAULT_PERIOD_S, PowerSampler


@dataclass
class SourceEnergy:
    """One source's figures over a window (or one component of the power model)."""

    kind: str
    label: str
    scope: str
    component: str | None
    within: str | None
    index: int | None
    energy_j: float | None
    method: str  # counter | integrated | model
    mean_power_w: float | None = None
    counter_j: float | None = None
    integrated_j: float | None = None
    flags: list[str] = field(default_factory=list)
    role: str = ""  # set by combine.assign_roles

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None and v != []}


@dataclass
class WindowResult:
    provenance: str  # measured | estimated | unavailable
    begin_s: float
    end_s: float
    entries: list[SourceEnergy]
    times_s: list[float] = field(default_factory=list)
    power_w: dict[str, list] = field(default_factory=dict)  # label -> power per tick (W)
    temperature_c: dict | None = None  # {"begin": {sensor: C}, "end": {sensor: C}}
    flags: list[str] = field(default_factory=list)
    model: dict | None = None  # the power model, for estimated results

    @property
    def window_s(self) -> float:
        return self.end_s - self.begin_s


class EnergyWindow:
    def __init__(self, sources, *, period_s: float = DEFAULT_PERIOD_S, short_window: str = "flag",
                 sysfs_root=None, clock=time.time, background: bool = True):
        if short_window not in ("flag", "extend"):
            raise ValueError(f"short_window must be 'flag' or 'extend', got {short_window!r}")
        self.sources, self.short_window, self.sysfs_root = list(sources), short_window, sysfs_root
        # background=False: no thread; the caller ticks `window.sampler` itself (deterministic tests).
        self.background = background
        self.sampler = PowerSampler(self.sources, period_s=period_s, clock=clock)
        self._temperature_begin: dict | None = None
        self._state = "new"

    def begin(self) -> None:
        """Call right after the device sync that closes warm-up."""
        if self._state != "new":
            raise WindowError("begin() called twice: use one EnergyWindow per measured window")
        self._temperature_begin = self._temperatures()
        self.begin_s = self.sampler.tick()
        if self.background:
            self.sampler.start()
        self._state = "open"

    def end(self) -> WindowResult:
        """Call right after the device sync that closes the measured work."""
        if self._state != "open":
            raise WindowError("end() without begin(): call begin() after the opening device sync")
        self._state = "closed"
        self.sampler.stop()
        flags = []
        longest_period_s = max((s.update_period_s for s in self.sources), default=0.0)
        short_by_s = self.begin_s + longest_period_s - self.sampler.clock()
        if short_by_s > 0 and self.short_window == "extend":
            time.sleep(short_by_s)
            flags.append(f"window extended by {short_by_s:.3f} s to the sensors' update period "
                         f"({longest_period_s} s): the extension is idle time")
        end_s = self.sampler.tick()
        entries = [self._source_energy(s, series, end_s - self.begin_s)
                   for s, series in zip(self.sources, self.sampler.series)]
        for label, error in self.sampler.read_errors.items():
            flags.append(f"{label}: reads failed during the window ({error})")
        return WindowResult(
            provenance="measured" if entries else "unavailable",
            begin_s=self.begin_s, end_s=end_s, entries=entries,
            times_s=list(self.sampler.series[0].times_s) if self.sources else [self.begin_s, end_s],
            power_w={s.label: series.derived_power_w() for s, series in zip(self.sources, self.sampler.series)},
            temperature_c=_temperature_block(self._temperature_begin, self._temperatures()),
            flags=flags,
        )

    def _source_energy(self, source, series, window_s: float) -> SourceEnergy:
        energies = [e for e in series.energy_j if e is not None]
        counter_j = energies[-1] - energies[0] if len(energies) >= 2 else None
        has_power = any(p is not None for p in series.power_w)
        integrated_j = trapezoid_j(series.times_s, series.power_w) if has_power else None
        # A counter that did not move over a real window is stuck (or too coarse): never report its 0 J.
        stuck = counter_j == 0.0 and window_s > 0
        energy_j = integrated_j if counter_j is None or stuck else counter_j
        flags = []
        if window_s < source.update_period_s:
            flags.append(f"window {window_s:.3f} s is shorter than the sensor's update period "
                         f"{source.update_period_s} s: the figure is not reliable")
        if counter_j == 0.0 and window_s > 0:
            flags.append("energy counter did not advance during the window: "
                         + ("integrated power used instead" if integrated_j is not None else "energy unavailable"))
        return SourceEnergy(
            kind=source.kind, label=source.label, scope=source.scope, component=source.component,
            within=source.within, index=source.index, energy_j=energy_j,
            method="counter" if counter_j is not None and not stuck else "integrated",
            mean_power_w=units.mean_power_w(energy_j, window_s),
            counter_j=counter_j if integrated_j is not None else None,
            integrated_j=integrated_j if counter_j is not None else None,
            flags=flags,
        )

    def _temperatures(self) -> dict:
        temperatures = {}
        for source in self.sources:
            temperature_c = source.read_temperature_c()
            if temperature_c is not None:
                temperatures[source.label] = temperature_c
        try:
            temperatures.update(hwmon.read_temperatures_c(self.sysfs_root))
        except Exception:  # temperature is a diagnostic: never fail a window for it
            pass
        return temperatures


def _temperature_block(begin: dict | None, end: dict) -> dict | None:
    if not begin and not end:
        return None
    return {"begin": begin or {}, "end": end}
