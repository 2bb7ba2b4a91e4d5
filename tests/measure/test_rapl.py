"""RAPL: package and DRAM counters, wrap-around, nested domains, unreadable counters."""

from __future__ import annotations

import pytest
from measure_fakes import RaplTree

from autotune.measure import EnergyWindow, WrapCounter, node_block, rapl


def test_wrap_counter_adds_the_range_on_each_decrease():
    counter = WrapCounter(max_value=1000)
    assert [counter.update(v) for v in (900, 990, 40, 500, 10)] == [900, 990, 1040, 1500, 2010]


def test_package_counter_that_wraps_during_the_window(tmp_path, clock):
    tree = RaplTree(tmp_path, max_energy_range_uj=262_143_328_850, start_uj=262_000_000_000)
    found = rapl.probe(tmp_path)
    assert {s.label for s in found.sources} == {"package-0", "dram (package-0)"}  # core, psys nested
    tree.set_energy_uj(tree.dram, 0)
    window = EnergyWindow(found.sources, clock=clock, background=False)
    window.begin()
    for second in (1, 2, 3):  # 100 W on the package: 262.2e9 uJ passes the wrap point
        clock.advance(1.0)
        tree.set_energy_uj(tree.package, 262_000_000_000 + second * 100_000_000)
        tree.set_energy_uj(tree.dram, second * 10_000_000)
        if second < 3:
            window.sampler.tick()
    assert (tree.package / "energy_uj").read_text().strip() == "156671150"  # wrapped: below the start
    result = window.end()
    package = next(e for e in result.entries if e.scope == "package")
    assert package.energy_j == pytest.approx(300.0)
    assert package.method == "counter" and package.integrated_j is None
    dram = next(e for e in result.entries if e.scope == "dram")
    assert dram.energy_j == pytest.approx(30.0)
    block = node_block(result)
    assert block["energy_j"] == pytest.approx(330.0)
    assert block["components"]["cpu_j"] == pytest.approx(300.0)
    assert block["components"]["memory_interconnect_j"] == pytest.approx(30.0)
    assert block["components"]["not_measured"] == ["gpu"]
    # counter-only sources still draw a timeline (power from counter differences)
    assert [p["power_w"] for p in block["timeline"]][1:] == pytest.approx([110.0, 110.0, 110.0])


def test_unreadable_energy_file_is_permission_or_unreadable(rapl_tree):
    energy = rapl_tree.package / "energy_uj"
    energy.unlink()
    energy.mkdir()
    found = rapl.probe(rapl_tree.package.parent.parent.parent)
    assert [s.label for s in found.sources] == ["dram (package-0)"]
    (missing,) = found.missing
    assert missing.label == "package-0" and missing.reason.startswith("unreadable")


def test_no_powercap_means_no_driver(tmp_path):
    (missing,) = rapl.probe(tmp_path).missing
    assert missing.reason.startswith("no driver") and "(no intel_rapl, or a VM)" in missing.reason
    assert rapl.is_available(str(tmp_path)) is False


def test_a_sysfs_root_that_does_not_exist_is_said_not_taken_for_a_missing_driver(tmp_path, monkeypatch):
    """Trial 41: AUTOTUNE_SYSFS_ROOT=/nonexistent read as a node without the drivers (a typo, then estimated energy)."""
    from autotune.measure import hwmon

    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(tmp_path / "typo"))
    for module in (rapl, hwmon):
        (missing,) = module.probe().missing
        assert missing.reason.endswith(f"is absent (AUTOTUNE_SYSFS_ROOT={tmp_path / 'typo'} does not exist)"), missing.reason
    (tmp_path / "a-file").write_text("")  # trial 45: a file there was said not to exist
    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(tmp_path / "a-file"))
    for module in (rapl, hwmon):
        (missing,) = module.probe().missing
        assert missing.reason.endswith(f"(AUTOTUNE_SYSFS_ROOT={tmp_path / 'a-file'} is not a directory)"), missing.reason


def test_a_counter_that_never_moves_is_unavailable_not_zero(tmp_path, clock):
    tree = RaplTree(tmp_path, start_uj=5_000_000)
    found = rapl.probe(tmp_path)
    window = EnergyWindow(found.sources, clock=clock, background=False)
    window.begin()
    for _ in range(3):  # the DRAM counter moves, the package counter is stuck
        clock.advance(1.0)
        tree.set_energy_uj(tree.dram, 5_000_000 + int(clock() * 1e6) % 1000)
        window.sampler.tick()
    result = window.end()
    package = next(e for e in result.entries if e.scope == "package")
    assert package.energy_j is None
    assert any("did not advance" in flag and "unavailable" in flag for flag in package.flags)
    phases = [{"name": "backward", "start_s": window.begin_s + 0.5, "end_s": window.begin_s + 2.5, "step": 0}]
    block = node_block(result, phases)
    # The package is a counted source: without it the node total is unavailable, never a partial sum.
    assert block["energy_j"] is None and block["provenance"] == "unavailable"
    assert any("incomplete" in flag for flag in block["flags"])
    # Nor are its phases or timeline 0 J and 0 W (trial 38 #7: the stuck counter's differences read as 0 W).
    assert block["phases"]["backward"]["energy_j"] is None and block["phases"]["backward"]["mean_power_w"] is None
    assert block["timeline"] and all(tick["power_w"] is None for tick in block["timeline"])
    assert all("package" not in tick["scopes"] for tick in block["timeline"])


def test_a_counter_outside_its_range_is_no_measurement(tmp_path):
    """Trial71 #8: a zone whose max_energy_range_uj is -5 was listed as available; one wrapping at 0 or below unwinds
    into any figure, and a reading past the range it wraps at is no reading of the counter."""
    tree = RaplTree(tmp_path)
    (tree.package / "max_energy_range_uj").write_text("-5\n")
    (tree.dram / "energy_uj").write_text(f"{tree.max_energy_range_uj + 1}\n")
    found = rapl.probe(tmp_path)
    assert found.sources == []
    reasons = {status.label: status.reason for status in found.missing}
    assert reasons == {
        "package-0": (f"unreadable: {tree.package / 'max_energy_range_uj'} reads -5 uJ, not a range a counter wraps at: "
                      "not a measurement"),
        "dram": (f"unreadable: {tree.dram / 'energy_uj'} reads 1000000001 uJ, outside 0 to max_energy_range_uj "
                 "(1000000000 uJ), where the counter wraps: not a measurement")}
    (tree.dram / "energy_uj").write_text("-1\n")
    assert "reads -1 uJ, outside 0 to max_energy_range_uj" in rapl.probe(tmp_path).missing[1].reason
