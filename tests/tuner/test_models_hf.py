"""A Hugging Face config.json as --model: the decoder's sizes read into autotune's schema, the
presets' SigLIP tower in place of the config's own, every value read checked and named by its key."""

from __future__ import annotations

import html
import json

import pytest

from autotune.errors import ConfigError
from autotune.models import PRESETS, load_model
from autotune.models_hf import model_warning
from tests.cli import autotune_main

# The published config.json of Qwen2.5-7B-Instruct (the keys transformers writes that autotune reads,
# and some it does not).
QWEN25_7B = {
    "_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
    "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "rope_theta": 1000000.0, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "use_sliding_window": False, "max_position_embeddings": 32768,
}


def _load(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return load_model(str(path))


def test_a_qwen25_config_is_the_7b_preset_with_its_own_name(tmp_path):
    model = _load(tmp_path, QWEN25_7B)
    assert model.llm == PRESETS["7b"].llm and model.vision == PRESETS["7b"].vision
    assert model.name == "Qwen2.5-7B-Instruct + SigLIP so400m/14"  # the tower it stands in with, in every report


def test_a_name_or_path_of_more_than_one_line_gives_way_to_the_directory_s_name(tmp_path):
    (tmp_path / "Qwen2.5-7B").mkdir()
    model = _load(tmp_path / "Qwen2.5-7B", {**QWEN25_7B, "_name_or_path": "Qwen/Qwen2.5-7B\nInstruct"})
    assert model.name == "Qwen2.5-7B + SigLIP so400m/14"


def test_a_checkpoint_in_hugging_face_s_cache_is_named_by_its_repository_not_its_snapshot(tmp_path):
    """Trial 63 #9: .../models--Qwen--Qwen2.5-7B/snapshots/8f0a2c1d/ was "8f0a2c1d + ...", a new name for each revision."""
    snapshot = tmp_path / "models--Qwen--Qwen2.5-7B" / "snapshots" / "8f0a2c1d"
    snapshot.mkdir(parents=True)
    config = {key: value for key, value in QWEN25_7B.items() if key != "_name_or_path"}
    (snapshot / "config.json").write_text(json.dumps(config))
    assert load_model(str(snapshot)).name == "Qwen2.5-7B + SigLIP so400m/14"


def test_a_vl_config_is_read_from_its_text_config_and_mrope_sections(tmp_path):
    text = {k: v for k, v in QWEN25_7B.items() if k not in ("_name_or_path", "architectures", "model_type")}
    vl = {"model_type": "qwen2_5_vl", "text_config": {**text, "rope_scaling": {"type": "mrope", "mrope_section": [8, 28, 28]}},
          "vision_config": {"depth": 32, "hidden_size": 1280}}
    (tmp_path / "Qwen2.5-VL-7B").mkdir()
    model = _load(tmp_path / "Qwen2.5-VL-7B", vl)
    assert model.llm.mrope_sections == (8, 28, 28) and model.llm.hidden == 3584
    assert model.vision == PRESETS["7b"].vision and model.name == "Qwen2.5-VL-7B + SigLIP so400m/14"  # the directory's name


def test_without_grouped_kv_heads_every_query_head_has_its_own(tmp_path):
    small = {"model_type": "qwen2", "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8,
             "num_hidden_layers": 2, "vocab_size": 1000}
    model = _load(tmp_path, small, name="small.json")
    assert model.llm.kv_heads == 8 and model.llm.mrope_sections == (8, 12, 12) and model.name == "small + SigLIP so400m/14"


def test_null_kv_heads_are_one_per_query_head_as_transformers_reads_them(tmp_path):
    """Qwen2Config and LlamaConfig: `if num_key_value_heads is None: num_key_value_heads = num_attention_heads`.
    It was refused ("num_key_value_heads = null is not a whole number")."""
    absent = {k: v for k, v in QWEN25_7B.items() if k != "num_key_value_heads"}
    model = _load(tmp_path, {**QWEN25_7B, "num_key_value_heads": None})
    assert model.llm.kv_heads == 28 and model == _load(tmp_path, absent)


@pytest.mark.parametrize("change, words", [
    ({"hidden_size": "3584"}, 'hidden_size = "3584" is not a whole number'),
    ({"hidden_size": 0}, "hidden_size = 0 is out of range"),
    ({"num_hidden_layers": -28}, "num_hidden_layers = -28"),
    ({"intermediate_size": 18944.5}, "intermediate_size = 18944.5"),
    ({"vocab_size": 152064.0}, "vocab_size = 152064.0 is not a whole number; write it without a decimal point"),
    ({"num_attention_heads": True}, "num_attention_heads = true"),
    ({"num_hidden_layers": None}, "num_hidden_layers = null is not a whole number"),  # only the KV heads may be null
    ({"num_hidden_layers": None} | {"drop": "num_hidden_layers"}, "without num_hidden_layers"),
    ({"num_attention_heads": 27}, "hidden_size 3584 is not a multiple of num_attention_heads 27"),
    ({"num_key_value_heads": 5}, "num_attention_heads 28 is not a multiple of num_key_value_heads 5"),
    ({"hidden_size": 3500}, "the head size hidden_size / num_attention_heads = 125 is odd"),
    ({"rope_theta": -1}, "rope_theta = -1"),
    ({"tie_word_embeddings": "no"}, 'tie_word_embeddings = "no" is not true or false'),
    ({"rope_scaling": {"mrope_section": [16, 24]}}, "rope_scaling.mrope_section = [16, 24] is not a list of three"),
    ({"rope_scaling": {"mrope_section": [16, 24, 25]}}, "rope_scaling.mrope_section [16, 24, 25] sum to 65, not to "
                                                        "head_dim/2 = hidden_size / num_attention_heads / 2 = 64"),
    ({"rope_scaling": "x"}, 'rope_scaling = "x" is not an object (or null)'),
    ({"model_type": 5}, "model_type = 5 is not a model type name"),
    ({"model_type": " "}, 'model_type = " " is not a model type name'),
    ({"text_config": "qwen"}, 'text_config = "qwen" is not an object'),
    ({"model_type": "qwen2_moe", "num_experts": 60, "moe_intermediate_size": 1408},
     "num_experts = 60: a mixture-of-experts decoder, which autotune does not model"),
    ({"model_type": "mixtral", "num_local_experts": 8}, "num_local_experts = 8: a mixture-of-experts decoder"),
    ({"n_routed_experts": 64}, "n_routed_experts = 64: a mixture-of-experts"),
    ({"head_dim": 256}, "head_dim = 256 is not hidden_size / num_attention_heads = 128: autotune's decoder has heads of"),
    # Trial 41: experts of another type were no count at all (the model tuned as dense), a text head_dim was "not 128".
    ({"num_experts": "8"}, 'num_experts = "8" is not a whole number'),
    ({"num_local_experts": [8]}, "num_local_experts = [8] is not a whole number"),
    ({"n_routed_experts": True}, "n_routed_experts = true is not a whole number"),
    ({"num_experts": -8}, "num_experts = -8 is out of range"),
    ({"head_dim": "128"}, 'head_dim = "128" is not a whole number'),
    # Trial 44: experts under other names, latent attention and an MLP without a gate were tuned as the dense
    # decoder autotune builds, wrong by 22% to 6.5x in parameters.
    ({"model_type": "ernie4_5_moe", "moe_num_experts": 64, "moe_k": 6}, "moe_num_experts = 64: a mixture-of-experts"),
    ({"num_experts_per_tok": 2}, "num_experts_per_tok = 2: a mixture-of-experts decoder"),
    ({"moe_intermediate_size": 1536}, "moe_intermediate_size = 1536: a mixture-of-experts decoder"),
    ({"model_type": "minicpm3", "kv_lora_rank": 256, "q_lora_rank": 768}, "kv_lora_rank = 256: multi-head latent attention"),
    ({"model_type": "gpt_neox"}, 'model_type "gpt_neox" has an MLP of two matrices (no gate), which autotune\'s SwiGLU'),
    ({"model_type": "phi", "hidden_act": "gelu_new"}, 'model_type "phi" has an MLP of two matrices'),
    ({"model_type": "llava", "text_config": {"model_type": "gpt_neox"}}, 'model_type "gpt_neox" has an MLP of two'),
    ({"head_dim": 256, "model_type": "gemma2"}, "autotune cannot model this decoder (editing head_dim out of the file"),
    ({"use_sliding_window": "yes"}, 'use_sliding_window = "yes" is not true or false'),
    ({"sliding_window": "4096"}, 'sliding_window = "4096" is not a whole number'),
    # Read for the context-length warning, which a damaged value skipped without a word (trial78 #5):
    ({"max_position_embeddings": 0}, "max_position_embeddings = 0 is out of range; it must be a whole number >= 1"),
    ({"max_position_embeddings": -5}, "max_position_embeddings = -5 is out of range"),
    ({"max_position_embeddings": "x"}, 'max_position_embeddings = "x" is not a whole number'),
    ({"max_position_embeddings": 10.5}, "max_position_embeddings = 10.5 is not a whole number"),
])
def test_a_bad_value_is_one_line_naming_the_file_and_key(tmp_path, change, words):
    data = {**QWEN25_7B, **{k: v for k, v in change.items() if k != "drop"}}
    data.pop(change.get("drop", "_none_"), None)
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, data)
    message = str(refused.value)
    assert "\n" not in message and f"model file {tmp_path / 'config.json'}" in message and words in message, message
    assert "llm." not in message  # the config's keys, not autotune's schema


