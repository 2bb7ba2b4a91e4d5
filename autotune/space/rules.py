"""Validity rules: what DeepSpeed, the hardware and the fixed global batch allow.

Each rule returns a reason a user can read, or None. The memory estimate is separate
(autotune/memory.py): a candidate may be valid and still not fit.
"""

from __future__ import annotations

from autotune.candidate import Candidate


def _offload_needs_zero(c: Candidate) -> str | None:
    if c.knobs.optimizer_offload != "none" and c.knobs.zero_stage == 0:
        return "optimizer offload needs ZeRO stage >= 1"
    return None


def _superoffload_needs_zero3(c: Candidate) -> str | None:
    if c.knobs.optimizer_offload == "async" and c.knobs.zero_stage != 3:
        return "async optimizer offload (SuperOffload) needs ZeRO stage 3"
    return None


def _superoffload_needs_cuda(c: Candidate) -> str | None:
    if c.knobs.optimizer_offload == "async" and not c.hardware.cuda:
        return f"async optimizer offload (SuperOffload) needs NVIDIA CUDA GPUs; hardware '{c.hardware.name}' has none"
    return None


def _sp_divides_gpus(c: Candidate) -> str | None:
    if c.gpus % c.knobs.sp_degree:
        return f"SP degree {c.knobs.sp_degree} does not divide the {c.gpus} GPUs"
    return None


def _sp_divides_heads(c: Candidate) -> str | None:
    sp, llm = c.knobs.sp_degree, c.model.llm
    if llm.heads % sp or llm.kv_heads % sp:
        return f"SP degree {sp} does not divide the attention heads ({llm.heads}) and KV heads ({llm.kv_heads})"
    return None


def _sp_within_sequence(c: Candidate) -> str | None:
    tokens = c.workload.tokens_per_sample(c.model)
    if c.knobs.sp_degree > tokens:
        return f"SP degree {c.knobs.sp_degree} exceeds the {tokens} tokens of a sample"
    return None


def _global_batch_fixed(c: Candidate) -> str | None:
    per_step = c.knobs.micro_batch * max(c.dp_degree, 1)
    if c.workload.global_batch % per_step:
        return (
            f"micro-batch {c.knobs.micro_batch} x data-parallel size {c.dp_degree} = {per_step} "
            f"does not divide the global batch {c.workload.global_batch}"
        )
    return None


RULES = (
    _offload_needs_zero,
    _superoffload_needs_zero3,
    _superoffload_needs_cuda,
    _sp_divides_gpus,
    _sp_divides_heads,
    _sp_within_sequence,
    _global_batch_fixed,
)


def rule_violation(candidate: Candidate) -> str | None:
    """The first rule the candidate breaks, as a sentence; None when it is valid."""
    for rule in RULES:
        reason = rule(candidate)
        if reason:
            return reason
    return None
