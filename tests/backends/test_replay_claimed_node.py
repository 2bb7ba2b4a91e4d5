"""Records measured on a node replay on every profile calibrated from it (its `calibrated_from` names that node). A
`calibrated_from` written by hand made another node's profile take them: an H100 profile claiming "gh200" replayed
GH200 measurements as its own, without a word, its power floor, memory and peak judging figures of another device.
Replay now says so in one line; a profile `autotune calibrate -o` wrote (its figures_sha256 vouches) replays them."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from autotune.backends.replay import ReplayBackend, study_of
from autotune.commands.options import settings_for
from autotune.errors import ConfigError
from autotune.hardware import dump_hardware, load_hardware
from autotune.hardware.load import PROFILE_DIR
from autotune.simulator import simulate
from autotune.study.valid import valid_checks

GH200_FLAGS = ("--model", "7b", "--nodes", "1")


def _gh200_measurements(tmp_path):
    """Four GH200 candidates' figures, recorded as measured on 'gh200' nodes (as `export --measurements` writes them)."""
    lines = []
    for check in [c for c in valid_checks(settings_for(*GH200_FLAGS)) if c.valid][:4]:
        figures = simulate(check.candidate)
        lines.append(json.dumps({"params": check.candidate.knobs.to_dict(), "status": "ok", "source": "measured",
                                 "study": study_of(check.candidate), "time_s": figures.time_s,
                                 "energy_kj": figures.energy_kj, "tflops": figures.tflops}))
    path = tmp_path / "gh200.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _checks(profile_path):
    return valid_checks(settings_for(*GH200_FLAGS, "--hardware", str(profile_path), "--gpus-per-node", "4"))


def test_a_calibrated_from_written_by_hand_does_not_make_another_nodes_records_its_own(tmp_path):
    text = (PROFILE_DIR / "h100-sxm.toml").read_text()
    mine = tmp_path / "myh100.toml"
    mine.write_text(text.replace('name = "h100-sxm"', 'name = "myh100"\ncalibrated_from = "gh200"', 1))
    with pytest.raises(ConfigError) as refused:
        ReplayBackend(_gh200_measurements(tmp_path)).check_candidates(_checks(mine))
    assert str(refused.value) == (
        f"measurements {tmp_path / 'gh200.jsonl'} line 1 holds figures measured on 'gh200' nodes, and the profile "
        f"{mine} names 'gh200' as its node only by calibrated_from = 'gh200', and nothing vouches for that: "
        "calibrated_from was written by hand (no figures_sha256 and no header of `autotune calibrate -o`): replay it "
        "with --hardware gh200, or with the profile `autotune calibrate -o` wrote from 'gh200'")


def test_a_calibration_calibrate_wrote_replays_its_nodes_records_and_one_edited_since_does_not(tmp_path):
    calibrated = tmp_path / "ghcal.toml"
    calibrated.write_text(dump_hardware(replace(load_hardware("gh200"), name="ghcal", calibrated_from="gh200")))
    measurements = _gh200_measurements(tmp_path)
    ReplayBackend(measurements).check_candidates(_checks(calibrated))
    # Its GPUs edited to another device's memory: the hash no longer vouches that it is a gh200 node.
    calibrated.write_text(calibrated.read_text().replace("memory_gib = 96.0", "memory_gib = 80.0", 1))
    with pytest.raises(ConfigError) as refused:
        ReplayBackend(measurements).check_candidates(_checks(calibrated))
    assert "nothing vouches for that: its figures, error, [error_measured_on], [calibrated_on] or calibrated_from are " \
           "not those `autotune calibrate -o` wrote (figures_sha256 differs" in str(refused.value)