def test_what_a_dense_decoder_may_say_of_experts_and_head_size_is_read(tmp_path):
    """Qwen2.5's config has no experts key; others write 0 or 1 for a dense model, and a head_dim equal to
    hidden / heads (Llama 3) changes nothing: such configs are read as before."""
    for dense in ({"num_experts": 0}, {"num_local_experts": 1}, {"num_experts": None}, {"head_dim": 128}, {"head_dim": None},
                  {"use_sliding_window": False, "sliding_window": 131072}, {"sliding_window": None},
                  {"model_type": "llama", "attention_bias": False}):
        assert _load(tmp_path, {**QWEN25_7B, **dense}).llm == PRESETS["7b"].llm, dense


def test_a_gemma_config_without_tie_word_embeddings_is_tied_as_transformers_reads_it(tmp_path):
    """Trial 44: google/gemma-2b's config has no tie_word_embeddings; GemmaConfig defaults it to true, and untied
    the model counted a second 256000 x 2048 matrix (3.03B, published 2.51B)."""
    gemma = {"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 18, "num_attention_heads": 8,
             "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 16384, "vocab_size": 256000,
             "hidden_act": "gelu"}
    model = _load(tmp_path, gemma)
    assert model.llm.tie_embeddings and round(model.llm.params() / 1e9, 2) == 2.51
    assert not _load(tmp_path, {**gemma, "tie_word_embeddings": False}).llm.tie_embeddings  # said: as written
    assert not _load(tmp_path, {k: v for k, v in QWEN25_7B.items() if k != "tie_word_embeddings"}).llm.tie_embeddings


