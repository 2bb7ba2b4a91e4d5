"""Compute time of one micro-step on one GPU, part by part: the rate depends on each part's shapes.

Mechanism (shape-dependent compute efficiency): a layer of width h does ~tokens x h**2 GEMM FLOPs
but moves ~tokens x h bytes in memory-bound elementwise kernels (norms, activations, rotary, residual
adds, dropout), so the elementwise share of its time falls as 1/h. Its rate is therefore

    max_compute_efficiency x [h / (h + gemm_half_efficiency_width)] / [8192 / (8192 + gemm_half_efficiency_width)]

(a roofline of GEMM time plus elementwise time, relative to a layer 8192 wide). Flash attention does its s**2 work at a rate of its
own, `attention_efficiency` times the wide-GEMM rate (FlashAttention-2 on H100 reaches about half
of what cuBLAS GEMMs do). A 7B Qwen (hidden 3584) with a 1152-wide SigLIP tower doing 17% of its
FLOPs therefore runs slower per FLOP than a 72B (hidden 8192, 2% vision) on the same GPU, as the
GH200 study measured (428 vs 465-500 TFLOP/s at baseline). On top, small per-GPU micro-steps keep
the GPU less busy (half_efficiency_tokens), the same for every part.
"""

from __future__ import annotations

from typing import NamedTuple

from autotune.candidate import Candidate
from autotune.flops import TRAIN_MULTIPLIER, flops_per_sample, llm_block_flops, vit_block_flops


class ComputePart(NamedTuple):
    name: str
    flops: float  # FLOPs one micro-step runs on one GPU (recomputation included, masked attention not)
    width: float  # the GEMM width that sets its elementwise share; 0 for attention
    attention: bool


def _attention_share_vit(candidate: Candidate) -> float:
    v = candidate.model.vision
    return 2 * (2 * v.patches_per_frame ** 2 * v.hidden) / vit_block_flops(candidate.model)


def _attention_share_llm(candidate: Candidate, seq_len: int) -> float:
    return 2 * (2 * seq_len * seq_len * candidate.model.llm.hidden) / llm_block_flops(candidate.model, seq_len)


# The decoder's attention is causal: flash attention skips the masked upper triangle, so it runs half
# the s x s FLOPs that autotune.flops counts (the MFU convention counts the full square). The vision
# tower's attention is bidirectional and runs them all.
CAUSAL_EXECUTED_SHARE = 0.5


def compute_parts(candidate: Candidate) -> tuple[ComputePart, ...]:
    """The micro-step's FLOPs on one GPU split by rate: vision and LLM GEMMs (by width) and their
    attention. With the decoder's attention counted in full, they sum to micro_batch x
    hardware_flops_per_sample / sp_degree (autotune.flops)."""
    knobs, model = candidate.knobs, candidate.model
    fps = flops_per_sample(model, candidate.workload)
    recompute = knobs.activation_checkpointing != "none"
    seq_len = candidate.workload.tokens_per_sample(model)
    vit_blocks = candidate.workload.frames * model.vision.layers * vit_block_flops(model)
    llm_blocks = fps.blocks - vit_blocks
    # Every SP rank runs the whole vision tower and projector; Ulysses shards only the decoder.
    vision = TRAIN_MULTIPLIER * (fps.vit + fps.projector) + (vit_blocks if recompute else 0.0)
    vision_blocks = vit_blocks * (TRAIN_MULTIPLIER + (1 if recompute else 0))
    llm = (TRAIN_MULTIPLIER * fps.llm + (llm_blocks if recompute else 0.0)) / knobs.sp_degree
    llm_block_part = llm_blocks * (TRAIN_MULTIPLIER + (1 if recompute else 0)) / knobs.sp_degree
    vit_attention = vision_blocks * _attention_share_vit(candidate)
    llm_attention = llm_block_part * _attention_share_llm(candidate, seq_len)
    mb = knobs.micro_batch
    return (
        ComputePart("vision_gemm", mb * (vision - vit_attention), model.vision.hidden, False),
        ComputePart("vision_attention", mb * vit_attention, 0.0, True),
        ComputePart("llm_gemm", mb * (llm - llm_attention), model.llm.hidden, False),
        ComputePart("llm_attention", mb * llm_attention * CAUSAL_EXECUTED_SHARE, 0.0, True),
    )


def token_utilisation(candidate: Candidate) -> float:
    """Achieved fraction of the achievable rate: small per-GPU micro-steps keep the GPU less busy."""
    knobs = candidate.knobs
    tokens = knobs.micro_batch * candidate.workload.tokens_per_sample(candidate.model) / knobs.sp_degree
    return tokens / (tokens + candidate.hardware.simulator.half_efficiency_tokens)


# max_compute_efficiency is the rate of GEMMs this wide (Qwen2.5-72B's hidden size): a width the
# GH200 study observes and GEMM benchmarks quote, rather than the unobservable infinite-width limit.
REFERENCE_WIDTH = 8192.0


def width_factor(width: float, half_width: float) -> float:
    """A layer's GEMM rate relative to one of REFERENCE_WIDTH: the elementwise share's roofline."""
    return (width / (width + half_width)) / (REFERENCE_WIDTH / (REFERENCE_WIDTH + half_width))


def part_efficiency(candidate: Candidate, part: ComputePart) -> float:
    """Fraction of dense peak this part runs at, before the token utilisation (at most 1)."""
    k = candidate.hardware.simulator
    if part.attention:
        return k.max_compute_efficiency * k.attention_efficiency
    return min(1.0, k.max_compute_efficiency * width_factor(part.width, k.gemm_half_efficiency_width))


def compute_time_s(candidate: Candidate) -> float:
    """Seconds of one micro-step's compute on one GPU: each part at its own rate."""
    peak = candidate.hardware.peak_tflops(candidate.precision) * 1e12 * token_utilisation(candidate)
    return sum(part.flops / (peak * part_efficiency(candidate, part)) for part in compute_parts(candidate))
