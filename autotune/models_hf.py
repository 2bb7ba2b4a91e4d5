"""A Hugging Face `config.json` as a model file: its decoder, read into autotune's schema.

People bring the config.json of the checkpoint they will train: a Qwen2 / Qwen2.5 decoder, or a
vision-language config that holds one (top level, or `text_config` as newer transformers write
Qwen2.5-VL and LLaVA-style configs). Its sizes map one to one onto autotune's `llm` block; the
vision tower is the presets' SigLIP so400m/14 at 392 px, the tower the trainer builds, whatever the
config's own `vision_config` says, and the model's name says so in every report. Only the keys read
here are checked (a Hugging Face config holds dozens of others), each error naming the config's key;
what the file says that autotune's decoder builds otherwise (the tower, the activation, the biases)
is one warning line, `model_warning`, that the commands print.
"""

from __future__ import annotations

import json
from pathlib import Path

from autotune.checks import MAX_COUNT, checked_number, number_problem, shown
from autotune.errors import ConfigError
from autotune.models import PRESETS, load_model
from autotune.os_text import os_text

# autotune's llm size <- the Hugging Face key (Qwen2Config, and the text part of Qwen2.5-VL / LLaVA).
_SIZES = {"hidden": "hidden_size", "layers": "num_hidden_layers", "heads": "num_attention_heads",
          "kv_heads": "num_key_value_heads", "ffn": "intermediate_size", "vocab": "vocab_size"}
# Absent or null: one KV head per query head (no grouping), as transformers reads it (Qwen2Config, LlamaConfig:
# `if num_key_value_heads is None: num_key_value_heads = num_attention_heads`).
_OPTIONAL = ("num_key_value_heads",)
TOWER = "SigLIP so400m/14"
_FIX = "fix the file (of a Hugging Face config.json autotune reads the decoder's sizes: docs/model-schema.md)"


def is_hf_config(data) -> bool:
    """Every config transformers writes names its `model_type`; autotune's schema has no such key."""
    return isinstance(data, dict) and "model_type" in data


# Where a vision-language config keeps its decoder: text_config (Qwen2.5-VL, LLaVA), or llm_config (InternVL's).
_TEXT_KEYS = ("text_config", "llm_config")


def _text_key(data: dict) -> str | None:
    """Which of _TEXT_KEYS holds the decoder, None where the config's top level does."""
    return next((key for key in _TEXT_KEYS if data.get(key) is not None), None)


def text_prefix(data: dict) -> str:
    """The prefix of the decoder's keys in the config ("text_config.", "llm_config." or ""), for its errors."""
    key = _text_key(data)
    return f"{key}." if key is not None and isinstance(data[key], dict) else ""


def _text_part(data: dict) -> tuple[dict, str]:
    key = _text_key(data)
    if key is None:
        return data, ""
    text = data[key]
    if not isinstance(text, dict):
        raise ConfigError(f"{key} = {shown(text)} is not an object of the decoder's sizes; {_FIX}")
    return text, f"{key}."


def _default_sections(hidden: int, heads: int) -> list[int]:
    """Qwen2-VL's split of a head's rotary pairs into (time, height, width): a quarter, then halves of
    the rest ([16, 24, 24] for 128-dim heads). A head size that is no whole number is refused later."""
    pairs = hidden // heads // 2
    time = pairs // 4
    height = (pairs - time) // 2
    return [time, height, pairs - time - height]


def _name(data: dict, path: Path) -> str:
    """The checkpoint's name (`_name_or_path`'s last part, else its directory's when the file is the
    usual config.json), with the tower that stands in for its own."""
    given = data.get("_name_or_path")
    if isinstance(given, str) and given.strip("/ ") and given.isprintable():  # else its file's name
        base = given.rstrip("/").rsplit("/", 1)[-1]
    else:
        directory = _checkpoint_directory(path.parent.resolve())
        # A name, not a path: a non-ASCII folder's surrogate escapes (an ASCII locale) read back as the UTF-8 they are.
        base = os_text(directory if path.stem == "config" and directory else path.stem, errors="replace")
    return f"{base} + {TOWER}"


