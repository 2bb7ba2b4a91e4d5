import json

import pytest

from autotune.errors import ConfigError
from autotune.hardware import PROFILE_DIR, available_hardware, load_hardware
from autotune.models import PRESETS, load_model
from autotune.space import load_space
from autotune.space.files import DEFAULT_SPACE
from tests import cli


@pytest.mark.parametrize(
    "name, billions",
    [("7b", 7.62), ("32b", 32.76), ("72b", 72.71)],  # Qwen2.5 model cards: 7.61B, 32.5B (+tied?), 72.7B
)
def test_llm_sizes_match_qwen25(name, billions):
    assert load_model(name).llm.params() / 1e9 == pytest.approx(billions, abs=0.3)


def test_study_geometry_gives_196_tokens_per_frame():
    for name in ("7b", "32b", "72b"):
        assert load_model(name).vision.tokens_per_frame == 196


def test_custom_model_file_round_trips(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(PRESETS["tiny"].to_json() | {"name": "mine"}))
    model = load_model(str(path))
    assert model.name == "mine" and model.llm == PRESETS["tiny"].llm


def test_custom_model_with_bad_rope_sections_is_refused(tmp_path):
    data = PRESETS["tiny"].to_json()
    data["llm"]["mrope_sections"] = [1, 1, 1]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="mrope_sections"):
        load_model(str(path))


def test_unknown_model_names_the_presets():
    with pytest.raises(ConfigError, match="tiny, 7b, 32b, 72b"):
        load_model("13b")


def test_hardware_profiles_load():
    assert {"gh200", "h100-sxm", "cpu"} <= set(available_hardware())
    gh200 = load_hardware("gh200")
    assert gh200.gpus_per_node == 4 and gh200.power.module_cap_w == 680 and gh200.module_scope_energy
    assert not load_hardware("cpu").cuda


def test_hardware_file_missing_a_section_is_refused(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text('name = "x"\ngpus_per_node = 2\n')
    with pytest.raises(ConfigError, match=r"\[gpu\]"):
        load_hardware(str(path))


def test_a_model_file_with_a_byte_order_mark_is_read(tmp_path):
    """Trial 61 #17: a file a Windows editor saved (UTF-8 with a BOM) was refused with Python's "decode using utf-8-sig"."""
    from autotune.models_hf import model_warning

    ours = tmp_path / "mine.json"
    ours.write_bytes(b"\xef\xbb\xbf" + json.dumps(PRESETS["tiny"].to_json()).encode())
    assert load_model(str(ours)).llm == PRESETS["tiny"].llm
    hf = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
          "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064, "hidden_act": "gelu"}
    config = tmp_path / "config.json"
    config.write_bytes(b"\xef\xbb\xbf" + json.dumps(hf).encode())
    assert load_model(str(config)).llm.hidden == 3584
    assert 'hidden_act "gelu"' in model_warning(str(config))  # its warning is said as for any config
    profile = tmp_path / "mine.toml"
    profile.write_bytes(b"\xef\xbb\xbf" + (PROFILE_DIR / "h100-sxm.toml").read_bytes())
    assert load_hardware(str(profile)).gpus_per_node == load_hardware("h100-sxm").gpus_per_node


def test_a_model_of_impossible_size_is_refused_with_its_count_readable(tmp_path):
    """Trial 61 #19: 10^12 layers passed each size's own range, and space printed "275268608002.02B parameters"."""
    from autotune.models import params_text

    data = PRESETS["32b"].to_json()
    data["llm"]["layers"] = 10**12
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as err:
        load_model(str(path))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"model file {path}: the sizes (llm.hidden 5120, llm.layers "
                                                      "1000000000000, "), message
    assert " build 4.88e+20 parameters, more than 100.00T, and the largest models trained have a few trillion: one of " \
           "them is a typo; fix the file (schema: docs/model-schema.md)" in message, message
    assert [params_text(n) for n in (1.2e12, 405e9, 2.75e20)] == ["1.20T", "405.00B", "2.75e+20"]
    data["llm"]["layers"] = 640  # a 320B dense decoder: large, and a model people train
    path.write_text(json.dumps(data))
    assert load_model(str(path)).llm.layers == 640


