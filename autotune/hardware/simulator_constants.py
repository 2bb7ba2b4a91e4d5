"""The simulator's tunable constants: their names, defaults, physical bounds and meanings, as data.

A hardware profile's `[simulator]` table sets them (missing keys take the default below); `autotune
calibrate` fits them to measurements within the bounds. Every constant applies to every candidate:
there is no per-configuration fudge factor. The table lives in the core layer because the profile
loader validates against it; `autotune.simulator.constants` re-exports it for the simulator's users.
"""

from __future__ import annotations

from dataclasses import make_dataclass
from typing import NamedTuple

from autotune.checks import checked_number, refuse_unknown_keys


class ConstantSpec(NamedTuple):
    name: str
    default: float
    low: float
    high: float
    meaning: str


SIMULATOR_CONSTANTS: tuple[ConstantSpec, ...] = (
    # Compute
    ConstantSpec("max_compute_efficiency", 0.75, 0.2, 0.95,
                 "achievable fraction of dense peak FLOP/s for GEMMs of a layer 8192 wide (cuBLAS bf16 8k GEMMs on H100: ~0.75-0.85); "
                 "narrower layers run slower, see gemm_half_efficiency_width"),
    # Width-dependent compute (simulator/compute.py): norms, activations, rotary and residual adds move
    # bytes in proportion to tokens x width while GEMMs do tokens x width**2 FLOPs, so a narrow layer
    # spends a larger share of its time memory bound: its rate is max x width / (width + this).
    ConstantSpec("gemm_half_efficiency_width", 512.0, 0.0, 4096.0,
                 "layer width (hidden size) at which memory-bound elementwise work halves the GEMM rate (roofline estimate ~500-800 on H100)"),
    ConstantSpec("attention_efficiency", 0.5, 0.3, 1.0,
                 "flash attention's rate over the wide-GEMM rate, on the FLOPs it runs (FlashAttention-2 on H100: ~350 of ~700 TFLOP/s, Shah et al. 2024)"),
    ConstantSpec("half_efficiency_tokens", 2048.0, 16.0, 65536.0,
                 "tokens per GPU micro-step at which the achieved compute efficiency halves"),
    ConstantSpec("gpu_adam_bytes_per_param", 36.0, 16.0, 64.0,
                 "HBM bytes a fused GPU Adam reads and writes per parameter (fp32 master, moments, grads)"),
    ConstantSpec("cpu_adam_params_per_s", 2.0e9, 1.0e7, 1.0e11,
                 "parameters per second DeepSpeed's CPU Adam updates on the host share of one GPU"),
    # Links and overlap
    ConstantSpec("link_efficiency", 0.70, 0.2, 1.0,
                 "achieved fraction of a link's nominal bandwidth (collectives, host copies)"),
    ConstantSpec("comm_overlap", 0.70, 0.0, 1.0,
                 "share of a micro-step's compute time ZeRO collectives can hide behind on CUDA (overlap_comm, prefetch; "
                 "they contend with compute for SMs and HBM): hidden <= this x compute, the rest is exposed"),
    ConstantSpec("comm_exposed_min", 0.1, 0.0, 0.6,
                 "share of each micro-step's ZeRO collectives no overlap hides: the first gather before any compute, "
                 "the last reduce-scatter after the backward, gathers waited on beyond the prefetch depth"),
    ConstantSpec("async_offload_window", 0.90, 0.0, 1.0,
                 "fraction of the compute window an asynchronous copy or host optimizer step can use"),
    ConstantSpec("async_optimizer_exposed_min", 0.10, 0.0, 1.0,
                 "fraction of the host optimizer step SuperOffload can never hide (the last buckets)"),
    ConstantSpec("zero3_block_overhead_s", 0.004, 0.0, 0.05,
                 "seconds per transformer block per pass (forward, recompute, backward) that ZeRO-3 spends outside "
                 "kernels: parameter fetch/release hooks, all-gather launch and wait on the block's first use "
                 "(DeepSpeed's ZeRO-3 hooks cost milliseconds per module)"),
    ConstantSpec("step_overhead_s", 0.2, 0.0, 5.0,
                 "seconds per optimizer step outside the modelled phases (engine.step bookkeeping, grad-norm sync, launch gaps)"),
    # Activity: 0 = idle power, 1 = the component's max power
    ConstantSpec("gpu_activity_compute", 0.80, 0.3, 1.0,
                 "GPU activity while computing at full utilisation"),
    ConstantSpec("gpu_activity_communication", 0.30, 0.0, 1.0,
                 "GPU activity while waiting on exposed collectives"),
    ConstantSpec("gpu_activity_offload_wait", 0.15, 0.0, 1.0,
                 "GPU activity while stalled on a host copy or the host optimizer"),
    ConstantSpec("gpu_activity_optimizer", 0.50, 0.0, 1.0,
                 "GPU activity during a memory-bound GPU optimizer step"),
    ConstantSpec("cpu_background_activity", 0.15, 0.0, 1.0,
                 "host CPU activity from data loading and kernel launches alone"),
    ConstantSpec("link_background_activity", 0.20, 0.0, 1.0,
                 "link activity during compute with nothing overlapped on it"),
    ConstantSpec("memory_idle_fraction", 0.50, 0.0, 1.0,
                 "share of power.memory_interconnect_w drawn with the links idle"),
    ConstantSpec("power_delivery_loss", 0.07, 0.0, 0.15,
                 "share of a module's input power lost in its voltage regulators, seen only by a module-scope sensor "
                 "(GH200 module power; NVML and RAPL measure after the regulators); 48 V-to-core conversion is 88-95% efficient"),
    ConstantSpec("utilisation_power_exponent", 1.0, 0.5, 2.0,
                 "compute-phase GPU activity grows as utilisation**x (1: power linear in achieved throughput)"),
    # Clock and voltage (power limit, SM clock cap): autotune/hardware/power_model.py
    ConstantSpec("min_voltage_fraction", 0.65, 0.3, 1.0,
                 "GPU supply voltage at the DVFS floor over the voltage at max clock (dynamic power ~ f * V**2)"),
    ConstantSpec("clock_sensitivity_compute", 0.90, 0.5, 1.0,
                 "share of compute-phase time that scales with 1/SM clock (the rest is memory bound)"),
    ConstantSpec("clock_sensitivity_memory", 0.20, 0.0, 0.6,
                 "share of a memory-bound phase's time (GPU optimizer) that scales with 1/SM clock"),
    ConstantSpec("clock_sensitivity_link", 0.05, 0.0, 0.3,
                 "share of a link-bound phase's time (collectives, host copies) that scales with 1/SM clock"),
)

