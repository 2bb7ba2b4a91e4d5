"""One candidate: the knob values of a configuration plus the model, hardware and workload they apply to.

This single immutable object feeds the memory estimate, the simulator, the DeepSpeed config, the
trainer's probe and the report. `to_file()`/`candidate_from_dict()` give the candidate file a probe
reads (`python -m trainer.probe --candidate FILE`): self-contained, the full model spec and hardware
profile inside; `to_dict()` is the same without the profile, as a study keeps it per trial.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from autotune.checks import MAX_COUNT, number_problem, refuse_unknown_keys, shown, whole_literal_problem
from autotune.counted import counted
from autotune.errors import ConfigError
from autotune.hardware import HardwareProfile, hardware_to_dict, stored_hardware
from autotune.hardware.plausible import GPU_CLOCK_MHZ
from autotune.models import ModelSpec, model_from_json
from autotune.workload import PRECISIONS, WORKLOAD_KEYS, Workload, with_precision

KNOBS = (
    "zero_stage",
    "optimizer_offload",
    "activation_checkpointing",
    "sp_degree",
    "micro_batch",
    "nodes",
    "power_limit",
    "sm_clock_mhz",
)
ZERO_STAGES = (0, 1, 2, 3)
OPTIMIZER_OFFLOAD = ("none", "sync", "async")
ACTIVATION_CHECKPOINTING = ("none", "recompute", "offload_sync", "offload_async")
SM_CLOCK_UNTOUCHED = "max"
_CHOICES = {"zero_stage": ZERO_STAGES, "optimizer_offload": OPTIMIZER_OFFLOAD, "activation_checkpointing": ACTIVATION_CHECKPOINTING}
_COUNTS = ("sp_degree", "micro_batch", "nodes")


def knob_value(knob: str, value):
    """`value` as a candidate holds it for `knob` (power_limit a float), or ValueError saying what is allowed
    ("is not one of the allowed values 0, 1, 2, 3"); each file that lists knob values words its own line around it.

    Types are exact: Python takes `true` for 1 and `1.0` for 1, but a file must say what it means, and a
    knob value is part of a candidate's identity (`params_key`): a zero_stage of 1.0 would match no candidate."""
    if knob in _CHOICES:
        allowed = _CHOICES[knob]
        if type(value) is not type(allowed[0]) or value not in allowed:
            listed = ", ".join(map(shown, allowed))
            raise ValueError(_as_written(value, allowed.__contains__) or f"is not one of the allowed values {listed}")
        return value
    if knob in _COUNTS:
        if not _is_count(value):
            raise ValueError(_as_written(value) or f"is not a whole number >= 1 and <= {MAX_COUNT}")
        return value
    if knob == "power_limit":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:  # NaN fails 0 < NaN
            raise ValueError("is not a fraction of the default power limit in (0, 1], e.g. 0.8")
        return float(value)
    assert knob == "sm_clock_mhz", f"{knob} is not a knob"
    if value != SM_CLOCK_UNTOUCHED and not _is_clock_mhz(value):
        raise ValueError(_as_written(value, _is_clock_mhz) or _not_a_clock(value))
    return value


def knob_allowed(knob: str) -> str:
    """The values knob_value takes for `knob`, in words for a --help line ("one of 0, 1, 2, 3", "a whole number >= 1"):
    from the tables knob_value checks against, so a help text cannot list what a candidate refuses."""
    if knob in _CHOICES:
        return "one of " + ", ".join(map(str, _CHOICES[knob]))
    if knob in _COUNTS:
        return "a whole number >= 1"
    if knob == "power_limit":
        return "a fraction in (0, 1]"
    assert knob == "sm_clock_mhz", f"{knob} is not a knob"
    low_mhz, high_mhz = GPU_CLOCK_MHZ
    return f"{SM_CLOCK_UNTOUCHED} (untouched) or whole MHz from {low_mhz:g} to {high_mhz:g}"


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_COUNT


def _is_clock_mhz(value) -> bool:
    """A clock some GPU has, the range a hardware profile's clocks are held to (hardware/plausible.py): one range for
    every reader of the knob, where a space file said 50 to 5000 and a candidate file up to 10^12 (trial78 #1)."""
    low_mhz, high_mhz = GPU_CLOCK_MHZ
    return isinstance(value, int) and not isinstance(value, bool) and low_mhz <= value <= high_mhz


