"""The analytic simulator: time, energy and power of a candidate from first principles (docs/simulator.md).

Its constants are data, in the hardware profile's `[simulator]` table (autotune.simulator.constants).
"""

from autotune.simulator.constants import SIMULATOR_CONSTANTS
from autotune.simulator.model import Phase, SimulatedStep, resimulated_differs, simulate, step_phases

__all__ = ["SIMULATOR_CONSTANTS", "Phase", "SimulatedStep", "resimulated_differs", "simulate", "step_phases"]
