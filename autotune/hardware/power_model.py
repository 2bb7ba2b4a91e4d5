"""One accelerator's power from its activity and SM clock: the one model the simulator and the
estimated-energy mode (measure/estimate.py) share.

Per component, for one GPU and its share of host and links, at clock fraction f = clock / max clock:

    gpu_w    = gpu.idle_power_w + gpu_activity * (gpu.max_power_w - gpu.idle_power_w) * f * v(f)**2
    cpu_w    = cpu.idle_power_w + cpu_activity * (cpu.max_power_w - cpu.idle_power_w)
    memory_w = power.memory_interconnect_w * (m + (1 - m) * link_activity)     m = memory_idle_fraction

The GPU's dynamic (switching) power goes as C * V**2 * f; the supply voltage falls with the clock
along the DVFS table, v(f) = max(min_voltage_fraction, f) relative to the voltage at max clock, so
dynamic power falls as f**3 down to the voltage floor and as f below it (Kim et al., "System level
analysis of fast, per-core DVFS", HPCA 2008; Mei et al., "A survey and measurement study of GPU DVFS
on energy conservation", 2017). Static power (leakage, board, memory refresh: the idle figure) does
not fall with the clock, which is why a slower clock can cost energy: the optimum lies where static
power times the longer time outweighs the dynamic power saved.

A module-scope sensor (GH200 module power) measures the module's input, ahead of its voltage
regulators, so it also sees their loss: module_w = (gpu_w + cpu_w + memory_w) / (1 - power_delivery_loss).
Per-component sensors (NVML, RAPL) measure after the regulators, so elsewhere the loss is not seen.
The GH200 study's module power is 126-146 W above its GPU power while the CPU drew 55-71 W: the rest
is memory, C2C and these losses.

A power limit covers the module on a module-scope profile (GH200: CPU + GPU + memory, NVML's module
scope) and the GPU alone elsewhere. Under a limit the GPU runs at the highest clock whose power fits;
at its lowest clock it draws what it draws (a limit below that is refused by the space rules).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PowerCurve:
    gpu_idle_w: float
    gpu_max_w: float
    cpu_idle_w: float
    cpu_max_w: float
    memory_interconnect_w: float
    module_cap_w: float
    module_scope: bool
    memory_idle_fraction: float
    min_voltage_fraction: float
    min_clock_fraction: float  # the lowest settable SM clock over the highest (1.0: no clock control)
    power_delivery_loss: float = 0.0  # seen only on a module-scope profile (docstring)

    @classmethod
    def from_hardware(cls, hardware) -> PowerCurve:
        """From an autotune.hardware.HardwareProfile."""
        gpu, k = hardware.gpu, hardware.simulator
        clocked = gpu.max_sm_clock_mhz > 0
        return cls(gpu_idle_w=gpu.idle_power_w, gpu_max_w=gpu.max_power_w,
                   cpu_idle_w=hardware.cpu.idle_power_w, cpu_max_w=hardware.cpu.max_power_w,
                   memory_interconnect_w=hardware.power.memory_interconnect_w,
                   module_cap_w=hardware.power.module_cap_w, module_scope=hardware.module_scope_energy,
                   memory_idle_fraction=k.memory_idle_fraction, min_voltage_fraction=k.min_voltage_fraction,
                   min_clock_fraction=gpu.min_sm_clock_mhz / gpu.max_sm_clock_mhz if clocked else 1.0,
                   power_delivery_loss=k.power_delivery_loss if hardware.module_scope_energy else 0.0)

    def dynamic_scale(self, clock_fraction: float) -> float:
        """GPU dynamic power at this clock over the dynamic power at max clock: f * v(f)**2."""
        voltage = max(self.min_voltage_fraction, clock_fraction)
        return clock_fraction * voltage * voltage

    def shares_w(self, gpu_activity: float, cpu_activity: float, link_activity: float,
                 clock_fraction: float = 1.0) -> dict[str, float]:
        """{"gpu", "cpu", "memory_interconnect"} watts of one accelerator's share."""
        dynamic_w = gpu_activity * (self.gpu_max_w - self.gpu_idle_w) * self.dynamic_scale(clock_fraction)
        m = self.memory_idle_fraction
        return {
            "gpu": self.gpu_idle_w + dynamic_w,
            "cpu": self.cpu_idle_w + cpu_activity * (self.cpu_max_w - self.cpu_idle_w),
            "memory_interconnect": self.memory_interconnect_w * (m + (1 - m) * link_activity),
        }

    def delivery_loss_w(self, shares_w: dict[str, float]) -> float:
        """Voltage-regulator loss a module-scope sensor sees on top of the components' power (0 elsewhere)."""
        return sum(shares_w.values()) * self.power_delivery_loss / (1 - self.power_delivery_loss)

    def limited_w(self, shares_w: dict[str, float]) -> float:
        """The part of the power a limit applies to: the module's input, or the GPU alone."""
        return sum(shares_w.values()) + self.delivery_loss_w(shares_w) if self.module_scope else shares_w["gpu"]

    def highest_clock_under(self, limit_w: float, gpu_activity: float, cpu_activity: float,
                            link_activity: float, clock_cap: float = 1.0) -> float:
        """The highest clock fraction (<= clock_cap, >= the lowest settable) whose power fits limit_w."""
        cap = max(self.min_clock_fraction, min(1.0, clock_cap))
        at_cap = self.shares_w(gpu_activity, cpu_activity, link_activity, cap)
        if self.limited_w(at_cap) <= limit_w:
            return cap
        full_dynamic_w = gpu_activity * (self.gpu_max_w - self.gpu_idle_w)
        if full_dynamic_w <= 0:
            return cap  # nothing the clock can save: slowing down would only cost time
        fixed_w = self.limited_w(self.shares_w(0.0, cpu_activity, link_activity))
        if self.module_scope:  # the regulators' loss grows with the GPU's dynamic power too
            full_dynamic_w /= 1 - self.power_delivery_loss
        target = (limit_w - fixed_w) / full_dynamic_w  # the f * v(f)**2 that fits, in (0, scale(cap))
        floor = self.min_voltage_fraction
        clock = target ** (1 / 3) if target >= floor ** 3 else target / (floor * floor)  # invert f * v(f)**2
        return max(self.min_clock_fraction, min(cap, clock))
