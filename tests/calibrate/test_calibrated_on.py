"""A calibrated profile records what its constants were fitted on ([calibrated_on]: models, GPU counts, node counts),
its error written or not, and a study outside that says so where it says the profile was calibrated (trial64 #7: a
profile fitted on one GPU of a 1.5B model drove a 32B study on 32 GPUs saying only "calibrated (from 10
configurations ...)"). The table is covered by figures_sha256, as [error_measured_on] is."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from autotune.errors import ConfigError
from autotune.hardware import dump_hardware, load_hardware
from autotune.report.error_unknown import outside_calibration
from tests.cli import autotune_main

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "benchmarks" / "results" / "h100_power_study"
ONE_GPU = {"model": ("1.5b",), "gpus": ("1",), "nodes": ("1",)}


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cal") / "h100-cal.toml"
    result = autotune_main("calibrate", STUDY, "--hardware", "h100-sxm", "--no-loo", "-o", path)
    assert result.returncode == 0, result.stderr
    return path


def test_the_profile_records_what_it_was_calibrated_on_without_an_error(calibrated):
    text = calibrated.read_text()
    assert '\n[calibrated_on]\nmodel = ["1.5b"]\ngpus = ["1"]\nnodes = ["1"]\n' in text
    profile = load_hardware(str(calibrated))
    assert profile.calibrated_on == ONE_GPU and profile.simulator_error == {} and profile.error_measured_on == {}


def _error_sentence(run_dir: Path) -> str:
    return json.loads((run_dir / "pareto.json").read_text())["simulator_error"]["why_unknown"]


def test_a_study_of_another_model_and_gpu_count_says_it_is_outside_the_calibration(calibrated, tmp_path):
    run = autotune_main("run", "--backend", "simulate", "--model", "32b", "--nodes", "4", "--hardware", calibrated,
                        "--trials", "4", "--out", tmp_path / "32b")
    assert run.returncode == 0, run.stderr
    why = _error_sentence(tmp_path / "32b")
    # trial65 #20: the note's "(from 10 configurations ...)" follows "calibrated", not "outside it", which it read as
    # describing the study
    assert re.match(r"calibrated \(from 10 configurations for \d+ constants[^)]*\) on 1\.5b, 1 GPU, 1 node only: this "
                    r"study's model 32b, 32 GPUs and 4 nodes are outside it; error not computed \(--no-loo\): see its header",
                    why), why
    assert "this hardware profile was calibrated (from 10 configurations" in run.stdout


def test_a_study_inside_the_calibration_says_what_it_said(calibrated, tmp_path):
    run = autotune_main("run", "--backend", "simulate", "--model", REPO / "benchmarks/models/qwen2.5-1.5b.json",
                        "--nodes", "1", "--gpus-per-node", "1", "--frames", "8", "--global-batch", "4", "--samples", "64",
                        "--space", REPO / "benchmarks/spaces/one_gpu_power.toml", "--hardware", calibrated, "--trials", "4",
                        "--out", tmp_path / "1.5b")
    assert run.returncode == 0, run.stderr
    assert _error_sentence(tmp_path / "1.5b").startswith("calibrated (from 10 configurations for ")


@pytest.mark.parametrize("model, gpus, nodes, words", [
    ("1.5b", {1}, {1}, None),
    ("32b", {1}, {1}, "this study's model 32b is outside it"),
    ("1.5b", {8, 16}, {1}, "this study's 8/16 GPUs are outside it"),
    ("32b", {32}, {4}, "this study's model 32b, 32 GPUs and 4 nodes are outside it"),
])
def test_outside_names_the_model_gpu_and_node_counts_not_fitted(model, gpus, nodes, words):
    said = outside_calibration(ONE_GPU, model, gpus, nodes)
    assert said == (None if words is None else f"calibrated on 1.5b, 1 GPU, 1 node only: {words}")
    assert outside_calibration({}, "32b", {32}, {4}) is None  # a profile calibrated before it was recorded: nothing to say


def test_a_study_across_more_nodes_than_fitted_is_outside_though_its_gpu_count_was_fitted():
    """trial65 #7: fitted on 8 GPUs of one node, a study of 8 GPUs on 2 nodes runs the inter-node link never fitted."""
    one_node = {"model": ("32b",), "gpus": ("8",), "nodes": ("1",)}
    assert outside_calibration(one_node, "32b", {8}, {2}) == "calibrated on 32b, 8 GPUs, 1 node only: this study's 2 nodes are outside it"
    assert outside_calibration(one_node, "32b", {8}, {1}) is None