def _not_a_clock(value) -> str:
    """Why `value` is no sm_clock_mhz; a whole number that is a clock in kHz or GHz says so (1500000 passed the
    10^12 bound, to be dropped by the device's range without a word: trial75 #6)."""
    low_mhz, high_mhz = GPU_CLOCK_MHZ
    reads = ""
    if isinstance(value, int) and not isinstance(value, bool):
        reads = next((f"; it reads as {unit} ({value} {unit} = {value * factor:g} MHz): write it in MHz"
                      for unit, factor in (("kHz", 1e-3), ("GHz", 1e3)) if low_mhz <= value * factor <= high_mhz), "")
    return (f'is not "{SM_CLOCK_UNTOUCHED}" or a clock in whole MHz from {low_mhz:g} to {high_mhz:g}, where every '
            f"CUDA GPU's graphics clocks lie{reads}")


def _as_written(value, allowed=None) -> str | None:
    """Why an allowed whole number written as a float (2.0 or 1e1 in JSON or TOML) is refused, in the flags' words
    (checks.whole_literal_problem); None for any other value. Without `allowed`, a count: one outside its range
    (1e13) has the range said, as a flag's has (trial 63 #22), not a number to write that is refused next."""
    if not (isinstance(value, float) and value.is_integer()):
        return None
    if allowed is None:
        return whole_literal_problem(value, 1, MAX_COUNT)
    return whole_literal_problem(value) if allowed(int(value)) else None


def params_key(params: dict) -> str:
    """One candidate's knob values as a hashable, order-free key (the study's identity of a candidate)."""
    return json.dumps({k: params[k] for k in KNOBS}, sort_keys=True)


@dataclass(frozen=True)
class Knobs:
    zero_stage: int = 0
    optimizer_offload: str = "none"
    activation_checkpointing: str = "none"
    sp_degree: int = 1
    micro_batch: int = 1
    nodes: int = 1
    # Fraction of each device's default power limit (1.0: untouched); on a GH200 the module's limit.
    power_limit: float = 1.0
    # SM clock cap in MHz, or "max" (untouched).
    sm_clock_mhz: int | str = SM_CLOCK_UNTOUCHED

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in KNOBS}

    @property
    def changes_device_settings(self) -> bool:
        """Whether a run of these knobs sets a power limit or clock that must be restored afterwards."""
        return any(getattr(self, knob) != untouched for knob, untouched in UNTOUCHED_DEVICE_SETTINGS.items())


# The device settings a run leaves as they are (Knobs' defaults): what a space file or a measurement
# record that names no power limit or clock means (files written before these knobs existed).
UNTOUCHED_DEVICE_SETTINGS = {"power_limit": Knobs.power_limit, "sm_clock_mhz": Knobs.sm_clock_mhz}


def power_limit_fraction_text(fraction: float) -> str:
    """A power limit as every output writes it: `1.0`, `0.7`, `0.75`, never a bare `1` (the sweep line's `1: trial 1`
    beside the table's `1.0` read as two settings, trial57 #13)."""
    return f"{fraction:.1f}" if round(fraction, 1) == fraction else f"{fraction:g}"


def limited_device(hardware: HardwareProfile) -> str:
    """What one power limit caps: a GH200's module (CPU + GPU + memory), where the profile's energy is the module's
    too; else a GPU (PowerSpec)."""
    return "module" if hardware.module_scope_energy else "GPU"


def power_limit_watts(fraction: float, hardware: HardwareProfile | None, measured_default_w: float | None = None) -> str:
    """" (476 W per module on the gh200 profile)": the fraction in watts, which is what an NVML user (root) sets
    (trial57 #12; SLURM has no power-limit option: trial75 #17); empty without a profile, or on one with no power
    limit to set (CPU ranks). `measured_default_w`: the default limit NVML reported on the probe's devices (the
    launch backend keeps it), preferred to the profile's and said to be measured."""
    if hardware is None or not hardware.cuda:
        return ""
    device = limited_device(hardware)
    if measured_default_w is not None:
        return (f" ({fraction * measured_default_w:.0f} W per {device}: of the {measured_default_w:g} W default "
                "NVML reported on the probe's devices)")
    return f" ({fraction * hardware.power.module_cap_w:.0f} W per {device} on the {hardware.name} profile)"


