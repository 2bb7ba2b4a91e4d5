"""Windows: short windows flagged or extended, misuse refused, failing reads reported, the thread."""

from __future__ import annotations

import time

import pytest
from measure_fakes import FakeClock, ScriptedSource

from autotune.measure import EnergyWindow, PowerSampler, WindowError, hwmon, node_block


def test_window_shorter_than_the_update_period_is_flagged():
    clock = FakeClock()
    window = EnergyWindow([ScriptedSource(update_period_s=0.1)], clock=clock, background=False)
    window.begin()
    clock.advance(0.02)
    result = window.end()
    (entry,) = result.entries
    assert entry.energy_j == pytest.approx(2.0)
    assert "shorter than the sensor's update period" in entry.flags[0]
    assert any("shorter than" in flag for flag in node_block(result)["flags"])


def test_short_window_can_be_extended_and_says_so():
    window = EnergyWindow([ScriptedSource(update_period_s=0.05)], short_window="extend", period_s=0.01)
    window.begin()
    result = window.end()
    assert result.window_s >= 0.05
    assert result.entries[0].flags == []
    assert "extended" in result.flags[0] and "idle" in result.flags[0]


def test_end_without_begin_and_begin_twice_are_refused():
    window = EnergyWindow([ScriptedSource()], background=False)
    with pytest.raises(WindowError):
        window.end()
    window.begin()
    with pytest.raises(WindowError, match="twice"):
        window.begin()


def test_a_sensor_failing_mid_window_is_reported_not_zeroed():
    clock = FakeClock()
    window = EnergyWindow([ScriptedSource(power_w=200.0, fail_after=2)], clock=clock, background=False)
    window.begin()
    clock.advance(1.0)
    window.sampler.tick()
    clock.advance(1.0)
    result = window.end()
    assert result.entries[0].energy_j == pytest.approx(200.0)  # the samples it had, no 0 W invented
    assert "sensor went away" in result.flags[0]


def test_background_sampler_ticks_at_its_period(gh200_tree):
    sources = hwmon.probe(gh200_tree.root).sources
    sampler = PowerSampler(sources, period_s=0.02)
    sampler.start()
    time.sleep(0.3)
    sampler.stop()
    assert 8 <= sampler.tick_count <= 16
    assert sampler.series[0].power_w[0] == pytest.approx(600.0)
    first = sampler.tick_count
    sampler.start()  # a stopped sampler can run again (its wake-up lock was left free)
    time.sleep(0.05)
    sampler.stop()
    assert sampler.tick_count > first
    with pytest.raises(ValueError):
        PowerSampler(sources, period_s=0)


def test_no_source_means_unavailable_never_zero():
    clock = FakeClock()
    window = EnergyWindow([], clock=clock, background=False)
    window.begin()
    clock.advance(1.0)
    block = node_block(window.end())
    assert block["provenance"] == "unavailable" and block["energy_j"] is None
    assert block["mean_power_w"] is None
