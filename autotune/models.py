"""Model sizes: the one definition of the presets, shared by the tuner, the simulator and the trainer.

A model is a SigLIP-style vision tower, a projector (2x2 spatial pooling + two-layer MLP) and a
Qwen2.5-style decoder with grouped-query attention and 3D rotary positions. `load_model("32b")`
or `load_model("path/to/model.json")`; the JSON schema is `ModelSpec.to_json()` (docs/model-schema.md).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autotune.checks import MAX_COUNT, number_problem, refuse_duplicate_keys, refuse_unknown_keys, shown
from autotune.errors import ConfigError
from autotune.file_kind import did_you_mean, mixed_up
from autotune.os_text import os_text
from autotune.text_files import read_text


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


_SCHEMA = "docs/model-schema.md"
# Keys of each part of a model file, and what they must be; optional ones have defaults in the dataclasses.
_LLM_SIZES = ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab")
_VISION_SIZES = ("hidden", "layers", "heads", "mlp", "patch", "image_size")
_LLM_KEYS = (*_LLM_SIZES, "mrope_sections", "rope_theta", "tie_embeddings")
_VISION_KEYS = (*_VISION_SIZES, "pool")
_TOP_KEYS = ("name", "llm", "vision", "default_workload")
MAX_NAME_CHARS = 200  # a name heads every report and names the default run directory
_MAX_SIZE = MAX_COUNT
_WORKLOAD_KEYS = ("frames", "text_tokens", "global_batch", "samples")


class _Reader:
    """Reads one model file's values, each checked for type and range, every error naming the file and key."""

    def __init__(self, origin: str):
        self.origin = origin

    def fail(self, key: str, value, problem: str):
        raise ConfigError(f"{self.origin}: {key} = {shown(value)} {problem}; fix the file (schema: {_SCHEMA})")

    def part(self, data: dict, key: str, known: tuple, required: bool) -> dict:
        if key not in data:
            if required:
                raise ConfigError(f"{self.origin}: '{key}' is missing; it must be an object with {', '.join(known)} (schema: {_SCHEMA})")
            return {}
        if not isinstance(data[key], dict):
            self.fail(key, data[key], "is not an object; it must be {...} with " + ", ".join(known))
        refuse_unknown_keys(f"{self.origin}: {key}", data[key], known, f"fix the file (schema: {_SCHEMA})")
        return data[key]

    def number(self, key: str, value, **bounds):
        problem = number_problem(value, **bounds, whole_literal=True)
        if problem:
            self.fail(key, value, problem)
        return int(value) if bounds.get("integer") else float(value)

    def sizes(self, part: dict, prefix: str, keys: tuple) -> dict:
        """Whole numbers >= 1 of the keys present (a missing one is refused by `require` or has a default)."""
        return {key: self.number(f"{prefix}.{key}", part[key], low=1, high=_MAX_SIZE, integer=True) for key in keys if key in part}

    def require(self, part: dict, prefix: str, keys: tuple) -> None:
        missing = [key for key in keys if key not in part]
        if missing:
            raise ConfigError(f"{self.origin}: {', '.join(f'{prefix}.{k}' for k in missing)} missing; "
                              f"{prefix} needs {', '.join(keys)} (schema: {_SCHEMA})")


# What makes a model the same one: its sizes (these parts of its JSON), not its name, which for a checkpoint is its
# directory's. A replay's records and a resume compare them.
MODEL_SIZE_PARTS = ("llm", "vision")


def size_differences(theirs: dict, mine: dict) -> list[tuple[str, object, object]]:
    """("llm.layers", theirs, mine) for each size of `mine` that `theirs` does not share (a part missing there: None)."""
    return [(f"{part}.{key}", (theirs.get(part) or {}).get(key), value) for part in MODEL_SIZE_PARTS
            for key, value in (mine.get(part) or {}).items() if (theirs.get(part) or {}).get(key) != value]


def first_three(texts: list[str]) -> str:
    """"a, b, c and 2 more": the first three of a list of differences."""
    return ", ".join(texts[:3]) + (f" and {len(texts) - 3} more" if len(texts) > 3 else "")


def params_text(count: float) -> str:
    """A parameter count to read: "1.20T", "32.50B", "125.3M", "12.4K" ("0.00B" said nothing of a tiny test model:
    trial54 F11); past a thousand T, "2.75e+20" (not 13 digits of B: trial 61 #19)."""
    if count >= 1e15:
        return f"{count:.3g}"
    for divisor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= divisor:
            return f"{count / divisor:.2f}{suffix}" if suffix in "TB" else f"{count / divisor:.1f}{suffix}"
    return f"{count:.0f}"


