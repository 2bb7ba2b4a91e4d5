"""Activation checkpointing of every ViT and decoder block, applied from outside the model.

Modes (the candidate's `activation_checkpointing` knob):
  none           keep every activation
  recompute      keep only each block's input; recompute the block in backward (non-reentrant)
  offload_sync   recompute, and move the kept block inputs to host memory with blocking copies
  offload_async  recompute, with the copies on a side stream into pinned buffers (CUDA, through
                 DeepSpeed's activation offload engine); without CUDA there are no streams, so the
                 copies block exactly as in offload_sync
The offload hooks wrap the checkpoint call, so they see only what the checkpoint itself saves (the
block inputs); everything inside the block is under the checkpoint's own recompute hooks.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

MODES = ("none", "recompute", "offload_sync", "offload_async")
# Tensors below this size are not worth a copy (DeepSpeed's offload engine uses the same floor).
_MIN_OFFLOAD_BYTES = 1024


def _worth_offloading(tensor: torch.Tensor) -> bool:
    return not isinstance(tensor, nn.Parameter) and tensor.element_size() * tensor.nelement() >= _MIN_OFFLOAD_BYTES


class BlockingOffload:
    """saved_tensors_hooks that copy to host and back, waiting for each copy (ZeRO-style cpu_checkpointing).

    On a CPU-only machine the "host copy" is a second buffer: the copy traffic is real, the memory
    saving is not (device memory is host memory there).
    """

    def context(self):
        return torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    @staticmethod
    def _pack(tensor: torch.Tensor):
        if not _worth_offloading(tensor):
            return tensor
        return (tensor.device, tensor.to("cpu", copy=True))

    @staticmethod
    def _unpack(packed):
        if isinstance(packed, torch.Tensor):
            return packed
        device, host = packed
        return host.to(device)


class StreamedOffload:
    """Asynchronous offload on CUDA: DeepSpeed 0.19's pinned buffer pool + side stream engine."""

    def __init__(self):
        # Private in DeepSpeed 0.19.x (pyproject pins <0.20); it is the engine DeepSpeed's own
        # cpu_checkpointing drives, so we reuse it rather than re-implement stream bookkeeping.
        from deepspeed.runtime.activation_checkpointing.offload_activations import _ActivationOffloadEngine

        self.engine = _ActivationOffloadEngine(use_pin_memory=True, use_streams=True, min_offload_bytes=_MIN_OFFLOAD_BYTES)

    def context(self):
        return torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, tensor: torch.Tensor):
        if isinstance(tensor, nn.Parameter):
            return tensor
        tensor_id = self.engine.offload_input(tensor)
        return tensor if tensor_id is None else ("offloaded", tensor_id)

    def _unpack(self, packed):
        if isinstance(packed, tuple):
            return self.engine.restore_input(packed[1])
        return packed


class CheckpointedBlock(nn.Module):
    """Runs `block` under non-reentrant checkpointing, optionally offloading its kept inputs."""

    def __init__(self, block: nn.Module, offload: BlockingOffload | StreamedOffload | None):
        super().__init__()
        self.block = block
        self.offload = offload

    def forward(self, *args):
        context = self.offload.context() if self.offload is not None else contextlib.nullcontext()
        with context:
            return checkpoint(self.block, *args, use_reentrant=False)


def make_offload(mode: str, cuda: bool) -> BlockingOffload | StreamedOffload | None:
    if mode not in MODES:
        raise ValueError(f"activation checkpointing mode {mode!r}: use one of {', '.join(MODES)}")
    if mode == "offload_async" and cuda:
        return StreamedOffload()
    if mode in ("offload_sync", "offload_async"):
        return BlockingOffload()
    return None


def apply_activation_checkpointing(model: nn.Module, mode: str, cuda: bool) -> None:
    """Wrap every block of `model.vision.blocks` and `model.llm.layers` in place (no-op for `none`)."""
    offload = make_offload(mode, cuda)
    if mode == "none":
        return
    for blocks in (model.vision.blocks, model.llm.layers):
        for index, block in enumerate(blocks):
            blocks[index] = CheckpointedBlock(block, offload)
