"""GH200 board power sensors through Linux hwmon (ACPI power meter), found by their labels.

Each sensor directory holds `power1_oem_info` ("Module Power Socket 0", "Grace Power Socket 0",
"CPU Power Socket 0", "SysIO Power Socket 0"), `power1_average` in microwatts and
`power1_average_interval` in milliseconds. There is no energy counter: the window integrates power
over time. Module power covers the whole superchip (CPU, GPU, HBM, LPDDR, C2C); Grace, CPU and SysIO
are inside it and are never added on top.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from autotune.measure import units
from autotune.measure.base import PowerSource, ProbeResult, SourceStatus, checked_power_w, probe_finds_sources
from autotune.measure.errors import NO_DRIVER, NOT_PRESENT, SourceUnavailable
from autotune.measure.sysfs import SensorFile, missing_root_note, read_int, read_text, sysfs_root

LABEL_PATTERN = re.compile(r"^(Module|Grace|CPU|SysIO) Power Socket (\d+)$")
# label prefix -> (scope, component, within)
SENSOR_KINDS = {
    "Module": ("module", "module", None),
    "Grace": ("grace", "cpu", "module"),
    "CPU": ("cpu", "cpu", "module"),
    "SysIO": ("sysio", "memory_interconnect", "module"),
}
DEFAULT_AVERAGE_INTERVAL_MS = 50  # NVIDIA's default for power1_average_interval


class HwmonPowerSource(PowerSource):
    kind = "hwmon"

    def __init__(self, sensor_dir: Path, label: str):
        match = LABEL_PATTERN.match(label)
        if not match:
            raise SourceUnavailable(NOT_PRESENT, f"{sensor_dir}: '{label}' is not a GH200 power sensor")
        scope, component, within = SENSOR_KINDS[match.group(1)]
        try:
            interval_ms = read_int(sensor_dir / "power1_average_interval")
        except SourceUnavailable:
            interval_ms = DEFAULT_AVERAGE_INTERVAL_MS
        if interval_ms <= 0:  # no averaging interval: read as an unreadable one, not as a sensor that never lags
            interval_ms = DEFAULT_AVERAGE_INTERVAL_MS
        super().__init__(label=label, scope=scope, component=component, within=within,
                         index=int(match.group(2)), unit="uW", update_period_s=units.ms_to_s(interval_ms))
        self.sensor_dir = sensor_dir
        self._power_file = SensorFile(sensor_dir / "power1_average")
        try:
            self.read_power_w()  # a reading out of range makes the sensor unavailable now, not in the window
        except SourceUnavailable:
            self.close()
            raise

    def read_power_w(self) -> float:
        power_uw = self._power_file.read_int()
        return checked_power_w(units.uw_to_w(power_uw), self._power_file.path, f"{power_uw} uW")

    def read_energy_j(self) -> None:
        return None

    def close(self) -> None:
        self._power_file.close()


def _sensor_dirs(hwmon_class: Path) -> list[Path]:
    """Directories holding a power1_oem_info file: hwmonN/device (usual) or hwmonN itself."""
    found = []
    for hwmon in sorted(hwmon_class.glob("hwmon*")):
        for candidate in (hwmon / "device", hwmon):
            if (candidate / "power1_oem_info").exists():
                found.append(candidate)
                break
    return found


def probe(root=None) -> ProbeResult:
    """Every GH200 power sensor under <root>/class/hwmon, and the reason for what is missing."""
    hwmon_class = sysfs_root(root) / "class" / "hwmon"
    if not hwmon_class.is_dir():
        return ProbeResult([], [SourceStatus("hwmon", "GH200 power sensors", "module", "uW", False,
                                             f"{NO_DRIVER}: {hwmon_class} is absent{missing_root_note(sysfs_root(root))}")])
    sources, missing = [], []
    for sensor_dir in _sensor_dirs(hwmon_class):
        try:
            label = read_text(sensor_dir / "power1_oem_info")
        except SourceUnavailable as exc:
            missing.append(SourceStatus("hwmon", str(sensor_dir), "?", "uW", False, exc.reason))
            continue
        match = LABEL_PATTERN.match(label)
        if not match:
            continue  # an ACPI power meter that is not one of the GH200 sensors
        try:
            sources.append(HwmonPowerSource(sensor_dir, label))
        except SourceUnavailable as exc:
            missing.append(SourceStatus("hwmon", label, SENSOR_KINDS[match.group(1)][0], "uW", False, exc.reason))
    if not sources and not missing:
        missing.append(SourceStatus("hwmon", "GH200 power sensors", "module", "uW", False,
                                    f"{NOT_PRESENT}: no power1_oem_info under {hwmon_class} (not a GH200 node)"))
    sources.sort(key=lambda s: (s.index, list(SENSOR_KINDS).index(s.label.split()[0])))
    return ProbeResult(sources, missing)


@lru_cache(maxsize=8)
def is_available(root: str | None = None) -> bool:
    """Cached: whether this node has at least one readable GH200 power sensor. Never raises."""
    return probe_finds_sources(probe, root)


def read_temperatures_c(root=None) -> dict[str, float]:
    """Every readable hwmon temp*_input (millidegrees) as {"hwmonN/<name>/<label>": degrees C}."""
    temperatures: dict[str, float] = {}
    hwmon_class = sysfs_root(root) / "class" / "hwmon"
    for hwmon in sorted(hwmon_class.glob("hwmon*")) if hwmon_class.is_dir() else []:
        try:
            name = read_text(hwmon / "name")
        except SourceUnavailable:
            name = hwmon.name
        for temp_input in sorted(hwmon.glob("temp*_input")):
            sensor = temp_input.name[: -len("_input")]
            try:
                sensor = read_text(hwmon / f"{sensor}_label")
            except SourceUnavailable:
                pass
            try:
                temperatures[f"{hwmon.name}/{name}/{sensor}"] = units.millidegree_to_c(read_int(temp_input))
            except SourceUnavailable:
                continue
    return temperatures
