"""Unit mistakes a hardware profile can hide: figures inside their own generous ranges (load.py) that
no real device has, refused with the unit they read as.

A kW figure in a `_w` key, MiB in a `_gib` key, GHz in a `_mhz` key each pass as a positive number and
change every result without a word (a GPU that draws 0.4 W gives a tenth of the energy; ZeRO-0 of a 32B
model "fits" in 81920 GiB per GPU). Each bound below lies outside what any device the tool describes
has, with the figures that place it, so no real hardware is refused; and far enough from where the
wrong unit puts the value that the mistake cannot pass (every GPU's power in kW is below 2).

The [gpu] and [power] bounds hold on a CUDA profile only: with `cuda = false` a "GPU" is a process on
host cores (autotune/hardware/cpu.toml: 15 W, no clocks, a 40 W "cap"), which may be anything.

The profile bounds in turn what a figure measured on its device can be (`tflops_problem`,
`energy_power_problem`): a reference file's figures (calibrate/plausible.py), a replayed record's
(backends/replay_figures.py) and a calibrated study's are held to the same bounds.
"""

from __future__ import annotations

from typing import NamedTuple

from typing import TYPE_CHECKING

from autotune.counted import counted
from autotune.errors import ConfigError
from autotune.hardware.power_model import PowerCurve
from autotune.hardware.profile import HardwareProfile

if TYPE_CHECKING:  # a candidate holds a hardware profile: autotune.candidate imports this package
    from autotune.candidate import Candidate


class Misread(NamedTuple):
    """A unit a figure may have been written in: its name and how many of the key's unit one of it is."""

    unit: str
    factor: float | None  # None: not a unit, a figure of something else ("several GPUs' power")
    also: str = ""  # another reading, where a unit alone does not explain it ("or a node's total")

    def said(self, value: float, key_unit: str) -> str:
        if self.factor is None:
            return self.unit
        also = f", or {self.also}" if self.also else ""
        return f"{self.unit} ({value:g} {self.unit} = {value * self.factor:.4g} {key_unit}){also}"


class Bound(NamedTuple):
    table: str
    key: str
    unit: str  # the key's own unit, as the error writes it
    low: float | None
    high: float | None
    cuda_only: bool
    real: str  # what real devices span: said in the error, so the user can place their figure
    below: Misread | None  # what a value under `low` reads as
    above: Misread | None  # ... and over `high`
    fix: str = ""  # what to write instead, where not the same figure in the key's unit


# Every CUDA GPU's graphics clocks (the comment at their bounds below): a profile's clocks and a space file's
# sm_clock_mhz are held to them.
GPU_CLOCK_MHZ = (50.0, 5000.0)

_KW = Misread("kW", 1000.0)
_GHZ = Misread("GHz", 1000.0)
_MBS = Misread("MB/s", 0.001)
_PFLOPS = Misread("PFLOP/s", 1000.0)

