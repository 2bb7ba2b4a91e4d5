"""The immutable dataclasses of a hardware profile (one node; per accelerator where a figure is shared)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from autotune.hardware.simulator_constants import DEFAULT_SIMULATOR_CONSTANTS, SimulatorConstants

# The keys of [error_measured_on]: the model, the knobs whose values a calibration's configurations covered, and their
# GPU counts (all nodes', as [calibrated_on]'s; absent from a profile an older calibrate wrote); then the workload
# they ran (frames, text tokens, precision: absent from one written before trial72 #3, where the error was quoted at
# any sequence length and at fp32, which nothing measured). The global batch is the workload's, kept with the knobs
# (per model too: the GH200 study's is its local batch x GPUs, 16-64 for 7b, 32-128 for 32b and 72b); absent from a
# profile written before it was recorded, where a study at any --global-batch got the error as if measured there.
ERROR_SCOPE_MODEL_KEYS = ("zero_stage", "optimizer_offload", "activation_checkpointing", "sp_degree", "micro_batch",
                          "nodes", "gpus", "power_limit", "sm_clock_mhz", "global_batch")
ERROR_SCOPE_WORKLOAD_KEYS = ("frames", "text_tokens", "precision")
ERROR_SCOPE_KEYS = ("model", *ERROR_SCOPE_MODEL_KEYS, *ERROR_SCOPE_WORKLOAD_KEYS)
# Its sub-table [error_measured_on.by_model."7b"]: each model's own knob values and GPU counts (ERROR_SCOPE_MODEL_KEYS).
# The lists above are their union, and judged alone they vouched for 7b on 64 GPUs at micro-batch 1 because 72b was
# measured there (trial72 #3); a profile written before it has none, and is judged by the union as it was.
ERROR_SCOPE_BY_MODEL = "by_model"


def scope_table(scope: dict) -> dict:
    """An [error_measured_on] as a profile holds it (tuples, by_model's too) from lists (calibrate's JSON, TOML)."""
    return {key: ({model: {k: tuple(v) for k, v in lists.items()} for model, lists in values.items()}
                  if key == ERROR_SCOPE_BY_MODEL else tuple(values)) for key, values in scope.items()}
# The keys of [calibrated_on]: the models, GPU counts and node counts of the configurations a calibration fitted.
CALIBRATED_ON_KEYS = ("model", "gpus", "nodes")


# The note a profile's description gets where its [simulator_error] is ignored when read (hardware/load.py): the
# description is the one free-text key the copy a study keeps of its profile has, so the study's reports and
# pareto.json say why its figures show +- ?% (report/error_bars.py), not "error not stated: see its header" of a
# header that states one (trial63 #7). Its reason holds no ";", the notes' separator.
IGNORED_ERROR_NOTE = re.compile(r"read with its \[simulator_error\] ignored: [^;]*")


def ignored_error_note(why: str) -> str:
    return f"read with its [simulator_error] ignored: {why}"


# Likewise where its [calibrated_on] is not vouched for by figures_sha256 (hardware/load.py): a study's report then
# says what the profile was fitted on is unknown, not nothing (trial65 #6). Its reason holds no ";" either.
IGNORED_CALIBRATED_ON_NOTE = re.compile(r"read with its \[calibrated_on\] ignored: [^;]*")


def ignored_calibrated_on_note(why: str) -> str:
    return f"read with its [calibrated_on] ignored: {why}"


# The note that ends the description of a profile whose [simulator_error] says what it was measured on, in words:
# `autotune calibrate -o` writes it, and gh200.toml holds it. Here beside the notes above: hardware/load.py gives it to a
# study's copy of a shipped profile from before the shipped file had it, and report/error_bars.py reads it.
ERROR_SCOPE_NOTE = re.compile(r"error measured on ([^;]*)")


def with_description_note(description: str, pattern: re.Pattern, note: str | None) -> str:
    """The description with `note` in place of any earlier note `pattern` matches (the description's
    notes are ";"-separated)."""
    kept = re.sub(r"(?:;\s*)?(?:" + pattern.pattern + ")", "", description).strip()
    if note is None:
        return kept
    return f"{kept}; {note}" if kept else note


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_gib: float
    memory_bandwidth_gbs: float
    peak_bf16_tflops: float
    peak_fp32_tflops: float
    idle_power_w: float
    max_power_w: float
    # SM clock range NVML accepts for locked clocks (nvmlDeviceGetSupportedGraphicsClocks);
    # 0 and 0 on a device without a settable clock.
    min_sm_clock_mhz: float
    max_sm_clock_mhz: float


@dataclass(frozen=True)
class CpuSpec:
    """The host CPU share that serves one accelerator (a Grace per GH200, 1/8 of a DGX host)."""

    name: str
    cores: int
    memory_gib: float
    memory_bandwidth_gbs: float
    idle_power_w: float
    max_power_w: float


@dataclass(frozen=True)
class LinkSpec:
    name: str
    bandwidth_gbs: float


@dataclass(frozen=True)
class PowerSpec:
    # The default power limit: the module's on a GH200 (CPU + GPU + memory), else the GPU's.
    # The `power_limit` knob is a fraction of it.
    module_cap_w: float
    memory_interconnect_w: float
    # The lowest limit the device accepts (nvmlDeviceGetPowerManagementLimitConstraints' minimum).
    min_limit_w: float


@dataclass(frozen=True)
class HardwareProfile:
    name: str
    description: str
    gpus_per_node: int
    cuda: bool
    module_scope_energy: bool
    gpu: GpuSpec
    cpu: CpuSpec
    host_link: LinkSpec
    intra_node: LinkSpec
    inter_node: LinkSpec
    power: PowerSpec
    # Where the profile was read from: not part of what the profile *is* (a dumped copy is equal).
    source: str = field(default="", compare=False)
    simulator: SimulatorConstants = DEFAULT_SIMULATOR_CONSTANTS
    # Leave-one-out error of the simulator in percent per metric (time_s_pct, energy_kj_pct,
    # tflops_pct, power_w_pct), written by `autotune calibrate`; empty when never calibrated.
    simulator_error: dict = field(default_factory=dict, hash=False)
    # The name of the profile `autotune calibrate` started from (the first one, through recalibrations);
    # empty for a profile never calibrated. See `base_name`.
    calibrated_from: str = ""
    # Why nothing vouches that this profile describes the node `calibrated_from` names ("" where calibrate -o wrote
    # it, or it names none): written by hand, or edited since (hardware/load.py). Figures measured on that node are
    # taken as this profile's by that name alone (base_name), so a reader of them asks (claimed_node_problem).
    calibrated_from_unvouched: str = field(default="", compare=False)
    # What [simulator_error] was measured on, as `autotune calibrate -o` records it ([error_measured_on]): {"model":
    # ("Meta-Llama-3-8B + SigLIP so400m/14",), "zero_stage": ("2", "3"), ..., "gpus": ("8",), ...}, values as
    # text. Structured, not read back from the description's note: a model name holds "/" (every HF config's) or
    # " with " as the note's words do. Empty in a profile from before it was recorded (the note's words are all it
    # has: report/error_bars.py); without "gpus" in one from before the GPU count was.
    error_measured_on: dict = field(default_factory=dict, hash=False)
    # What `autotune calibrate -o` fitted the constants on ([calibrated_on]): {"model": ("1.5b",), "gpus": ("1",),
    # "nodes": ("1",)}, written whether or not an error is (unlike [error_measured_on]), so a study on the profile
    # outside it says so (report/error_bars.py). Empty for a profile never calibrated, or calibrated before it was kept.
    calibrated_on: dict = field(default_factory=dict, hash=False)

    @property
    def base_name(self) -> str:
        """The node this profile describes, by the name of the profile it was calibrated from (its own name
        when it never was): a calibrated profile has a name of its own for reports, but figures measured
        on gh200 nodes (a study, a reference set) are figures of every calibration of gh200 too."""
        return self.calibrated_from or self.name

    def peak_tflops(self, dtype: str = "bf16") -> float:
        return self.gpu.peak_bf16_tflops if dtype == "bf16" else self.gpu.peak_fp32_tflops