# The largest models trained have a few trillion parameters (mixtures of experts; dense ones about 0.5T): 100T is
# far past any, so a model file above it holds a typo (1e12 layers passed each size's own range: trial 61 #19).
MAX_MODEL_PARAMS = 100e12


def _size_problem(llm: LLMSpec, vis: VisionSpec) -> str | None:
    """Why the sizes together build no model anyone trains, or None: each size is in range, their product may not be."""
    count = llm.params() + vis.params()
    if count <= MAX_MODEL_PARAMS:
        return None
    sizes = ", ".join(f"llm.{key} {getattr(llm, key)}" for key in _LLM_SIZES)
    return (f"the sizes ({sizes}; vision.hidden {vis.hidden}, vision.layers {vis.layers}) build {params_text(count)} "
            f"parameters, more than {params_text(MAX_MODEL_PARAMS)}, and the largest models trained have a few "
            "trillion: one of them is a typo")


def _read_llm(reader: _Reader, data: dict) -> LLMSpec:
    part = reader.part(data, "llm", _LLM_KEYS, required=True)
    reader.require(part, "llm", (*_LLM_SIZES, "mrope_sections"))
    values = reader.sizes(part, "llm", _LLM_SIZES)
    sections = part["mrope_sections"]
    if not (isinstance(sections, list) and len(sections) == 3):
        reader.fail("llm.mrope_sections", sections, "is not a list of three whole numbers (time, height, width)")
    values["mrope_sections"] = tuple(
        reader.number(f"llm.mrope_sections[{i}]", v, low=1, high=_MAX_SIZE, integer=True) for i, v in enumerate(sections)
    )
    if "rope_theta" in part:
        values["rope_theta"] = reader.number("llm.rope_theta", part["rope_theta"], low=0, low_open=True)
    if "tie_embeddings" in part:
        if not isinstance(part["tie_embeddings"], bool):
            reader.fail("llm.tie_embeddings", part["tie_embeddings"], "is not true or false")
        values["tie_embeddings"] = part["tie_embeddings"]
    return LLMSpec(**values)


def _read_vision(reader: _Reader, data: dict) -> VisionSpec:
    part = reader.part(data, "vision", _VISION_KEYS, required=True)
    reader.require(part, "vision", _VISION_SIZES)
    return VisionSpec(**reader.sizes(part, "vision", _VISION_KEYS))


def _read_default_workload(reader: _Reader, data: dict) -> dict:
    part = reader.part(data, "default_workload", _WORKLOAD_KEYS, required=False)
    values = reader.sizes(part, "default_workload", _WORKLOAD_KEYS)
    if "samples" in values and "global_batch" in values and values["samples"] < values["global_batch"]:
        reader.fail("default_workload.samples", values["samples"],
                    f"is less than one global batch (default_workload.global_batch = {values['global_batch']})")
    return values


def _shape_problems(llm: LLMSpec, vis: VisionSpec) -> list[str]:
    """Rules between the sizes: the trainer builds heads by splitting widths, and frames by patches."""
    problems = []
    if llm.hidden % llm.heads:
        problems.append(f"llm.hidden {llm.hidden} is not a multiple of llm.heads {llm.heads}")
    elif llm.heads % llm.kv_heads:
        problems.append(f"llm.heads {llm.heads} is not a multiple of llm.kv_heads {llm.kv_heads}")
    elif sum(llm.mrope_sections) * 2 != llm.head_dim:
        problems.append(
            f"llm.mrope_sections {list(llm.mrope_sections)} sum to {sum(llm.mrope_sections)}, not to "
            f"head_dim/2 = llm.hidden / llm.heads / 2 = {llm.head_dim / 2:g}"
        )
    if vis.hidden % vis.heads:
        problems.append(f"vision.hidden {vis.hidden} is not a multiple of vision.heads {vis.heads}")
    if vis.image_size % vis.patch or vis.patches_per_side % vis.pool:
        problems.append(f"vision.image_size {vis.image_size} is not a multiple of vision.patch * vision.pool = {vis.patch * vis.pool}")
    return problems


