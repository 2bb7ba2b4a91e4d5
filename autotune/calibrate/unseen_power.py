"""Observations without any power figure do not fit the simulator's power constants.

Under a power limit a time moves with the power the model predicts (the clock falls until the draw fits
the limit), so the power constants look informed by times alone. Fitted to them they take whatever values
bend the times best: a replay that saw no GPU power fitted `gpu_activity_optimizer` 0.52 where its study,
with power, fitted 0.28, and predicted that a 0.7 power limit saves no energy, where the measured probes
save 12% (trial64 #1). Without a power or energy figure they are held at the base profile's values, and the report
says why.
"""

from __future__ import annotations

from autotune.calibrate.observations import Observation

# Figures that measure what the node draws: any one of them pins the power constants.
POWER_METRICS = ("power_w", "module_power_w", "energy_kj")
# What the GPU, its host share and its links draw (simulator_constants.py's activity block), and the power
# model's utilisation exponent and DVFS voltage floor: the constants that set a draw, not a duration.
POWER_CONSTANTS = ("gpu_activity_compute", "gpu_activity_communication", "gpu_activity_offload_wait",
                   "gpu_activity_optimizer", "cpu_background_activity", "link_background_activity",
                   "memory_idle_fraction", "power_delivery_loss", "utilisation_power_exponent", "min_voltage_fraction")


def unseen_power_holds(observations: list[Observation], informed: tuple[str, ...]) -> list[str]:
    """The power constants a fit would move although no observation gives a power or an energy; [] when one does."""
    if any(o.metric in POWER_METRICS for o in observations):
        return []
    return [name for name in POWER_CONSTANTS if name in informed]


def unseen_power_text(held: list[str]) -> str:
    """The report's line on them: what was not seen, why a replay sees none, and what was done."""
    return (f"no GPU power was seen: no observation gives {', '.join(POWER_METRICS[:-1])} or {POWER_METRICS[-1]} (a "
            "replayed record carries no GPU power, and calibrate derives it only where the record's energy is the GPU's "
            "alone), so the power "
            f"constants {', '.join(held)} are held at the base profile's values, not fitted to times alone; "
            "calibrate figures with a measured power or energy to fit them")