def test_an_internvl_config_is_read_from_its_llm_config_and_a_llava_hf_one_is_told_what_to_write(tmp_path):
    """Trial 44: InternVL keeps its decoder in llm_config ("without hidden_size", which the file held); llava-hf's
    text_config leaves out what LlamaConfig's defaults fill in, and the refusal did not say so."""
    text = {k: v for k, v in QWEN25_7B.items() if k not in ("_name_or_path", "architectures")}
    internvl = {"model_type": "internvl_chat", "llm_config": text, "vision_config": {"hidden_size": 1024}}
    assert _load(tmp_path, internvl).llm == PRESETS["7b"].llm
    llava = {"model_type": "llava", "text_config": {"model_type": "llama", "vocab_size": 32064}}
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, llava)
    assert ("without text_config.hidden_size, text_config.num_hidden_layers, text_config.num_attention_heads, "
            "text_config.intermediate_size, which a Qwen2-style decoder has (transformers takes them from the defaults of "
            'model_type "llama"\'s config class: write them into the file)') in str(refused.value)


def test_a_checkpoint_directory_is_read_by_its_config_json(tmp_path):
    checkpoint = tmp_path / "Qwen2.5-7B-Instruct"
    checkpoint.mkdir()
    with pytest.raises(ConfigError, match=f"--model {checkpoint} is a directory without a config.json; pass a checkpoint"):
        load_model(str(checkpoint))
    (checkpoint / "config.json").write_text(json.dumps(QWEN25_7B))
    assert load_model(str(checkpoint)).llm == PRESETS["7b"].llm


