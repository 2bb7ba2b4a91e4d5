"""One optimizer step = `grad_accum` micro-batches through a DeepSpeed engine, with phase marks."""

from __future__ import annotations

import torch
import torch.utils.data

from autotune.candidate import Candidate
from trainer.engine import TrainingEngine
from trainer.phases import PhaseClock
from trainer.sequence_parallel import report_loss


def to_device(batch: dict, device: torch.device, dtype: torch.dtype) -> dict:
    return {
        name: value.to(device, dtype=dtype if value.is_floating_point() else None, non_blocking=True)
        for name, value in batch.items()
    }


def micro_batches(
    samples: torch.utils.data.Dataset, candidate: Candidate, training: TrainingEngine, step: int
) -> list[dict]:
    """This rank's micro-batches for optimizer step `step` (SP ranks of one group get the same ones)."""
    micro, accum, dp = candidate.knobs.micro_batch, candidate.grad_accum, training.dp_degree
    batches = []
    for m in range(accum):
        first = ((step * accum + m) * dp + training.dp_rank) * micro
        items = [samples[(first + i) % len(samples)] for i in range(micro)]
        batches.append(torch.utils.data.default_collate(items))
    return batches


def mark_llm_start(training: TrainingEngine, clock: PhaseClock):
    """The ViT (and projector) forward ends where the decoder's forward begins."""
    return training.model.llm.register_forward_pre_hook(lambda module, args: clock.mark("llm_fwd"))


def train_step(training: TrainingEngine, batches: list[dict], clock: PhaseClock) -> torch.Tensor:
    """Forward, backward and (at the accumulation boundary) the optimizer step.

    Returns the step's mean loss as a detached tensor: turning it into a float here would make the
    host wait for the device every step.
    """
    engine = training.engine
    losses = []
    for index, batch in enumerate(batches):
        clock.micro_step = index
        clock.mark("vit_fwd")
        loss = engine(to_device(batch, training.device, training.dtype))
        clock.mark("backward")
        engine.backward(loss)
        if engine.is_gradient_accumulation_boundary():
            clock.mark("optimizer")
        engine.step()
        losses.append(report_loss(loss, training.sp_group))
    clock.end_step()
    return torch.stack(losses).mean()
