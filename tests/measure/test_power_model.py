"""Estimate mode: the documented power model from a hardware profile."""

from __future__ import annotations

import pytest

from autotune.hardware import load_hardware
from autotune.measure import PowerModel, estimate_window, node_block


def test_h100_node_power_follows_the_formula():
    model = PowerModel.from_hardware(load_hardware("h100-sxm"))
    shares = model.accelerator_power_w(0.5)
    assert shares["gpu"] == pytest.approx(70 + 0.5 * (700 - 70))
    assert shares["cpu"] == pytest.approx(15 + 0.5 * 0.5 * (45 - 15))
    m = load_hardware("h100-sxm").simulator.memory_idle_fraction  # links draw part of their power idle
    assert shares["memory_interconnect"] == pytest.approx(25 * (m + (1 - m) * 0.5))
    assert model.node_power_w(0.5) == pytest.approx(8 * sum(shares.values()))


def test_gh200_module_is_capped_and_one_figure():
    model = PowerModel.from_hardware(load_hardware("gh200"))
    assert model.module_power_w(1.0) == pytest.approx(680.0)  # 600 + 70 + 35 + regulator loss held at the cap
    shares = model.accelerator_power_w(1.0)
    assert shares["cpu"] == pytest.approx(70) and shares["memory_interconnect"] == pytest.approx(35)
    loss = load_hardware("gh200").simulator.power_delivery_loss  # the module sensor sees the regulators' loss
    assert 0 < loss < 0.15
    assert shares["gpu"] == pytest.approx(680 * (1 - loss) - 70 - 35)  # the GPU's clock drops until the module fits
    m = load_hardware("gh200").simulator.memory_idle_fraction
    assert model.module_power_w(0.0) == pytest.approx((90 + 40 + m * 35) / (1 - loss))
    block = node_block(estimate_window(model, 100.0, 110.0, utilisation=1.0))
    assert block["provenance"] == "estimated"
    assert block["energy_j"] == pytest.approx(4 * 680.0 * 10.0)
    assert block["components"]["module_j"] == pytest.approx(block["energy_j"])
    # the pro-rata breakdown inside the module adds up to the module, and is never added on top
    assert sum(block["components"]["within_module"].values()) == pytest.approx(block["energy_j"])


def test_unknown_utilisation_assumes_busy_and_says_so():
    model = PowerModel.from_hardware(load_hardware("cpu"), accelerators=2)
    result = estimate_window(model, 0.0, 4.0, utilisation=None)
    block = node_block(result, [{"name": "backward", "start_s": 1.0, "end_s": 3.0, "step": 0}])
    assert any("assumed busy 1.0" in flag for flag in block["flags"])
    assert block["model"]["utilisation"] == 1.0
    node_w = 2 * (15.0 + (5.0 + 0.5 * 10.0) + 3.0)
    assert block["energy_j"] == pytest.approx(node_w * 4.0)
    assert block["phases"]["backward"]["energy_j"] == pytest.approx(node_w * 2.0)
    assert {s["method"] for s in block["sources"]} == {"model"}


def test_estimate_and_simulator_share_one_power_curve():
    """The estimate is the simulator's power curve (autotune/hardware/power_model.py) at activity u."""
    from autotune.hardware.power_model import PowerCurve

    hardware = load_hardware("h100-sxm")
    model, curve = PowerModel.from_hardware(hardware), PowerCurve.from_hardware(hardware)
    assert model.accelerator_power_w(0.3) == pytest.approx(curve.shares_w(0.3, 0.5 * 0.3, 0.3))


def test_a_lower_power_limit_lowers_the_estimate():
    hardware = load_hardware("gh200")
    capped = PowerModel.from_hardware(hardware, power_limit=0.7)
    assert capped.module_power_w(1.0) == pytest.approx(0.7 * 680.0)
    assert capped.module_power_w(0.0) == pytest.approx(PowerModel.from_hardware(hardware).module_power_w(0.0))