def test_a_preset_s_name_that_is_also_a_folder_here_says_which_was_taken(tmp_path):
    """Trial 48 §20: with a checkpoint folder ./7b here, `--model 7b` took the preset without a word."""
    (tmp_path / "7b").mkdir()
    (tmp_path / "7b" / "config.json").write_text(json.dumps(QWEN25_7B))
    said = "warning: --model 7b is the preset 7b, not the folder 7b here; write --model ./7b for that"
    preset = autotune_main("space", "--model", "7b", "--nodes", "1", "--valid", cwd=tmp_path)
    assert preset.returncode == 0 and said in preset.stderr
    folder = autotune_main("space", "--model", "./7b", "--nodes", "1", "--valid", cwd=tmp_path)
    assert folder.returncode == 0 and "warning" not in folder.stderr
    elsewhere = autotune_main("space", "--model", "7b", "--nodes", "1", "--valid", cwd=tmp_path / "7b")
    assert elsewhere.returncode == 0 and "warning" not in elsewhere.stderr


def test_the_cli_runs_a_study_of_a_hugging_face_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN25_7B))
    run = autotune_main("run", "--model", path, "--nodes", "1", "--trials", "3", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    pareto = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert pareto["model"] == "Qwen2.5-7B-Instruct + SigLIP so400m/14"
    assert pareto["model_caveats"] is None  # modelled as written


def test_what_a_config_says_that_autotune_builds_otherwise_is_in_every_report(tmp_path):
    """Trial 44 #6: Mistral's sliding window was said once on stderr; the saved reports showed full-attention figures
    without a word."""
    path = tmp_path / "config.json"
    mistral = {k: v for k, v in QWEN25_7B.items() if k != "use_sliding_window"}  # Mistral's: the window alone
    path.write_text(json.dumps({**mistral, "model_type": "mistral", "sliding_window": 4096}))
    run_dir = tmp_path / "run"
    assert autotune_main("run", "--model", path, "--nodes", "1", "--trials", "3", "--out", run_dir).returncode == 0
    caveat = model_warning(str(path))
    assert "sliding_window 4096 with full attention" in caveat
    assert json.loads((run_dir / "pareto.json").read_text())["model_caveats"] == caveat
    said = f"The figures are of the model as autotune builds it: {caveat}"
    terminal = autotune_main("report", run_dir)
    assert said in " ".join(terminal.stdout.split())
    assert said in autotune_main("report", run_dir, "--format", "md").stdout
    assert said in html.unescape((run_dir / "report.html").read_text())
    config = json.loads(next((run_dir / "configs").glob("*.json")).read_text())
    assert config["autotune"]["model_caveats"] == caveat


def _warning(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    load_model(str(path))  # read as it is before any command warns
    return model_warning(str(path))


WARNED = "(a Hugging Face config): autotune reads its decoder's sizes but replaces "


def test_what_a_config_says_that_autotune_builds_otherwise_is_one_warning_line(tmp_path):
    """A newcomer's trial: a Qwen2.5-VL config's own tower was replaced by SigLIP, and hidden_act "gelu" and
    attention_bias true were dropped, without a word (only the model name's suffix showed the tower)."""
    text = {k: v for k, v in QWEN25_7B.items() if k not in ("_name_or_path", "architectures", "model_type")}
    vl = {"model_type": "qwen2_5_vl", "text_config": {**text, "hidden_act": "gelu"},
          "vision_config": {"depth": 32, "hidden_size": 1280, "hidden_act": "silu"}}
    (tmp_path / "Qwen2.5-VL-7B").mkdir()
    path = tmp_path / "Qwen2.5-VL-7B" / "config.json"
    assert _warning(tmp_path / "Qwen2.5-VL-7B", vl) == (
        f"model file {path} {WARNED}vision_config with the presets' SigLIP so400m/14 at 392 px (the tower the trainer "
        "builds: 196 visual tokens a frame, which --frames scales); text_config.hidden_act \"gelu\" with SiLU (autotune's SwiGLU MLP: the same gate, up and down matrices); "
        "see docs/model-schema.md")
    assert model_warning(str(tmp_path / "Qwen2.5-VL-7B")) == model_warning(str(path))  # the checkpoint's directory
    llama = {**QWEN25_7B, "model_type": "llama", "attention_bias": True, "mlp_bias": True}
    assert _warning(tmp_path, llama) == (f"model file {tmp_path / 'config.json'} {WARNED}attention_bias true with biases "
                                         "on q, k and v only (Qwen2's); mlp_bias true with none; see docs/model-schema.md")
    assert "attention_bias false with biases on q, k and v only" in _warning(tmp_path, {**QWEN25_7B, "attention_bias": False})


def test_a_config_autotune_models_as_written_and_other_models_give_no_warning(tmp_path):
    for same in ({}, {"hidden_act": "silu"}, {"hidden_act": "swish"}, {"mlp_bias": False}, {"vision_config": None},
                 {"attention_bias": None}):
        assert _warning(tmp_path, {**QWEN25_7B, **same}) is None, same
    ours = PRESETS["tiny"].to_json()
    assert _warning(tmp_path, ours, name="mine.json") is None  # autotune's own schema
    assert model_warning("7b") is None and model_warning(str(tmp_path / "absent.json")) is None
    (tmp_path / "broken.json").write_text("{")
    assert model_warning(str(tmp_path / "broken.json")) is None  # load_model says what is wrong with it
    refused = tmp_path / "refused.json"
    refused.write_text(json.dumps({**QWEN25_7B, "hidden_size": 0, "vision_config": {}, "hidden_act": "gelu"}))
    assert model_warning(str(refused)) is None  # its error alone, no warning before it


@pytest.mark.parametrize("command", ["run", "space"])
def test_run_and_space_print_the_model_files_warning_once(tmp_path, command):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN25_7B, "hidden_act": "gelu"}))
    extra = ["--trials", "1", "--out", str(tmp_path / "run")] if command == "run" else ["--valid"]
    done = autotune_main(command, "--model", path, "--nodes", "1", *extra)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert said.count(f"warning: model file {path} {WARNED}") == 1, done.stderr


