"""The analytic simulator: step time, memory and energy of a candidate from first principles.

Every tunable constant is data in the hardware profile's [simulator] table (docs/simulator.md), with
its bounds; `autotune calibrate` fits them to measurements.

Time of one optimizer step on one GPU = micro-steps x (compute + exposed communication +
exposed activation offload) + exposed optimizer step + a fixed per-step overhead:
- compute: hardware FLOPs (recomputation included, the vision tower on every SP rank) at an
  achievable fraction of peak that falls for small per-GPU micro-steps;
- ZeRO collectives by stage (all-reduce at the boundary for 0/1, reduce-scatter per micro-step
  for 2/3, parameter all-gathers per micro-step for 3), partly hidden behind compute on CUDA;
- Ulysses all-to-all of q, k, v and the attention output per LLM layer, on the critical path;
- optimizer: Adam on the GPU (memory bound), or ZeRO-Offload (gradients to host, CPU Adam,
  parameters back, serialised) or SuperOffload (the same work overlapped with the backward);
- activation offload: block inputs to host in forward and back in backward, blocking (sync) or
  overlapped with compute (async).
Each phase then runs at the highest SM clock its power fits under the power limit and the clock cap
(clock.py); power per phase comes from the one power curve the estimate mode shares
(autotune/hardware/power_model.py). Energy = sum over phases of power x duration, for every GPU and
its host share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autotune.candidate import Candidate
from autotune.flops import flops_per_sample
from autotune.measure.units import j_to_kj
from autotune.hardware.power_model import PowerCurve
from autotune.memory import estimate_memory
from autotune.simulator.clock import run_phase
from autotune.simulator.compute import compute_time_s, token_utilisation


def _constants(candidate: Candidate):
    """The profile's [simulator] constants (docs/simulator.md): every one applies to every candidate."""
    return candidate.hardware.simulator


@dataclass(frozen=True)
class Phase:
    name: str
    time_s: float  # per optimizer step
    gpu_activity: float
    cpu_activity: float
    link_activity: float
    # Share of the phase's time that scales with 1/SM clock (simulator/clock.py).
    clock_sensitivity: float = 1.0
    # The SM clock the phase ran at, over the highest clock (set by simulate()).
    clock_fraction: float = 1.0


@dataclass(frozen=True)
class SimulatedStep:
    step_time_s: float
    time_s: float
    energy_kj: float
    energy_components_kj: dict
    tflops: float  # model TFLOP/s per GPU
    mfu: float
    mean_power_w: float  # per GPU module (GPU + host share + memory/interconnect + regulator loss)
    mean_gpu_power_w: float  # per GPU, the GPU alone (the GH200 study publishes both)
    peak_mem_gib: float
    phases: tuple[Phase, ...] = field(default=())


def _bandwidth_bps(candidate: Candidate, group_size: int, ring: bool = True) -> float:
    """Collective bandwidth per GPU: intra-node when the group fits one node, else across nodes.

    Mechanism (rail-aligned rings): NCCL runs one ring per NIC rail, each carrying its share of the
    data, so a ring collective across nodes moves at the node's aggregate NIC bandwidth per GPU
    (gpus_per_node x inter_node, one HCA per GPU), capped by the intra-node links its in-node hops
    use. nccl-tests bus bandwidth across DGX A100 nodes (8 x 25 GB/s HDR) is ~190 GB/s, not 25. An
    all-to-all (Ulysses) has no such rings: each GPU's traffic leaves through its own NIC.
    """
    hw = candidate.hardware
    efficiency = _constants(candidate).link_efficiency
    if group_size <= candidate.gpus_per_node:
        return hw.intra_node.bandwidth_gbs * 1e9 * efficiency
    across_gbs = hw.inter_node.bandwidth_gbs
    if ring:
        across_gbs = min(hw.intra_node.bandwidth_gbs, candidate.gpus_per_node * across_gbs)
    return across_gbs * 1e9 * efficiency


def _ulysses_time_s(candidate: Candidate) -> float:
    """All-to-all of q, k, v and the output per LLM layer, forward, backward and recompute."""
    sp = candidate.knobs.sp_degree
    if sp == 1:
        return 0.0
    llm = candidate.model.llm
    s_local = candidate.workload.tokens_per_sample(candidate.model) / sp
    elem_b = candidate.bytes_per_element
    per_layer = (2 * llm.hidden + 2 * llm.kv_heads * llm.head_dim) * s_local * candidate.knobs.micro_batch * elem_b
    passes = 3 if candidate.knobs.activation_checkpointing != "none" else 2
    volume = llm.layers * per_layer * passes * (sp - 1) / sp
    return volume / _bandwidth_bps(candidate, sp, ring=False)