_BOUNDS = (
    # A CUDA device's full-load power is tens of W (a Jetson module's 10-60 W modes, L4 72 W) to about
    # 1.2 kW (B200 1000 W, GB300 1400 W); a GB200 board of two GPUs and a Grace is ~2.7 kW. In kW any GPU
    # is below 2; 5 kW per GPU is a node's or a rack's power.
    Bound("gpu", "max_power_w", "W", 10.0, 5000.0, True, "a CUDA GPU draws 10 W to about 1.4 kW at full load",
          _KW, Misread("a node's or several GPUs' power, not one GPU's", None)),
    # NVML's lowest accepted limit: A100 SXM 100 W, H100 SXM 200 W, L4 40 W, T4 60 W (nvidia-smi -q -d
    # POWER, "Min Power Limit"); below 10 W it reads as kW.
    Bound("power", "min_limit_w", "W", 10.0, None, True, "NVML's lowest power limit is tens to hundreds of W", _KW, None),
    Bound("power", "module_cap_w", "W", 10.0, None, True, "a CUDA GPU's default power limit is tens of W or more", _KW, None),
    # The most memory one GPU carries is 288 GB of HBM3e (B300, MI355X); GH200 96-144 GB. A figure above
    # 1 TiB per GPU is MiB or a node's total; below 1 GiB, TiB.
    Bound("gpu", "memory_gib", "GiB", 1.0, 1024.0, True, "a CUDA GPU holds 1 to 288 GiB",
          Misread("TiB", 1024.0), Misread("MiB", 1.0 / 1024, "a node's total, not one GPU's")),
    # GPU memory bandwidth: Jetson Nano 25.6 GB/s to B200's 8 TB/s of HBM3e; below 10 it is TB/s.
    Bound("gpu", "memory_bandwidth_gbs", "GB/s", 10.0, None, True, "CUDA GPU memory moves 25 GB/s to 8 TB/s",
          Misread("TB/s", 1000.0), None),
    # Graphics clocks NVML lists (nvidia-smi -q -d SUPPORTED_CLOCKS): lowest 76.8 MHz (Jetson Nano), 135
    # (V100), 210 (A100, H100); highest 0.9-3 GHz. In GHz every clock is below 4; above 5000 MHz is a typo
    # (in kHz it would be above load.py's 1e5).
    *(Bound("gpu", key, "MHz", *GPU_CLOCK_MHZ, True, "a CUDA GPU's graphics clocks lie between 50 and 5000 MHz",
            _GHZ, None)
      for key in ("min_sm_clock_mhz", "max_sm_clock_mhz")),
    # The host share of one accelerator: a Jetson's CPU draws a few W, a Grace 100-250 W, an x86 share
    # 30-90 W; below 1 W it is kW. The largest single servers hold 24-48 TiB; a share above 64 TiB is MiB.
    Bound("cpu", "max_power_w", "W", 1.0, None, False, "a host CPU share draws 1 W or more at full load", _KW, None),
    Bound("cpu", "memory_gib", "GiB", None, 65536.0, False, "no single server holds more than 64 TiB",
          None, Misread("MiB", 1.0 / 1024, "several nodes' total")),
    # Dense bf16 tensor peaks: Jetson Orin Nano 4 GB ~5, L4 121, A100 312, H100 989, B200 2250, B300 ~2500
    # TFLOP/s (GPUs before Ampere have no bf16 tensor cores). Datasheet tables also print PFLOP/s ("0.989
    # PFLOPS"), where every GPU's dense peak is below 3: under 3 TFLOP/s the figure is that unit, and every
    # simulated step a thousand times too slow. Above 5000 no GPU computes: a figure "with sparsity" of a
    # future part, a node's total, or a typo (6240 for 624).
    Bound("gpu", "peak_bf16_tflops", "TFLOP/s", 3.0, 5000.0, True,
          "a CUDA GPU's dense bf16 peak is about 5 (Jetson Orin Nano) to 2500 TFLOP/s (B300)", _PFLOPS,
          Misread("a figure with sparsity, several GPUs' total or a typo, not one GPU's dense peak", None),
          "write the datasheet's dense bf16 figure for one GPU, in TFLOP/s"),
    # FP32 without tensor cores: Jetson Orin Nano 4 GB ~0.6, A100 19.5, H100 67, RTX 5090 105 TFLOP/s; in
    # PFLOP/s every one is below 0.11. Above bf16's peak it is refused by _check_peaks.
    Bound("gpu", "peak_fp32_tflops", "TFLOP/s", 0.3, None, True,
          "a CUDA GPU's FP32 peak is about 0.6 (Jetson Orin Nano) to 105 TFLOP/s (RTX 5090)", _PFLOPS, None),
    # Links: the fastest per GPU is NVLink 5 (900 GB/s per direction), NVLink-C2C 450; above 10 TB/s the
    # figure is MB/s.
    *(Bound(link, "bandwidth_gbs", "GB/s", None, 10000.0, False,
            "no link moves more than 10 TB/s per GPU and direction", None, _MBS)
      for link in ("host_link", "intra_node", "inter_node")),
)

# An idle component draws a share of its full-load power (A100 ~55 of 400 W, H100 ~70 of 700 W, an idle
# x86 socket a third of its TDP); one in a thousandth of it is a kW figure beside a W one (0.055 and 400),
# or a missing one (0).
_IDLE_SHARE_LOW = 0.001

