"""3D rotary positions (M-RoPE, as in Qwen2-VL) for [prompt | video | answer] sequences.

Every token has a (time, height, width) index. Text tokens carry one index on all three axes.
A video placed after `start` text tokens gives frame t, pooled-grid cell (h, w) the index
(start + t, start + h, start + w); the text after the video continues from the largest index the
video used, plus one. The rotary pairs of a head are split into `sections` = (time, height, width):
the first sections[0] frequency pairs rotate by the time index, the next by height, the rest by width.
"""

from __future__ import annotations

import torch


def text_positions(start: int, length: int) -> torch.Tensor:
    return torch.arange(start, start + length).expand(3, length)


def video_positions(start: int, frames: int, grid_h: int, grid_w: int) -> torch.Tensor:
    """[3, frames*grid_h*grid_w]: tokens ordered frame by frame, each frame's grid row-major."""
    t = torch.arange(frames).view(-1, 1, 1).expand(frames, grid_h, grid_w)
    h = torch.arange(grid_h).view(1, -1, 1).expand(frames, grid_h, grid_w)
    w = torch.arange(grid_w).view(1, 1, -1).expand(frames, grid_h, grid_w)
    return torch.stack([t, h, w]).flatten(1) + start


def sequence_positions(prompt: int, frames: int, grid: int, answer: int, padding: int = 0) -> torch.Tensor:
    """LongTensor[3, prompt + frames*grid*grid + answer + padding] for one sample layout."""
    video = video_positions(prompt, frames, grid, grid)
    after = int(video.max()) + 1 if video.numel() else prompt
    parts = [text_positions(0, prompt), video, text_positions(after, answer + padding)]
    return torch.cat(parts, dim=1)


def rotary_tables(
    positions: torch.Tensor, head_dim: int, sections: tuple[int, int, int], theta: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [sequence, head_dim] for `positions` [3, sequence].

    Computed in fp32 on the fly (not a buffer): DeepSpeed casts module buffers to bf16, which would
    round the frequencies.
    """
    half = head_dim // 2
    inv_freq = 1.0 / (theta ** (torch.arange(0, half, device=positions.device, dtype=torch.float32) / half))
    angles = positions.to(torch.float32).unsqueeze(-1) * inv_freq  # [3, s, half]
    axis_of_pair = torch.repeat_interleave(
        torch.arange(3, device=positions.device), torch.tensor(sections, device=positions.device)
    )
    chosen = angles.gather(0, axis_of_pair.view(1, 1, half).expand(1, angles.shape[1], half)).squeeze(0)
    emb = torch.cat([chosen, chosen], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [batch, sequence, heads, head_dim]; cos/sin [sequence, head_dim]."""
    cos, sin = cos[:, None, :], sin[:, None, :]
    return x * cos + _rotate_half(x) * sin
