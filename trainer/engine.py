"""DeepSpeed from one candidate: `apply_deepspeed(model, candidate)`.

The only place the trainer meets DeepSpeed. The config is `autotune.ds_config.deepspeed_config`
(or a file exported from it); activation checkpointing and Ulysses sequence parallelism are applied
to the plain model here, from the candidate's knobs, before `deepspeed.initialize` wraps it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from autotune.candidate import Candidate
from autotune.ds_config import deepspeed_config
from trainer.checkpointing import apply_activation_checkpointing
from trainer.sequence_parallel import SequenceParallelModel, sequence_parallel_mpu


class UnsupportedCandidate(Exception):
    """The candidate cannot run on this machine; the message says why and what to choose instead."""


def cuda_available() -> bool:
    from deepspeed.accelerator import get_accelerator

    return get_accelerator().device_name() == "cuda" and torch.cuda.is_available()


def check_supported(candidate: Candidate, world_size: int, cuda: bool) -> None:
    """Refuse, before any engine is built, what this machine or launch cannot run."""
    knobs = candidate.knobs
    if candidate.hardware.cuda and not cuda:
        # Measured CPU figures must never be reported under a GPU profile's name and power model.
        raise UnsupportedCandidate(
            f"the hardware profile {candidate.hardware.name} describes CUDA GPUs but this rank has none: its figures "
            f"would be CPU figures reported as {candidate.hardware.name}'s; use --hardware cpu, or launch on the GPU nodes"
        )
    if knobs.optimizer_offload == "async" and not cuda:
        raise UnsupportedCandidate(
            "optimizer_offload=async is SuperOffload, which DeepSpeed runs only on NVIDIA CUDA GPUs "
            "(this device has none); choose optimizer_offload none or sync"
        )
    if knobs.optimizer_offload == "async" and knobs.zero_stage != 3:
        raise UnsupportedCandidate("optimizer_offload=async (SuperOffload) needs zero_stage 3")
    if knobs.optimizer_offload != "none" and knobs.zero_stage == 0:
        raise UnsupportedCandidate("optimizer offload needs zero_stage 1, 2 or 3")
    if world_size != candidate.gpus:
        raise UnsupportedCandidate(
            f"the candidate asks for {candidate.gpus} ranks ({knobs.nodes} nodes x {candidate.gpus_per_node}) "
            f"but {world_size} were launched; pass --gpus-per-node/--nodes to match the launch"
        )
    if world_size % knobs.sp_degree:
        raise UnsupportedCandidate(f"sp_degree {knobs.sp_degree} does not divide the {world_size} ranks")
    if candidate.grad_accum == 0:
        raise UnsupportedCandidate(
            f"global batch {candidate.workload.global_batch} is not a multiple of micro_batch "
            f"{knobs.micro_batch} x data-parallel size {candidate.dp_degree}"
        )


@dataclass
class TrainingEngine:
    """A DeepSpeed engine plus what the training loop needs to know about its layout."""

    engine: object  # deepspeed.DeepSpeedEngine
    model: nn.Module  # the plain model inside (hooks for phase marks go here)
    ds_config: dict
    sp_group: object | None
    sp_degree: int
    dp_rank: int
    dp_degree: int
    device: torch.device
    dtype: torch.dtype


def _reset_deepspeed_mpu() -> None:
    # DeepSpeed keeps the last engine's mpu in a module global; an engine without SP built after
    # one with SP in the same process (tests) would otherwise inherit the SP groups.
    from deepspeed.utils import groups

    groups.mpu = None


def apply_deepspeed(model: nn.Module, candidate: Candidate, ds_config: dict | None = None) -> TrainingEngine:
    """Checkpointing + sequence parallelism + ZeRO/offload/precision for `candidate`, in that order."""
    import deepspeed
    import torch.distributed as dist
    from deepspeed.accelerator import get_accelerator

    cuda = cuda_available()
    world, rank = dist.get_world_size(), dist.get_rank()
    check_supported(candidate, world, cuda)
    config = ds_config if ds_config is not None else deepspeed_config(candidate)
    apply_activation_checkpointing(model, candidate.knobs.activation_checkpointing, cuda)

    sp_degree = candidate.knobs.sp_degree
    mpu, sp_group, module = None, None, model
    _reset_deepspeed_mpu()
    if sp_degree > 1:
        mpu = sequence_parallel_mpu(sp_degree)
        sp_group = mpu.get_sequence_parallel_group()
        module = SequenceParallelModel(model, sp_group)

    engine, *_ = deepspeed.initialize(model=module, model_parameters=list(module.parameters()), config=config, mpu=mpu)
    return TrainingEngine(
        engine=engine,
        model=model,
        ds_config=config,
        sp_group=sp_group,
        sp_degree=sp_degree,
        # parallel_state_sp puts consecutive ranks in one SP group.
        dp_rank=rank // sp_degree,
        dp_degree=world // sp_degree,
        device=torch.device(get_accelerator().current_device_name()),
        dtype=torch.bfloat16 if config.get("bf16", {}).get("enabled") else torch.float32,
    )
