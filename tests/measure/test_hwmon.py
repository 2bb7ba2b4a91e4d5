"""GH200 hwmon sensors: discovery by label, integration of power, nesting, missing files."""

from __future__ import annotations

import pytest
from measure_fakes import GH200_POWER_W

from autotune.measure import EnergyWindow, discover, hwmon, node_block


def test_finds_the_sixteen_gh200_sensors_by_label(gh200_tree):
    found = hwmon.probe(gh200_tree.root)
    assert found.missing == []
    assert len(found.sources) == 16
    by_label = {s.label: s for s in found.sources}
    module = by_label["Module Power Socket 3"]
    assert (module.scope, module.component, module.within, module.index) == ("module", "module", None, 3)
    assert by_label["Grace Power Socket 0"].within == "module"
    assert by_label["SysIO Power Socket 2"].scope == "sysio"
    assert module.update_period_s == pytest.approx(0.05)
    assert module.read_power_w() == pytest.approx(603.0)  # microwatts in the file, watts out
    assert module.read_energy_j() is None


def test_window_integrates_changing_power_by_trapezoid(gh200_tree, clock):
    found = discover(gh200_tree.root, kinds=["hwmon"])
    window = EnergyWindow(found.sources, clock=clock, background=False, sysfs_root=gh200_tree.root)
    gh200_tree.set_all_w("Module", 500.0)
    window.begin()
    clock.advance(1.0)
    gh200_tree.set_all_w("Module", 700.0)
    window.sampler.tick()
    clock.advance(1.0)
    gh200_tree.set_all_w("Module", 700.0)
    result = window.end()
    module0 = next(e for e in result.entries if e.label == "Module Power Socket 0")
    # 1 s ramping 500 -> 700 W (600 J) + 1 s at 700 W (700 J)
    assert module0.energy_j == pytest.approx(1300.0)
    assert module0.method == "integrated"
    block = node_block(result)
    assert block["provenance"] == "measured"
    assert block["energy_j"] == pytest.approx(4 * 1300.0)  # modules only: nested sensors never added
    within = block["components"]["within_module"]
    grace_j = sum(2.0 * (GH200_POWER_W["Grace"] + s) for s in range(4))
    assert within["grace_j"] == pytest.approx(grace_j)
    assert block["components"]["module_j"] == pytest.approx(5200.0)
    assert len(block["per_gpu"]) == 4 and {g["scope"] for g in block["per_gpu"]} == {"module"}
    assert block["temperature_c"]["begin"] == pytest.approx(45.0)


def test_unreadable_power_file_is_reported_with_its_reason(gh200_tree):
    target = gh200_tree.files["CPU Power Socket 1"]
    target.unlink()
    target.mkdir()  # tests run as root: a directory where the file should be is unreadable
    found = hwmon.probe(gh200_tree.root)
    assert len(found.sources) == 15
    (missing,) = found.missing
    assert missing.label == "CPU Power Socket 1" and not missing.available
    assert missing.reason.startswith("unreadable")


def test_missing_power_file_is_not_present(gh200_tree):
    gh200_tree.files["SysIO Power Socket 0"].unlink()
    (missing,) = hwmon.probe(gh200_tree.root).missing
    assert missing.reason.startswith("not present")


def test_no_hwmon_class_means_no_driver(tmp_path):
    (missing,) = hwmon.probe(tmp_path).missing
    assert missing.reason.startswith("no driver")
    assert hwmon.is_available(str(tmp_path)) is False


def test_hwmon_without_gh200_labels_is_not_present(tmp_path):
    other = tmp_path / "class" / "hwmon" / "hwmon0"
    other.mkdir(parents=True)
    (other / "name").write_text("coretemp\n")
    (missing,) = hwmon.probe(tmp_path).missing
    assert missing.reason.startswith("not present") and "GH200" in missing.reason


def test_temperatures_are_read_in_degrees(gh200_tree):
    temperatures = hwmon.read_temperatures_c(gh200_tree.root)
    assert list(temperatures.values()) == [45.0]


def test_a_power_out_of_range_makes_its_sensor_unavailable_never_negative_joules(gh200_tree, clock):
    """Trial71 #8: a negative power1_average was "available: yes", integrated into -300 J and labelled measured. A
    power no sensor reads (negative, or past MAX_SENSOR_POWER_W) is no measurement, as a non-number is none."""
    from autotune.measure import NodeMeter

    gh200_tree.set_power_w("Module Power Socket 0", -300.0)
    gh200_tree.set_power_w("Module Power Socket 1", 20_000.0)
    found = hwmon.probe(gh200_tree.root)
    reasons = {status.label: status.reason for status in found.missing}
    negative = gh200_tree.files["Module Power Socket 0"]
    assert reasons == {
        "Module Power Socket 0": f"unreadable: {negative} reads -300000000 uW, a negative power: not a measurement",
        "Module Power Socket 1": (f"unreadable: {gh200_tree.files['Module Power Socket 1']} reads 20000000000 uW, more "
                                  "than the 10000 W no one sensor of a node draws: not a measurement")}
    assert len(found.sources) == 14
    for source in found.sources:
        source.close()
    # The finding's node: that one sensor alone. The probe's meter then measures nothing, and says so.
    for label in [label for label in gh200_tree.files if label != "Module Power Socket 0"]:
        gh200_tree.files[label].unlink()
    meter = NodeMeter(discovery=discover(gh200_tree.root, kinds=["hwmon"]), clock=clock)
    assert meter.mode == "unavailable"
    meter.begin()
    clock.advance(1.0)
    block = meter.end()
    assert block["provenance"] == "unavailable" and block["energy_j"] is None


def test_a_power_out_of_range_mid_window_is_a_failed_read(gh200_tree, clock):
    gh200_tree.set_power_w("Module Power Socket 0", 500.0)
    found = discover(gh200_tree.root, kinds=["hwmon"])
    module = [s for s in found.sources if s.label == "Module Power Socket 0"]
    window = EnergyWindow(module, clock=clock, background=False)
    window.begin()
    clock.advance(1.0)
    gh200_tree.set_power_w("Module Power Socket 0", -300.0)
    window.sampler.tick()
    clock.advance(1.0)
    gh200_tree.set_power_w("Module Power Socket 0", 500.0)
    result = window.end()
    assert result.power_w["Module Power Socket 0"] == [500.0, None, 500.0]  # no -300 W in the timeline
    assert result.entries[0].energy_j > 0
    assert "reads -300000000 uW, a negative power: not a measurement" in result.flags[0]


def test_an_averaging_interval_of_zero_is_read_as_none_given(gh200_tree):
    """power1_average_interval 0 made the sensor's update period 0 s: no window was ever flagged as shorter than it."""
    interval = gh200_tree.files["Module Power Socket 0"].with_name("power1_average_interval")
    interval.write_text("0\n")
    module = next(s for s in hwmon.probe(gh200_tree.root).sources if s.label == "Module Power Socket 0")
    assert module.update_period_s == pytest.approx(hwmon.DEFAULT_AVERAGE_INTERVAL_MS / 1000)