def test_a_sliding_window_another_rope_scaling_and_an_fp16_checkpoint_are_warned_of(tmp_path):
    """A newcomer's trial: these keys were dropped without a word (autotune builds full attention, its 3D RoPE,
    and trains bf16 or fp32)."""
    said = _warning(tmp_path, {**QWEN25_7B, "use_sliding_window": True, "sliding_window": 4096,
                               "rope_scaling": {"type": "yarn", "factor": 4.0}, "torch_dtype": "float16"})
    assert said == (f"model file {tmp_path / 'config.json'} {WARNED}sliding_window 4096 with full attention (attention's "
                    "FLOPs and memory over the whole sequence: more than the window's where the sequence is longer); "
                    "rope_scaling type \"yarn\" with autotune's 3D RoPE (the same sizes and FLOPs); torch_dtype \"float16\" "
                    "with the run's --precision (bf16 or fp32: autotune trains no fp16); see docs/model-schema.md")
    # Mistral names a window without use_sliding_window; transformers 5 writes dtype; a VL config's text part.
    mistral = {k: v for k, v in QWEN25_7B.items() if k != "use_sliding_window"} | {"sliding_window": 4096}
    assert "sliding_window 4096 with full attention" in _warning(tmp_path, mistral)
    assert 'dtype "float16" with' in _warning(tmp_path, {**QWEN25_7B, "dtype": "float16"})
    # A LLaVA config writes it at the top and in text_config: said once (trial 44).
    text = {k: v for k, v in QWEN25_7B.items() if k not in ("_name_or_path", "architectures", "model_type")}
    llava = _warning(tmp_path, {"model_type": "llava", "torch_dtype": "float16", "text_config": {**text, "torch_dtype": "float16"}})
    assert llava.count("float16") == 1 and 'torch_dtype "float16" with the run\'s --precision' in llava
    text = {k: v for k, v in QWEN25_7B.items() if k not in ("_name_or_path", "architectures", "model_type")}
    vl = {"model_type": "qwen2_5_vl", "text_config": {**text, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}}
    assert 'text_config.rope_scaling type "linear" with' in _warning(tmp_path, vl)


