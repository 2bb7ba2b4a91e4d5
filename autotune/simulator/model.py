"""The analytic simulator: step time, memory and energy of a candidate from first principles.

Every tunable constant is data in the hardware profile's [simulator] table (docs/simulator.md), with
its bounds; `autotune calibrate` fits them to measurements.

Time of one optimizer step on one GPU = micro-steps x (compute + exposed communication + ZeRO-3
block overhead + exposed activation offload) + exposed optimizer step + a fixed per-step overhead:
- compute (compute.py): hardware FLOPs (recomputation included, the vision tower on every SP rank)
  part by part, each at a rate set by its shape (GEMM width, attention), lower for small micro-steps;
- ZeRO collectives by stage (comm.py: all-reduce at the boundary for 0/1, reduce-scatter per
  micro-step for 2/3, parameter all-gathers per micro-step for 3) on rail-aligned rings, hidden
  behind at most a share of the compute on CUDA, never all of them; ZeRO-3's fixed cost per block;
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
from autotune.simulator.comm import hidden_comm_s, ulysses_time_s, zero3_block_overhead_s, zero_comm_s
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


def step_phases(candidate: Candidate) -> tuple[Phase, ...]:
    """The phases of one optimizer step on one GPU, with their durations and activities."""
    k = _constants(candidate)
    accum = candidate.grad_accum
    compute = compute_time_s(candidate)
    per_micro, boundary = zero_comm_s(candidate)
    hidden_micro, hidden_boundary = hidden_comm_s(candidate, compute, per_micro, boundary)
    exposed_comm = accum * (per_micro - hidden_micro + ulysses_time_s(candidate)) + boundary - hidden_boundary

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
        Phase("zero3_block_overhead", accum * zero3_block_overhead_s(candidate), compute_activity,
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


def resimulated_differs(candidate: Candidate, result: dict, tolerance: float = 1e-6) -> str | None:
    """How the simulator's figures of `candidate` on its profile differ from a recorded simulated result (a study's
    trial, a replayed record), or None: whether the profile gives an older autotune's figures again."""
    step = simulate(candidate)
    for key, unit in (("time_s", "s"), ("energy_kj", "kJ")):
        recorded, now = result.get(key), getattr(step, key)
        if recorded is not None and abs(now - recorded) > tolerance * max(abs(recorded), 1e-12):
            return f"{key.split('_')[0]} {recorded:.6g} {unit} then, {now:.6g} {unit} now"
    return None