def test_swapped_or_suffixless_file_flags_say_the_likely_slip(tmp_path, monkeypatch):
    """Trial 61 #23: a profile passed as --model was told to be renamed .json, a model file as --hardware was "not
    valid TOML", and --hardware a100-80 beside a100-80.toml was an unknown name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a100-80.toml").write_text((PROFILE_DIR / "h100-sxm.toml").read_text())
    (tmp_path / "my-14b.json").write_text(json.dumps(PRESETS["tiny"].to_json()))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    expected = {
        ("model", "a100-80.toml"): "--model a100-80.toml is a hardware profile (TOML with [gpu]), not a model: pass it "
                                   "as --hardware; --model takes a preset",
        ("hardware", "my-14b.json"): "--hardware my-14b.json is a model file (JSON with llm or model_type), not a "
                                     "hardware profile: pass it as --model; --hardware takes a built-in profile",
        ("hardware", "hf/config.json"): "--hardware hf/config.json is a model file",
        ("hardware", "a100-80"): "; a100-80.toml is here: did you mean --hardware a100-80.toml?",
        ("model", "my-14b"): "; my-14b.json is here: did you mean --model my-14b.json?",
    }
    for (flag, value), words in expected.items():
        with pytest.raises(ConfigError) as err:
            (load_model if flag == "model" else load_hardware)(value)
        assert words in str(err.value) and "\n" not in str(err.value), str(err.value)
    with pytest.raises(ConfigError) as err:
        load_hardware("h200")  # no file beside it: no guess
    assert "did you mean" not in str(err.value)


def _three_flags_files(tmp_path):
    """Each file --model, --hardware and --space take, and a run directory's: those a newcomer swaps."""
    (tmp_path / "a100-80.toml").write_text((PROFILE_DIR / "h100-sxm.toml").read_text())
    (tmp_path / "space.toml").write_text(DEFAULT_SPACE.read_text())
    (tmp_path / "m7b.json").write_text(json.dumps(PRESETS["tiny"].to_json()))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps({"model_type": "qwen2", "hidden_size": 896}))
    (tmp_path / "r1").mkdir()  # what `autotune run` writes there: pareto.json's own keys, and the study
    (tmp_path / "r1" / "pareto.json").write_text(json.dumps({"schema_version": 1, "front": [], "trials": [], "picks": {}}))
    (tmp_path / "r1" / "study.db").write_bytes(b"")


@pytest.mark.parametrize("flag, value, words", [
    ("--model", "space.toml", "--model space.toml is a space file (TOML of knob lists, like search_spaces/default.toml), "
                              "not a model: pass it as --space; --model takes a preset (tiny, 7b, 32b, 72b)"),
    ("--hardware", "space.toml", "--hardware space.toml is a space file (TOML of knob lists, like "
                                 "search_spaces/default.toml), not a hardware profile: pass it as --space; --hardware takes"),
    ("--space", "a100-80.toml", "--space a100-80.toml is a hardware profile (TOML with [gpu]), not a space file: pass it as "
                                "--hardware; --space takes a TOML file of knob lists like search_spaces/default.toml"),
    ("--space", "m7b.json", "--space m7b.json is a model file (JSON with llm or model_type), not a space file: pass it as "
                            "--model"),
    ("--space", "hf/config.json", "--space hf/config.json is a model file (JSON with llm or model_type)"),
    ("--hardware", "hf", "--hardware hf is a Hugging Face checkpoint's directory (with its config.json), not a hardware "
                         "profile: pass it as --model"),
    ("--space", "hf", "--space hf is a Hugging Face checkpoint's directory (with its config.json), not a space file: pass "
                      "it as --model"),
    ("--model", "r1/pareto.json", "--model r1/pareto.json is a run directory's results (pareto.json, written by autotune "
                                  "run), not a model: read them with autotune report r1; --model takes"),
    ("--hardware", "r1/pareto.json", "--hardware r1/pareto.json is a run directory's results (pareto.json, written by "
                                     "autotune run), not a hardware profile: read them with autotune report r1"),
    ("--space", "r1/pareto.json", "not a space file: read them with autotune report r1"),
    ("--hardware", "r1", "--hardware r1 is a run directory (autotune run's --out), not a hardware profile: read it with "
                         "autotune report r1"),
    ("--model", "r1", "--model r1 is a run directory (autotune run's --out), not a model: read it with autotune report r1"),
])
def test_a_file_given_to_another_flag_says_what_it_is_and_which_flag_takes_it(tmp_path, monkeypatch, flag, value, words):
    """Trial 63 #16: beyond c8dec21's two cases, a space file as --model was told to be renamed .json, as --hardware
    had its knobs listed as unknown keys; a profile as --space was unknown keys, a model file "not valid TOML"; a
    checkpoint's directory as --hardware "is a directory"; a run's pareto.json forty unknown keys, or no TOML."""
    monkeypatch.chdir(tmp_path)
    _three_flags_files(tmp_path)
    load = {"--model": load_model, "--hardware": load_hardware, "--space": load_space}[flag]
    with pytest.raises(ConfigError) as err:
        load(value)
    assert words in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("flag", ["--model", "--hardware", "--space"])
