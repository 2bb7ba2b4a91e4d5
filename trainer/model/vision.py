"""SigLIP-style vision transformer: patch embedding, learned positions, pre-norm blocks.

Frames are encoded independently (no class token, no pooling head); the projector pools the
patch grid. Parameter count = autotune.models.VisionSpec.params().
"""

from __future__ import annotations

import torch
from torch import nn

from autotune.models import VisionSpec
from trainer.model.attention import AttentionCore


class VisionAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.core = AttentionCore(causal=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (*x.shape[:2], self.heads, -1)
        context = self.core(self.q(x).view(shape), self.k(x).view(shape), self.v(x).view(shape))
        return self.o(context.flatten(2))


class VisionMLP(nn.Module):
    def __init__(self, hidden: int, mlp: int):
        super().__init__()
        self.fc1 = nn.Linear(hidden, mlp)
        self.fc2 = nn.Linear(mlp, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x), approximate="tanh"))


class VisionBlock(nn.Module):
    def __init__(self, spec: VisionSpec):
        super().__init__()
        self.attention_norm = nn.LayerNorm(spec.hidden, eps=1e-6)
        self.attention = VisionAttention(spec.hidden, spec.heads)
        self.mlp_norm = nn.LayerNorm(spec.hidden, eps=1e-6)
        self.mlp = VisionMLP(spec.hidden, spec.mlp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class VisionTransformer(nn.Module):
    """[frames, 3, H, W] pixels -> [frames, patches, hidden], patches in row-major grid order."""

    def __init__(self, spec: VisionSpec):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, spec.hidden, kernel_size=spec.patch, stride=spec.patch)
        # An Embedding (not a bare Parameter) so ZeRO-3 gathers it like any other module weight.
        self.position_embed = nn.Embedding(spec.patches_per_frame, spec.hidden)
        self.blocks = nn.ModuleList(VisionBlock(spec) for _ in range(spec.layers))
        self.post_norm = nn.LayerNorm(spec.hidden, eps=1e-6)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        patches = self.patch_embed(frames.to(self.patch_embed.weight.dtype)).flatten(2).transpose(1, 2)
        positions = torch.arange(patches.shape[1], device=patches.device)
        x = patches + self.position_embed(positions)
        for block in self.blocks:
            x = block(x)
        return self.post_norm(x)
