"""The shared test case every energy source implementation must pass (parametrised over sources).

A rig builds one source of its kind on fakes and can make it draw a known power for a while; a new
source kind joins by adding a rig to RIGS.
"""

from __future__ import annotations

import pytest
from measure_fakes import FakeClock, FakeNvml, Gh200Tree, RaplTree

from autotune.measure import SOURCE_KINDS, EnergyWindow, PowerSource, hwmon, nvml, rapl


class HwmonRig:
    def __init__(self, tmp_path):
        self.tree = Gh200Tree(tmp_path)
        self.source = next(s for s in hwmon.probe(tmp_path).sources if s.label == "Module Power Socket 0")

    def draw(self, seconds: float, power_w: float) -> None:
        self.tree.set_power_w("Module Power Socket 0", power_w)  # averaged power, no counter


class RaplRig:
    def __init__(self, tmp_path):
        self.tree = RaplTree(tmp_path, max_energy_range_uj=50_000_000, start_uj=45_000_000)
        self.energy_uj = 45_000_000
        self.source = next(s for s in rapl.probe(tmp_path).sources if s.scope == "package")

    def draw(self, seconds: float, power_w: float) -> None:
        self.energy_uj += int(round(power_w * seconds * 1e6))
        self.tree.set_energy_uj(self.tree.package, self.energy_uj)


class NvmlRig:
    def __init__(self, tmp_path):
        self.api = FakeNvml()
        (self.source,) = nvml.probe(self.api).sources

    def draw(self, seconds: float, power_w: float) -> None:
        self.api.run(seconds, power_w)


RIGS = {"hwmon": HwmonRig, "rapl": RaplRig, "nvml": NvmlRig}


@pytest.fixture(params=sorted(RIGS))
def rig(request, tmp_path):
    rig = RIGS[request.param](tmp_path)
    yield rig
    rig.source.close()


def test_every_kind_has_a_rig():
    assert set(RIGS) == set(SOURCE_KINDS)


def test_describes_itself_with_kind_label_scope_and_unit(rig):
    source = rig.source
    assert isinstance(source, PowerSource)
    description = source.describe()
    assert description["kind"] in SOURCE_KINDS and description["label"] and description["scope"]
    assert description["unit"] and source.update_period_s > 0
    assert source.counted  # the rig's source is a top-level one: it feeds the node total


def test_reads_power_or_energy_and_nothing_negative(rig):
    power_w, energy_j = rig.source.read_power_w(), rig.source.read_energy_j()
    assert power_w is not None or energy_j is not None
    assert power_w is None or power_w >= 0
    assert energy_j is None or energy_j >= 0


def test_window_energy_matches_what_the_fake_drew(rig):
    clock = FakeClock()
    window = EnergyWindow([rig.source], clock=clock, background=False)
    rig.draw(0.0, 250.0)
    window.begin()
    for _ in range(20):  # 2 s at 250 W in 100 ms ticks; a RAPL counter wraps on the way
        clock.advance(0.1)
        rig.draw(0.1, 250.0)
        window.sampler.tick()
    (entry,) = window.end().entries
    assert entry.energy_j == pytest.approx(500.0, rel=1e-6)
    assert entry.mean_power_w == pytest.approx(250.0, rel=1e-6)
    assert entry.method in ("counter", "integrated") and entry.flags == []


def test_counter_never_decreases(rig):
    readings = []
    for _ in range(5):
        rig.draw(1.0, 10.0)  # less than one RAPL wrap between reads
        readings.append(rig.source.read_energy_j())
    if readings[0] is None:
        assert all(r is None for r in readings)  # a power-only source stays power-only
    else:
        assert readings == sorted(readings) and readings[-1] > readings[0]


def test_close_twice_is_harmless(rig):
    rig.source.close()
    rig.source.close()
    assert rig.source.label