def power_limit_text(fraction: float, hardware: HardwareProfile | None = None, measured_default_w: float | None = None) -> str:
    """"0.8 x default", and its watts where the profile is at hand: "0.8 x default (544 W per module on the gh200
    profile)" (power_limit_watts)."""
    return f"{power_limit_fraction_text(fraction)} x default{power_limit_watts(fraction, hardware, measured_default_w)}"


def device_knobs_text(params: dict, hardware: HardwareProfile | None = None, measured_default_w: float | None = None) -> str:
    """", power limit 0.8 x default, SM clock cap 1500 MHz"; empty where both are untouched (or, in runs recorded
    before these knobs existed, not named). With the study's `hardware`, the limit in watts too (power_limit_text)."""
    text = ""
    if params.get("power_limit", Knobs.power_limit) != Knobs.power_limit:
        text += f", power limit {power_limit_text(params['power_limit'], hardware, measured_default_w)}"
    if params.get("sm_clock_mhz", Knobs.sm_clock_mhz) != Knobs.sm_clock_mhz:
        text += f", SM clock cap {params['sm_clock_mhz']} MHz"
    return text


def knobs_sentence(params: dict, hardware: HardwareProfile | None = None, measured_default_w: float | None = None) -> str:
    """A configuration in words, as every report, progress line and calibration names it: "ZeRO-3 optimizer
    offload none, checkpointing recompute, SP 1, micro-batch 4, 4 nodes, power limit 0.8 x default"; where the
    profile is at hand (a pick's line), the limit in watts too (power_limit_text)."""
    return (
        f"ZeRO-{params['zero_stage']} optimizer offload {params['optimizer_offload']}, "
        f"checkpointing {params['activation_checkpointing']}, SP {params['sp_degree']}, "
        f"micro-batch {params['micro_batch']}, {counted(params['nodes'], 'node')}"
    ) + device_knobs_text(params, hardware, measured_default_w)


@dataclass(frozen=True, slots=True)  # slots: a --nodes 1-256 space holds 786,432
class Candidate:
    knobs: Knobs
    model: ModelSpec
    hardware: HardwareProfile
    workload: Workload
    # GPUs used per node; defaults to the hardware's full node (a CPU test may use 1 or 2 ranks).
    gpus_per_node: int = field(default=0)

    def __post_init__(self):
        if self.gpus_per_node == 0:
            object.__setattr__(self, "gpus_per_node", self.hardware.gpus_per_node)
        object.__setattr__(self, "workload", with_precision(self.workload, self.hardware.cuda))

    @property
    def gpus(self) -> int:
        return self.knobs.nodes * self.gpus_per_node

    @property
    def dp_degree(self) -> int:
        """Data-parallel size: Ulysses SP ranks share one sample, so DP = GPUs / SP."""
        return self.gpus // self.knobs.sp_degree

    @property
    def grad_accum(self) -> int:
        """Gradient accumulation that keeps the global batch fixed (0 when it cannot be an integer)."""
        per_step = self.knobs.micro_batch * self.dp_degree
        if per_step == 0 or self.workload.global_batch % per_step:
            return 0
        return self.workload.global_batch // per_step

    @property
    def precision(self) -> str:
        return self.workload.precision  # resolved in __post_init__ (bf16 on CUDA, fp32 on CPU)

    @property
    def bytes_per_element(self) -> int:
        """Bytes of one parameter, gradient or activation element in the training precision."""
        return 2 if self.precision == "bf16" else 4

    def to_dict(self) -> dict:
        return {
            "knobs": self.knobs.to_dict(),
            "model": self.model.to_json(),
            "hardware": self.hardware.source or self.hardware.name,
            "workload": self.workload.to_dict(),
            "gpus_per_node": self.gpus_per_node,
        }

    def to_file(self) -> dict:
        """The candidate file a probe reads (`--candidate`): to_dict() and the whole hardware profile, so
        that the probe, and an exported pick on another machine, need no profile file."""
        return {**self.to_dict(), "hardware_profile": hardware_to_dict(self.hardware)}