def test_what_autotune_builds_as_written_of_windows_rope_and_dtype_gives_no_warning(tmp_path):
    # Qwen2.5's own configs: use_sliding_window false beside a window; Qwen2.5-VL's mrope; bf16 and fp32 checkpoints.
    for same in ({"use_sliding_window": False, "sliding_window": 131072}, {"sliding_window": None},
                 {"rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
                 {"rope_scaling": {"rope_type": "default", "mrope_section": [16, 24, 24]}}, {"rope_scaling": None},
                 {"torch_dtype": "bfloat16"}, {"torch_dtype": "float32"}, {"dtype": "bfloat16"}):
        assert _warning(tmp_path, {**QWEN25_7B, **same}) is None, same


def test_a_workload_longer_than_the_model_s_positions_is_said(tmp_path, capsys):
    """Trial 44 #9: Phi-3-mini-4k (4096 positions) was tuned on 12,016-token samples without a word."""
    from autotune.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN25_7B, "max_position_embeddings": 4096}))
    assert main(["space", "--model", str(path), "--nodes", "1", "--valid"]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert (f"warning: the workload's samples are 12016 tokens, longer than the 4096 positions of model file {path} "
            "(max_position_embeddings): the figures are of sequences the model was not trained for") in said
    assert main(["space", "--model", str(path), "--nodes", "1", "--valid", "--frames", "10"]) == 0  # 2216 tokens
    assert "positions" not in capsys.readouterr().err


def test_a_model_type_autotune_does_not_know_is_read_by_its_sizes_and_said(tmp_path):
    """Trial 61 #9: an in-house model_type was read as a Qwen2-style decoder without a word."""
    said = _warning(tmp_path, {**QWEN25_7B, "model_type": "my_custom_arch"})
    assert said == (f"model file {tmp_path / 'config.json'} {WARNED}model_type \"my_custom_arch\", a type autotune does "
                    "not know (qwen2, llama, mistral, phi3, gemma, ... are), with a Qwen2-style dense decoder (a gated MLP "
                    "of gate, up and down matrices, ordinary attention): check that the model is one, else its "
                    "parameters, FLOPs and memory are off; see docs/model-schema.md")
    # A VL config names its decoder's type in text_config: that is the one judged, by that key.
    text = {k: v for k, v in QWEN25_7B.items() if k not in ("_name_or_path", "architectures")}
    said = _warning(tmp_path, {"model_type": "qwen2_5_vl", "text_config": {**text, "model_type": "house_lm"}})
    assert 'text_config.model_type "house_lm", a type autotune does not know' in said
    for known in ("qwen2", "llama", "mistral", "phi3", "gemma"):
        assert _warning(tmp_path, {**QWEN25_7B, "model_type": known, "tie_word_embeddings": False}) is None, known
