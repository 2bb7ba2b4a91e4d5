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
    # What discovery could not decide and counted anyway, one sentence each: the flags of the energy block the
    # sources measure (meter.NodeMeter), so the figure says what it may hold.
    notes: list[str] = field(default_factory=list)

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


def discover(root=None, *, kinds=None, nvml_api=None, nvml_ranks: int | None = None) -> Discovery:
    """Every readable source on this node under the sysfs `root` (default: $AUTOTUNE_SYSFS_ROOT or /sys); with
    `nvml_ranks`, of the NVIDIA GPUs only those a probe of that many ranks per node trains on (nvml.ranks_indices)."""
    root = sysfs_root(root)
    probes = {"nvml": lambda: nvml.probe(nvml_api, nvml_ranks), "hwmon": lambda: hwmon.probe(root),
              "rapl": lambda: rapl.probe(root)}
    found = Discovery()
    for kind in enabled_kinds(kinds):
        try:
            result: ProbeResult = probes[kind]()
        except Exception as exc:  # a probe must not fail for what the user did not ask for
            result = ProbeResult([], [SourceStatus(kind, kind, "?", "?", False, f"probe failed: {exc}")])
        found.sources.extend(result.sources)
        found.statuses.extend(result.statuses)
    if nvml_ranks is not None:
        _only_the_ranks_modules(found, nvml_ranks)
    return found


def _only_the_ranks_modules(found: Discovery, ranks: int) -> None:
    """On a Grace Hopper node, the hwmon sensors of the modules the probe's `ranks` do not train on go: socket N is
    GPU N's module, and each would add a module's energy the probe did not spend. With NVML (module counters) its
    choice of GPUs names them; without (no driver library, or AUTOTUNE_ENERGY_SOURCES=hwmon) the same choice
    (nvml.ranks_indices) is made of the modules, every one of which was counted: a one-rank probe's figure held four
    modules' energy. Where that choice cannot be made, all are kept and the energy block's note says so."""
    sockets = {s.index for s in found.sources if s.kind == "hwmon"}
    if not sockets:
        return
    if any(s.kind == "nvml" for s in found.sources):
        modules = {s.index for s in found.sources if s.kind == "nvml" and s.scope == "module"}
        if not modules:
            return
    else:
        modules, why_unknown = _ranks_sockets(ranks, max(sockets) + 1)
        if why_unknown:
            found.notes.append(f"hwmon: the sensors of all {len(sockets)} GH200 modules are counted, not only those of "
                               f"the probe's {ranks} GPU{'' if ranks == 1 else 's'} per node: {why_unknown}; the node "
                               "figure may hold other modules' energy (make NVML available to count the probe's alone)")
            return
    others = [s for s in found.sources if s.kind == "hwmon" and s.index not in modules]
    for source in others:
        source.close()
    found.sources[:] = [s for s in found.sources if s not in others]


class _UuidWithoutNvml(Exception):
    """CUDA_VISIBLE_DEVICES names a device by UUID, and no NVML is here to say which socket's it is."""


class _ModulesAsGpus:
    """A node's GPUs as its GH200 modules count them (one GPU each, socket N GPU N's, as NVML numbers them), to make
    nvml.ranks_indices' choice without NVML. It knows no device's UUID: only NVML matches one to a socket."""

    def __init__(self, modules: int):
        self.modules = modules

    def device_count(self) -> int:
        return self.modules

    def device_uuid(self, index: int) -> str:
        raise _UuidWithoutNvml


def _ranks_sockets(ranks: int, modules: int) -> tuple[set[int], str | None]:
    """The sockets of the GPUs a probe's `ranks` per node train on, or why they cannot be known without NVML."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        sockets = set(nvml.ranks_indices(_ModulesAsGpus(modules), ranks))
    except _UuidWithoutNvml:
        return set(), f"CUDA_VISIBLE_DEVICES={visible} names devices by UUID, which only NVML matches to a module"
    if not sockets:
        return set(), f"CUDA_VISIBLE_DEVICES={visible} names none of the node's {modules} modules"
    return sockets, None


def is_available(kind: str, root=None) -> bool:
    """Cached per module; never raises."""
    if kind == "nvml":
        return nvml.is_available()
    if kind in ("hwmon", "rapl"):
        module = hwmon if kind == "hwmon" else rapl
        return module.is_available(str(sysfs_root(root)))
    return False
