"""Phase attribution: energy and mean power per phase from the power timeline; the step profile."""

from __future__ import annotations

import pytest
from measure_fakes import FakeClock, ScriptedSource

from autotune.measure import EnergyWindow, attribute_phases, integrate_between_j, node_block, trapezoid_j


def test_trapezoid_and_partial_integration():
    times, power = [0.0, 1.0, 2.0], [100.0, 300.0, 300.0]
    assert trapezoid_j(times, power) == pytest.approx(500.0)
    assert integrate_between_j(times, power, 0.5, 1.5) == pytest.approx(0.5 * 250 + 0.5 * 300)
    assert integrate_between_j(times, power, 2.0, 3.0) == pytest.approx(300.0)  # edge value held
    assert trapezoid_j([0.0], [5.0]) is None


def test_phases_split_energy_and_mean_power():
    times = [0.0, 1.0, 1.0001, 2.0, 2.0001, 3.0]
    power = [200.0, 200.0, 400.0, 400.0, 100.0, 100.0]
    marks = [{"name": "llm_fwd", "start_s": 0.0, "end_s": 1.0, "step": 0},
             {"name": "backward", "start_s": 1.0001, "end_s": 2.0, "step": 0},
             {"name": "optimizer", "start_s": 2.0001, "end_s": 3.0, "step": 0}]
    phases = attribute_phases(times, power, marks)
    assert phases["llm_fwd"]["energy_j"] == pytest.approx(200.0)
    assert phases["backward"]["mean_power_w"] == pytest.approx(400.0)
    assert phases["optimizer"] == {"energy_j": pytest.approx(99.99), "time_s": pytest.approx(0.9999),
                                   "mean_power_w": pytest.approx(100.0), "steps": 1}


def test_block_has_phases_and_a_per_step_timeline():
    clock, source = FakeClock(0.0), ScriptedSource()
    window = EnergyWindow([source], clock=clock, background=False)
    marks = []
    window.begin()
    for step in range(3):
        for name, seconds, power_w in (("vit_fwd", 0.2, 300.0), ("llm_fwd", 0.3, 500.0),
                                       ("backward", 0.6, 600.0), ("optimizer", 0.1, 200.0)):
            start = clock.now_s
            source.power_w = power_w
            for _ in range(round(seconds / 0.05)):
                window.sampler.tick()
                clock.advance(0.05)
            marks.append({"name": name, "start_s": start, "end_s": clock.now_s, "step": step})
    block = node_block(window.end(), marks)
    assert set(block["phases"]) == {"vit_fwd", "llm_fwd", "backward", "optimizer"}
    assert block["phases"]["backward"]["steps"] == 3
    assert block["phases"]["backward"]["time_s"] == pytest.approx(1.8)
    assert 500.0 < block["phases"]["backward"]["mean_power_w"] <= 600.0
    step1 = [p for p in block["timeline"] if p["step"] == 1]
    assert {p["phase"] for p in step1} == {"vit_fwd", "llm_fwd", "backward", "optimizer"}
    assert step1[0]["t_s"] == pytest.approx(1.2) and step1[0]["scopes"] == {"module": 300.0}
    assert sum(p["energy_j"] for p in block["phases"].values()) == pytest.approx(block["energy_j"], rel=0.01)