# What Candidate.to_file writes: a candidate file's keys.
CANDIDATE_FILE_KEYS = ("knobs", "model", "hardware", "workload", "gpus_per_node", "hardware_profile")


def candidate_from_dict(data: dict) -> Candidate:
    """The candidate a candidate file holds. The file is meant to be edited and probed again (README, "Run one
    probe by hand"), so its knobs, workload and rank count are user input: each is checked as the probe's flag
    for it is (knob_value; the count flags' range), and a wrong one is a ConfigError naming it
    ("knobs.zero_stage = 1.5 is not one of the allowed values 0, 1, 2, 3"), never a value DeepSpeed or the
    data-parallel arithmetic meets later (trial 66 #11: 1.5 started the ranks, true ran as ZeRO-1). Its keys too: one
    missing was "(KeyError: 'workload')", an unknown one passed (trial 68 #6)."""
    refuse_unknown_keys("the file", data, CANDIDATE_FILE_KEYS, "its keys are those `autotune export` writes")
    missing = [key for key in ("knobs", "model", "workload") if key not in data]
    if missing:
        raise ConfigError(f"the file lacks {', '.join(missing)}; `autotune export` writes each")
    return Candidate(
        knobs=checked_knob_table(data["knobs"]),
        model=model_from_json(data["model"]),
        hardware=stored_hardware(data, "the candidate file's hardware profile"),
        workload=_file_workload(data["workload"]),
        # absent in no file autotune wrote; 0 there means the profile's full node, as Candidate takes it
        gpus_per_node=_file_count("gpus_per_node", data["gpus_per_node"]) if "gpus_per_node" in data else 0,
    )


def checked_knob_table(raw, where: str = "knobs") -> Knobs:
    """The Knobs of a configuration a file names (a candidate file, a measurement record), `where` its place there:
    unknown knobs and impossible values are refused in one line, not guessed (trial 66 #11: a candidate file's 1.5
    reached DeepSpeed)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} = {shown(raw)} is not an object of knob values")
    refuse_unknown_keys(where, raw, KNOBS, "the knobs are those of search_spaces/default.toml")
    # Knobs' defaults (ZeRO-0, no checkpointing) are no one's choice: only the device settings may be left out,
    # meaning untouched, as in a measurement record
    missing = [knob for knob in KNOBS if knob not in raw and knob not in UNTOUCHED_DEVICE_SETTINGS]
    if missing:
        raise ConfigError(f"{where} lacks {', '.join(missing)}; every knob but {' and '.join(UNTOUCHED_DEVICE_SETTINGS)} "
                          "(left out: untouched) needs a value")
    values = {}
    for knob, value in raw.items():
        try:
            values[knob] = knob_value(knob, value)
        except ValueError as why:
            raise ConfigError(f"{where}.{knob} = {shown(value)} {why}") from None
    return Knobs(**values)


def _file_workload(raw) -> Workload:
    if not isinstance(raw, dict) or set(raw) - {*WORKLOAD_KEYS, "precision"} or set(WORKLOAD_KEYS) - set(raw):
        raise ConfigError(f"workload = {shown(raw)} is not an object of {', '.join(WORKLOAD_KEYS)} and precision")
    precision = raw.get("precision")
    if precision not in (None, *PRECISIONS):
        raise ConfigError(f"workload.precision = {shown(precision)} is not one of {', '.join(PRECISIONS)} (or null: "
                          "the hardware's)")
    return Workload(**{key: _file_count(f"workload.{key}", raw[key]) for key in WORKLOAD_KEYS}, precision=precision)


def _file_count(key: str, value) -> int:
    """A whole number >= 1, checked as the probe's count flags (--gpus-per-node, --frames, ...) check theirs."""
    problem = number_problem(value, low=1, high=MAX_COUNT, integer=True, whole_literal=True)
    if problem:
        raise ConfigError(f"{key} = {shown(value)} {problem}")
    return value


def configuration_text(candidate: Candidate) -> str:
    """"1.5b: ZeRO-2 optimizer offload none, ..., 1 node, power limit 0.7 x default": the model and the
    knobs in the words the study report named the configuration with (calibrate's worst figures and memory
    error name their probes so)."""
    return f"{candidate.model.name}: {knobs_sentence(candidate.knobs.to_dict())}"
