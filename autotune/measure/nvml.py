"""NVIDIA GPUs through NVML (nvidia-ml-py, imported as `pynvml` only when first used).

Totals come from the energy counter (`nvmlDeviceGetTotalEnergyConsumption`, millijoules since the
driver loaded, refreshed every 20-100 ms); timelines from instant power (`NVML_FI_DEV_POWER_INSTANT`,
milliwatts), falling back to the averaged reading. On Grace Hopper (GH200) the counter covers the
whole module (CPU + GPU + memory): such a source has scope `module`, and no CPU figure is ever added
on top of it.

All of pynvml sits behind `NvmlApi`, a thin adapter: the logic here is tested on CPU with a double.
"""

from __future__ import annotations

import os
from functools import lru_cache

from autotune.measure import units
from autotune.measure.base import PowerSource, ProbeResult, SourceStatus, checked_power_w
from autotune.measure.errors import NOT_PRESENT, SourceUnavailable, translate_nvml_control_error, translate_nvml_error

NVML_COUNTER_UPDATE_PERIOD_S = 0.1  # upper end of the 20-100 ms refresh NVIDIA documents


def is_grace_hopper(device_name: str) -> bool:
    """GH200 / GH100-Grace boards report module-scope energy."""
    name = device_name.upper()
    return "GH200" in name or "GRACE" in name


