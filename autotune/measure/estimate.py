"""Estimate mode: a documented power model, for machines without any sensor (CPU boxes, CI).

It lets the tuner run end to end; its figures are labelled `estimated` wherever they appear and it
is never used where a sensor exists (see discover.py). The power curve is the simulator's
(autotune/hardware/power_model.py: one model, one place), driven by the utilisation u in [0, 1]
(the fraction of the window the device was busy; u = 1 when the caller does not know):

    gpu_activity = u, cpu_activity = CPU_ACTIVITY * u, link_activity = u, at the highest clock
    whose power fits the run's limit (power_limit x power.module_cap_w; the module on a
    module-scope profile, else the GPU)
    node_w = accelerators * (gpu_w + cpu_w + memory_w)

On a module-scope profile (GH200) the three shares are one module figure. CPU_ACTIVITY = 0.5: the
GH200 study measured 55-71 W of CPU power while training against a 40 W idle / 100 W cap profile,
i.e. a quarter to a half of the headroom.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from autotune.hardware.power_model import PowerCurve
from autotune.measure.window import SourceEnergy, WindowResult

CPU_ACTIVITY = 0.5
ASSUMED_BUSY = 1.0


@dataclass(frozen=True)
class PowerModel(PowerCurve):
    accelerators: int = 1
    hardware: str = ""
    limit_w: float = 0.0  # the power limit the run had (0: the default limit, power.module_cap_w)

    @classmethod
    def from_hardware(cls, hardware, accelerators: int | None = None, power_limit: float = 1.0) -> PowerModel:
        """From an autotune.hardware.HardwareProfile; `accelerators` defaults to the node's GPUs;
        `power_limit` is the run's limit as a fraction of the default (the `power_limit` knob)."""
        curve = PowerCurve.from_hardware(hardware)
        return cls(**asdict(curve), accelerators=int(accelerators or hardware.gpus_per_node),
                   hardware=hardware.name, limit_w=power_limit * hardware.power.module_cap_w)

    def accelerator_power_w(self, utilisation: float) -> dict[str, float]:
        """{"gpu", "cpu", "memory_interconnect"} watts of one accelerator's share, within the limit."""
        u = min(1.0, max(0.0, utilisation))
        activity = (u, CPU_ACTIVITY * u, u)
        clock = self.highest_clock_under(self.limit_w or self.module_cap_w, *activity)
        return self.shares_w(*activity, clock)

    def module_power_w(self, utilisation: float) -> float:
        """What the module's sensor would read: its components plus, on a module-scope profile, the
        regulators' loss ahead of them (power_model.py)."""
        shares_w = self.accelerator_power_w(utilisation)
        return sum(shares_w.values()) + self.delivery_loss_w(shares_w)

    def node_power_w(self, utilisation: float) -> float:
        return self.accelerators * self.module_power_w(utilisation)


def estimate_window(model: PowerModel, begin_s: float, end_s: float,
                    utilisation: float | None = None) -> WindowResult:
    """A WindowResult for [begin_s, end_s] from the model, shaped like a measured one."""
    flags = ["estimated from the hardware profile's power model: no energy sensor on this node"]
    if utilisation is None:
        utilisation = ASSUMED_BUSY
        flags.append(f"utilisation not given: assumed busy {ASSUMED_BUSY} during the window")
    window_s = max(0.0, end_s - begin_s)
    shares_w = model.accelerator_power_w(utilisation)
    entries = []
    for index in range(model.accelerators):
        if model.module_scope:
            entries.append(_entry("module", "module", None, index, model.module_power_w(utilisation), window_s))
            for component, power_w in shares_w.items():  # the module's breakdown, never added on top
                entries.append(_entry(component, component, "module", index, power_w, window_s))
            loss_w = model.delivery_loss_w(shares_w)
            if loss_w > 0:  # the regulators' loss the module sensor sees: no component of its own
                entries.append(_entry("power_delivery", None, "module", index, loss_w, window_s))
        else:
            for component, power_w in shares_w.items():
                entries.append(_entry(component, component, None, index, power_w, window_s))
    power_w = {e.label: [e.mean_power_w, e.mean_power_w] for e in entries}
    return WindowResult(provenance="estimated", begin_s=begin_s, end_s=end_s, entries=entries,
                        times_s=[begin_s, end_s], power_w=power_w, flags=flags,
                        model={**asdict(model), "cpu_activity": CPU_ACTIVITY, "utilisation": utilisation,
                               "node_power_w": model.node_power_w(utilisation)})


def _entry(scope: str, component: str, within: str | None, index: int, power_w: float,
           window_s: float) -> SourceEnergy:
    return SourceEnergy(kind="estimate", label=f"{scope} {index} (model)", scope=scope,
                        component=component, within=within, index=index, energy_j=power_w * window_s,
                        method="model", mean_power_w=power_w)