def test_a_deepspeed_config_is_named_as_one_not_as_a_space_file(tmp_path, flag):
    """Trial 65 #9: export's configs/<pick>.json has an activation_checkpointing section, a knob's name, and was called a
    space file to pass as --space, which then called it no valid TOML: round in a circle."""
    config = tmp_path / "cost-weighted.json"
    config.write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {"stage": 1},
                                  "activation_checkpointing": {"partition_activations": False}, "autotune": {}}))
    load = {"--model": load_model, "--hardware": load_hardware, "--space": load_space}[flag]
    with pytest.raises(ConfigError) as err:
        load(str(config))
    assert f"{flag} {config} is a DeepSpeed config (as autotune export writes configs/<pick>.json), not a" in str(err.value)
    assert "space file (" not in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("flag", ["--model", "--hardware", "--space"])
@pytest.mark.parametrize("name, words", [
    ("study.db", "is a study database (a run directory's study.db, written by autotune run), not a"),
    ("cost.candidate.json", "is a candidate file (as autotune export writes <pick>.candidate.json), not a"),
    ("report.html", "is a run directory's report (report.html), not a"),
])
def test_a_runs_database_candidate_or_report_is_named_for_what_it_is(tmp_path, flag, name, words):
    """Trial 65 #12: a study.db was to be renamed study.json or saved as UTF-8, a candidate file's keys were unknown and
    report.html no valid TOML: advice that fits none of them."""
    run = tmp_path / "r1"
    run.mkdir()
    (run / "study.db").write_bytes(b"SQLite format 3\x00" + bytes(range(256)))  # the header, then no UTF-8
    (run / "cost.candidate.json").write_text(json.dumps({"knobs": {"zero_stage": 1}, "model": {}, "hardware": "cpu",
                                                          "workload": {}, "gpus_per_node": 1, "hardware_profile": {}}))
    (run / "report.html").write_text("<!DOCTYPE html>\n<html><body></body></html>\n")
    load = {"--model": load_model, "--hardware": load_hardware, "--space": load_space}[flag]
    with pytest.raises(ConfigError) as err:
        load(str(run / name))
    assert f"{flag} {run / name} {words}" in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert "UTF-8" not in str(err.value) and "fix the file" not in str(err.value), str(err.value)


def test_a_broken_file_of_the_flags_own_kind_keeps_its_own_refusal(tmp_path):
    """The kind check speaks only for another flag's file: a profile's, a space file's, a model's own mistake is
    still named as such."""
    profile = tmp_path / "p.toml"
    profile.write_text((PROFILE_DIR / "h100-sxm.toml").read_text() + "\nspeed = 1\n")
    space = tmp_path / "s.toml"
    space.write_text(DEFAULT_SPACE.read_text() + "\nzero_stages = [1]\n")
    model = tmp_path / "m.json"
    model.write_text(json.dumps(PRESETS["tiny"].to_json() | {"size": 1}))
    for load, path, words in [(load_hardware, profile, "unknown key speed"), (load_space, space, "unknown key zero_stages"),
                              (load_model, model, "unknown key size")]:
        with pytest.raises(ConfigError) as err:
            load(str(path))
        assert words in str(err.value) and " is a " not in str(err.value), str(err.value)