class NvmlApi:
    """The NVML calls this library makes, in its units. Every pynvml error leaves as SourceUnavailable."""

    def __init__(self):
        self._pynvml = None
        self._handles: dict[int, object] = {}

    def _lib(self):
        if self._pynvml is None:
            try:
                import pynvml
            except ImportError as exc:
                raise translate_nvml_error(exc) from None
            self._pynvml = pynvml
        return self._pynvml

    def _call(self, name: str, *args, translate=translate_nvml_error):
        lib = self._lib()
        try:
            return getattr(lib, name)(*args)
        except Exception as exc:  # pynvml.NVMLError and the like: translated in one place
            raise translate(exc) from None

    def _handle(self, index: int):
        if index not in self._handles:
            self._handles[index] = self._call("nvmlDeviceGetHandleByIndex", index)
        return self._handles[index]

    def init(self) -> None:
        self._call("nvmlInit")

    def shutdown(self) -> None:
        self._call("nvmlShutdown")

    def device_count(self) -> int:
        return int(self._call("nvmlDeviceGetCount"))

    def device_name(self, index: int) -> str:
        name = self._call("nvmlDeviceGetName", self._handle(index))
        return name.decode() if isinstance(name, bytes) else str(name)

    def device_uuid(self, index: int) -> str:
        uuid = self._call("nvmlDeviceGetUUID", self._handle(index))
        return uuid.decode() if isinstance(uuid, bytes) else str(uuid)

    def total_energy_mj(self, index: int) -> int:
        return int(self._call("nvmlDeviceGetTotalEnergyConsumption", self._handle(index)))

    def power_mw(self, index: int, *, instant: bool, module: bool = False) -> int:
        """Instant or averaged power; `module` asks for the whole-module scope (Grace Hopper)."""
        pynvml = self._lib()
        if not instant and not module:
            return int(self._call("nvmlDeviceGetPowerUsage", self._handle(index)))
        field = pynvml.NVML_FI_DEV_POWER_INSTANT if instant else pynvml.NVML_FI_DEV_POWER_AVERAGE
        return self._scoped_field(index, field, module)

    def _scoped_field(self, index: int, field: int, module: bool) -> int:
        pynvml = self._lib()
        scope = pynvml.NVML_POWER_SCOPE_MODULE if module else pynvml.NVML_POWER_SCOPE_GPU
        (value,) = self._call("nvmlDeviceGetFieldValues", self._handle(index), [(field, scope)])
        if value.nvmlReturn != 0:
            raise translate_nvml_error(pynvml.NVMLError(value.nvmlReturn))
        return int(value.value.uiVal)

    # --- power limits and clocks: reads need no privilege, changes need root or CAP_SYS_ADMIN ------

    def power_limits_mw(self, index: int, *, module: bool = False) -> dict[str, int]:
        """{"current", "default", "min", "max"} in mW; module scope through NVML's scoped field values."""
        pynvml, handle = self._lib(), self._handle(index)
        if module:
            fields = {"current": pynvml.NVML_FI_DEV_POWER_CURRENT_LIMIT, "default": pynvml.NVML_FI_DEV_POWER_DEFAULT_LIMIT,
                      "min": pynvml.NVML_FI_DEV_POWER_MIN_LIMIT, "max": pynvml.NVML_FI_DEV_POWER_MAX_LIMIT}
            return {key: self._scoped_field(index, field, True) for key, field in fields.items()}
        low, high = self._call("nvmlDeviceGetPowerManagementLimitConstraints", handle)
        return {"current": int(self._call("nvmlDeviceGetPowerManagementLimit", handle)),
                "default": int(self._call("nvmlDeviceGetPowerManagementDefaultLimit", handle)),
                "min": int(low), "max": int(high)}

    def set_power_limit_mw(self, index: int, limit_mw: int, *, module: bool = False) -> None:
        pynvml, handle = self._lib(), self._handle(index)
        if module:
            self._call("nvmlDeviceSetPowerManagementLimit_v2", handle, pynvml.NVML_POWER_SCOPE_MODULE, int(limit_mw),
                       translate=translate_nvml_control_error)
        else:
            self._call("nvmlDeviceSetPowerManagementLimit", handle, int(limit_mw), translate=translate_nvml_control_error)

    def sm_clocks_mhz(self, index: int) -> dict:
        """{"current", "max", "supported"}: the SM clock now, its maximum, and the clocks NVML accepts."""
        pynvml, handle = self._lib(), self._handle(index)
        memory_mhz = max(self._call("nvmlDeviceGetSupportedMemoryClocks", handle))
        supported = sorted(int(c) for c in self._call("nvmlDeviceGetSupportedGraphicsClocks", handle, memory_mhz))
        return {"current": int(self._call("nvmlDeviceGetClockInfo", handle, pynvml.NVML_CLOCK_SM)),
                "max": int(self._call("nvmlDeviceGetMaxClockInfo", handle, pynvml.NVML_CLOCK_SM)),
                "supported": supported}

    def applications_sm_clock_mhz(self, index: int) -> int:
        """The graphics (SM) clock the device's application clocks set, in MHz: what `srun --gpu-freq` sets (slurmd's
        gpu/nvml plugin calls nvmlDeviceSetApplicationsClocks); the maximum where nothing set them. No privilege."""
        pynvml = self._lib()
        return int(self._call("nvmlDeviceGetApplicationsClock", self._handle(index), pynvml.NVML_CLOCK_GRAPHICS))

    def sm_clocks_user_defined(self, index: int) -> bool:
        """Whether NVML gives a user's clock setting (locked or application clocks: `nvidia-smi -lgc`, `srun
        --gpu-freq`) as a reason the SM clock is held now. NVML has no query for a lock's range; this bit is what it
        tells (the event reasons, no privilege needed)."""
        pynvml, handle = self._lib(), self._handle(index)
        read = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        reasons = self._call(read.__name__, handle)
        return bool(int(reasons) & pynvml.nvmlClocksThrottleReasonUserDefinedClocks)

    def lock_sm_clocks_mhz(self, index: int, min_mhz: int, max_mhz: int) -> None:
        self._call("nvmlDeviceSetGpuLockedClocks", self._handle(index), int(min_mhz), int(max_mhz),
                   translate=translate_nvml_control_error)

    def reset_sm_clocks(self, index: int) -> None:
        self._call("nvmlDeviceResetGpuLockedClocks", self._handle(index), translate=translate_nvml_control_error)

    def temperature_c(self, index: int) -> float:
        return float(self._call("nvmlDeviceGetTemperature", self._handle(index), 0))  # 0 = NVML_TEMPERATURE_GPU


