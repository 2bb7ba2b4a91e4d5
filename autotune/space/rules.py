"""Validity rules: what DeepSpeed, the hardware and the fixed global batch allow.

Each rule returns a reason a user can read, or None. The memory estimate is separate
(autotune/memory.py): a candidate may be valid and still not fit.
"""

from __future__ import annotations

from autotune.candidate import SM_CLOCK_UNTOUCHED, Candidate


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


def power_limit_problem(fraction: float, hardware) -> str | None:
    """Why `hardware` cannot take the power limit `fraction` of its default whatever the other knobs, or None."""
    if fraction == 1.0:
        return None
    if not hardware.cuda:
        return f"a power limit ({fraction:g} of the default) needs NVIDIA GPUs; hardware '{hardware.name}' has none"
    limit_w = fraction * hardware.power.module_cap_w
    if limit_w < hardware.power.min_limit_w:
        return (
            f"power limit {fraction:g} x {hardware.power.module_cap_w:g} W = {limit_w:g} W is below the device's "
            f"minimum of {hardware.power.min_limit_w:g} W"
        )
    return None


def sm_clock_problem(clock, hardware) -> str | None:
    """Why `hardware` cannot take the SM clock cap `clock` (MHz) whatever the other knobs, or None."""
    if clock == SM_CLOCK_UNTOUCHED:
        return None
    if not hardware.cuda:
        return f"an SM clock cap ({clock} MHz) needs NVIDIA GPUs; hardware '{hardware.name}' has none"
    gpu = hardware.gpu
    if not gpu.min_sm_clock_mhz <= clock <= gpu.max_sm_clock_mhz:
        return f"SM clock {clock} MHz is outside the device's {gpu.min_sm_clock_mhz:g}-{gpu.max_sm_clock_mhz:g} MHz"
    return None


# The device settings' rules, by knob: a value each refuses is refused for every candidate of a space
# (space.unsearched says so before a study starts).
DEVICE_KNOB_PROBLEMS = {"power_limit": power_limit_problem, "sm_clock_mhz": sm_clock_problem}


def _power_limit_settable(c: Candidate) -> str | None:
    return power_limit_problem(c.knobs.power_limit, c.hardware)


def _sm_clock_settable(c: Candidate) -> str | None:
    return sm_clock_problem(c.knobs.sm_clock_mhz, c.hardware)


RULES = (
    _offload_needs_zero,
    _superoffload_needs_zero3,
    _superoffload_needs_cuda,
    _sp_divides_gpus,
    _sp_divides_heads,
    _sp_within_sequence,
    _global_batch_fixed,
    _power_limit_settable,
    _sm_clock_settable,
)


def rule_violation(candidate: Candidate) -> str | None:
    """The first rule the candidate breaks, as a sentence; None when it is valid."""
    for rule in RULES:
        reason = rule(candidate)
        if reason:
            return reason
    return None
