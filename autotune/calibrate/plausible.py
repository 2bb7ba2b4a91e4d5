"""Unit mistakes in a file of figures, caught against what the hardware profile can physically do.

Every value of a reference file passes its own check (a positive number), yet a power given per node
instead of per GPU, an energy in J instead of kJ, or a time in hours instead of seconds is off by a
factor of 4 to 3600, and a fit through it drags every constant to its bound. Each absolute figure is
held against the profile: TFLOP/s per GPU at most the dense peak; a time no shorter than the model's
work at that peak; a mean power per GPU between what it covers draws at rest and one and a half times
what the GPU, its host share and its memory can draw together (and the power an energy and a time of
one configuration imply, the same; and a TFLOP/s within a factor of 2 of what its time gives the
workload's model FLOPs): the bounds of hardware/plausible.py, which a replayed record is held to as well. The margins are wide: they catch factors of ten and more (J for kJ, ms for s, kW for
W, a figure of one GPU for all of them) and often a per-node figure, never a profile's estimate that is
off by a quarter; a Wh for kJ (3.6) may pass.

`impossible` is what no run on the hardware gives; `implausible` adds a time so slow that a unit slip
explains it better (LOWEST_MFU), which a published figure is held to, and a study's own probes are not:
a tiny model on many GPUs of a real node runs below it.
"""

from __future__ import annotations

from autotune.calibrate.observations import Observation
from autotune.counted import counted
from autotune.flops import workload_model_tflop
from autotune.hardware.plausible import (
    ABOVE_PEAK, POWER_ABOVE_MAX, energy_power_problem, idle_power_w, module_power_bounds_w, other_hardware, tflops_problem,
    tflops_time_problem,
)
from autotune.measure.combine import SEPARATE_COMPONENTS

# What a GPU power figure (power_w, NVML's) leaves out of the node: its floor is the GPU's own idle draw.
GPU_ALONE = tuple(part for part in SEPARATE_COMPONENTS if part != "gpu")
LOWEST_MFU = 1e-3  # slower than this is a time in the wrong unit, not a configuration (CPU ranks run at 1-5%)


def _absolute(observation: Observation) -> bool:
    return observation.relative_to is None and observation.bound is None


def impossible(observation: Observation) -> str | None:
    """Why one absolute figure is more or less than a device of its profile can give, or None."""
    if not _absolute(observation):
        return None
    hardware = observation.candidate.hardware
    peak = hardware.peak_tflops(observation.candidate.precision)
    value = observation.value
    if observation.metric == "tflops":
        return tflops_problem(value, hardware, observation.candidate.precision)
    if observation.metric == "time_s":
        implied = workload_model_tflop(observation.candidate) / value
        if implied > ABOVE_PEAK * peak:
            return (f"time_s {value:g} is shorter than the configuration's work at the dense peak ({implied:.3g} "
                    f"TFLOP/s per GPU against {peak:g}): a time in minutes or hours? Give seconds for the whole "
                    "workload's samples")
    if observation.metric in ("power_w", "module_power_w"):
        low_w, high_w = module_power_bounds_w(hardware)
        if observation.metric == "power_w":  # NVML's: the GPU alone, at rest and at full load
            low_w, high_w = idle_power_w(hardware, GPU_ALONE), POWER_ABOVE_MAX * hardware.gpu.max_power_w
        if not low_w <= value <= high_w:
            return (f"{observation.metric} {value:g} W is outside the {low_w:g}-{high_w:g} W one GPU of "
                    f"'{hardware.name}' can draw: a figure per node, or in kW? Give watts per GPU")
    return None


def implausible(observation: Observation) -> str | None:
    """Why one absolute figure cannot be what its metric says (a unit mistake, most likely), or None."""
    why = impossible(observation)
    if why or not _absolute(observation) or observation.metric != "time_s":
        return why
    peak = observation.candidate.hardware.peak_tflops(observation.candidate.precision)
    implied = workload_model_tflop(observation.candidate) / observation.value
    if implied < LOWEST_MFU * peak:
        return (f"time_s {observation.value:g} means {implied:.3g} TFLOP/s per GPU, {implied / peak:.1e} of the peak: a "
                "time in milliseconds, or the samples of another workload? Give seconds for the workload's samples")
    return None


def implausible_energy(energy: Observation, time: Observation) -> str | None:
    """Why an energy and a time of one configuration cannot both be right (the mean power they imply), or None."""
    return energy_power_problem(energy.value, time.value, energy.candidate.gpus, energy.candidate.hardware)


def implausible_figures(observations: list[Observation], judge=implausible) -> list[tuple[Observation, str, bool]]:
    """Every figure a unit mistake explains better than a measurement, each with why and whether a profile of other
    hardware could explain it instead; `judge=impossible`: every figure no run on the hardware gives."""
    found = [(o, why, True) for o in observations if (why := judge(o))]
    times = {}
    for o in observations:
        if _absolute(o) and o.metric == "time_s":
            times.setdefault((o.source, o.candidate), o)
    # Each figure against its configuration's time, where that time is itself plausible (else it is the one blamed): an
    # energy by the mean power it implies, a TFLOP/s by the workload's model FLOPs it implies, which no hardware moves.
    # The FLOPs are known here: the fit holds every TFLOP/s to the simulator's, which counts them as flops.py does.
    against_time = {"energy_kj": (implausible_energy, True),
                    "tflops": (lambda o, time: tflops_time_problem(o.value, time.value, o.candidate), False)}
    for o in observations:
        time = times.get((o.source, o.candidate))
        if _absolute(o) and o.metric in against_time and time is not None and not judge(time) and not judge(o):
            problem, of_hardware = against_time[o.metric]
            why = problem(o, time)
            if why:
                found.append((o, why, of_hardware))
    return found


def refused_figure(where: str, wrong: list[tuple[Observation, str, bool]], hardware, fix: str = "") -> str:
    """The one line refusing the first of `wrong` (implausible_figures), at `where` ("reference X: figure 'id'"),
    with `fix` and, where other hardware could explain the figure, that cause."""
    _, why, of_hardware = wrong[0]
    more = f" ({counted(len(wrong) - 1, 'more figure')} likewise)" if len(wrong) > 1 else ""
    return f"{where}: {why}{more}" + "".join(f"; {part}" for part in (fix, of_hardware and other_hardware(hardware)) if part)


def impossible_in_studies(observations: list[Observation], hardware) -> str | None:
    """The refusal of run directories' figures no device of `hardware` gives, or None: a study replayed from a file
    before replay checked its records (a TFLOP/s of 5000 per H100) keeps them, and a fit would blame the simulator
    for them. A cuda = false profile's "GPU" is a process on host cores, bounded by nothing (hardware/plausible.py).
    A probe slower than LOWEST_MFU is a real run's (a tiny model on many GPUs): not judged."""
    wrong = implausible_figures(observations, judge=impossible) if hardware.cuda else []
    if not wrong:
        return None
    observation = wrong[0][0]
    return refused_figure(f"{observation.source}: {observation.id}", wrong, hardware,
                          "a figure no run gives (a replay's record, or a damaged study): fix the measurements and replay "
                          "again, or leave the run out")
