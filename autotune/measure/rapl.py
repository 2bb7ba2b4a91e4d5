"""x86 CPU package and DRAM energy through RAPL (Linux powercap).

Zones live at <root>/class/powercap/intel-rapl:N (package-N, or psys) with sub-zones
intel-rapl:N:M (core, uncore, dram). `energy_uj` counts microjoules and wraps at
`max_energy_range_uj`: the counter here adds the range for every decrease it sees, so it must be read
more often than the wrap time (the sampler does; a package at 300 W wraps after ~15 min).
Domains nest (psys > package > core/uncore): only package-N (cpu) and dram (memory) are used, never
summed with what contains or is contained in them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from autotune.measure import units
from autotune.measure.base import PowerSource, ProbeResult, SourceStatus, probe_finds_sources
from autotune.measure.errors import NO_DRIVER, NOT_PRESENT, SourceUnavailable, out_of_range
from autotune.measure.sysfs import SensorFile, missing_root_note, read_int, read_text, sysfs_root

RAPL_UPDATE_PERIOD_S = 0.001  # the MSRs refresh about every millisecond
NESTED_DOMAINS = {"core": "package", "uncore": "package", "psys": "platform (contains the packages)"}


class WrapCounter:
    """Unwinds a counter that wraps at `max_value`: one wrap per decrease between two reads."""

    def __init__(self, max_value: int):
        self.max_value = max_value
        self._last: int | None = None
        self._offset = 0

    def update(self, raw: int) -> int:
        if self._last is not None and raw < self._last:
            self._offset += self.max_value
        self._last = raw
        return self._offset + raw


class RaplEnergySource(PowerSource):
    kind = "rapl"

    def __init__(self, zone_dir: Path, name: str):
        if name.startswith("package"):
            scope, component = "package", "cpu"
            index = int(name.rsplit("-", 1)[1]) if name.rsplit("-", 1)[-1].isdigit() else None
        elif name == "dram":
            scope, component, index = "dram", "memory_interconnect", _package_index(zone_dir)
        else:
            raise SourceUnavailable(NOT_PRESENT, f"{zone_dir}: RAPL domain '{name}' is not used")
        label = name if scope == "package" else f"dram (package-{index})"
        super().__init__(label=label, scope=scope, component=component, index=index, unit="uJ",
                         update_period_s=RAPL_UPDATE_PERIOD_S)
        self.zone_dir = zone_dir
        range_file = zone_dir / "max_energy_range_uj"
        self.max_energy_uj = read_int(range_file)
        if self.max_energy_uj <= 0:  # a counter that wraps at 0 or below unwinds into any figure at all
            raise out_of_range(range_file, f"{self.max_energy_uj} uJ", "not a range a counter wraps at")
        self._energy_file = SensorFile(zone_dir / "energy_uj")
        try:
            self._energy_uj()  # a reading out of range makes the zone unavailable now, not in the window
        except SourceUnavailable:
            self.close()
            raise
        self._counter = WrapCounter(self.max_energy_uj)

    def _energy_uj(self) -> int:
        """The counter as read, within 0 and the range it wraps at: a decrease inside it is a wrap (WrapCounter), a
        value outside it no reading of this counter."""
        energy_uj = self._energy_file.read_int()
        if not 0 <= energy_uj <= self.max_energy_uj:
            raise out_of_range(self._energy_file.path, f"{energy_uj} uJ",
                               f"outside 0 to max_energy_range_uj ({self.max_energy_uj} uJ), where the counter wraps")
        return energy_uj

    def read_power_w(self) -> None:
        return None

    def read_energy_j(self) -> float:
        return units.uj_to_j(self._counter.update(self._energy_uj()))

    def close(self) -> None:
        self._energy_file.close()


def _package_index(zone_dir: Path) -> int | None:
    """intel-rapl:N:M -> N (the package a sub-zone belongs to)."""
    parts = zone_dir.name.split(":")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def probe(root=None) -> ProbeResult:
    """Package and DRAM zones under <root>/class/powercap, and the reason for what is missing."""
    powercap = sysfs_root(root) / "class" / "powercap"
    if not powercap.is_dir():
        why = missing_root_note(sysfs_root(root)) or " (no intel_rapl, or a VM)"
        return ProbeResult([], [SourceStatus("rapl", "RAPL", "package", "uJ", False, f"{NO_DRIVER}: {powercap} is absent{why}")])
    sources, missing = [], []
    for zone_dir in sorted(powercap.glob("intel-rapl:*")):
        try:
            name = read_text(zone_dir / "name")
        except SourceUnavailable as exc:
            missing.append(SourceStatus("rapl", zone_dir.name, "?", "uJ", False, exc.reason))
            continue
        if name in NESTED_DOMAINS:
            continue  # nested in (or containing) a package: summing it would double-count
        try:
            sources.append(RaplEnergySource(zone_dir, name))
        except SourceUnavailable as exc:
            scope = "dram" if name == "dram" else "package"
            missing.append(SourceStatus("rapl", name, scope, "uJ", False, exc.reason))
    if not sources and not missing:
        missing.append(SourceStatus("rapl", "RAPL", "package", "uJ", False,
                                    f"{NOT_PRESENT}: no intel-rapl zones under {powercap}"))
    return ProbeResult(sources, missing)


@lru_cache(maxsize=8)
def is_available(root: str | None = None) -> bool:
    """Cached: whether at least one RAPL package or DRAM counter is readable. Never raises."""
    return probe_finds_sources(probe, root)