def _zero_comm_s(candidate: Candidate) -> tuple[float, float]:
    """(per micro-step, per optimizer boundary) seconds of ZeRO collectives, before overlap."""
    g = candidate.gpus
    if g == 1:
        return 0.0, 0.0
    p = candidate.model.params()
    elem_b = candidate.bytes_per_element
    ring = (g - 1) / g
    bw = _bandwidth_bps(candidate, g)
    stage = candidate.knobs.zero_stage
    grads = p * elem_b * ring / bw
    params = p * elem_b * ring / bw
    if stage in (0, 1):
        boundary = 2 * grads + (params if stage == 1 else 0.0)  # all-reduce (+ all-gather of updated params)
        return 0.0, boundary
    if stage == 2:
        return grads, params  # reduce-scatter each micro-step, all-gather after the step
    gathers = 3 if candidate.knobs.activation_checkpointing != "none" else 2
    return gathers * params + grads, 0.0


def _zero3_block_overhead_s(candidate: Candidate) -> float:
    """Per micro-step: ZeRO-3's fixed cost per block and pass, paid whatever the batch.

    Mechanism (ZeRO-3 per-module overhead): before each block runs, ZeRO-3's hooks fetch its
    parameter partitions (launching the all-gather and waiting for the first one the prefetch did not
    cover) and release them after; the cost is per module, not per token, so a larger micro-batch
    amortises it. This is why a doubled batch sped every model in the GH200 study up by 6-20%
    although the GEMMs were large at either batch. Every SP rank runs every block.
    """
    if candidate.knobs.zero_stage != 3:
        return 0.0
    model = candidate.model
    passes = 3 if candidate.knobs.activation_checkpointing != "none" else 2
    return _constants(candidate).zero3_block_overhead_s * (model.llm.layers + model.vision.layers) * passes


def _optimizer_s(candidate: Candidate) -> tuple[float, float]:
    """(GPU optimizer seconds, offloaded optimizer seconds) for one step, before overlap."""
    hw, k = candidate.hardware, _constants(candidate)
    p = candidate.model.params()
    local = p if candidate.knobs.zero_stage == 0 else p / candidate.gpus
    if candidate.knobs.optimizer_offload == "none":
        return local * k.gpu_adam_bytes_per_param / (hw.gpu.memory_bandwidth_gbs * 1e9), 0.0
    elem_b = candidate.bytes_per_element
    link = hw.host_link.bandwidth_gbs * 1e9 * k.link_efficiency
    transfer = 2 * local * elem_b / link  # gradients down, parameters up
    return 0.0, transfer + local / k.cpu_adam_params_per_s


def _activation_offload_s(candidate: Candidate) -> float:
    """Block inputs to the host in the forward and back in the backward, per micro-step."""
    if not candidate.knobs.activation_checkpointing.startswith("offload"):
        return 0.0
    model, knobs = candidate.model, candidate.knobs
    elem_b = candidate.bytes_per_element
    s_local = candidate.workload.tokens_per_sample(model) / knobs.sp_degree
    v = model.vision
    frames_local = candidate.workload.frames  # every SP rank runs the whole vision tower
    kept = model.llm.layers * s_local * model.llm.hidden + v.layers * frames_local * v.patches_per_frame * v.hidden
    link = candidate.hardware.host_link.bandwidth_gbs * 1e9 * _constants(candidate).link_efficiency
    return 2 * kept * knobs.micro_batch * elem_b / link


def _hidden_comm_s(candidate: Candidate, compute_s: float, per_micro_s: float, boundary_s: float) -> tuple[float, float]:
    """(per micro-step, per optimizer boundary) seconds of ZeRO collectives hidden behind compute.

    Mechanism (overlap bounded by the compute it hides behind): a collective on a side stream hides
    only while compute runs, and shares the SMs and HBM with it, so at most comm_overlap x the
    micro-step's compute time is hidden; the rest is exposed. A large model over a slow network
    (72B on 32 GPUs at micro-batch 1) exposes communication that a doubled batch hides, which is
    why offloading, by freeing memory for that batch, sped it up most. The boundary collectives
    (all-reduce for ZeRO 0/1, parameter all-gather for 2) hide in what is left of the last
    micro-step's backward (2/3 of its compute). A share comm_exposed_min of every collective is never
    hidden (the pipeline's fill and drain, gathers waited on beyond the prefetch depth), so even
    well-hidden ZeRO-3 traffic costs time in proportion to the model's size over the link's speed.
    Nothing overlaps without CUDA streams.
    """
    if not candidate.hardware.cuda:
        return 0.0, 0.0
    k = _constants(candidate)
    window_s = k.comm_overlap * compute_s
    hideable = 1 - k.comm_exposed_min
    hidden_micro = min(per_micro_s * hideable, window_s)
    hidden_boundary = min(boundary_s * hideable, max(0.0, window_s * 2 / 3 - hidden_micro))
    return hidden_micro, hidden_boundary


