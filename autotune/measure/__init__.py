"""Energy and power measurement: NVML, GH200 hwmon and RAPL sources, sampling, windows, phases.

    from autotune.measure import discover, EnergyWindow, node_block
    found = discover()                  # sources this node has (+ why the others are missing)
    window = EnergyWindow(found.sources)
    torch.cuda.synchronize(); window.begin()
    ...                                 # the measured steps
    torch.cuda.synchronize(); block = node_block(window.end(), phase_marks)

Importing this package imports neither torch nor pynvml (pynvml loads on first NVML probe).
The energy block's schema is documented in docs/energy-block.md.
"""

from autotune.measure.base import PowerSource, SourceStatus
from autotune.measure.block import SCHEMA_VERSION, node_block
from autotune.measure.discover import SOURCE_KINDS, Discovery, discover, is_available
from autotune.measure.errors import MeasureError, SourceUnavailable, WindowError
from autotune.measure.estimate import PowerModel, estimate_window
from autotune.measure.hwmon import HwmonPowerSource
from autotune.measure.merge import merge_node_blocks
from autotune.measure.meter import NodeMeter
from autotune.measure.nvml import NvmlApi, NvmlGpuSource
from autotune.measure.phases import attribute_phases, integrate_between_j, trapezoid_j
from autotune.measure.rapl import RaplEnergySource, WrapCounter
from autotune.measure.sampler import DEFAULT_PERIOD_S, PowerSampler
from autotune.measure.sysfs import SYSFS_ROOT_ENV, sysfs_root
from autotune.measure.window import EnergyWindow, SourceEnergy, WindowResult

__all__ = [
    "DEFAULT_PERIOD_S",
    "SCHEMA_VERSION",
    "SOURCE_KINDS",
    "SYSFS_ROOT_ENV",
    "Discovery",
    "EnergyWindow",
    "HwmonPowerSource",
    "MeasureError",
    "NodeMeter",
    "NvmlApi",
    "NvmlGpuSource",
    "PowerModel",
    "PowerSampler",
    "PowerSource",
    "RaplEnergySource",
    "SourceEnergy",
    "SourceStatus",
    "SourceUnavailable",
    "WindowError",
    "WindowResult",
    "WrapCounter",
    "attribute_phases",
    "discover",
    "estimate_window",
    "integrate_between_j",
    "is_available",
    "merge_node_blocks",
    "node_block",
    "sysfs_root",
    "trapezoid_j",
]
