"""Projector: 2x2 spatial pooling of the patch grid, then a two-layer MLP into the LLM width.

Pooling concatenates each 2x2 neighbourhood along channels (LLaVA-Video / Qwen2-VL's patch merger),
so 28x28 patches of width 1152 become 14x14 = 196 tokens of width 4 x 1152 before the MLP.
Parameter count = autotune.models.ModelSpec.projector_params().
"""

from __future__ import annotations

import torch
from torch import nn


class Projector(nn.Module):
    def __init__(self, vision_hidden: int, patches_per_side: int, pool: int, llm_hidden: int):
        super().__init__()
        self.side, self.pool = patches_per_side, pool
        self.fc1 = nn.Linear(vision_hidden * pool * pool, llm_hidden)
        self.fc2 = nn.Linear(llm_hidden, llm_hidden)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        """[frames, side*side, c] -> [frames, (side/pool)^2, llm_hidden], pooled grid row-major."""
        frames, _, channels = patches.shape
        cells, pool = self.side // self.pool, self.pool
        grid = patches.view(frames, cells, pool, cells, pool, channels)
        pooled = grid.permute(0, 1, 3, 2, 4, 5).reshape(frames, cells * cells, pool * pool * channels)
        return self.fc2(nn.functional.gelu(self.fc1(pooled)))