def test_a_swapped_file_stops_run_in_one_line_before_anything_is_written(tmp_path):
    _three_flags_files(tmp_path)
    for files in (["--hardware", "space.toml"], ["--hardware", "cpu", "--space", "a100-80.toml"]):
        result = cli.autotune_main("run", "--backend", "simulate", "--model", "tiny", "--nodes", "1", "--out", "rx", *files,
                                   cwd=tmp_path)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and ", not a " in lines[0], result.stderr
        assert not (tmp_path / "rx").exists()


@pytest.mark.parametrize("flag, value, words", [
    ("--hardware", "gh200.toml", "; did you mean --hardware gh200 (built in)?"),
    ("--hardware", "sub/a100-80", "; sub/a100-80.toml is here: did you mean --hardware sub/a100-80.toml?"),
    ("--hardware", "mymodel", "; mymodel.json is here, a model file (JSON with llm or model_type): did you mean --model "
                              "mymodel.json?"),
    ("--model", "a100-80", "; a100-80.toml is here, a hardware profile (TOML with [gpu]): did you mean --hardware "
                           "a100-80.toml?"),
    ("--hardware", "H100-SXM", "; did you mean --hardware h100-sxm (built in)?"),
    ("--model", "7B", "; did you mean --model 7b (a preset)?"),
    ("--model", "7b.json", "; did you mean --model 7b (a preset)?"),
    ("--hardware", "h100", "; did you mean --hardware h100-sxm (built in)?"),
    ("--hardware", "A100-80", "; a100-80.toml is here: did you mean --hardware a100-80.toml?"),
    ("--hardware", "B", "; B.TOML is here: did you mean --hardware B.TOML?"),
    ("--hardware", "both/a100-80", "is a directory; pass a TOML profile file or one of cpu, gh200, h100-sxm; "
                                   "both/a100-80.toml is here: did you mean --hardware both/a100-80.toml?"),
    ("--space", "space", "; space.toml is here: did you mean --space space.toml?"),
    ("--hardware", "cal2", "; cal2.toml is here: did you mean --hardware cal2.toml?"),  # trial 65 #16: not Cal2.TOML
    # Trial 65 #22: another flag's built-in name, as another flag's file is.
    ("--model", "h100-sxm", "; h100-sxm is a built-in hardware profile: did you mean --hardware h100-sxm?"),
    ("--hardware", "7b", "; 7b is a preset model: did you mean --model 7b?"),
    ("--space", "gh200", "; gh200 is a built-in hardware profile: did you mean --hardware gh200?"),
])
def test_a_value_that_names_no_file_hints_the_file_or_name_meant(tmp_path, monkeypatch, flag, value, words):
    """Trial 63 #18: of these only `--hardware a100-80` beside a100-80.toml had a hint; a path, another flag's file,
    another letter case or a built-in name nearly written had none."""
    monkeypatch.chdir(tmp_path)
    profile = (PROFILE_DIR / "h100-sxm.toml").read_text()
    for path in ("a100-80.toml", "sub/a100-80.toml", "B.TOML", "both/a100-80.toml", "Cal2.TOML", "cal2.toml"):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(profile)
    (tmp_path / "both" / "a100-80").mkdir()
    (tmp_path / "mymodel.json").write_text(json.dumps(PRESETS["tiny"].to_json()))
    (tmp_path / "space.toml").write_text(DEFAULT_SPACE.read_text())
    load = {"--model": load_model, "--hardware": load_hardware, "--space": load_space}[flag]
    with pytest.raises(ConfigError) as err:
        load(value)
    assert str(err.value).endswith(words) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("flag, value", [("--hardware", "h200"), ("--hardware", "gh100"), ("--hardware", "gpu"),
                                         ("--model", "27b"), ("--model", "qwen-7b"), ("--hardware", "gh200-nvl")])
def test_no_guess_that_changes_a_number_or_the_first_letter(flag, value):
    """h200 is no gh200, gh100 no gh200, 27b no 72b: a close name that differs there names other hardware or another
    model, and the refusal lists the names as it is."""
    with pytest.raises(ConfigError) as err:
        (load_model if flag == "--model" else load_hardware)(value)
    assert "did you mean" not in str(err.value), str(err.value)
