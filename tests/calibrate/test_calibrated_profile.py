"""The profile `autotune calibrate -o` writes: a name of its own (a study on it must not read as one on its
base), the node it describes kept (figures measured on the base's nodes are its figures too)."""

import json
from pathlib import Path

import pytest

from tests import cli

autotune = cli.autotune_main


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    profile = tmp_path_factory.mktemp("profiles") / "my-cluster.toml"
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "-o", profile)
    assert result.returncode == 0, result.stderr
    return profile


def test_the_written_profile_is_named_after_its_file_and_records_its_base(calibrated):
    from autotune.hardware import load_hardware

    profile = load_hardware(str(calibrated))
    # Before, it kept the name "gh200": every report of a study on it read as one on the shipped profile.
    assert (profile.name, profile.calibrated_from, profile.base_name) == ("my-cluster", "gh200", "gh200")
    assert 'name = "my-cluster"\ncalibrated_from = "gh200"\n' in calibrated.read_text()
    assert profile.simulator != load_hardware("gh200").simulator


@pytest.mark.parametrize("file_name, name", [("my-cluster.toml", "my-cluster"), ("gh200.toml", "gh200-calibrated"),
                                             ("h100-sxm.toml", "gh200-calibrated"), ("cpu.toml", "gh200-calibrated")])
def test_a_file_named_like_a_built_in_profile_gets_the_base_name_and_calibrated(tmp_path, file_name, name):
    from autotune.commands.calibrate import _calibrated_name
    from autotune.hardware import load_hardware

    assert _calibrated_name(tmp_path / file_name, load_hardware("gh200")) == name


def test_a_calibration_of_a_calibration_keeps_the_first_base(calibrated, tmp_path):
    from autotune.hardware import load_hardware

    again = tmp_path / "rack-2.toml"
    result = autotune("calibrate", "--reference", "gh200-study", "--hardware", calibrated, "--no-loo", "-o", again)
    assert result.returncode == 0, result.stderr  # the gh200 reference fits a calibration of gh200
    assert f"wrote {again}, profile 'rack-2' calibrated from 'gh200' without [simulator_error]" in result.stdout
    assert (load_hardware(str(again)).name, load_hardware(str(again)).calibrated_from) == ("rack-2", "gh200")


@pytest.fixture(scope="module")
def run_on_calibrated(calibrated, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "7b-1n"
    result = autotune("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--backend", "simulate",
                      "--hardware", calibrated, "--out", out)
    assert result.returncode == 0, result.stderr
    return out


def test_a_study_on_the_calibrated_profile_reports_its_name(run_on_calibrated):
    assert json.loads((run_on_calibrated / "pareto.json").read_text())["hardware"] == "my-cluster"  # was "gh200"


@pytest.mark.parametrize("hardware", [None, "gh200"])
def test_a_study_on_the_calibrated_profile_calibrates_its_base_and_itself(run_on_calibrated, hardware):
    """Its figures were measured on gh200 nodes: they calibrate gh200 as well as the profile the study kept."""
    flags = ("--hardware", hardware) if hardware else ()
    result = autotune("calibrate", run_on_calibrated, *flags, "--no-loo", "--allow-simulated", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["hardware"] == (hardware or "my-cluster")


def test_a_study_on_the_base_calibrates_the_calibrated_profile(calibrated, tmp_path_factory):
    out = cli.simulated_run(tmp_path_factory, nodes=1, trials=3)
    result = autotune("calibrate", out, "--hardware", calibrated, "--no-loo", "--allow-simulated", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["hardware"] == "my-cluster"


def test_another_node_is_refused_naming_the_calibration_and_its_base(run_on_calibrated):
    result = autotune("calibrate", run_on_calibrated, "--hardware", "h100-sxm", "--no-loo", "--allow-simulated")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "was measured on hardware 'gh200' but the profile to calibrate is 'h100-sxm'" in result.stderr


def test_a_reference_of_another_node_names_the_calibration_and_its_base(tmp_path):
    from dataclasses import replace

    from autotune.calibrate.reference import load_reference
    from autotune.errors import ConfigError
    from autotune.hardware import dump_hardware, load_hardware

    path = tmp_path / "my-h100.toml"
    path.write_text(dump_hardware(replace(load_hardware("h100-sxm"), name="my-h100", calibrated_from="h100-sxm")))
    with pytest.raises(ConfigError) as refused:
        load_reference("gh200-study", load_hardware(str(path)))
    assert "measured on 'gh200' hardware, but --hardware is 'my-h100, calibrated from h100-sxm'" in str(refused.value)


def test_run_directories_measured_on_other_nodes_are_refused_naming_each(calibrated, tmp_path):
    """Without --hardware, studies on two nodes fell back to the default gh200 and blamed whichever was not on it."""
    runs = {}
    for name, hardware in (("on-gh200", "gh200"), ("on-mine", str(calibrated)), ("on-h100", "h100-sxm")):
        runs[name] = tmp_path / name
        assert autotune("run", "--model", "7b", "--nodes", "1", "--hardware", hardware, "--trials", "2",
                        "--out", runs[name]).returncode == 0
    # One node's profile and a calibration of it: the same node figures, calibrated together.
    assert autotune("calibrate", runs["on-gh200"], runs["on-mine"], "--allow-simulated", "--no-loo").returncode == 0
    nodes = autotune("calibrate", runs["on-gh200"], runs["on-h100"], "--allow-simulated", "--no-loo")
    assert nodes.returncode == 2 and len(nodes.stderr.strip().splitlines()) == 1, nodes.stderr
    assert (f"the run directories were measured on different nodes ({runs['on-gh200']} on 'gh200', {runs['on-h100']} on "
            "'h100-sxm'); calibrate one kind of node at a time") in nodes.stderr
