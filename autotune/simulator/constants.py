"""The simulator's constants as data: names, defaults, bounds and meanings (re-exported from the
hardware profile schema, where a profile's `[simulator]` table is validated against them)."""

from autotune.hardware import dump_hardware, with_simulator_constants
from autotune.hardware.simulator_constants import (
    DEFAULT_SIMULATOR_CONSTANTS,
    SIMULATOR_CONSTANTS,
    SIMULATOR_ERROR_KEYS,
    ConstantSpec,
    SimulatorConstants,
)

__all__ = ["SIMULATOR_CONSTANTS", "SIMULATOR_ERROR_KEYS", "DEFAULT_SIMULATOR_CONSTANTS", "ConstantSpec",
           "SimulatorConstants", "dump_hardware", "with_simulator_constants"]