# On a profile whose energy is per GPU, [power] module_cap_w is the GPU's default power limit (its TDP:
# nvidia-smi "Default Power Limit"), which max_power_w gives; NVML accepts at most ~1.3x it (RTX 4090: 600
# of 450 W). On a module-scope profile it caps GPU, CPU and memory together (GH200: 680 W over 600 + 100
# + 35). A cap 1.5x above what it caps is a node's or several GPUs' figure: every power_limit fraction
# that leaves the limit above max_power_w then does nothing in simulation, while a launch sets the fraction
# of the GPU's own NVML default, and the two disagree.
CAP_OVER_MAX = 1.5


def _value(profile: HardwareProfile, table: str, key: str) -> float:
    return getattr(getattr(profile, table), key)


def _check_bound(origin: str, profile: HardwareProfile, b: Bound) -> None:
    value = _value(profile, b.table, b.key)
    low = b.low is not None and value < b.low
    if not low and (b.high is None or value <= b.high):
        return
    edge = f"below {b.low:g}" if low else f"above {b.high:g}"
    misread = b.below if low else b.above
    where = " (cuda = true)" if b.cuda_only else ""
    reads = f"; it reads as {misread.said(value, b.unit)}" if misread else ""
    raise ConfigError(f"{origin}: [{b.table}] {b.key} = {value:g} is {edge} {b.unit}, and {b.real}{where}{reads}: "
                      f"{b.fix or f'write it in {b.unit}'}; see docs/hardware.md")


# Per table: an example of an idle share, and where to read the draw at rest.
_IDLE_READING = {
    "gpu": ("an A100 ~55 of 400 W", "nvidia-smi -q -d POWER, 'Power Draw' of an idle GPU"),
    "cpu": ("an x86 socket about a third of its TDP", "the package power at rest (turbostat, RAPL) divided among the GPUs it serves"),
}


def _check_idle(origin: str, table: str, idle_w: float, max_w: float) -> None:
    if idle_w < _IDLE_SHARE_LOW * max_w:
        example, where = _IDLE_READING[table]
        raise ConfigError(
            f"{origin}: [{table}] idle_power_w = {idle_w:g} is below {_IDLE_SHARE_LOW:g} x [{table}] max_power_w = "
            f"{max_w:g}, and an idle device draws a share of its full-load power ({example}); it reads as kW beside "
            f"W, or as missing: give the draw at rest in W ({where}); see docs/hardware.md")


def capped_power(p: HardwareProfile) -> tuple[float, str]:
    """(W, its keys): the full-load power a CUDA profile's default power limit is about: the GPU's, on a
    module-scope profile with the CPU and memory its cap covers too. A default limit above CAP_OVER_MAX x
    it is no device's (a node's, several GPUs', or in mW)."""
    capped_w, what = p.gpu.max_power_w, "[gpu] max_power_w"
    if p.module_scope_energy:
        capped_w += p.cpu.max_power_w + p.power.memory_interconnect_w
        what += " + [cpu] max_power_w + [power] memory_interconnect_w"
    return capped_w, what


def _check_cap(origin: str, p: HardwareProfile) -> None:
    capped_w, what = capped_power(p)
    if p.power.module_cap_w > CAP_OVER_MAX * capped_w:
        scope = ("the module's default limit, over all it powers" if p.module_scope_energy
                 else "one GPU's default power limit (nvidia-smi -q -d POWER: 'Default Power Limit', about its TDP)")
        raise ConfigError(
            f"{origin}: [power] module_cap_w = {p.power.module_cap_w:g} is more than {CAP_OVER_MAX:g} x {what} = "
            f"{capped_w:g}; it is {scope}, not a node's or several GPUs' figure: with it, a power_limit fraction does "
            f"nothing in simulation while a launch applies it to the device's own NVML default; see docs/hardware.md")


