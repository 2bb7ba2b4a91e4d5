import json

import pytest

from autotune.errors import ConfigError
from autotune.hardware import available_hardware, load_hardware
from autotune.models import PRESETS, load_model


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
