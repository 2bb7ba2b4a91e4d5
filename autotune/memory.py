"""Peak device memory of a candidate, to prune what would not fit before anything runs.

Model states follow DeepSpeed's own estimators (`estimate_zero2_model_states_mem_needs`,
`estimate_zero3_model_states_mem_needs`, Adam, bf16): with P parameters and G GPUs,
  ZeRO-0: 2P + 18P              ZeRO-1: 2P + 2P + 16P/G      ZeRO-2: 2P + 18P/G
  ZeRO-3: 4 * largest_layer + 18P/G
  with optimizer offload: ZeRO-1 4P, ZeRO-2 2P, ZeRO-3 4 * largest_layer + 2P/G;
  host memory 16P/nodes * 1.5 (ZeRO-3) or P * max(4G, 16) * 1.5 per node (ZeRO-1/2). SuperOffload's config
  offloads a share (ds_config.SUPEROFFLOAD_RATIO, 0.9) of ZeRO-3's 18P/G; the rest stays on the GPU.
18 = 2 (bf16 grads) + 4 (fp32 grads) + 4 (fp32 master weights) + 8 (Adam moments). In fp32 there
are no separate master weights: params 4, grads 4, moments 8.
ZeRO partitions over every rank (Ulysses SP ranks included: DeepSpeed's sequence-data-parallel group).

Activations (Korthikanti et al., "Reducing Activation Recomputation"): s*b*h*34 bytes per transformer
layer in 16-bit without the 5*a*s/h score term, which flash attention does not store. Recompute keeps
only each block's input (2*s*b*h bytes) plus one block's full activations while it is recomputed;
activation offload moves the kept inputs to host memory, leaving two in flight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autotune.candidate import Candidate
from autotune.ds_config import SUPEROFFLOAD_RATIO

GIB = 1024**3
# CUDA context, NCCL and allocator fragmentation that no formula above sees (estimate).
FRAMEWORK_OVERHEAD_GIB = {True: 3.0, False: 0.5}
# Keep this fraction of device memory free: the estimate is an estimate.
HEADROOM_FRACTION = 0.10
KORTHIKANTI_BYTES_PER_TOKEN_HIDDEN = 34  # 16-bit activations, flash attention
ADDITIONAL_BUFFER_FACTOR = 1.5  # DeepSpeed's estimator default for host memory
# Peak memory figures that are not the device's: on CPU the trainer reports its process's resident set.
HOST_PEAK_KINDS = ("process_peak_rss",)


@dataclass(frozen=True)
class MemoryEstimate:
    model_states_gib: float
    activations_gib: float
    buffers_gib: float
    overhead_gib: float
    host_gib: float  # host memory per GPU share (optimizer offload)
    device_limit_gib: float
    host_limit_gib: float

    @property
    def peak_mem_gib(self) -> float:
        return self.model_states_gib + self.activations_gib + self.buffers_gib + self.overhead_gib

    @property
    def device_gib(self) -> float:
        """The whole device's memory: what runs out, where the estimate is checked against the usable share."""
        return self.device_limit_gib / (1 - HEADROOM_FRACTION)

    @property
    def device_excess_gib(self) -> float:
        """> 0: that much over the usable device memory (an Optuna constraint: <= 0 is feasible)."""
        return self.peak_mem_gib - self.device_limit_gib

    @property
    def host_excess_gib(self) -> float:
        return self.host_gib - self.host_limit_gib

    def fits(self) -> bool:
        return self.device_excess_gib <= 0 and self.host_excess_gib <= 0

    def reason(self) -> str | None:
        if self.device_excess_gib > 0:
            return (
                f"needs {self.peak_mem_gib:.1f} GiB per GPU, more than the {self.device_limit_gib:.1f} GiB usable "
                f"({HEADROOM_FRACTION:.0%} headroom kept)"
            )
        if self.host_excess_gib > 0:
            return f"needs {self.host_gib:.1f} GiB host memory per GPU for offload, more than the {self.host_limit_gib:.1f} GiB there"
        return None


