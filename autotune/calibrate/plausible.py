"""Unit mistakes in a file of figures, caught against what the hardware profile can physically do.

Every value of a reference file passes its own check (a positive number), yet a power given per node
instead of per GPU, an energy in J instead of kJ, or a time in hours instead of seconds is off by a
factor of 4 to 3600, and a fit through it drags every constant to its bound. Each absolute figure is
held against the profile: TFLOP/s per GPU at most the dense peak; a time no shorter than the model's
work at that peak; a mean power per GPU between half the GPU's idle power and one and a half times
what the GPU, its host share and its memory can draw together (and the power an energy and a time of
one configuration imply, the same). The margins are wide: they catch factors of ten and more (J for
kJ, ms for s, kW for W, a figure of one GPU for all of them) and often a per-node figure, never a
profile's estimate that is off by a quarter; a Wh for kJ (3.6) may pass.
"""

from __future__ import annotations

from autotune.calibrate.observations import Observation
from autotune.flops import flops_per_sample

ABOVE_PEAK = 1.1  # a measured TFLOP/s at most the dense peak (the profile's datasheet figure, and some slack)
LOWEST_MFU = 1e-3  # slower than this is a time in the wrong unit, not a configuration (CPU ranks run at 1-5%)
POWER_BELOW_IDLE = 0.5
POWER_ABOVE_MAX = 1.5


def _power_bounds_w(observation: Observation) -> tuple[float, float]:
    """Mean module power per GPU that one GPU and its share of host and memory can draw."""
    hardware = observation.candidate.hardware
    most_w = hardware.gpu.max_power_w + hardware.cpu.max_power_w + hardware.power.memory_interconnect_w
    return POWER_BELOW_IDLE * hardware.gpu.idle_power_w, POWER_ABOVE_MAX * most_w


def _model_tflop(observation: Observation) -> float:
    """The model TFLOP one GPU runs for the configuration's whole work (what `tflops` divides by time)."""
    candidate = observation.candidate
    per_sample = flops_per_sample(candidate.model, candidate.workload).model_train
    return per_sample * candidate.workload.samples / candidate.gpus / 1e12


def _absolute(observation: Observation) -> bool:
    return observation.relative_to is None and observation.bound is None


def implausible(observation: Observation) -> str | None:
    """Why one absolute figure cannot be what its metric says (a unit mistake, most likely), or None."""
    if not _absolute(observation):
        return None
    hardware = observation.candidate.hardware
    peak = hardware.peak_tflops(observation.candidate.precision)
    value = observation.value
    if observation.metric == "tflops" and value > ABOVE_PEAK * peak:
        return (f"tflops {value:g} per GPU is above the dense peak of {peak:g} TFLOP/s of '{hardware.name}': a "
                "figure per node or in GFLOP/s? Give model TFLOP/s per GPU")
    if observation.metric == "time_s":
        implied = _model_tflop(observation) / value
        if implied > ABOVE_PEAK * peak:
            return (f"time_s {value:g} is shorter than the configuration's work at the dense peak ({implied:.3g} "
                    f"TFLOP/s per GPU against {peak:g}): a time in minutes or hours? Give seconds for the whole "
                    "workload's samples")
        if implied < LOWEST_MFU * peak:
            return (f"time_s {value:g} means {implied:.3g} TFLOP/s per GPU, {implied / peak:.1e} of the peak: a "
                    "time in milliseconds, or the samples of another workload? Give seconds for the workload's samples")
    if observation.metric in ("power_w", "module_power_w"):
        low_w, high_w = _power_bounds_w(observation)
        if observation.metric == "power_w":
            high_w = POWER_ABOVE_MAX * hardware.gpu.max_power_w
        if not low_w <= value <= high_w:
            return (f"{observation.metric} {value:g} W is outside the {low_w:g}-{high_w:g} W one GPU of "
                    f"'{hardware.name}' can draw: a figure per node, or in kW? Give watts per GPU")
    return None


def implausible_energy(energy: Observation, time: Observation) -> str | None:
    """Why an energy and a time of one configuration cannot both be right (the mean power they imply), or None."""
    power_w = 1000.0 * energy.value / time.value / energy.candidate.gpus
    low_w, high_w = _power_bounds_w(energy)
    if low_w <= power_w <= high_w:
        return None
    return (f"energy_kj {energy.value:g} over time_s {time.value:g} on {energy.candidate.gpus} GPUs is {power_w:.4g} W "
            f"per GPU, outside the {low_w:g}-{high_w:g} W one GPU of '{energy.candidate.hardware.name}' and its host "
            "share can draw: an energy in J or Wh, or for one GPU? Give kJ for every module over the whole workload")


def implausible_figures(observations: list[Observation]) -> list[tuple[Observation, str]]:
    """Every figure a unit mistake explains better than a measurement, each with why."""
    found = [(o, why) for o in observations if (why := implausible(o))]
    times = {}
    for o in observations:
        if _absolute(o) and o.metric == "time_s":
            times.setdefault((o.source, o.candidate), o)
    for o in observations:
        time = times.get((o.source, o.candidate))
        if _absolute(o) and o.metric == "energy_kj" and time is not None and not implausible(time):
            why = implausible_energy(o, time)
            if why:
                found.append((o, why))
    return found