def _check_peaks(origin: str, p: HardwareProfile) -> None:
    """FP32 without tensor cores is a fraction of the bf16 tensor peak on every CUDA GPU (A100 19.5 of 312, H100
    67 of 989, L4 30 of 121): one above it is a TF32 or "with sparsity" figure in the wrong key, or the two
    swapped, and --precision fp32 would run faster than bf16 in simulation."""
    if p.gpu.peak_fp32_tflops > p.gpu.peak_bf16_tflops:
        raise ConfigError(
            f"{origin}: [gpu] peak_fp32_tflops = {p.gpu.peak_fp32_tflops:g} is above [gpu] peak_bf16_tflops = "
            f"{p.gpu.peak_bf16_tflops:g}, and a CUDA GPU's FP32 peak without tensor cores is a fraction of its dense "
            "bf16 tensor peak (A100 19.5 of 312 TFLOP/s); it reads as a TF32 or sparsity figure, or the two swapped: "
            "write the datasheet's FP32 (non-tensor) figure; see docs/hardware.md")


def check_plausible(origin: str, profile: HardwareProfile) -> None:
    """Refuse, in one line naming the key, the value and the unit it reads as, a figure no real device has."""
    # Each figure's own bounds before the comparisons between figures: a bf16 peak in PFLOP/s lies below a
    # right FP32 one, and only its bound blames the figure that is wrong.
    for b in _BOUNDS:
        if profile.cuda or not b.cuda_only:
            _check_bound(origin, profile, b)
    if profile.cuda:
        _check_idle(origin, "gpu", profile.gpu.idle_power_w, profile.gpu.max_power_w)
        _check_cap(origin, profile)
        _check_peaks(origin, profile)
    _check_idle(origin, "cpu", profile.cpu.idle_power_w, profile.cpu.max_power_w)


# What a figure measured on a device of the profile can be. The margins are wide: they catch factors of ten and more
# (J for kJ, a figure per GPU given for all of them, GFLOP/s for TFLOP/s) and often a per-node figure, never a profile
# that is off by a quarter, nor a measurement of a real run of another cluster of the same device:
# - a model TFLOP/s per GPU at most the dense peak: the datasheet figure no kernel passes (the best measured training
#   runs reach 40-60% of it), and 10% slack for a FLOP count that differs from ours (attention terms);
# - a mean power per GPU, over the parts an energy covers, from what those parts draw at rest to one and a half times
#   what GPU, host share and memory draw at full load together (NVML accepts a limit ~1.3x the default). The floor is
#   the idle power itself, as the power model has it (power_model.py at no activity: [gpu] and [cpu] idle_power_w,
#   [simulator] memory_idle_fraction of [power] memory_interconnect_w): a GPU that trains is held at its highest
#   performance state, clocks up, between kernels and collectives too, and never averages below its draw at rest (the
#   GH200 study's lowest GPU power is 406 W, 4.5x the profile's 90 W idle), nor does the simulator give less. Half
#   the idle power, the floor before, let the job's energy given per GPU pass on one node (8x low: ~74 W per H100
#   against a 35 W floor, trial72 #8); at idle, 97.5 W on h100-sxm, it is caught there too. Parts no sensor saw
#   (`energy_not_measured`: a GPU-only NVML energy) are left out of the floor, as they are of the energy. A
#   module-scope sensor (GH200) counts CPU and memory with the GPU: inside the same sum.
ABOVE_PEAK = 1.1
POWER_ABOVE_MAX = 1.5


def idle_power_w(hardware: HardwareProfile, not_measured: tuple[str, ...] | list[str] = ()) -> float:
    """W per GPU that the parts an energy covers draw at rest (the GPU, its host share, memory and interconnect, less
    `not_measured`'s: names as measure/combine.SEPARATE_COMPONENTS and the power model give them)."""
    at_rest_w = PowerCurve.from_hardware(hardware).shares_w(0.0, 0.0, 0.0)
    return sum(power_w for part, power_w in at_rest_w.items() if part not in not_measured)


def module_power_bounds_w(hardware: HardwareProfile, not_measured: tuple[str, ...] | list[str] = ()) -> tuple[float, float]:
    """(low, high) W: the mean power per GPU that one GPU with its share of host and memory can draw, the parts
    `not_measured` left out of the low end (idle_power_w)."""
    most_w = hardware.gpu.max_power_w + hardware.cpu.max_power_w + hardware.power.memory_interconnect_w
    return idle_power_w(hardware, not_measured), POWER_ABOVE_MAX * most_w


