"""Model sizes: the one definition of the presets, shared by the tuner, the simulator and the trainer.

A model is a SigLIP-style vision tower, a projector (2x2 spatial pooling + two-layer MLP) and a
Qwen2.5-style decoder with grouped-query attention and 3D rotary positions. `load_model("32b")`
or `load_model("path/to/model.json")`; the JSON schema is `ModelSpec.to_json()` (docs/model-schema.md).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autotune.errors import ConfigError


@dataclass(frozen=True)
class LLMSpec:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    # Rotary pairs of one head split into (time, height, width) sections, as in Qwen2-VL's M-RoPE.
    mrope_sections: tuple[int, int, int]
    rope_theta: float = 1_000_000.0
    tie_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def params(self) -> int:
        """Exact parameter count of the decoder as the trainer builds it."""
        kv = self.kv_heads * self.head_dim
        attention = self.hidden * self.hidden + self.hidden + 2 * (self.hidden * kv + kv) + self.hidden * self.hidden
        mlp = 3 * self.hidden * self.ffn
        norms = 2 * self.hidden
        embeddings = self.vocab * self.hidden * (1 if self.tie_embeddings else 2)
        return self.layers * (attention + mlp + norms) + self.hidden + embeddings

    def layer_params(self) -> int:
        return (self.params() - self.hidden - self.vocab * self.hidden * (1 if self.tie_embeddings else 2)) // self.layers


@dataclass(frozen=True)
class VisionSpec:
    hidden: int
    layers: int
    heads: int
    mlp: int
    patch: int
    image_size: int
    pool: int = 2  # spatial pooling of the patch grid in the projector (2x2)

    @property
    def patches_per_side(self) -> int:
        return self.image_size // self.patch

    @property
    def patches_per_frame(self) -> int:
        return self.patches_per_side**2

    @property
    def tokens_per_frame(self) -> int:
        """Visual tokens one frame gives the LLM after pooling (196 for 392 px at patch 14)."""
        return (self.patches_per_side // self.pool) ** 2

    def params(self) -> int:
        h = self.hidden
        patch_embed = 3 * self.patch * self.patch * h + h
        position = self.patches_per_frame * h
        block = 4 * (h * h + h) + (h * self.mlp + self.mlp) + (self.mlp * h + h) + 4 * h
        return patch_embed + position + self.layers * block + 2 * h

    def layer_params(self) -> int:
        h = self.hidden
        return 4 * (h * h + h) + (h * self.mlp + self.mlp) + (self.mlp * h + h) + 4 * h


@dataclass(frozen=True)
class ModelSpec:
    name: str
    llm: LLMSpec
    vision: VisionSpec
    # Workload defaults suited to this size (the tiny model uses small frames so CPU tests are quick).
    default_workload: dict = field(default_factory=dict, compare=False, hash=False)

    def projector_params(self) -> int:
        pooled = self.vision.hidden * self.vision.pool**2
        return pooled * self.llm.hidden + self.llm.hidden + self.llm.hidden * self.llm.hidden + self.llm.hidden

    def params(self) -> int:
        return self.llm.params() + self.vision.params() + self.projector_params()

    def largest_layer_params(self) -> int:
        """Largest single parameter tensor group DeepSpeed gathers at once under ZeRO-3."""
        return max(self.llm.vocab * self.llm.hidden, self.llm.layer_params(), self.vision.layer_params())

    def to_json(self) -> dict:
        data = asdict(self)
        data["llm"]["mrope_sections"] = list(self.llm.mrope_sections)
        return data


# SigLIP so400m/14 at 392 px: 28x28 patches, pooled 2x2 to 14x14 = 196 tokens per frame.
_SIGLIP_SO400M = VisionSpec(hidden=1152, layers=27, heads=16, mlp=4304, patch=14, image_size=392)

PRESETS: dict[str, ModelSpec] = {
    "tiny": ModelSpec(
        name="tiny",
        llm=LLMSpec(hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=256, mrope_sections=(2, 3, 3)),
        vision=VisionSpec(hidden=32, layers=2, heads=2, mlp=64, patch=14, image_size=56),
        default_workload={"frames": 2, "text_tokens": 32, "global_batch": 8, "samples": 64},
    ),
    # Qwen2.5 published sizes (shared/reference/gh200-study.md); 128-dim heads, sections [16, 24, 24].
    "7b": ModelSpec(
        name="7b",
        llm=LLMSpec(hidden=3584, layers=28, heads=28, kv_heads=4, ffn=18944, vocab=152064, mrope_sections=(16, 24, 24)),
        vision=_SIGLIP_SO400M,
    ),
    "32b": ModelSpec(
        name="32b",
        llm=LLMSpec(hidden=5120, layers=64, heads=40, kv_heads=8, ffn=27648, vocab=152064, mrope_sections=(16, 24, 24)),
        vision=_SIGLIP_SO400M,
    ),
    "72b": ModelSpec(
        name="72b",
        llm=LLMSpec(hidden=8192, layers=80, heads=64, kv_heads=8, ffn=29568, vocab=152064, mrope_sections=(16, 24, 24)),
        vision=_SIGLIP_SO400M,
    ),
}


def _validate(spec: ModelSpec, origin: str) -> ModelSpec:
    llm, vis = spec.llm, spec.vision
    problems = []
    if llm.hidden % llm.heads:
        problems.append(f"llm.hidden {llm.hidden} is not a multiple of llm.heads {llm.heads}")
    if llm.heads % llm.kv_heads:
        problems.append(f"llm.heads {llm.heads} is not a multiple of llm.kv_heads {llm.kv_heads}")
    if not problems and sum(llm.mrope_sections) * 2 != llm.head_dim:
        problems.append(f"llm.mrope_sections {list(llm.mrope_sections)} must sum to head_dim/2 = {llm.head_dim // 2}")
    if vis.hidden % vis.heads:
        problems.append(f"vision.hidden {vis.hidden} is not a multiple of vision.heads {vis.heads}")
    if vis.image_size % vis.patch or vis.patches_per_side % vis.pool:
        problems.append(
            f"vision.image_size {vis.image_size} must be a multiple of patch*pool = {vis.patch * vis.pool}"
        )
    if problems:
        raise ConfigError(f"model {origin}: {'; '.join(problems)}; fix the file (schema: docs/model-schema.md)")
    return spec


def model_from_json(data: dict, origin: str = "<dict>") -> ModelSpec:
    try:
        llm = dict(data["llm"])
        llm["mrope_sections"] = tuple(llm["mrope_sections"])
        return _validate(
            ModelSpec(
                name=str(data.get("name", Path(origin).stem)),
                llm=LLMSpec(**llm),
                vision=VisionSpec(**data["vision"]),
                default_workload=dict(data.get("default_workload", {})),
            ),
            origin,
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(
            f"model {origin}: missing or unknown field ({exc}); see docs/model-schema.md for the schema"
        ) from None


def load_model(name_or_path: str) -> ModelSpec:
    """A preset name (tiny, 7b, 32b, 72b) or the path of a JSON file in the documented schema."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    path = Path(name_or_path)
    if path.suffix == ".json" and path.exists():
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"model file {path}: not valid JSON ({exc}); fix the file") from None
        return model_from_json(data, str(path))
    raise ConfigError(
        f"unknown model '{name_or_path}': use one of {', '.join(PRESETS)} "
        "or the path of a JSON model file (schema: docs/model-schema.md)"
    )
