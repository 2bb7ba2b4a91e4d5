"""The power limit and the SM clock in the simulator (issue 10): physics, not tuned figures.

Dynamic power falls faster than the clock (f * V(f)**2), static power does not, compute-bound work
slows with the clock and link-bound work barely: a lower limit or clock trades time for energy."""

import pytest

from autotune.hardware import load_hardware
from autotune.hardware.power_model import PowerCurve
from autotune.report.front import Point, fastest, knee, min_energy, pareto_front
from autotune.simulator import simulate, step_phases
from autotune.space.enumerate import enumerate_space
from autotune.space.files import load_space
from autotune.workload import make_workload

CONFIGS = [
    dict(model="32b", nodes=4, micro_batch=2, activation_checkpointing="recompute"),
    dict(model="32b", nodes=4, micro_batch=4, activation_checkpointing="offload_async"),
    dict(model="32b", nodes=4, micro_batch=1, optimizer_offload="async", activation_checkpointing="recompute"),
    dict(model="7b", nodes=1, micro_batch=2, activation_checkpointing="recompute"),
    dict(model="7b", nodes=2, hardware="h100-sxm", micro_batch=1, activation_checkpointing="recompute"),
]


def _unimodal(values: list[float]) -> bool:
    """Falls (or stays), then rises (or stays): one valley at most, never a bump."""
    rising = False
    for a, b in zip(values, values[1:]):
        if b > a * (1 + 1e-12):
            rising = True
        elif b < a * (1 - 1e-12) and rising:
            return False
    return True


def _limits(hardware) -> list[float]:
    """Power-limit fractions from 1.0 down to the device's lowest accepted limit."""
    lowest = hardware.power.min_limit_w / hardware.power.module_cap_w
    steps = int((1.0 - lowest) / 0.01)
    return [1.0 - 0.01 * i for i in range(steps + 1)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_falling_limit_never_speeds_up_and_energy_has_one_valley(make_candidate, config):
    hardware = load_hardware(config.get("hardware", "gh200"))
    steps = [simulate(make_candidate(power_limit=limit, **config)) for limit in _limits(hardware)]
    times = [s.time_s for s in steps]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(times, times[1:]))
    assert _unimodal([s.energy_kj for s in steps])
    assert times[-1] > times[0]  # the lowest limit bites


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_lower_clock_never_faster_and_energy_is_u_shaped(make_candidate, config):
    gpu = load_hardware(config.get("hardware", "gh200")).gpu
    clocks = list(range(int(gpu.max_sm_clock_mhz), int(gpu.min_sm_clock_mhz) - 1, -30))
    steps = [simulate(make_candidate(sm_clock_mhz=clock, **config)) for clock in clocks]
    times = [s.time_s for s in steps]
    energies = [s.energy_kj for s in steps]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(times, times[1:]))
    # Static power times a longer step outweighs the dynamic power saved at the lowest clocks: U-shaped.
    assert _unimodal(energies)
    assert min(energies) < energies[0] and min(energies) < energies[-1]


def test_power_stays_within_the_limit(make_candidate):
    for limit in (1.0, 0.8, 0.65):
        gh200 = simulate(make_candidate(power_limit=limit, micro_batch=4, activation_checkpointing="offload_async"))
        assert gh200.mean_power_w <= limit * 680 + 1e-6  # module scope: CPU + GPU + memory
        h100 = simulate(make_candidate(model="7b", hardware="h100-sxm", nodes=1, power_limit=limit,
                                       micro_batch=2, activation_checkpointing="recompute"))
        assert h100.mean_gpu_power_w <= limit * 700 + 1e-6  # GPU scope


def test_dynamic_power_falls_faster_than_the_clock_static_power_does_not():
    curve = PowerCurve.from_hardware(load_hardware("gh200"))
    full = curve.shares_w(1.0, 0.2, 0.5, clock_fraction=1.0)
    for f in (0.9, 0.7, 0.5, 0.2):
        slow = curve.shares_w(1.0, 0.2, 0.5, clock_fraction=f)
        dynamic_ratio = (slow["gpu"] - curve.gpu_idle_w) / (full["gpu"] - curve.gpu_idle_w)
        assert dynamic_ratio < f  # f * V**2 with V falling with f
        assert slow["cpu"] == full["cpu"] and slow["memory_interconnect"] == full["memory_interconnect"]
    idle = curve.shares_w(0.0, 0.0, 0.0, clock_fraction=0.3)
    assert idle["gpu"] == curve.gpu_idle_w  # static power is there at any clock


def test_highest_clock_under_a_limit_fits_it_exactly():
    curve = PowerCurve.from_hardware(load_hardware("gh200"))
    for limit_w in (650.0, 550.0, 450.0, 300.0):
        clock = curve.highest_clock_under(limit_w, 0.9, 0.3, 0.6)
        module_w = curve.limited_w(curve.shares_w(0.9, 0.3, 0.6, clock))  # components + regulator loss
        if clock > curve.min_clock_fraction:
            assert module_w == pytest.approx(min(limit_w, curve.limited_w(curve.shares_w(0.9, 0.3, 0.6))))
        else:
            assert module_w >= limit_w  # at the lowest clock it draws what it draws
    assert curve.highest_clock_under(650.0, 0.9, 0.3, 0.6, clock_cap=0.5) == 0.5  # the clock cap bounds it


def test_compute_slows_with_the_clock_links_barely(make_candidate):
    full = {p.name: p for p in simulate(make_candidate(activation_checkpointing="recompute")).phases}
    half = {p.name: p for p in simulate(make_candidate(activation_checkpointing="recompute", sm_clock_mhz=990)).phases}
    assert half["compute"].time_s / full["compute"].time_s > 1.8
    assert half["communication"].time_s / full["communication"].time_s < 1.1
    assert half["compute"].clock_fraction == pytest.approx(0.5)


def test_cpu_profile_has_no_clock_to_turn(make_candidate):
    base = simulate(make_candidate(model="tiny", hardware="cpu", nodes=1))
    assert all(p.clock_fraction == 1.0 for p in base.phases)
    assert [p.name for p in step_phases(make_candidate(model="tiny", hardware="cpu", nodes=1))][0] == "compute"


def test_flagship_front_at_four_nodes_has_three_points_and_distinct_picks():
    """`autotune run --model 32b --nodes 4` on the default space: the power limit spreads the front."""
    from autotune.models import load_model

    spec, hardware = load_model("32b"), load_hardware("gh200")
    points = []
    for number, check in enumerate(enumerate_space(load_space(None, nodes=(4,)), spec, hardware, make_workload(spec))):
        if check.valid:
            s = simulate(check.candidate)
            points.append(Point(number, check.candidate.knobs.to_dict(), s.time_s, s.energy_kj))
    front = pareto_front(points)
    assert len(front) >= 3
    picks = {fastest(front).trial, min_energy(front).trial, knee(front).trial}
    assert len(picks) == 3
    assert len({p.params["power_limit"] for p in front}) >= 2
