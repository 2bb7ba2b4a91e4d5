"""Hardware profiles: data (TOML files beside this module), loaded into immutable dataclasses.

A profile describes one node: how many accelerators it holds, and per accelerator the device,
its share of the host CPU and memory, the links, and the power figures the simulator and the
estimated-energy model use. `load_hardware("gh200")` or `load_hardware("path/to/node.toml")`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from autotune.errors import ConfigError

PROFILE_DIR = Path(__file__).parent


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_gib: float
    memory_bandwidth_gbs: float
    peak_bf16_tflops: float
    peak_fp32_tflops: float
    idle_power_w: float
    max_power_w: float
    # SM clock range NVML accepts for locked clocks (nvmlDeviceGetSupportedGraphicsClocks).
    min_sm_clock_mhz: float
    max_sm_clock_mhz: float


@dataclass(frozen=True)
class CpuSpec:
    """The host CPU share that serves one accelerator (a Grace per GH200, 1/8 of a DGX host)."""

    name: str
    cores: int
    memory_gib: float
    memory_bandwidth_gbs: float
    adam_params_per_s: float
    idle_power_w: float
    max_power_w: float


@dataclass(frozen=True)
class LinkSpec:
    name: str
    bandwidth_gbs: float


@dataclass(frozen=True)
class PowerSpec:
    # The default power limit: the module's on a GH200 (CPU + GPU + memory), else the GPU's.
    # The `power_limit` knob is a fraction of it.
    module_cap_w: float
    memory_interconnect_w: float
    # The lowest limit the device accepts (nvmlDeviceGetPowerManagementLimitConstraints' minimum).
    min_limit_w: float


@dataclass(frozen=True)
class HardwareProfile:
    name: str
    description: str
    gpus_per_node: int
    cuda: bool
    module_scope_energy: bool
    gpu: GpuSpec
    cpu: CpuSpec
    host_link: LinkSpec
    intra_node: LinkSpec
    inter_node: LinkSpec
    power: PowerSpec
    source: str = ""

    def peak_tflops(self, dtype: str = "bf16") -> float:
        return self.gpu.peak_bf16_tflops if dtype == "bf16" else self.gpu.peak_fp32_tflops


def available_hardware() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _section(cls, data: dict, section: str, origin: str):
    raw = data.get(section)
    if not isinstance(raw, dict):
        raise ConfigError(f"hardware profile {origin}: missing [{section}] table; see autotune/hardware/gh200.toml")
    names = [f.name for f in fields(cls)]
    missing = [n for n in names if n not in raw]
    if missing:
        raise ConfigError(
            f"hardware profile {origin}: [{section}] lacks {', '.join(missing)}; see autotune/hardware/gh200.toml"
        )
    return cls(**{n: raw[n] for n in names})


def load_hardware(name_or_path: str) -> HardwareProfile:
    """Load a named profile (`gh200`, `h100-sxm`, `cpu`) or a TOML file with the same schema."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.exists()):
        path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.exists():
        raise ConfigError(
            f"unknown hardware '{name_or_path}': use one of {', '.join(available_hardware())} "
            "or the path of a TOML profile (schema: autotune/hardware/gh200.toml)"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"hardware profile {path}: not valid TOML ({exc}); fix the file") from None
    origin = str(path)
    for key in ("name", "gpus_per_node"):
        if key not in data:
            raise ConfigError(f"hardware profile {origin}: missing '{key}'; see autotune/hardware/gh200.toml")
    return HardwareProfile(
        name=data["name"],
        description=data.get("description", ""),
        gpus_per_node=int(data["gpus_per_node"]),
        cuda=bool(data.get("cuda", True)),
        module_scope_energy=bool(data.get("module_scope_energy", False)),
        gpu=_section(GpuSpec, data, "gpu", origin),
        cpu=_section(CpuSpec, data, "cpu", origin),
        host_link=_section(LinkSpec, data, "host_link", origin),
        intra_node=_section(LinkSpec, data, "intra_node", origin),
        inter_node=_section(LinkSpec, data, "inter_node", origin),
        power=_section(PowerSpec, data, "power", origin),
        source=origin,
    )