def test_an_edited_calibrated_on_loses_the_stated_error(tmp_path, capsys):
    """Hashed as [error_measured_on] is: widened by hand, the error it came with is no longer vouched for."""
    profile = replace(load_hardware("h100-sxm"), name="team-cal", calibrated_from="h100-sxm",
                      simulator_error={"time_s_pct": 2.0}, calibrated_on=ONE_GPU)
    path = tmp_path / "team-cal.toml"
    path.write_text(dump_hardware(profile))
    assert load_hardware(str(path)).simulator_error == {"time_s_pct": 2.0}
    path.write_text(path.read_text().replace('gpus = ["1"]', 'gpus = ["1", "32"]'))
    assert load_hardware(str(path)).simulator_error == {}
    warned = capsys.readouterr().err
    assert "figures_sha256 differs" in warned and "[calibrated_on]" in warned  # trial65 #15: the table edited is named


_TABLE = '[calibrated_on]\nmodel = ["1.5b"]\ngpus = ["1"]\nnodes = ["1"]\n'


@pytest.mark.parametrize("table", [
    _TABLE.replace('gpus = ["1"]', 'gpus = ["one"]'), _TABLE.replace('gpus = ["1"]', 'gpus = [1]'),
    _TABLE.replace('gpus = ["1"]', 'gpus = ["0"]'), _TABLE.replace('gpus = ["1"]', 'cpus = ["1"]'),
    # trial65 #8, #14: a partial or empty table, a count not as calibrate writes it, twice, or past any flag's
    # range, a blank model name and one holding a newline (which split the report's one-line sentence)
    '[calibrated_on]\nmodel = ["1.5b"]\n', "[calibrated_on]\n", _TABLE.replace('gpus = ["1"]', 'gpus = ["01"]'),
    _TABLE.replace('gpus = ["1"]', 'gpus = ["1", "1"]'), _TABLE.replace('gpus = ["1"]', f'gpus = ["{"9" * 26}"]'),
    _TABLE.replace('"1.5b"', '" "'), _TABLE.replace('"1.5b"', '"1.5b\\nfoo"'),
    _TABLE.replace('nodes = ["1"]', 'nodes = ["4"]'),  # trial65 #7: 4 nodes of 1 GPU, a contradiction
])
def test_a_hand_written_calibrated_on_of_the_wrong_shape_is_refused_in_one_line(calibrated, tmp_path, table):
    path = tmp_path / "edited.toml"
    assert _TABLE in calibrated.read_text()
    path.write_text(calibrated.read_text().replace(_TABLE, table))
    with pytest.raises(ConfigError, match=r"\[calibrated_on\]") as refused:
        load_hardware(str(path))
    assert "\n" not in str(refused.value)


def test_a_refused_calibrated_on_exits_2_naming_the_fix(calibrated, tmp_path):
    path = tmp_path / "edited.toml"
    path.write_text(calibrated.read_text().replace(_TABLE, '[calibrated_on]\nmodel = ["1.5b"]\n'))
    result = autotune_main("space", "--model", "32b", "--nodes", "4", "--hardware", path)
    assert result.returncode == 2
    assert "[calibrated_on] lacks gpus, nodes;" in result.stderr and "calibrate again" in result.stderr


@pytest.mark.parametrize("edit", ["widened", "hash removed"])
def test_a_calibrated_on_no_hash_vouches_for_is_ignored_with_one_warning_and_the_report_says_so(calibrated, tmp_path, edit):
    """trial65 #6: in a profile with no [simulator_error] (most calibrate -o writes) the hash was compared for the error
    alone, so a [calibrated_on] widened by hand was believed and the study's "outside it" vanished."""
    from autotune.report.error_unknown import with_calibration_note

    text = calibrated.read_text()
    path = tmp_path / "edited.toml"
    path.write_text(text.replace(_TABLE, '[calibrated_on]\nmodel = ["1.5b", "32b"]\ngpus = ["1", "32"]\nnodes = ["1", "4"]\n')
                    if edit == "widened" else "".join(line for line in text.splitlines(True) if not line.startswith("figures_sha256")))
    run = autotune_main("run", "--backend", "simulate", "--model", "32b", "--nodes", "4", "--hardware", path,
                        "--trials", "4", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("its [calibrated_on] is ignored") == 1
    why = _error_sentence(tmp_path / "run")
    assert "read with its [calibrated_on] ignored: " in why and why.endswith("so what it was fitted on is unknown")
    assert "calibrated on 1.5b/32b" not in run.stdout
    # A recalibration writes its own table, and drops the note with the one before it.
    profile = load_hardware(str(path))
    assert profile.calibrated_on == {} and "[calibrated_on] ignored" in profile.description
    assert "[calibrated_on]" not in with_calibration_note(profile.description, "calibrated (from 3 configurations)")
