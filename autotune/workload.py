"""The fixed training work a study compares configurations on.

Every candidate processes the same `samples` with the same `global_batch` (micro-batch x gradient
accumulation x data-parallel size = global batch), so time and energy to solution are comparable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from autotune.checks import checked_number
from autotune.errors import ConfigError
from autotune.models import ModelSpec

# Near the GH200 study's long video samples: 60 frames x 196 tokens + 256 text ~= 12k tokens.
DEFAULT_WORKLOAD = {"frames": 60, "text_tokens": 256, "global_batch": 64, "samples": 2048}


@dataclass(frozen=True)
class Workload:
    frames: int
    text_tokens: int
    global_batch: int
    samples: int
    # None: bf16 where the hardware has CUDA, fp32 on CPU (gloo ranks).
    precision: str | None = None

    def tokens_per_sample(self, model: ModelSpec) -> int:
        return self.frames * model.vision.tokens_per_frame + self.text_tokens

    def to_dict(self) -> dict:
        return asdict(self)


WORKLOAD_KEYS = ("frames", "text_tokens", "global_batch", "samples")
PRECISIONS = ("bf16", "fp32")


def make_workload(model: ModelSpec, **overrides) -> Workload:
    """Defaults of the model (or the study's), with the user's options on top (None = keep default).

    The flags and the model file are each checked where they are read; here the values are checked
    once more (for callers from code) and against each other, naming where each one came from."""
    given = {k: v for k, v in overrides.items() if v is not None}
    values = {**DEFAULT_WORKLOAD, **model.default_workload, **given}
    for name in WORKLOAD_KEYS:
        values[name] = checked_number("workload", name, values[name], low=1, integer=True)
    if values.get("precision") not in (None, *PRECISIONS):
        raise ConfigError(f"workload: precision = {values['precision']!r} is not allowed; it must be bf16 or fp32")
    if values["samples"] < values["global_batch"]:
        samples, batch = (_named(name, values, given, model) for name in ("samples", "global_batch"))
        raise ConfigError(
            f"{samples} is less than one global batch, {batch}: the job must run at least one optimizer step; "
            f"pass --samples {values['global_batch']} or more, or a smaller --global-batch"
        )
    return Workload(**values)


def _named(name: str, values: dict, given: dict, model: ModelSpec) -> str:
    """A workload value with where it came from, so an error never blames a flag that was not given."""
    if name in given:
        return f"--{name.replace('_', '-')} {values[name]}"
    where = f"from the default_workload of model {model.name}" if name in model.default_workload else "by default"
    return f"{name} {values[name]} {where}"


def default_precision(cuda: bool) -> str:
    """The precision a workload that names none runs at: bf16 on CUDA GPUs, fp32 on CPU."""
    return "bf16" if cuda else "fp32"


def with_precision(workload: Workload, cuda: bool) -> Workload:
    if workload.precision is not None:
        return workload
    return replace(workload, precision=default_precision(cuda))
