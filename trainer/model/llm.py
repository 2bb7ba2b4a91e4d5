"""Qwen2.5-style decoder: RMSNorm, grouped-query attention with QKV bias, SwiGLU, M-RoPE.

Takes the packed embeddings (text + visual) and returns the summed next-token loss of the text
positions; the LM head runs only at text positions (autotune/flops.py counts it there).
Parameter count = autotune.models.LLMSpec.params().
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from autotune.models import LLMSpec
from trainer.model.attention import AttentionCore
from trainer.model.rope import apply_rotary, rotary_tables

IGNORE_INDEX = -100


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32: bf16 sums of squares lose too much over thousands of channels.
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class Attention(nn.Module):
    def __init__(self, spec: LLMSpec):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = spec.heads, spec.kv_heads, spec.head_dim
        self.q = nn.Linear(spec.hidden, spec.heads * spec.head_dim)
        self.k = nn.Linear(spec.hidden, spec.kv_heads * spec.head_dim)
        self.v = nn.Linear(spec.hidden, spec.kv_heads * spec.head_dim)
        self.o = nn.Linear(spec.heads * spec.head_dim, spec.hidden, bias=False)
        # Sequence parallelism replaces this with an all-to-all wrapper (trainer/sequence_parallel.py).
        self.core: nn.Module = AttentionCore(causal=True)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        batch, seq = x.shape[:2]
        q = apply_rotary(self.q(x).view(batch, seq, self.heads, self.head_dim), *rope)
        k = apply_rotary(self.k(x).view(batch, seq, self.kv_heads, self.head_dim), *rope)
        v = self.v(x).view(batch, seq, self.kv_heads, self.head_dim)
        return self.o(self.core(q, k, v).flatten(2))


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class DecoderBlock(nn.Module):
    def __init__(self, spec: LLMSpec):
        super().__init__()
        self.attention_norm = RMSNorm(spec.hidden)
        self.attention = Attention(spec)
        self.mlp_norm = RMSNorm(spec.hidden)
        self.mlp = SwiGLU(spec.hidden, spec.ffn)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), rope)
        return x + self.mlp(self.mlp_norm(x))


class Decoder(nn.Module):
    def __init__(self, spec: LLMSpec):
        super().__init__()
        self.spec = spec
        self.embed_tokens = nn.Embedding(spec.vocab, spec.hidden)
        self.layers = nn.ModuleList(DecoderBlock(spec) for _ in range(spec.layers))
        self.norm = RMSNorm(spec.hidden)
        self.lm_head = nn.Linear(spec.hidden, spec.vocab, bias=False)
        if spec.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(
        self, embeddings: torch.Tensor, positions: torch.Tensor, labels: torch.Tensor, text_mask: torch.Tensor
    ) -> torch.Tensor:
        """Summed cross-entropy over the labelled text positions (the caller divides by the count).

        embeddings [b, s, hidden]; positions [3, s]; labels [b, s] (IGNORE_INDEX where no target);
        text_mask [s] bool: where the LM head runs.
        """
        rope = rotary_tables(positions, self.spec.head_dim, self.spec.mrope_sections, self.spec.rope_theta, embeddings.dtype)
        x = embeddings
        for layer in self.layers:
            x = layer(x, rope)
        # The head runs even on an empty selection: under ZeRO-3 every rank must gather its weight.
        text_hidden = self.norm(x[:, text_mask])
        logits = self.lm_head(text_hidden).float()
        return F.cross_entropy(
            logits.flatten(0, 1), labels[:, text_mask].flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
        )
