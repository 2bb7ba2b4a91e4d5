"""trainer.energy.ProbeEnergy: estimated without sensors, measured with them, one reader per node."""

from __future__ import annotations

import time

import pytest

from autotune.hardware import load_hardware
from trainer.energy import ProbeEnergy, merge_node_blocks


def _run_window(probe: ProbeEnergy, seconds: float = 0.25, utilisation=None):
    """Phases stamped as the trainer stamps them (trainer/phases.py: time.monotonic)."""
    probe.begin()
    start = time.monotonic()
    time.sleep(seconds)
    marks = [{"name": "llm_fwd", "start_s": start, "end_s": time.monotonic(), "step": 0}]
    return probe.end(marks, utilisation)


def test_without_sensors_the_block_is_estimated_with_positive_energy(no_sensor_env, monkeypatch):
    probe = ProbeEnergy(load_hardware("cpu"), node_rank=0, local_rank=0, local_world_size=2)
    assert probe.mode == "estimated"
    block = _run_window(probe)
    assert block["provenance"] == "estimated" and block["energy_j"] > 0
    assert block["mean_power_w"] == pytest.approx(2 * (15.0 + 10.0 + 3.0))
    assert any("assumed busy" in flag for flag in block["flags"])
    assert block["phases"]["llm_fwd"]["energy_j"] > 0
    assert merge_node_blocks([block, None]) is block


def test_the_block_names_its_clock_which_is_not_the_epoch(no_sensor_env):
    """docs/energy-block.md: a reader converting begin_s as a date would get 1970; the block says so."""
    probe = ProbeEnergy(load_hardware("cpu"), node_rank=0, local_rank=0, local_world_size=1)
    block = _run_window(probe, seconds=0.05)
    assert block["clock"] == "time.monotonic"
    assert abs(block["begin_s"] - time.monotonic()) < 60.0


def test_with_a_gh200_tree_the_block_is_measured(gh200_tree, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(gh200_tree.root))
    monkeypatch.setenv("AUTOTUNE_ENERGY_SOURCES", "hwmon,rapl")
    probe = ProbeEnergy(load_hardware("gh200"), node_rank=1, local_rank=0, local_world_size=4)
    assert probe.mode == "measured"
    block = _run_window(probe, utilisation=0.3)
    assert block["provenance"] == "measured" and "model" not in block
    module_w = sum(600.0 + s for s in range(4))
    assert block["mean_power_w"] == pytest.approx(module_w, rel=1e-6)
    assert block["per_node"][0]["node"] == 1 and len(block["per_gpu"]) == 4
    assert {s["kind"] for s in block["sources"]} == {"hwmon"}


def test_only_local_rank_zero_reads_the_node(no_sensor_env):
    probe = ProbeEnergy(load_hardware("cpu"), node_rank=0, local_rank=1, local_world_size=2)
    assert probe.mode == "none"
    assert _run_window(probe, seconds=0.0) is None


def test_estimate_can_be_refused_and_then_energy_is_unavailable(no_sensor_env):
    probe = ProbeEnergy(load_hardware("cpu"), node_rank=0, local_rank=0, local_world_size=1, allow_estimate=False)
    block = _run_window(probe, seconds=0.05)
    assert block["provenance"] == "unavailable" and block["energy_j"] is None
    assert "no driver" in block["flags"][0]


def test_samples_fall_inside_the_trainers_phases(gh200_tree, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(gh200_tree.root))
    monkeypatch.setenv("AUTOTUNE_ENERGY_SOURCES", "hwmon")
    probe = ProbeEnergy(load_hardware("gh200"), node_rank=0, local_rank=0, local_world_size=4)
    block = _run_window(probe, seconds=0.5)
    phase = block["phases"]["llm_fwd"]
    assert phase["time_s"] == pytest.approx(0.5, abs=0.1)
    assert phase["mean_power_w"] == pytest.approx(block["mean_power_w"], rel=0.05)
    assert any(point["phase"] == "llm_fwd" for point in block["timeline"])


def test_the_estimate_is_made_at_the_probes_power_limit(no_sensor_env):
    """A limited GPU is clocked down to fit its limit: a sensorless probe at 0.7 must not be estimated
    at the default limit's power."""
    hardware = load_hardware("gh200")
    default = _run_window(ProbeEnergy(hardware, node_rank=0, local_rank=0, local_world_size=1), seconds=0.05)
    limited = _run_window(ProbeEnergy(hardware, node_rank=0, local_rank=0, local_world_size=1, power_limit=0.7),
                          seconds=0.05)
    assert limited["provenance"] == "estimated"
    assert limited["mean_power_w"] <= 0.7 * hardware.power.module_cap_w + 1e-6
    assert limited["mean_power_w"] < default["mean_power_w"]
