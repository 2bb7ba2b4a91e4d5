"""The measured window: warm-up, opening sync, >= N steps and >= T seconds, closing sync.

Every rank must run the same number of steps (the steps hold collectives), so the decision to go
on is taken on the ranks' slowest clock through one small all-reduce per extension, never per step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from autotune.candidate import Candidate
from trainer.data import make_dataset
from trainer.distributed import LaunchEnv, collective_device, device_sync
from trainer.energy import ProbeEnergy
from trainer.engine import TrainingEngine
from trainer.loop import mark_llm_start, micro_batches, train_step
from trainer.phases import PhaseClock, step_times_s

# Distinct optimizer steps of data kept on the host and cycled: enough that no two consecutive
# steps see the same samples, few enough that 60-frame samples do not fill host memory.
_DATA_POOL_STEPS = 2
_MAX_EXTENSIONS = 20


@dataclass
class WindowSettings:
    warmup_steps: int
    steps: int
    min_seconds: float
    data: str | None = None  # LLaVA-Video annotation file; None = synthetic samples
    video_root: str | None = None


@dataclass
class WindowMeasurement:
    steps: int
    window_s: float  # slowest rank's, opening sync to closing sync
    phases: list[dict]  # this rank's
    step_times_s: list[float]
    losses: list[float]  # per measured step, full-sequence mean loss of this rank's data
    warmup_losses: list[float] = field(default_factory=list)
    energy: ProbeEnergy | None = None  # begun on node leaders; the caller ends it


def _max_over_ranks(value: float) -> float:
    tensor = torch.tensor([value], dtype=torch.float64, device=collective_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return float(tensor)


def _opening_sync() -> None:
    device_sync()
    dist.barrier()


def measure_window(
    training: TrainingEngine, candidate: Candidate, settings: WindowSettings, env: LaunchEnv, cuda: bool
) -> WindowMeasurement:
    # Batches are built (videos decoded) before the window: the probe measures training, not loading.
    samples = make_dataset(
        candidate.model, candidate.workload, settings.data, length=candidate.workload.samples, video_root=settings.video_root
    )
    pool = [micro_batches(samples, candidate, training, step) for step in range(_DATA_POOL_STEPS)]
    clock = PhaseClock(cuda)
    hook = mark_llm_start(training, clock)
    # Sensor discovery (NVML init, sysfs walk) happens here, before the timed window opens.
    energy = ProbeEnergy(candidate.hardware, node_rank=env.node_rank, local_rank=env.local_rank,
                         local_world_size=env.local_world_size, power_limit=candidate.knobs.power_limit)
    try:
        warmup = [train_step(training, pool[s % len(pool)], clock) for s in range(settings.warmup_steps)]
        _opening_sync()
        if env.is_node_leader:
            energy.begin()
        clock.open()
        start_s = time.monotonic()
        losses, planned, window_s = [], settings.steps, 0.0
        for _ in range(_MAX_EXTENSIONS):
            losses += [train_step(training, pool[(len(losses) + s) % len(pool)], clock) for s in range(planned)]
            device_sync()
            window_s = _max_over_ranks(time.monotonic() - start_s)
            if window_s >= settings.min_seconds:
                break
            per_step_s = window_s / len(losses)
            planned = max(1, math.ceil((settings.min_seconds - window_s) / per_step_s))
        dist.barrier()
        phases = clock.close()
    finally:
        hook.remove()
    return WindowMeasurement(
        steps=len(losses),
        window_s=window_s,
        phases=phases,
        step_times_s=step_times_s(phases),
        losses=[float(loss) for loss in losses],
        warmup_losses=[float(loss) for loss in warmup],
        energy=energy if env.is_node_leader else None,
    )
