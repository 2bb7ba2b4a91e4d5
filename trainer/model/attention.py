"""The attention kernel shared by the vision tower and the decoder: q, k, v in, context out.

Layout is [batch, sequence, heads, head_dim] on both sides, the layout flash-attn and DeepSpeed's
Ulysses `DistributedAttention` (batch_dim_idx=0) use, so sequence parallelism can wrap this module
without any transposes of its own.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

try:  # optional: FlashAttention-2 as in the GH200 study; SDPA is the portable fallback
    from flash_attn import flash_attn_func as _flash_attn_func
except ImportError:  # pragma: no cover - depends on the machine
    _flash_attn_func = None


def flash_attn_available() -> bool:
    return _flash_attn_func is not None


class AttentionCore(nn.Module):
    """Softmax attention with no parameters; grouped-query attention when k/v have fewer heads."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if _flash_attn_func is not None and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
            return _flash_attn_func(q, k, v, causal=self.causal)
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            is_causal=self.causal,
            enable_gqa=k.shape[2] != q.shape[2],
        )
        return out.transpose(1, 2)