def model_state_bytes(candidate: Candidate) -> tuple[float, float]:
    """(device bytes per GPU, host bytes per GPU) of parameters, gradients and Adam states."""
    p = float(candidate.model.params())
    g = candidate.gpus
    largest = float(candidate.model.largest_layer_params())
    stage, offload = candidate.knobs.zero_stage, candidate.knobs.optimizer_offload != "none"
    bf16 = candidate.precision == "bf16"
    param_b = grad_b = candidate.bytes_per_element
    optim_b = 16 if bf16 else 8  # (fp32 grads + master +) Adam moments
    per_node = candidate.gpus_per_node
    if stage == 0:
        return p * (param_b + grad_b + optim_b), 0.0
    if stage == 1:
        if offload:
            host = p * max(4 * g, 16) * ADDITIONAL_BUFFER_FACTOR / per_node
            return p * (param_b + grad_b), host
        return p * (param_b + grad_b) + p * optim_b / g, 0.0
    if stage == 2:
        if offload:
            host = p * max(4 * g, 16) * ADDITIONAL_BUFFER_FACTOR / per_node
            return p * param_b, host
        return p * param_b + p * (grad_b + optim_b) / g, 0.0
    gathered = 4 * largest  # DeepSpeed's largest_layer_memory term
    if offload:
        # SuperOffload (async) hands only SUPEROFFLOAD_RATIO of the optimizer states to the host; the rest stay here.
        on_host = SUPEROFFLOAD_RATIO if candidate.knobs.optimizer_offload == "async" else 1.0
        host = p * 16 * on_host / candidate.knobs.nodes * ADDITIONAL_BUFFER_FACTOR / per_node
        return gathered + p * param_b / g + p * (grad_b + optim_b) / g * (1.0 - on_host), host
    # As DeepSpeed's estimator: 18P/G, the 16-bit parameter shard counted inside the 4 * largest_layer term.
    return gathered + p * (grad_b + optim_b) / g, 0.0


def activation_bytes(candidate: Candidate) -> float:
    """Activations per GPU for one micro-batch (the peak is reached at the end of the forward)."""
    model, knobs, workload = candidate.model, candidate.knobs, candidate.workload
    scale = candidate.bytes_per_element / 2  # the coefficients below are for 16-bit activations
    b = knobs.micro_batch
    s_local = workload.tokens_per_sample(model) / knobs.sp_degree
    h = model.llm.hidden
    full_llm_layer = KORTHIKANTI_BYTES_PER_TOKEN_HIDDEN * s_local * b * h * scale
    block_input = 2 * s_local * b * h * scale

    v = model.vision
    frames_local = workload.frames * b  # Ulysses shards the decoder only: every SP rank encodes all frames
    full_vit_layer = KORTHIKANTI_BYTES_PER_TOKEN_HIDDEN * v.patches_per_frame * frames_local * v.hidden * scale
    vit_input = 2 * v.patches_per_frame * frames_local * v.hidden * scale

    mode = knobs.activation_checkpointing
    if mode == "none":
        llm = model.llm.layers * full_llm_layer
        vit = v.layers * full_vit_layer
    elif mode == "recompute":
        llm = model.llm.layers * block_input + full_llm_layer
        vit = v.layers * vit_input + full_vit_layer
    else:  # offload_sync / offload_async: kept inputs live on the host, two in flight
        llm = 2 * block_input + full_llm_layer
        vit = 2 * vit_input + full_vit_layer
    # LM head logits on text positions, kept in fp32 for the loss.
    logits = 4 * b * workload.text_tokens * model.llm.vocab / knobs.sp_degree
    return llm + vit + logits


def buffer_bytes(candidate: Candidate) -> float:
    """ZeRO communication buckets (reduce and, for ZeRO-3, prefetch), never more than the model."""
    from autotune.ds_config import deepspeed_config

    zero = deepspeed_config(candidate)["zero_optimization"]
    param_b = candidate.bytes_per_element
    elements = zero.get("reduce_bucket_size", 0) + zero.get("stage3_prefetch_bucket_size", 0)
    return min(elements, candidate.model.params()) * param_b


def estimate_memory(candidate: Candidate) -> MemoryEstimate:
    device_b, host_b = model_state_bytes(candidate)
    hw = candidate.hardware
    return MemoryEstimate(
        model_states_gib=device_b / GIB,
        activations_gib=activation_bytes(candidate) / GIB,
        buffers_gib=buffer_bytes(candidate) / GIB,
        overhead_gib=FRAMEWORK_OVERHEAD_GIB[hw.cuda],
        host_gib=host_b / GIB,
        device_limit_gib=hw.gpu.memory_gib * (1 - HEADROOM_FRACTION),
        host_limit_gib=hw.cpu.memory_gib * (1 - HEADROOM_FRACTION),
    )


def measured_device_peak_gib(result: dict) -> float | None:
    """A probe result's measured peak device memory (the trainer's torch.cuda.max_memory_allocated, the
    largest of its ranks'), or None where it has none or only the host's."""
    peak = result.get("peak_mem_gib")
    kind = (result.get("details") or {}).get("peak_mem_kind")
    if kind in HOST_PEAK_KINDS or type(peak) not in (int, float) or not (math.isfinite(peak) and peak > 0):
        return None
    return float(peak)
