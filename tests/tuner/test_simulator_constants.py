"""The simulator's constants as data in the hardware profile: defaults, bounds, copies, round trip."""

import re
from dataclasses import replace

import pytest

from autotune.errors import ConfigError
from autotune.hardware import (
    SIMULATOR_CONSTANTS,
    available_hardware,
    dump_hardware,
    load_hardware,
    with_simulator_constants,
)
from autotune.simulator import simulate
from autotune.simulator.constants import SIMULATOR_CONSTANTS as REEXPORTED


def _without_simulator_table(text: str) -> str:
    return text.split("[simulator]")[0].rsplit("\n# The simulator's constants", 1)[0] + "\n"


def test_specs_are_well_formed():
    assert REEXPORTED is SIMULATOR_CONSTANTS
    names = [s.name for s in SIMULATOR_CONSTANTS]
    assert len(names) == len(set(names))
    for spec in SIMULATOR_CONSTANTS:
        assert spec.low <= spec.default <= spec.high, spec.name
        assert spec.meaning and "\n" not in spec.meaning


@pytest.mark.parametrize("name", ["gh200", "h100-sxm", "cpu"])
def test_every_shipped_profile_sets_every_constant(name):
    text = open(load_hardware(name).source).read()
    table = text.split("[simulator]")[1]
    for spec in SIMULATOR_CONSTANTS:
        assert re.search(rf"^{spec.name} = ", table, re.M), f"{name}.toml lacks {spec.name}"


def test_missing_keys_take_the_defaults(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text(_without_simulator_table(open(load_hardware("gh200").source).read())
                    + "[simulator]\nlink_efficiency = 0.5\n")
    profile = load_hardware(str(path))
    assert profile.simulator.link_efficiency == 0.5
    assert profile.simulator["max_compute_efficiency"] == 0.75  # the spec default
    assert profile.simulator_error == {}


@pytest.mark.parametrize("line, words", [
    ("link_efficency = 0.5", "unknown key link_efficency"),
    ("link_efficiency = 1.5", "link_efficiency = 1.5 is out of range"),
    ("link_efficiency = 'fast'", "is not a number"),
    ("link_efficiency = true", "is not a number"),
    ("max_compute_efficiency = 0.0", "is out of range"),
])
def test_bad_constants_are_refused_in_one_line(tmp_path, line, words):
    path = tmp_path / "node.toml"
    path.write_text(_without_simulator_table(open(load_hardware("gh200").source).read()) + f"[simulator]\n{line}\n")
    with pytest.raises(ConfigError) as err:
        load_hardware(str(path))
    assert words in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_with_simulator_constants_is_a_validated_copy(make_candidate):
    gh200 = load_hardware("gh200")
    before = gh200.simulator.max_compute_efficiency  # the shipped profile's (calibrated) value
    slower = with_simulator_constants(gh200, {"max_compute_efficiency": 0.3})
    assert slower.simulator.max_compute_efficiency == 0.3 and gh200.simulator.max_compute_efficiency == before != 0.3
    assert slower.simulator.link_efficiency == gh200.simulator.link_efficiency
    base = make_candidate(activation_checkpointing="recompute")
    assert simulate(replace(base, hardware=slower)).time_s > simulate(base).time_s
    with pytest.raises(ConfigError, match="out of range"):
        with_simulator_constants(gh200, {"max_compute_efficiency": 2.0})
    with pytest.raises(ConfigError, match="unknown key"):
        with_simulator_constants(gh200, {"fudge": 1.0})
    hash(replace(base, hardware=slower))  # a candidate stays hashable


@pytest.mark.parametrize("name", available_hardware())
def test_dump_reads_back_equal(tmp_path, name):
    # As `autotune calibrate -o` writes it: a profile of its own that records its base (only such a file,
    # or a built-in one, keeps its [simulator_error]: tests/tuner/test_hardware_profiles_trial33.py).
    profile = replace(with_simulator_constants(load_hardware(name), {"link_efficiency": 0.6123456789},
                                               error={"time_s_pct": 4.2, "energy_kj_pct": 7.5}),
                      name=f"{name}-calibrated", calibrated_from=name)
    text = dump_hardware(profile, header="fitted by autotune calibrate\nfrom 12 observations")
    path = tmp_path / "copy.toml"
    path.write_text(text)
    again = load_hardware(str(path))
    assert again == profile
    assert again.simulator_error == {"time_s_pct": 4.2, "energy_kj_pct": 7.5}
    for spec in SIMULATOR_CONSTANTS:  # a comment line with bounds and meaning per constant
        assert f"# [{spec.low:g}, {spec.high:g}] {spec.meaning}" in text


def test_simulator_error_is_checked(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text(open(load_hardware("cpu").source).read() + "\n[simulator_error]\ntime_s_pct = -1.0\n")  # cpu: no error table yet
    with pytest.raises(ConfigError, match="time_s_pct = -1.0 is out of range"):
        load_hardware(str(path))
    path.write_text(open(load_hardware("cpu").source).read() + "\n[simulator_error]\ntime_pct = 1.0\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_hardware(str(path))


def test_gpu_power_is_part_of_module_power(make_candidate):
    s = simulate(make_candidate(activation_checkpointing="recompute", micro_batch=2))
    assert 0 < s.mean_gpu_power_w < s.mean_power_w


def test_profile_survives_pickle_for_worker_processes():
    import pickle

    profile = with_simulator_constants(load_hardware("gh200"), {"comm_overlap": 0.5}, error={"tflops_pct": 3.0})
    again = pickle.loads(pickle.dumps(profile))
    assert again == profile and again.simulator["comm_overlap"] == 0.5 and dict(again.simulator)["comm_overlap"] == 0.5
