"""A profile whose `calibrated_from` was written by hand (H100 figures claiming "gh200") was calibrated against GH200
figures, a reference file's or a study's, as if they were its node's, and `-o` then wrote a profile vouching for the
result; calibrate now refuses it in one line, as replay does (tests/backends/test_replay_claimed_node.py)."""

from __future__ import annotations

import pytest

from autotune.calibrate.reference import load_reference
from autotune.errors import ConfigError
from autotune.hardware import load_hardware
from autotune.hardware.load import PROFILE_DIR
from tests.cli import autotune_main

CLAIM = ("names 'gh200' as its node only by calibrated_from = 'gh200', and nothing vouches for that: calibrated_from "
         "was written by hand (no figures_sha256 and no header of `autotune calibrate -o`): pass --hardware gh200 (or a "
         "profile `autotune calibrate -o` wrote from it)")


@pytest.fixture
def claiming_h100(tmp_path):
    text = (PROFILE_DIR / "h100-sxm.toml").read_text()
    path = tmp_path / "myh100.toml"
    path.write_text(text.replace('name = "h100-sxm"', 'name = "myh100"\ncalibrated_from = "gh200"', 1))
    return path


def test_a_reference_of_the_claimed_node_is_refused(claiming_h100):
    with pytest.raises(ConfigError) as refused:
        load_reference("gh200-study", load_hardware(str(claiming_h100)))
    assert str(refused.value) == (f"reference gh200-study holds figures measured on 'gh200' hardware, and the profile "
                                  f"{claiming_h100} {CLAIM} to calibrate against it")


def test_a_study_of_the_claimed_node_is_refused(tmp_path, claiming_h100):
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--out", tmp_path / "run").returncode == 0
    result = autotune_main("calibrate", tmp_path / "run", "--hardware", claiming_h100, "--no-loo")
    assert result.returncode == 2 and result.stderr == (
        f"autotune calibrate: error: {tmp_path / 'run'} was measured on hardware 'gh200', and the profile {claiming_h100} "
        f"{CLAIM}\n")
