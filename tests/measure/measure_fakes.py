"""Fake sysfs trees, a fake clock and an NVML test double for the measurement tests."""

from __future__ import annotations

from pathlib import Path

from autotune.measure.base import PowerSource
from autotune.measure.errors import SourceUnavailable

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


class FakeNvml:
    """Test double for autotune.measure.nvml.NvmlApi: per-GPU counters (mJ) and power (mW)."""

    def __init__(self, names=("NVIDIA H100 80GB HBM3",), *, init_error: SourceUnavailable | None = None,
                 counter=True, instant=True):
        self.names = list(names)
        self.counter_mj = [10_000_000 for _ in names]
        self.gpu_power_mw = [300_000 for _ in names]
        self.init_error, self.counter, self.instant = init_error, counter, instant
        self.inits = 0
        self.module_queries = 0

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
