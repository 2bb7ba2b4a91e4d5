"""Fake sysfs trees, a fake clock and an NVML test double for the measurement tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

from autotune.measure.base import PowerSource
from autotune.measure.errors import NEEDS_PRIVILEGE, DeviceControlError, SourceUnavailable

GH200_LABELS = ("Module", "Grace", "CPU", "SysIO")
# Watts written per sensor kind (socket s adds s watts, so every sensor is distinguishable).
GH200_POWER_W = {"Module": 600.0, "Grace": 80.0, "CPU": 60.0, "SysIO": 20.0}


def _write(path: Path, text) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{text}\n")
    return path


class Gh200Tree:
    """<root>/class/hwmon/hwmonN/device/power1_* for 4 labels x `sockets` sockets."""

    def __init__(self, root: Path, sockets: int = 4):
        self.root = root
        self.files: dict[str, Path] = {}
        n = 0
        for socket in range(sockets):
            for kind in GH200_LABELS:
                device = root / "class" / "hwmon" / f"hwmon{n}" / "device"
                label = f"{kind} Power Socket {socket}"
                _write(device / "power1_oem_info", label)
                _write(device / "power1_average_interval", 50)
                self.files[label] = device / "power1_average"
                self.set_power_w(label, GH200_POWER_W[kind] + socket)
                n += 1
        thermal = root / "class" / "hwmon" / f"hwmon{n}"
        _write(thermal / "name", "gh200_thermal")
        self.temperature_file = _write(thermal / "temp1_input", 45000)

    def set_power_w(self, label: str, power_w: float) -> None:
        _write(self.files[label], int(round(power_w * 1e6)))  # microwatts

    def set_all_w(self, kind: str, power_w: float) -> None:
        for label in self.files:
            if label.startswith(f"{kind} "):
                self.set_power_w(label, power_w)


class RaplTree:
    """<root>/class/powercap/intel-rapl:0 (package-0) with core/dram sub-zones and a psys zone."""

    def __init__(self, root: Path, max_energy_range_uj: int = 1_000_000_000, start_uj: int = 0):
        base = root / "class" / "powercap"
        self.max_energy_range_uj = max_energy_range_uj
        self.package = base / "intel-rapl:0"
        self.dram = base / "intel-rapl:0:1"
        for zone, name in ((self.package, "package-0"), (base / "intel-rapl:0:0", "core"),
                           (self.dram, "dram"), (base / "intel-rapl:1", "psys")):
            _write(zone / "name", name)
            _write(zone / "max_energy_range_uj", max_energy_range_uj)
            _write(zone / "energy_uj", start_uj)

    def set_energy_uj(self, zone: Path, energy_uj: int) -> None:
        _write(zone / "energy_uj", energy_uj % self.max_energy_range_uj)


class FakeClock:
    def __init__(self, start_s: float = 1_000.0):
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


FAKE_NVML_STATE_ENV = "AUTOTUNE_FAKE_NVML_STATE"
# The double for AUTOTUNE_NVML_API in subprocesses (PYTHONPATH must hold tests/measure).
FAKE_NVML_API_SPEC = "measure_fakes:FakeNvml.from_env"
SUPPORTED_SM_CLOCKS_MHZ = list(range(345, 1981, 15))  # an H100's graphics clocks, 15 MHz apart


def _device_controls(name: str) -> dict:
    """Power limits (mW) and clocks as NVML reports them: a GH200 module (680 W) or an H100 SXM (700 W)."""
    default_mw = 680_000 if "GH200" in name.upper() else 700_000
    return {"limit_mw": default_mw, "default_mw": default_mw, "min_mw": 200_000, "max_mw": default_mw,
            "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980, "locked_mhz": None}


class FakeNvml:
    """Test double for autotune.measure.nvml.NvmlApi: per-GPU counters (mJ) and power (mW), power
    limits and locked clocks, and a switch for NVML's NO_PERMISSION on changes (`permission`).

    With `state_path`, the limits, clocks and permission live in that JSON file, read and written on
    every call: a probe subprocess (AUTOTUNE_NVML_API=FAKE_NVML_API_SPEC, AUTOTUNE_FAKE_NVML_STATE=path)
    changes the same fake GPUs the test then inspects, even after the subprocess was killed.
    """

    def __init__(self, names=("NVIDIA H100 80GB HBM3",), *, init_error: SourceUnavailable | None = None,
                 counter=True, instant=True, permission=True, state_path: Path | None = None):
        self.names = list(names)
        self.counter_mj = [10_000_000 for _ in names]
        self.gpu_power_mw = [300_000 for _ in names]
        self.init_error, self.counter, self.instant = init_error, counter, instant
        self.inits = 0
        self.module_queries = 0
        self.state_path = Path(state_path) if state_path else None
        self._state = {"names": self.names, "permission": permission,
                       "devices": [_device_controls(n) for n in self.names], "changes": []}
        if self.state_path:
            self._save()

    @classmethod
    def from_env(cls) -> "FakeNvml":
        """The fake whose state file AUTOTUNE_FAKE_NVML_STATE names (written by the test beforehand)."""
        path = Path(os.environ[FAKE_NVML_STATE_ENV])
        fake = cls(names=json.loads(path.read_text())["names"])
        fake.state_path = path
        return fake

    # --- control state: in memory, or in the shared file ---------------------------------------------

    def _load(self) -> dict:
        if self.state_path:
            self._state = json.loads(self.state_path.read_text())
        return self._state

    def _save(self) -> None:
        if self.state_path:
            tmp = self.state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self._state))
            tmp.replace(self.state_path)

    def device(self, index: int) -> dict:
        """The control state of one fake GPU (a copy when file-backed: call again after a change)."""
        return self._load()["devices"][index]

    def set_board_default_mw(self, index: int, default_mw: int) -> None:
        """Another board's (or a site's firmware) default limit: an H100 PCIe's 350 W, say; the GPU at it, as after boot."""
        state = self._load()
        state["devices"][index].update(limit_mw=default_mw, default_mw=default_mw, max_mw=default_mw)
        self._save()

    @property
    def permission(self) -> bool:
        return self._load()["permission"]

    @permission.setter
    def permission(self, allowed: bool) -> None:
        self._load()["permission"] = allowed
        self._save()

    @property
    def changes(self) -> list:
        """Every change made, in order: ["limit", index, mW, module] / ["lock", index, min, max] / ["reset", index]."""
        return self._load()["changes"]

    def _change(self, index: int, entry: list, **updates) -> None:
        state = self._load()
        if not state["permission"]:
            raise DeviceControlError(NEEDS_PRIVILEGE)
        state["devices"][index].update(updates)
        state["changes"].append(entry)
        self._save()

    # --- the NvmlApi surface -------------------------------------------------------------------

    def init(self):
        if self.init_error:
            raise self.init_error
        self.inits += 1

    def shutdown(self):
        self.inits -= 1

    def device_count(self):
        return len(self.names)

    def device_name(self, index):
        return self.names[index]

    def device_uuid(self, index):
        return f"GPU-fake-{index}"

    def total_energy_mj(self, index):
        if not self.counter:
            raise SourceUnavailable("not supported", "double without counter")
        return self.counter_mj[index]

    def power_mw(self, index, *, instant, module=False):
        if instant and not self.instant:
            raise SourceUnavailable("not supported", "double without instant power")
        self.module_queries += int(module)
        return self.gpu_power_mw[index]

    def temperature_c(self, index):
        return 50.0 + index

    def power_limits_mw(self, index, *, module=False):
        d = self.device(index)
        return {"current": d["limit_mw"], "default": d["default_mw"], "min": d["min_mw"], "max": d["max_mw"]}

    def set_power_limit_mw(self, index, limit_mw, *, module=False):
        d = self.device(index)
        if not d["min_mw"] <= limit_mw <= d["max_mw"]:
            raise DeviceControlError(f"NVML refused the change (invalid argument: {limit_mw} mW)")
        self._change(index, ["limit", index, limit_mw, module], limit_mw=limit_mw)

    def sm_clocks_mhz(self, index):
        d = self.device(index)
        current = d["sm_clock_mhz"] if d["locked_mhz"] is None else min(d["sm_clock_mhz"], d["locked_mhz"][1])
        return {"current": current, "max": d["max_sm_clock_mhz"], "supported": SUPPORTED_SM_CLOCKS_MHZ}

    def applications_sm_clock_mhz(self, index):
        """What srun --gpu-freq set (the state's "applications_mhz"), else the maximum, as NVML gives an untouched GPU's."""
        d = self.device(index)
        return d.get("applications_mhz") or d["max_sm_clock_mhz"]

    def sm_clocks_user_defined(self, index):
        return self.device(index)["locked_mhz"] is not None

    def lock_sm_clocks_mhz(self, index, min_mhz, max_mhz):
        self._change(index, ["lock", index, min_mhz, max_mhz], locked_mhz=[min_mhz, max_mhz])

    def reset_sm_clocks(self, index):
        self._change(index, ["reset", index], locked_mhz=None)

    def run(self, seconds: float, power_w: float | list[float]):
        """Advance every GPU's counter as if it drew `power_w` for `seconds`, and set its power."""
        powers = power_w if isinstance(power_w, list) else [power_w] * len(self.names)
        for i, watts in enumerate(powers):
            self.counter_mj[i] += int(round(watts * seconds * 1e3))
            self.gpu_power_mw[i] = int(round(watts * 1e3))


class ScriptedSource(PowerSource):
    """A module-scope power source whose power the test sets (and that can start failing)."""

    kind = "hwmon"

    def __init__(self, power_w=100.0, fail_after: int | None = None, update_period_s=0.05):
        super().__init__(label="scripted", scope="module", component="module", index=0,
                         update_period_s=update_period_s)
        self.power_w, self.fail_after, self.reads = power_w, fail_after, 0

    def read_power_w(self):
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise OSError("sensor went away")
        return self.power_w

    def read_energy_j(self):
        return None