def _checkpoint_directory(directory: Path) -> str:
    """The name of a checkpoint's directory; in Hugging Face's cache (.../models--Qwen--Qwen2-0.5B/snapshots/<commit>/)
    its repository's (Qwen2-0.5B), not the commit's, which a new revision changes (trial 63 #9)."""
    repo = directory.parent.parent.name
    if directory.parent.name == "snapshots" and repo.startswith("models--") and repo.count("--") >= 2:
        return repo.split("--", 2)[2]
    return directory.name


def _check_heads(llm: dict, where: str, origin: str) -> None:
    """The rules between the head counts, in the config's own words (autotune's checks name its schema)."""
    hidden, heads, kv_heads = llm["hidden"], llm["heads"], llm["kv_heads"]
    keys = {name: where + _SIZES[name] for name in ("hidden", "heads", "kv_heads")}
    if hidden % heads:
        problem = f"{keys['hidden']} {hidden} is not a multiple of {keys['heads']} {heads}"
    elif (hidden // heads) % 2:
        problem = f"the head size {keys['hidden']} / {keys['heads']} = {hidden // heads} is odd; rotary embeddings need an even one"
    elif heads % kv_heads:
        problem = f"{keys['heads']} {heads} is not a multiple of {keys['kv_heads']} {kv_heads}"
    else:
        return
    raise ConfigError(f"{origin}: {problem}; {_FIX}")


# Keys a mixture-of-experts decoder has (Qwen2-MoE / Qwen3-MoE, Mixtral, DeepSeek): a count of experts.
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
# Other families spell the experts otherwise (ERNIE 4.5's moe_num_experts, moe_k; num_experts_per_tok): any key
# naming experts with a count above 1, or a moe_ size, is a mixture-of-experts decoder too (trial 44: ERNIE-4.5-21B-A3B
# was tuned as a dense 3.3B model, ZeRO-0 valid at 80 GiB where it needs about 400).
_MOE_PREFIX = "moe_"
# Multi-head latent attention (DeepSeek-V2/V3, MiniCPM3): low-rank q and kv projections that autotune's attention,
# four hidden x hidden matrices, would count 0.8B too large on MiniCPM3-4B.
_LATENT_ATTENTION_KEYS = ("kv_lora_rank", "q_lora_rank")
# Decoders whose MLP has two matrices (up, down) and no gate: counted as autotune's SwiGLU (gate, up, down), their
# parameters and FLOPs came out 22-31% high (Pythia-6.9B 9.0B, Phi-2 3.6B; trial 44).
_UNGATED_MLP_TYPES = ("gpt_neox", "gpt2", "gptj", "gpt_neo", "gpt_bigcode", "codegen", "phi", "nemotron", "starcoder2",
                      "falcon", "bloom", "opt", "mpt", "persimmon", "biogpt", "xglm")
# The model types autotune knows to be dense decoders of its shape (gated MLP, ordinary attention), or the
# vision-language configs that hold one. Another model_type (an in-house architecture) is still read by its sizes,
# which is what a Hugging Face user expects of a config.json, but said: the shape is then assumed, not known.
_KNOWN_DENSE_TYPES = ("qwen2", "llama", "mistral", "phi3", "gemma", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text",
                      "qwen2_5_vl_text", "qwen3", "gemma2", "gemma3", "gemma3_text", "internlm2", "olmo", "olmo2", "granite",
                      "llava", "llava_next", "llava_onevision", "internvl", "internvl_chat")
# Model classes whose tie_word_embeddings defaults to true where a config leaves it out (transformers' config
# classes: GemmaConfig and its successors); the others autotune reads (LlamaConfig, Qwen2Config, MistralConfig,
# Phi3Config) default to false.
_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text", "recurrent_gemma")


def _check_modelled(text: dict, llm: dict, where: str, origin: str) -> None:
    """Refuse what autotune's dense Qwen2-style decoder would model silently wrong: experts (the parameters,
    FLOPs and memory would be those of one dense FFN) and a head size other than hidden / heads (Qwen3 and
    Gemma set `head_dim` apart, which changes attention's sizes)."""
    # Each checked for its type first: "8", [8] or true were taken for no count at all, and the model tuned as dense.
    for key in _EXPERT_KEYS:
        if text.get(key) is None:
            continue
        experts = checked_number(origin, where + key, text[key], low=0, high=MAX_COUNT, integer=True, fix=_FIX)
        if experts > 1:
            _refuse_experts(origin, where, key, text[key])
    counts = {key: value for key, value in text.items() if isinstance(value, int) and not isinstance(value, bool)}
    for key, value in [*((k, v) for k, v in counts.items() if "expert" in k and v > 1),
                       *((k, v) for k, v in counts.items() if k.startswith(_MOE_PREFIX) and v > 0)]:
        _refuse_experts(origin, where, key, value)  # the expert count first: it says why best
    latent = [key for key in _LATENT_ATTENTION_KEYS if text.get(key) is not None]
    if latent:
        raise ConfigError(f"{origin}: {where}{latent[0]} = {shown(text[latent[0]])}: multi-head latent attention (low-rank "
                          "q and kv projections), which autotune does not model (it would count four hidden x hidden "
                          "attention matrices: parameters, FLOPs and memory off); give a config of a decoder with "
                          "ordinary attention (Qwen2 / Qwen2.5, Llama style)")
    if text.get("use_sliding_window") is not None and not isinstance(text["use_sliding_window"], bool):
        raise ConfigError(f"{origin}: {where}use_sliding_window = {shown(text['use_sliding_window'])} is not true or false; "
                          f"{_FIX}")
    if text.get("sliding_window") is not None:
        checked_number(origin, where + "sliding_window", text["sliding_window"], low=1, high=MAX_COUNT, integer=True, fix=_FIX)
    if text.get("max_position_embeddings") is not None:
        # Read for the context-length warning (context_warning): a damaged 0, -5 or "x" hid the very case it warns of.
        checked_number(origin, where + "max_position_embeddings", text["max_position_embeddings"], low=1, high=MAX_COUNT,
                       integer=True, fix=_FIX)
    head_dim = text.get("head_dim")
    if head_dim is not None:
        checked_number(origin, where + "head_dim", head_dim, low=1, high=MAX_COUNT, integer=True, fix=_FIX)
    if head_dim is not None and head_dim != llm["hidden"] // llm["heads"]:
        raise ConfigError(f"{origin}: {where}head_dim = {shown(head_dim)} is not {where}hidden_size / "
                          f"{where}num_attention_heads = {llm['hidden'] // llm['heads']}: autotune's decoder has heads of "
                          "hidden_size / num_attention_heads (Qwen2 / Qwen2.5 style), so its attention sizes would be off: "
                          "autotune cannot model this decoder (editing head_dim out of the file would describe another "
                          "model)")


def _refuse_experts(origin: str, where: str, key: str, value) -> None:
    raise ConfigError(f"{origin}: {where}{key} = {shown(value)}: a mixture-of-experts decoder, which autotune does not "
                      "model (it would count one dense FFN: parameters, FLOPs and memory far off); give a dense "
                      "decoder's config (Qwen2 / Qwen2.5 style)")


def _model_type(data: dict) -> str:
    """The decoder's model type: its text_config's (a VL config names the decoder there), else the config's."""
    key = _text_key(data)
    kind = data[key].get("model_type") if key is not None and isinstance(data[key], dict) else None
    return kind if isinstance(kind, str) else str(data.get("model_type", ""))


def hf_key_names(message: str, where: str) -> str:
    """An error of autotune's model checks, in the config's key names (llm.heads -> num_attention_heads)."""
    names = {**{f"llm.{ours}": where + hf for ours, hf in _SIZES.items()}, "llm.mrope_sections": f"{where}rope_scaling.mrope_section",
             "llm.rope_theta": where + "rope_theta", "llm.tie_embeddings": "tie_word_embeddings"}
    for ours in sorted(names, key=len, reverse=True):  # longest first: no name is replaced inside a longer one
        message = message.replace(ours, names[ours])
    return message


# The names transformers' ACT2FN maps to SiLU, the activation of autotune's SwiGLU MLP (trainer/model/llm.py).
_SILU = ("silu", "swish")


def _departures(data: dict) -> list[str]:
    """What a Hugging Face config says that autotune builds otherwise, each as "KEY VALUE with WHAT"; [] where
    nothing. Said, not refused: the tower is the documented stand-in every preset has, and the rest leave every
    size read as it is (a gated MLP keeps its three matrices under any activation; a bias is a few numbers per
    layer), unlike experts or a head_dim of its own (_check_modelled)."""
    text, where = _text_part(data)
    found = []
    decoder = _model_type(data)
    if decoder not in _KNOWN_DENSE_TYPES:
        key = f"{where}model_type" if text is not data and isinstance(text.get("model_type"), str) else "model_type"
        found.append(f"{key} {shown(decoder)}, a type autotune does not know ({', '.join(_KNOWN_DENSE_TYPES[:5])}, ... "
                     "are), with a Qwen2-style dense decoder (a gated MLP of gate, up and down matrices, ordinary "
                     "attention): check that the model is one, else its parameters, FLOPs and memory are off")
    if data.get("vision_config") is not None:
        vision = PRESETS["7b"].vision
        tokens = (vision.image_size // vision.patch // vision.pool) ** 2
        # Its tokens per frame set the sequence, and so most of the FLOPs: Qwen2.5-VL's tower gives about half as
        # many a frame, LLaVA-1.5's 576 an image (trial 44 #8); --frames scales them.
        found.append(f"vision_config with the presets' {TOWER} at {vision.image_size} px (the tower the trainer builds: "
                     f"{tokens} visual tokens a frame, which --frames scales)")
    act = text.get("hidden_act")
    if act is not None and act not in _SILU:
        found.append(f"{where}hidden_act {shown(act)} with SiLU (autotune's SwiGLU MLP: the same gate, up and down "
                     "matrices)")
    if text.get("attention_bias") is not None:
        # Llama's attention_bias puts a bias on q, k, v and o, or on none; Qwen2, which autotune builds, on q, k, v.
        found.append(f"{where}attention_bias {shown(text['attention_bias'])} with biases on q, k and v only (Qwen2's)")
    if text.get("mlp_bias"):
        found.append(f"{where}mlp_bias {shown(text['mlp_bias'])} with none")
    found += _attention_departures(text, where)
    parts = [(data, "")] + ([(text, where)] if text is not data else [])
    half = [f"{prefix}{key} {shown(part[key])}" for part, prefix in parts
            for key in ("torch_dtype", "dtype") if part.get(key) in _HALF]  # transformers 4 writes torch_dtype, 5 dtype
    if half:  # said once: a LLaVA config writes it at the top and in text_config
        found.append(f"{half[0]} with the run's --precision (bf16 or fp32: autotune trains no fp16)")
    return found


# fp16 checkpoints: training them in fp16 needs loss scaling, which autotune's probes do not model or run.
_HALF = ("float16", "half")
# rope_scaling types that only re-scale the rotary angles (same sizes and FLOPs); "mrope" and "default" are what
# autotune's 3D RoPE is.
_ROPE_MODELLED = (None, "default", "mrope")


def _attention_departures(text: dict, where: str) -> list[str]:
    """A sliding window (attention over the last N tokens: Qwen2's use_sliding_window, Mistral's sliding_window
    alone) and a rope_scaling of another kind than autotune's 3D RoPE."""
    found = []
    window = text.get("sliding_window")
    sliding = text.get("use_sliding_window") if "use_sliding_window" in text else window is not None
    if sliding is True and isinstance(window, int) and not isinstance(window, bool) and window > 0:
        found.append(f"{where}sliding_window {window} with full attention (attention's FLOPs and memory over the "
                     "whole sequence: more than the window's where the sequence is longer)")
    scaling = text.get("rope_scaling")
    if isinstance(scaling, dict):
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind not in _ROPE_MODELLED:
            found.append(f"{where}rope_scaling type {shown(kind)} with autotune's 3D RoPE (the same sizes and FLOPs)")
    return found


def _hf_config_file(name_or_path: str) -> tuple[Path, dict] | None:
    """The path and contents of a --model that is a Hugging Face config (a file or a checkpoint's directory);
    None for a preset, a model file in autotune's schema, or a file that cannot be read."""
    if name_or_path in PRESETS:
        return None
    path = Path(name_or_path)
    path = path / "config.json" if path.is_dir() else path
    if path.suffix.lower() != ".json":  # not a model file load_model reads
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # as load_model reads it
    except (OSError, ValueError, RecursionError):
        return None
    return (path, data) if is_hf_config(data) else None


def model_warning(name_or_path: str) -> str | None:
    """The one warning line for a --model that load_model read as a Hugging Face config: what of the file autotune
    does not model as written (DESIGN: a setting silently skipped is warned about); None for a preset, a model
    file in autotune's schema, a config autotune models as written, or a file load_model refuses."""
    config = _hf_config_file(name_or_path)
    if config is None:
        return None
    path, data = config
    try:
        load_model(name_or_path)  # a file it refuses gets its error alone, not a warning before it
        found = _departures(data)
    except (OSError, ValueError, RecursionError, ConfigError):
        return None
    if not found:
        return None
    return (f"model file {path} (a Hugging Face config): autotune reads its decoder's sizes but replaces "
            f"{'; '.join(found)}; see docs/model-schema.md")


def context_warning(name_or_path: str, tokens_per_sample: int) -> str | None:
    """One line where the workload's samples are longer than the Hugging Face config's max_position_embeddings
    (Phi-3-mini-4k tuned on 12,016-token samples without a word; trial 44 #9); None otherwise, or for a model
    that is no Hugging Face config (load_model has read it by then)."""
    config = _hf_config_file(name_or_path)
    if config is None:
        return None
    path, data = config
    try:
        text, where = _text_part(data)
    except ConfigError:
        return None
    positions = text.get("max_position_embeddings")
    if not isinstance(positions, int) or isinstance(positions, bool) or positions <= 0 or tokens_per_sample <= positions:
        return None
    return (f"the workload's samples are {tokens_per_sample} tokens, longer than the {positions} positions of model file "
            f"{path} ({where}max_position_embeddings): the figures are of sequences the model was not trained for; "
            "lower --frames or --text-tokens to the sequences it will be trained on")


def model_json_from_hf(data: dict, path: Path, origin: str) -> dict:
    """autotune's model JSON for a Hugging Face config (then checked by models.model_from_json)."""
    try:
        text, where = _text_part(data)
    except ConfigError as exc:
        raise ConfigError(f"{origin}: {exc}") from None
    if not isinstance(data["model_type"], str) or not data["model_type"].strip():
        raise ConfigError(f"{origin}: model_type = {shown(data['model_type'])} is not a model type name (\"qwen2\"); {_FIX}")
    kind = f"Hugging Face config (model_type {shown(data['model_type'])})"
    decoder = _model_type(data)
    if decoder in _UNGATED_MLP_TYPES:
        raise ConfigError(f"{origin}: model_type {shown(decoder)} has an MLP of two matrices (no gate), which autotune's "
                          "SwiGLU decoder (gate, up, down) would count with three: parameters, FLOPs and memory about a "
                          "third too high; give a config of a decoder with a gated MLP (Qwen2 / Qwen2.5, Llama style)")
    missing = [where + hf for hf in _SIZES.values() if hf not in text and hf not in _OPTIONAL]
    if missing:
        # llava-hf's configs write only what differs from their decoder class's defaults, which transformers fills in.
        defaults = (f" (transformers takes them from the defaults of model_type {shown(decoder)}'s config class: write "
                    "them into the file)") if where and decoder != data["model_type"] else ""
        raise ConfigError(f"{origin}: a {kind} without {', '.join(missing)}, which a Qwen2-style decoder has{defaults}; {_FIX}")
    llm = {}
    for ours, hf in _SIZES.items():
        if hf not in text or (hf in _OPTIONAL and text[hf] is None):
            continue
        problem = number_problem(text[hf], low=1, high=MAX_COUNT, integer=True, whole_literal=True)
        if problem:
            raise ConfigError(f"{origin}: {where}{hf} = {shown(text[hf])} {problem}; {_FIX}")
        llm[ours] = int(text[hf])
    llm.setdefault("kv_heads", llm["heads"])
    _check_heads(llm, where, origin)
    _check_modelled(text, llm, where, origin)
    if "rope_theta" in text:
        llm["rope_theta"] = text["rope_theta"]
    tie = text.get("tie_word_embeddings", data.get("tie_word_embeddings"))
    if tie is None and decoder in _TIED_BY_DEFAULT:  # absent: the model class's default, as from_pretrained reads it
        tie = True
    if tie is not None:
        llm["tie_embeddings"] = tie
    scaling = text.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, dict):
        raise ConfigError(f"{origin}: {where}rope_scaling = {shown(scaling)} is not an object (or null); {_FIX}")
    sections = scaling.get("mrope_section") if isinstance(scaling, dict) else None
    llm["mrope_sections"] = sections if sections is not None else _default_sections(llm["hidden"], llm["heads"])
    tower = PRESETS["7b"].to_json()["vision"]  # every preset's: SigLIP so400m/14 at 392 px
    return {"name": _name(data, path), "llm": llm, "vision": tower}
