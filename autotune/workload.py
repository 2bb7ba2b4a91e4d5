"""The fixed training work a study compares configurations on.

Every candidate processes the same `samples` with the same `global_batch` (micro-batch x gradient
accumulation x data-parallel size = global batch), so time and energy to solution are comparable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

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


def make_workload(model: ModelSpec, **overrides) -> Workload:
    """Defaults of the model (or the study's), with the user's options on top (None = keep default)."""
    values = {**DEFAULT_WORKLOAD, **model.default_workload}
    values.update({k: v for k, v in overrides.items() if v is not None})
    workload = Workload(**values)
    for name in ("frames", "global_batch", "samples"):
        if getattr(workload, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(workload, name)})")
    if workload.text_tokens < 1:
        raise ConfigError(f"--text-tokens must be at least 1 (got {workload.text_tokens}): the loss is on text tokens")
    if workload.precision not in (None, "bf16", "fp32"):
        raise ConfigError(f"precision must be bf16 or fp32 (got {workload.precision!r})")
    return workload


def with_precision(workload: Workload, cuda: bool) -> Workload:
    if workload.precision is not None:
        return workload
    return replace(workload, precision="bf16" if cuda else "fp32")
