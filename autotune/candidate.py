"""One candidate: the knob values of a configuration plus the model, hardware and workload they apply to.

This single immutable object feeds the memory estimate, the simulator, the DeepSpeed config, the
trainer's probe and the report. `to_dict()`/`candidate_from_dict()` give the candidate file a probe
reads (`python -m trainer.probe --candidate FILE`): self-contained, the full model spec inside.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from autotune.hardware import HardwareProfile, load_hardware
from autotune.models import ModelSpec, model_from_json
from autotune.workload import Workload, with_precision

KNOBS = (
    "zero_stage",
    "optimizer_offload",
    "activation_checkpointing",
    "sp_degree",
    "micro_batch",
    "nodes",
    "power_limit",
    "sm_clock_mhz",
)
OPTIMIZER_OFFLOAD = ("none", "sync", "async")
ACTIVATION_CHECKPOINTING = ("none", "recompute", "offload_sync", "offload_async")
SM_CLOCK_UNTOUCHED = "max"


def params_key(params: dict) -> str:
    """One candidate's knob values as a hashable, order-free key (the study's identity of a candidate)."""
    return json.dumps({k: params[k] for k in KNOBS}, sort_keys=True)


@dataclass(frozen=True)
class Knobs:
    zero_stage: int = 0
    optimizer_offload: str = "none"
    activation_checkpointing: str = "none"
    sp_degree: int = 1
    micro_batch: int = 1
    nodes: int = 1
    # Fraction of each device's default power limit (1.0: untouched); on a GH200 the module's limit.
    power_limit: float = 1.0
    # SM clock cap in MHz, or "max" (untouched).
    sm_clock_mhz: int | str = SM_CLOCK_UNTOUCHED

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in KNOBS}

    @property
    def changes_device_settings(self) -> bool:
        """Whether a run of these knobs sets a power limit or clock that must be restored afterwards."""
        return self.power_limit != 1.0 or self.sm_clock_mhz != SM_CLOCK_UNTOUCHED


@dataclass(frozen=True)
class Candidate:
    knobs: Knobs
    model: ModelSpec
    hardware: HardwareProfile
    workload: Workload
    # GPUs used per node; defaults to the hardware's full node (a CPU test may use 1 or 2 ranks).
    gpus_per_node: int = field(default=0)

    def __post_init__(self):
        if self.gpus_per_node == 0:
            object.__setattr__(self, "gpus_per_node", self.hardware.gpus_per_node)
        object.__setattr__(self, "workload", with_precision(self.workload, self.hardware.cuda))

    @property
    def gpus(self) -> int:
        return self.knobs.nodes * self.gpus_per_node

    @property
    def dp_degree(self) -> int:
        """Data-parallel size: Ulysses SP ranks share one sample, so DP = GPUs / SP."""
        return self.gpus // self.knobs.sp_degree

    @property
    def grad_accum(self) -> int:
        """Gradient accumulation that keeps the global batch fixed (0 when it cannot be an integer)."""
        per_step = self.knobs.micro_batch * self.dp_degree
        if per_step == 0 or self.workload.global_batch % per_step:
            return 0
        return self.workload.global_batch // per_step

    @property
    def precision(self) -> str:
        return self.workload.precision  # resolved in __post_init__ (bf16 on CUDA, fp32 on CPU)

    @property
    def bytes_per_element(self) -> int:
        """Bytes of one parameter, gradient or activation element in the training precision."""
        return 2 if self.precision == "bf16" else 4

    def to_dict(self) -> dict:
        return {
            "knobs": self.knobs.to_dict(),
            "model": self.model.to_json(),
            "hardware": self.hardware.source or self.hardware.name,
            "workload": self.workload.to_dict(),
            "gpus_per_node": self.gpus_per_node,
        }


def candidate_from_dict(data: dict) -> Candidate:
    return Candidate(
        knobs=Knobs(**data["knobs"]),
        model=model_from_json(data["model"]),
        hardware=load_hardware(data["hardware"]),
        workload=Workload(**data["workload"]),
        gpus_per_node=int(data.get("gpus_per_node", 0)),
    )