def model_from_json(data: dict, origin: str = "model", default_name: str = "custom") -> ModelSpec:
    """A ModelSpec from the documented JSON schema; every value checked, unknown keys refused."""
    reader = _Reader(origin)
    if not isinstance(data, dict):
        reader.fail("the top level", data, "is not an object; a model file is {\"llm\": {...}, \"vision\": {...}}")
    refuse_unknown_keys(origin, data, _TOP_KEYS, f"fix the file (schema: {_SCHEMA})")
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        reader.fail("name", name, "is not a non-empty string")
    if len(name) > MAX_NAME_CHARS or not name.isprintable():  # a newline split every report's header in two
        reader.fail("name", name, f"is not a model name: printable characters on one line, at most {MAX_NAME_CHARS}")
    llm, vision = _read_llm(reader, data), _read_vision(reader, data)
    problems = _shape_problems(llm, vision) or [problem for problem in [_size_problem(llm, vision)] if problem]
    if problems:
        raise ConfigError(f"{origin}: {'; '.join(problems)}; fix the file (schema: {_SCHEMA})")
    return ModelSpec(name=name, llm=llm, vision=vision, default_workload=_read_default_workload(reader, data))


def load_model(name_or_path: str) -> ModelSpec:
    """A preset name (tiny, 7b, 32b, 72b) or the path of a JSON file in the documented schema, or a
    Hugging Face config.json (autotune/models_hf.py)."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    path = Path(name_or_path)
    if path.is_dir():  # a checkpoint's directory, as transformers' from_pretrained takes it
        if not (path / "config.json").is_file():
            raise ConfigError(_mixed_up(path) or f"--model {path} is a directory without a config.json; pass a checkpoint "
                              f"directory that holds one, a model JSON file (schema: {_SCHEMA}) or a preset "
                              f"({', '.join(PRESETS)})")
        path = path / "config.json"
    if path.suffix.lower() == ".json":
        origin = f"model file {path}"
        try:
            # text_files: a byte-order mark (a Windows editor) is no part of the JSON; UTF-16 (PowerShell's Out-File) is said.
            data = json.loads(read_text(path, origin), object_pairs_hook=refuse_duplicate_keys)
        except FileNotFoundError:
            raise ConfigError(f"{origin} does not exist; pass a preset ({', '.join(PRESETS)}) or an existing JSON "
                              f"file{_did_you_mean(name_or_path)}") from None
        except OSError as exc:
            raise ConfigError(f"{origin} cannot be read ({exc.strerror or exc}); pass a readable JSON file") from None
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a repeated key, nested too deep
            raise ConfigError(f"{origin} is not valid JSON ({exc}); fix the file (schema: {_SCHEMA})") from None
        from autotune.models_hf import hf_key_names, is_hf_config, model_json_from_hf, text_prefix

        if is_hf_config(data):
            try:
                return model_from_json(model_json_from_hf(data, path, origin), f"{origin} (read as a Hugging Face config)")
            except ConfigError as exc:
                raise ConfigError(hf_key_names(str(exc), text_prefix(data))) from None
        try:
            # The file's name, not its path: surrogate escapes of a non-ASCII name (an ASCII locale) read back as UTF-8.
            return model_from_json(data, origin, default_name=os_text(path.stem, errors="replace"))
        except ConfigError as refusal:  # a run's pareto.json, say: its forty keys are no typo to fix
            raise ConfigError(_mixed_up(path) or str(refusal)) from None
    if path.is_file():
        # The file is there: the rule it breaks is its name (a preset's name is never taken for a file of that name),
        # unless it is another flag's file (a hardware profile, a space file), which no .json name would make a model.
        raise ConfigError(_mixed_up(path) or f"--model {path}: model files are read by a .json name; give the file one "
                          f"({path.stem}.json; schema: {_SCHEMA}), or pass a preset ({', '.join(PRESETS)})")
    raise ConfigError(
        f"unknown model '{name_or_path}': use one of {', '.join(PRESETS)}, the path of a JSON model file (schema: "
        f"{_SCHEMA}), or a Hugging Face checkpoint's directory or its config.json{_did_you_mean(name_or_path)}"
    )


def _did_you_mean(name_or_path: str) -> str:
    return did_you_mean(name_or_path, "--model", list(PRESETS), "a preset")


def _mixed_up(path: Path) -> str | None:
    """The refusal of another flag's file (a hardware profile, a space file, a run's results) given as --model."""
    return mixed_up(path, "--model", "a model", f"a preset ({', '.join(PRESETS)}), a JSON model file (schema: "
                                                f"{_SCHEMA}) or a Hugging Face checkpoint's directory")
