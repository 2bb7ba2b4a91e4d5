"""Ulysses sequence parallelism, applied from outside the model.

The SP ranks of a group hold the same sample. Each rank encodes every frame (the vision tower is
not sharded), packs the full sequence, computes the 3D positions for the full sequence, pads it to
a multiple of the SP degree and keeps its contiguous slice. In every decoder attention, DeepSpeed's
`DistributedAttention` all-to-alls q/k/v from "my slice, all heads" to "all tokens, my heads" and
back. Each rank's loss is its slice's summed cross-entropy over the target count of the whole
sequence, so the SP ranks' losses (and gradients) add up to the full-sequence mean; DeepSpeed sums
gradients over the SP group (it divides by the DP size only) when given the SP `mpu`.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn


def sequence_parallel_mpu(sp_degree: int):
    """DeepSpeed's Ulysses process-group module, initialised once per process (groups are global)."""
    from deepspeed.runtime.sequence_parallel import parallel_state_sp

    if parallel_state_sp._SEQUENCE_PARALLEL_GROUP is None:
        parallel_state_sp.initialize_sequence_parallel(sp_degree)
    elif parallel_state_sp.get_sequence_parallel_world_size() != sp_degree:
        raise RuntimeError(
            f"sequence-parallel groups already built for degree "
            f"{parallel_state_sp.get_sequence_parallel_world_size()}, not {sp_degree}: one SP degree per process"
        )
    return parallel_state_sp


class UlyssesAttention(nn.Module):
    """Local attention core wrapped in DeepSpeed's all-to-all (layout [b, s, heads, d])."""

    def __init__(self, core: nn.Module, group):
        super().__init__()
        from deepspeed.sequence.layer import DistributedAttention

        self.attention = DistributedAttention(core, group, scatter_idx=2, gather_idx=1)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.attention(q, k, v, 0)


class SequenceParallelModel(nn.Module):
    """Training loss of `model` with the decoder sequence sharded over `group`."""

    def __init__(self, model: nn.Module, group):
        super().__init__()
        self.model = model
        self.group = group
        self.sp_degree = dist.get_world_size(group)
        self.sp_rank = dist.get_rank(group)
        llm = model.spec.llm
        if llm.heads % self.sp_degree or llm.kv_heads % self.sp_degree:
            raise ValueError(
                f"sp_degree {self.sp_degree} must divide the LLM's {llm.heads} heads and {llm.kv_heads} KV heads"
            )
        for layer in model.llm.layers:
            block = getattr(layer, "block", layer)  # under a checkpoint wrapper
            block.attention.core = UlyssesAttention(block.attention.core, group)

    def forward(self, batch: dict) -> torch.Tensor:
        full = self.model.pack(batch, pad_to_multiple=self.sp_degree)
        local = full.shard(self.sp_rank, self.sp_degree)
        loss_sum = self.model.llm(local.embeddings, local.positions, local.labels, local.text_mask)
        return loss_sum / max(full.target_count, 1)


def report_loss(loss: torch.Tensor, group) -> torch.Tensor:
    """The full-sequence loss for logging: the sum of the SP ranks' parts (detached, no host sync)."""
    value = loss.detach().float().clone()
    if group is not None:
        dist.all_reduce(value, group=group)
    return value