def tflops_problem(tflops: float, hardware: HardwareProfile, precision: str) -> str | None:
    """Why a model TFLOP/s per GPU measured on `hardware` cannot be one, or None."""
    peak = hardware.peak_tflops(precision)
    if tflops <= ABOVE_PEAK * peak:
        return None
    return (f"tflops {tflops:g} per GPU is above the dense peak of {peak:g} TFLOP/s of '{hardware.name}': a figure per "
            "node or in GFLOP/s? Give model TFLOP/s per GPU")


def energy_power_problem(energy_kj: float, time_s: float, gpus: int, hardware: HardwareProfile,
                         not_measured: tuple[str, ...] | list[str] = ()) -> str | None:
    """Why an energy and a time of one run on `gpus` GPUs of `hardware` cannot both be right (the mean power per GPU
    they imply), or None. `not_measured`: the parts of the node the energy leaves out (a record's
    energy_not_measured)."""
    power_w = 1000.0 * energy_kj / time_s / gpus
    low_w, high_w = module_power_bounds_w(hardware, not_measured)
    if low_w <= power_w <= high_w:
        return None
    return (f"energy_kj {energy_kj:g} over time_s {time_s:g} on {counted(gpus, 'GPU')} is {power_w:.4g} W per GPU, outside the "
            f"{low_w:g}-{high_w:g} W one GPU of '{hardware.name}' and its host share can draw (at rest to {POWER_ABOVE_MAX:g} x "
            "full load): an energy in J or Wh, or "
            "for one GPU? Give kJ for every module over the whole workload")


# A model TFLOP/s per GPU and the time of the whole workload say one thing twice: the workload's model FLOPs
# (autotune/flops.py, which the trainer's result and the simulator count by) over the time and the GPUs. A probe's own
# pair agrees to ~1% (its TFLOP/s is over the measured window, its time the mean step time x the workload's steps:
# a 2-rank CPU study, 0.4-1.3%); a mean over repeats, a rounded figure and a FLOP count of the record's own that
# differs from ours (recomputation counted as work: 4/3 of the model FLOPs; causal attention halved, or attention left
# out as 6 x parameters x tokens does: ~0.7-0.9 at 60 frames) move it further, each well inside a factor of 2. The slips
# it is for lie beyond it: a figure per node (4 GH200 modules, 8 H100s) or in GFLOP/s, a time in minutes (60x) or of
# another workload's samples. Where the record's model and workload are not known (a file written by hand from an own
# script's figures, without the `study` autotune's export writes) its FLOPs are not either: not judged (the callers).
TFLOPS_OFF_TIME = 2.0


def tflops_time_problem(tflops: float, time_s: float, candidate: Candidate) -> str | None:
    """Why a model TFLOP/s per GPU and a time of the candidate's whole workload cannot both be right (they disagree
    on its model FLOPs by more than TFLOPS_OFF_TIME), or None."""
    from autotune.flops import workload_model_tflop  # imports autotune.candidate, which imports this package

    implied = workload_model_tflop(candidate) / time_s
    ratio = tflops / implied
    if 1 / TFLOPS_OFF_TIME <= ratio <= TFLOPS_OFF_TIME:
        return None
    far = f"{max(ratio, 1 / ratio):.3g}"
    said = f"{far}x" if ratio > 1 else f"1/{far} of"
    slip = ("a TFLOP/s per node or of every GPU, or a time of more samples than the workload's" if ratio > 1 else
            "a TFLOP/s in PFLOP/s or of a share of the GPUs, or a time in minutes or of fewer samples")
    return (f"tflops {tflops:g} per GPU is {said} the {implied:.4g} TFLOP/s that time_s {time_s:g} gives the workload's "
            f"model FLOPs ({candidate.workload.samples:g} samples on {counted(candidate.gpus, 'GPU')}), more than the "
            f"{TFLOPS_OFF_TIME:g}x another FLOP count explains: {slip}? Give model TFLOP/s per GPU and seconds for the "
            "whole workload")


def other_hardware(hardware: HardwareProfile) -> str:
    """The other cause of a figure a device of `hardware` cannot give, as each refusal of one ends."""
    return f"or, if the figure is right, the profile '{hardware.name}' is not the hardware it was measured on (pass --hardware)"
