"""NVML logic with a test double; the real NVML only where an NVIDIA GPU is present."""

from __future__ import annotations

import pynvml
import pytest
from measure_fakes import FakeNvml

from autotune.measure import EnergyWindow, discover, node_block, nvml
from autotune.measure.errors import SourceUnavailable, translate_nvml_error


def test_counter_for_totals_power_for_timeline_and_their_disagreement(clock):
    api = FakeNvml(names=("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"))
    found = nvml.probe(api)
    assert [s.scope for s in found.sources] == ["gpu", "gpu"]
    window = EnergyWindow(found.sources, clock=clock, background=False)
    api.run(0.0, 300.0)
    window.begin()
    for tick in range(10):
        clock.advance(0.1)
        api.run(0.1, [400.0, 200.0])  # the counter advances by the true energy
        if tick < 9:
            window.sampler.tick()
    api.gpu_power_mw = [440_000, 200_000]  # the closing power sample reads high on GPU 0
    result = window.end()
    gpu0, gpu1 = result.entries
    assert gpu0.method == "counter" and gpu0.energy_j == pytest.approx(400.0)
    assert gpu1.energy_j == pytest.approx(200.0)
    block = node_block(result)
    assert block["energy_j"] == pytest.approx(600.0)
    assert block["components"] == {"gpu_j": pytest.approx(600.0), "not_measured": ["cpu", "memory_interconnect"]}
    comparison = block["counter_vs_integrated"]["GPU 0 (NVIDIA H100 80GB HBM3)"]
    # trapezoid: 0.1*(300+400)/2 + 8*0.1*400 + 0.1*(400+440)/2 = 35 + 320 + 42 = 397 J vs 400 J
    assert comparison["integrated_j"] == pytest.approx(397.0)
    assert comparison["disagreement_pct"] == pytest.approx(-0.75)
    assert block["temperature_c"]["sensors"]["GPU 1 (NVIDIA H100 80GB HBM3)"]["begin"] == 51.0


def test_grace_hopper_counter_is_module_scope_and_wins_over_hwmon(gh200_tree, clock):
    api = FakeNvml(names=("NVIDIA GH200 120GB",) * 4)
    found = discover(gh200_tree.root, nvml_api=api)
    nvml_sources = [s for s in found.sources if s.kind == "nvml"]
    assert {s.scope for s in nvml_sources} == {"module"} and api.module_queries > 0
    window = EnergyWindow(found.sources, clock=clock, background=False)
    window.begin()
    clock.advance(2.0)
    api.run(2.0, 650.0)
    result = window.end()
    block = node_block(result)
    # the four NVML module counters (1300 J each), never hwmon on top, never a CPU figure on top
    assert block["energy_j"] == pytest.approx(4 * 1300.0)
    roles = {(s["kind"], s["scope"]): s["role"] for s in block["sources"]}
    assert roles[("nvml", "module")] == "counted"
    assert roles[("hwmon", "module")] == "cross_check"
    assert roles[("hwmon", "cpu")] == "within_module"
    assert set(block["components"]) == {"module_j", "within_module"}


def test_double_without_counter_falls_back_to_integrated_power(clock):
    api = FakeNvml(counter=False, instant=False)
    (source,) = nvml.probe(api).sources
    assert source.power_mode == "average" and source.read_energy_j() is None
    window = EnergyWindow([source], clock=clock, background=False)
    window.begin()
    clock.advance(1.0)
    (entry,) = window.end().entries
    assert entry.method == "integrated" and entry.energy_j == pytest.approx(300.0)


def test_missing_driver_is_a_reason_not_an_exception():
    api = FakeNvml(init_error=SourceUnavailable("no driver", "libnvidia-ml.so not found"))
    found = nvml.probe(api)
    assert found.sources == []
    assert found.missing[0].reason == "no driver: libnvidia-ml.so not found"


def test_no_gpu_is_not_present():
    (missing,) = nvml.probe(FakeNvml(names=())).missing
    assert missing.reason.startswith("not present")


def test_close_gives_back_every_nvml_init():
    api = FakeNvml(names=("NVIDIA H100",) * 3)
    found = nvml.probe(api)
    assert api.inits == 3
    for source in found.sources:
        source.close()
    assert api.inits == 0


@pytest.mark.parametrize("code, reason", [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "no driver"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "no driver"),
    (pynvml.NVML_ERROR_NO_PERMISSION, "permission denied"),
    (pynvml.NVML_ERROR_NOT_SUPPORTED, "not supported"),
    (pynvml.NVML_ERROR_UNKNOWN, "unreadable"),
])
def test_vendor_errors_are_translated_in_one_place(code, reason):
    error = translate_nvml_error(pynvml.NVMLError(code))
    assert isinstance(error, SourceUnavailable) and error.reason.startswith(reason)


def test_real_adapter_without_a_driver_reports_a_reason():
    if nvml.is_available():
        pytest.skip("an NVIDIA driver is present: covered by the gpu test")
    found = nvml.probe()
    assert found.sources == [] and found.missing[0].reason


@pytest.mark.gpu
def test_real_nvml_counter_advances_over_a_short_window():
    if not nvml.is_available():
        pytest.skip("no NVIDIA GPU with NVML here")
    import time

    found = nvml.probe()
    window = EnergyWindow(found.sources, period_s=0.05)
    window.begin()
    time.sleep(1.0)
    result = window.end()
    block = node_block(result)
    assert block["provenance"] == "measured" and block["energy_j"] > 0
    for entry in result.entries:
        assert entry.energy_j > 0 and 5.0 < entry.mean_power_w < 2000.0


def test_a_counter_that_goes_backwards_is_no_measurement(clock):
    """Trial71 #8: NVML's counter does not wrap (64-bit millijoules), so a decrease is a reset or a bad read; the window
    took last minus first, here negative joules labelled measured. None of the counter's readings is used (RAPL's
    decrease stays a wrap: test_rapl), and the GPU's power is integrated instead."""
    api = FakeNvml()
    (gpu,) = nvml.probe(api).sources
    window = EnergyWindow([gpu], clock=clock, background=False)
    api.run(0.0, 300.0)
    window.begin()
    clock.advance(1.0)
    api.run(1.0, 300.0)
    window.sampler.tick()
    clock.advance(1.0)
    api.counter_mj[0] = 5_000  # the driver reloaded: its counter starts again
    window.sampler.tick()
    clock.advance(1.0)
    api.run(1.0, 300.0)
    result = window.end()
    (entry,) = result.entries
    assert entry.method == "integrated" and entry.energy_j == pytest.approx(900.0) and entry.counter_j is None
    assert any("its energy counter went backwards (10300.000 J, then 5.000 J)" in flag for flag in result.flags)


def test_a_power_no_gpu_draws_is_no_power_reading():
    """A power out of range (past MAX_SENSOR_POWER_W: an all-ones register) is not a mode the GPU gives."""
    api = FakeNvml()
    api.gpu_power_mw = [20_000_000]
    (gpu,) = nvml.probe(api).sources
    assert gpu.power_mode is None and gpu.read_power_w() is None and gpu.has_counter
    assert gpu.read_average_power_w() is None
    api.counter = False
    (missing,) = nvml.probe(api).missing
    assert missing.reason == "not present: GPU 0 reports neither energy nor power"