class NvmlGpuSource(PowerSource):
    kind = "nvml"

    def __init__(self, api: NvmlApi, index: int):
        self.api, self.device_name = api, api.device_name(index)
        self.module_scope = is_grace_hopper(self.device_name)
        scope = "module" if self.module_scope else "gpu"
        super().__init__(label=f"GPU {index} ({self.device_name})", scope=scope, component=scope,
                         index=index, unit="mJ, mW", update_period_s=NVML_COUNTER_UPDATE_PERIOD_S)
        self.has_counter = _supported(lambda: api.total_energy_mj(index))
        # A power out of range (an all-ones register) is a mode this GPU does not give.
        self.power_mode = next((mode for mode in ("instant", "average")
                                if _supported(lambda m=mode: self._power_w(m))), None)
        if not self.has_counter and self.power_mode is None:
            raise SourceUnavailable(NOT_PRESENT, f"GPU {index} reports neither energy nor power")

    def _power_w(self, mode: str) -> float:
        power_mw = self.api.power_mw(self.index, instant=mode == "instant", module=self.module_scope)
        return checked_power_w(units.mw_to_w(power_mw), f"NVML's {mode} power of GPU {self.index}", f"{power_mw} mW")

    def read_power_w(self) -> float | None:
        return None if self.power_mode is None else self._power_w(self.power_mode)

    def read_average_power_w(self) -> float | None:
        """The driver's own averaged power (1 s window on Ampere and newer), for comparison."""
        try:
            return self._power_w("average")
        except SourceUnavailable:
            return None

    def read_energy_j(self) -> float | None:
        return units.mj_to_j(self.api.total_energy_mj(self.index)) if self.has_counter else None

    def read_temperature_c(self) -> float | None:
        try:
            return self.api.temperature_c(self.index)
        except SourceUnavailable:
            return None

    def close(self) -> None:
        _supported(self.api.shutdown)

    def describe(self) -> dict:
        return {**super().describe(), "device_name": self.device_name, "counter": self.has_counter,
                "power": self.power_mode}


def _supported(read) -> bool:
    try:
        read()
        return True
    except SourceUnavailable:
        return False


def visible_indices(api, environ=None) -> list[int]:
    """NVML indices of the devices this job may use: CUDA_VISIBLE_DEVICES (indices or UUIDs), else all.

    CUDA numbers devices fastest-first, NVML by PCI bus; on the identical GPUs of one node the two agree.
    """
    environ = os.environ if environ is None else environ
    count = api.device_count()
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(range(count))
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if all(e.isdigit() for e in entries):
        return [int(e) for e in entries if int(e) < count]
    uuids = {api.device_uuid(i): i for i in range(count)}
    return [uuids[e] for e in entries if e in uuids]


def ranks_indices(api, ranks: int, environ=None) -> list[int]:
    """NVML indices of the devices a node's `ranks` probe ranks train on: the first `ranks` visible ones, as each
    rank takes the CUDA device of its local rank (trainer/distributed.py). A one-GPU probe on an eight-GPU node
    measured and capped all eight (a newcomer's trial): seven idle GPUs' joules, or another job's, and its limit."""
    return visible_indices(api, environ)[:ranks]


def probe(api: NvmlApi | None = None, ranks: int | None = None) -> ProbeResult:
    """One source per GPU (each holds one NVML init, released by its close()): every GPU of the node, or with `ranks`
    those a probe of that many ranks per node trains on (ranks_indices)."""
    api = api or NvmlApi()
    try:
        api.init()
    except SourceUnavailable as exc:
        return ProbeResult([], [SourceStatus("nvml", "NVIDIA GPUs", "gpu", "mJ, mW", False, exc.reason)])
    sources, missing = [], []
    try:
        count = api.device_count()
        for index in (range(count) if ranks is None else ranks_indices(api, ranks)):
            try:
                api.init()  # NVML counts inits: each source's close() gives one back
                sources.append(NvmlGpuSource(api, index))
            except SourceUnavailable as exc:
                _supported(api.shutdown)
                missing.append(SourceStatus("nvml", f"GPU {index}", "gpu", "mJ, mW", False, exc.reason))
        if count == 0:
            missing.append(SourceStatus("nvml", "NVIDIA GPUs", "gpu", "mJ, mW", False,
                                        f"{NOT_PRESENT}: the driver sees no GPU"))
    except SourceUnavailable as exc:
        missing.append(SourceStatus("nvml", "NVIDIA GPUs", "gpu", "mJ, mW", False, exc.reason))
    finally:
        _supported(api.shutdown)
    return ProbeResult(sources, missing)


@lru_cache(maxsize=1)
def is_available() -> bool:
    """Cached: whether NVML sees at least one GPU with energy or power. Never raises."""
    try:
        result = probe()
    except Exception:  # an availability probe must not fail for what the user did not ask for
        return False
    for source in result.sources:
        source.close()
    return bool(result.sources)
