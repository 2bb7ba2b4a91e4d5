"""Hardware profiles: data (TOML files beside this module), loaded into immutable dataclasses.

A profile describes one node: how many accelerators it holds, and per accelerator the device,
its share of the host CPU and memory, the links, the power figures the simulator and the
estimated-energy model use, and the simulator's constants (`[simulator]`, see docs/simulator.md).
`load_hardware("gh200")` or `load_hardware("path/to/node.toml")`; every number is checked when read
(each key, its unit and scope: docs/hardware.md).
"""

from __future__ import annotations

from autotune.hardware.dump import dump_hardware, figure_differences, hardware_to_dict, simulation_sha256, with_simulator_constants
from autotune.hardware.load import (
    PROFILE_DIR,
    available_hardware,
    claimed_node_problem,
    hardware_flag,
    kept_base_name,
    load_hardware,
    parse_hardware,
    stored_hardware,
)
from autotune.hardware.profile import CpuSpec, GpuSpec, HardwareProfile, LinkSpec, PowerSpec
from autotune.hardware.simulator_constants import (
    DEFAULT_SIMULATOR_CONSTANTS,
    SIMULATOR_CONSTANTS,
    SIMULATOR_ERROR_KEYS,
    ConstantSpec,
    SimulatorConstants,
)

__all__ = [
    "PROFILE_DIR",
    "CpuSpec",
    "GpuSpec",
    "HardwareProfile",
    "LinkSpec",
    "PowerSpec",
    "ConstantSpec",
    "SimulatorConstants",
    "DEFAULT_SIMULATOR_CONSTANTS",
    "SIMULATOR_CONSTANTS",
    "SIMULATOR_ERROR_KEYS",
    "available_hardware",
    "claimed_node_problem",
    "dump_hardware",
    "figure_differences",
    "simulation_sha256",
    "hardware_flag",
    "hardware_to_dict",
    "kept_base_name",
    "load_hardware",
    "parse_hardware",
    "stored_hardware",
    "with_simulator_constants",
]