def step_phases(candidate: Candidate) -> tuple[Phase, ...]:
    """The phases of one optimizer step on one GPU, with their durations and activities."""
    k = _constants(candidate)
    accum = candidate.grad_accum
    compute = compute_time_s(candidate)
    per_micro, boundary = _zero_comm_s(candidate)
    hidden_micro, hidden_boundary = _hidden_comm_s(candidate, compute, per_micro, boundary)
    exposed_comm = accum * (per_micro - hidden_micro + _ulysses_time_s(candidate)) + boundary - hidden_boundary

    # Overlapped work is hidden in time but not in power: it runs during the compute phase and
    # raises the CPU's and the links' draw there (and may push the module into its power cap).
    compute_s = accum * compute
    offload = _activation_offload_s(candidate)
    hidden_offload = 0.0
    if candidate.knobs.activation_checkpointing == "offload_async":
        exposed_offload = max(0.0, offload - k.async_offload_window * compute)
        hidden_offload = accum * (offload - exposed_offload)
    else:
        exposed_offload = offload
    gpu_opt, host_opt = _optimizer_s(candidate)
    hidden_host_opt = 0.0
    if candidate.knobs.optimizer_offload == "async":
        backward_window = compute * 2 / 3  # the last micro-step's backward
        exposed = max(k.async_optimizer_exposed_min * host_opt, host_opt - k.async_offload_window * backward_window)
        hidden_host_opt, host_opt = host_opt - exposed, exposed
    hidden_comm = accum * hidden_micro + hidden_boundary
    compute_activity = k.gpu_activity_compute * token_utilisation(candidate) ** k.utilisation_power_exponent
    background_cpu = k.cpu_background_activity
    compute_cpu = min(1.0, background_cpu + hidden_host_opt / compute_s)
    compute_link = min(1.0, k.link_background_activity + (hidden_offload + hidden_comm) / compute_s)
    return (
        Phase("compute", compute_s, compute_activity, compute_cpu, compute_link, k.clock_sensitivity_compute),
        Phase("communication", exposed_comm, k.gpu_activity_communication, background_cpu, 1.0,
              k.clock_sensitivity_link),
        # Mechanism (short stalls keep compute power): ZeRO-3's per-block hooks and a blocking copy of
        # each block's checkpoint stall the GPU for a few milliseconds between a block's kernels, too
        # short for its power management to react, so it draws compute-level power through them (the
        # study's 7B drew more GPU power with sync activation offload than without). Long stalls (an
        # exposed collective phase, the host optimizer step) fall to their own, lower activity.
        Phase("zero3_block_overhead", accum * _zero3_block_overhead_s(candidate), compute_activity,
              background_cpu, compute_link, k.clock_sensitivity_link),
        Phase("activation_offload", accum * exposed_offload, compute_activity, background_cpu, 1.0,
              k.clock_sensitivity_link),
        Phase("gpu_optimizer", gpu_opt, k.gpu_activity_optimizer, background_cpu, 0.5, k.clock_sensitivity_memory),
        Phase("host_optimizer", host_opt, k.gpu_activity_offload_wait, 1.0, 0.5, k.clock_sensitivity_link),
        # Fixed cost per optimizer step (engine.step bookkeeping, gradient-norm sync, launch gaps at the
        # accumulation boundary): what a larger global batch amortises over more samples.
        Phase("step_overhead", k.step_overhead_s, k.gpu_activity_communication, background_cpu, 0.5,
              k.clock_sensitivity_link),
    )


def simulate(candidate: Candidate) -> SimulatedStep:
    """Time, energy and throughput of the candidate on the study's fixed work."""
    curve = PowerCurve.from_hardware(candidate.hardware)
    phases = []
    per_step_j = {"gpu": 0.0, "cpu": 0.0, "memory_interconnect": 0.0}  # one GPU and its host share
    loss_j = 0.0
    for planned in step_phases(candidate):
        phase, shares_w = run_phase(candidate, curve, planned)
        phases.append(phase)
        for name in per_step_j:
            per_step_j[name] += shares_w[name] * phase.time_s
        loss_j += curve.delivery_loss_w(shares_w) * phase.time_s
    if curve.module_scope:  # a module sensor sees its regulators' loss; component sensors do not
        per_step_j["power_delivery"] = loss_j
    gpu_j = per_step_j["gpu"]
    step_time_s = sum(p.time_s for p in phases)
    steps = candidate.workload.samples / candidate.workload.global_batch
    energy = {name: j_to_kj(joules * steps * candidate.gpus) for name, joules in per_step_j.items()}
    model_flops = flops_per_sample(candidate.model, candidate.workload).model_train
    tflops = model_flops * candidate.workload.global_batch / (step_time_s * candidate.gpus) / 1e12
    return SimulatedStep(
        step_time_s=step_time_s,
        time_s=steps * step_time_s,
        energy_kj=sum(energy.values()),
        energy_components_kj=energy,
        tflops=tflops,
        mfu=tflops / candidate.hardware.peak_tflops(candidate.precision),
        mean_power_w=sum(per_step_j.values()) / step_time_s,
        mean_gpu_power_w=gpu_j / step_time_s,
        peak_mem_gib=estimate_memory(candidate).peak_mem_gib,
        phases=tuple(phases),
    )