CONSTANT_NAMES = tuple(spec.name for spec in SIMULATOR_CONSTANTS)
_SPECS = {spec.name: spec for spec in SIMULATOR_CONSTANTS}


class _ByName:
    """Mapping-style read access on top of the frozen dataclass fields."""

    def __getitem__(self, name: str) -> float:
        if name not in _SPECS:
            raise KeyError(name)
        return getattr(self, name)

    def keys(self):
        return CONSTANT_NAMES

    def __iter__(self):
        return iter(CONSTANT_NAMES)

    def __len__(self) -> int:
        return len(CONSTANT_NAMES)

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in CONSTANT_NAMES}


# One float field per spec, frozen and hashable (a Candidate holding the profile stays hashable).
SimulatorConstants = make_dataclass(
    "SimulatorConstants",
    [(spec.name, float) for spec in SIMULATOR_CONSTANTS],
    bases=(_ByName,),
    frozen=True,
)
SimulatorConstants.__module__ = __name__
SimulatorConstants.__doc__ = "The simulator's constants of one hardware profile, by attribute or by name."


def spec(name: str) -> ConstantSpec:
    return _SPECS[name]


def simulator_constants(origin: str, raw: dict | None, base=None) -> SimulatorConstants:
    """Validated constants: `raw` over `base` (default: the specs' defaults); one line per problem."""
    raw = raw or {}
    fix = "see docs/simulator.md for each constant's meaning and bounds"
    refuse_unknown_keys(f"{origin} [simulator]", raw, CONSTANT_NAMES, fix)
    values = base.as_dict() if base is not None else {s.name: s.default for s in SIMULATOR_CONSTANTS}
    for name, value in raw.items():
        s = _SPECS[name]
        values[name] = checked_number(origin, f"[simulator] {name}", value, low=s.low, high=s.high,
                                      fix=f"meaning: {s.meaning}")
    return SimulatorConstants(**values)


DEFAULT_SIMULATOR_CONSTANTS = simulator_constants("built-in defaults", {})

# The cross-validated error `autotune calibrate` writes: percent, per metric (power_w: the GPU's own, as NVML reads
# it; module_power_w: GPU, host share and memory, the power a module-scope node's energy and limit are of).
SIMULATOR_ERROR_KEYS = ("time_s_pct", "energy_kj_pct", "tflops_pct", "power_w_pct", "module_power_w_pct")


def simulator_error(origin: str, raw: dict | None) -> dict[str, float]:
    raw = raw or {}
    refuse_unknown_keys(f"{origin} [simulator_error]", raw, SIMULATOR_ERROR_KEYS,
                        "it holds the leave-one-out error in percent that `autotune calibrate` writes")
    return {key: checked_number(origin, f"[simulator_error] {key}", raw[key], low=0.0, high=1000.0)
            for key in SIMULATOR_ERROR_KEYS if key in raw}


__all__ = ["SIMULATOR_CONSTANTS", "SIMULATOR_ERROR_KEYS", "ConstantSpec", "SimulatorConstants",
           "DEFAULT_SIMULATOR_CONSTANTS", "simulator_constants", "simulator_error", "spec"]
