"""The factory: probe what this node has, in order (NVML, GH200 hwmon, RAPL), and say why not.

`discover()` never raises for a missing or broken source: it records a SourceStatus with the reason
(not present, permission denied, no driver, ...). AUTOTUNE_ENERGY_SOURCES (e.g. "hwmon,rapl")
limits the kinds probed, for a node where one kind is known to be wrong or for tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from autotune.counted import agreeing
from autotune.measure import hwmon, nvml, rapl
from autotune.measure.base import PowerSource, ProbeResult, SourceStatus
from autotune.measure.sysfs import sysfs_root

SOURCE_KINDS = ("nvml", "hwmon", "rapl")
SOURCES_ENV = "AUTOTUNE_ENERGY_SOURCES"


@dataclass
class Discovery:
    sources: list[PowerSource] = field(default_factory=list)
    statuses: list[SourceStatus] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return bool(self.sources)

    def close(self) -> None:
        for source in self.sources:
            source.close()


def enabled_kinds(kinds=None) -> tuple[str, ...]:
    if kinds is None:
        raw = os.environ.get(SOURCES_ENV, "")
        kinds = [k.strip() for k in raw.split(",") if k.strip()] or SOURCE_KINDS
    unknown = [k for k in kinds if k not in SOURCE_KINDS]
    if unknown:
        from autotune.errors import UserError

        raise UserError(f"unknown energy source {agreeing(len(unknown), 'kind', 'kinds')} {', '.join(unknown)} in {SOURCES_ENV}: "
                        f"use a comma list of {', '.join(SOURCE_KINDS)}")
    return tuple(k for k in SOURCE_KINDS if k in kinds)


def discover(root=None, *, kinds=None, nvml_api=None) -> Discovery:
    """Every readable source on this node under the sysfs `root` (default: $AUTOTUNE_SYSFS_ROOT or /sys)."""
    root = sysfs_root(root)
    probes = {"nvml": lambda: nvml.probe(nvml_api), "hwmon": lambda: hwmon.probe(root),
              "rapl": lambda: rapl.probe(root)}
    found = Discovery()
    for kind in enabled_kinds(kinds):
        try:
            result: ProbeResult = probes[kind]()
        except Exception as exc:  # a probe must not fail for what the user did not ask for
            result = ProbeResult([], [SourceStatus(kind, kind, "?", "?", False, f"probe failed: {exc}")])
        found.sources.extend(result.sources)
        found.statuses.extend(result.statuses)
    return found


def is_available(kind: str, root=None) -> bool:
    """Cached per module; never raises."""
    if kind == "nvml":
        return nvml.is_available()
    if kind in ("hwmon", "rapl"):
        module = hwmon if kind == "hwmon" else rapl
        return module.is_available(str(sysfs_root(root)))
    return False
