"""Picks on hand-made fronts whose answers are known."""

import pytest

from autotune.report.hypervolume import hypervolume_2d
from autotune.report.front import (
    Point,
    best_under_slowdown,
    cost_weighted,
    fastest,
    knee,
    min_energy,
    pareto_front,
    recommendations,
    zeus_cost_j,
)


def pt(trial, time_s, energy_kj, gpus=8, **knobs):
    return Point(trial=trial, params=knobs, time_s=time_s, energy_kj=energy_kj, gpus=gpus)


# A convex front with an obvious knee at trial 2: fast-and-hungry, knee, slow-and-frugal.
KNEE_FRONT = [pt(1, 100.0, 1000.0), pt(2, 110.0, 700.0), pt(3, 130.0, 650.0), pt(4, 200.0, 600.0)]


def test_front_drops_dominated_points_and_keeps_the_same_configuration_once():
    # Trial 6 is trial 2's configuration (no knob differs) with its figures: one choice, not two.
    points = KNEE_FRONT + [pt(5, 120.0, 900.0), pt(6, 110.0, 700.0)]
    assert [p.trial for p in pareto_front(points)] == [1, 2, 3, 4]
    # A run from before the device knobs existed ran them untouched: still the same configuration.
    twins = [pt(8, 110.0, 700.0, zero_stage=2), pt(7, 110.0, 700.0, zero_stage=2, power_limit=1.0, sm_clock_mhz="max")]
    assert [p.trial for p in pareto_front(twins)] == [7]


def test_different_configurations_that_tie_exactly_are_both_on_the_front():
    tied = [pt(9, 110.0, 700.0, zero_stage=3), pt(6, 110.0, 700.0, zero_stage=1)]
    front = pareto_front([pt(1, 100.0, 1000.0), *tied, pt(5, 110.0, 800.0), pt(4, 200.0, 600.0)])
    assert [p.trial for p in front] == [1, 6, 9, 4]  # fastest first, a tie lower trial first; 5 is beaten by both


def test_picks_on_a_front_with_ties_are_one_trial_each_the_lowest_of_a_tie():
    front = pareto_front([pt(1, 100.0, 1000.0), pt(7, 110.0, 700.0, zero_stage=3), pt(2, 110.0, 700.0, zero_stage=1),
                          pt(3, 130.0, 650.0), pt(8, 200.0, 600.0, zero_stage=3), pt(4, 200.0, 600.0, zero_stage=1)])
    assert recommendations(front, 1.05, 0.5, 700.0) == {
        "fastest": 1, "min_energy": 4, "knee": 2, "max_slowdown": 1, "cost_weighted": 2,
    }
    assert recommendations(front, 1.15, 1.0, 700.0)["max_slowdown"] == 2
    # A twin covers no area its tie does not: the hypervolume of the front is that of its distinct points.
    reference = (250.0, 1100.0)
    distinct = sorted({(p.time_s, p.energy_kj) for p in front})
    assert hypervolume_2d([(p.time_s, p.energy_kj) for p in front], reference) == pytest.approx(hypervolume_2d(distinct, reference))


def test_fastest_min_energy_knee():
    assert fastest(KNEE_FRONT).trial == 1
    assert min_energy(KNEE_FRONT).trial == 4
    assert knee(KNEE_FRONT).trial == 2
    assert recommendations(KNEE_FRONT, 1.05, 0.5, 700.0) == {
        "fastest": 1, "min_energy": 4, "knee": 2, "max_slowdown": 1, "cost_weighted": 2,
    }


@pytest.mark.parametrize(
    ("max_slowdown", "expected"),
    [
        (1.0, 1),  # no slowdown allowed: the fastest itself
        (1.05, 1),  # trial 2 is 10% slower
        (1.10, 2),  # exactly 10% slower counts as within (rounding must not exclude it)
        (1.31, 3),
        (3.0, 4),  # everything allowed: the least energy
    ],
)
def test_best_under_slowdown(max_slowdown, expected):
    assert best_under_slowdown(KNEE_FRONT, max_slowdown).trial == expected


def test_best_under_slowdown_ties_go_to_faster_then_lower_trial():
    front = [pt(7, 100.0, 900.0), pt(3, 102.0, 800.0), pt(2, 104.0, 800.0), pt(1, 104.0, 800.0)]
    assert best_under_slowdown(front, 1.05).trial == 3
    assert best_under_slowdown([pt(9, 100.0, 800.0), pt(4, 100.0, 800.0)], 1.05).trial == 4


def test_best_under_slowdown_refuses_a_speedup_and_handles_empty():
    with pytest.raises(ValueError, match="max_slowdown"):
        best_under_slowdown(KNEE_FRONT, 0.9)
    assert best_under_slowdown([], 1.05) is None


def test_zeus_cost_in_joules():
    # eta 0.5: 0.5 * 1000 kJ + 0.5 * 700 W * 8 GPUs * 100 s = 500 kJ + 280 kJ
    assert zeus_cost_j(pt(1, 100.0, 1000.0), 0.5, 700.0) == pytest.approx(780_000.0)


def test_cost_weighted_moves_from_fastest_to_least_energy_with_eta():
    assert cost_weighted(KNEE_FRONT, 0.0, 700.0).trial == 1  # time only
    assert cost_weighted(KNEE_FRONT, 1.0, 700.0).trial == 4  # energy only
    # eta 0.5 with 5.6 kW for the job: costs 780, 658, 689, 860 kJ -> trial 2.
    assert cost_weighted(KNEE_FRONT, 0.5, 700.0).trial == 2


def test_cost_weighted_counts_each_points_gpus():
    # Same time and energy, but trial 2 holds 16 GPUs' max power for that time: trial 1 is cheaper.
    front = [pt(2, 100.0, 500.0, gpus=16), pt(1, 100.0, 500.0, gpus=8)]
    assert cost_weighted(front, 0.5, 700.0).trial == 1


def test_cost_weighted_tie_goes_to_faster_then_lower_trial():
    # eta 1 makes time free: equal energy ties, the faster wins, then the lower trial.
    front = [pt(5, 120.0, 500.0), pt(4, 100.0, 500.0), pt(3, 100.0, 500.0)]
    assert cost_weighted(front, 1.0, 700.0).trial == 3


def test_cost_weighted_checks_inputs():
    with pytest.raises(ValueError, match="eta"):
        cost_weighted(KNEE_FRONT, 1.5, 700.0)
    with pytest.raises(ValueError, match="GPU count"):
        cost_weighted([pt(1, 1.0, 1.0, gpus=None)], 0.5, 700.0)
    assert cost_weighted([], 0.5, 700.0) is None


def test_recommendations_single_point_and_empty():
    only = [pt(3, 50.0, 50.0)]
    assert set(recommendations(only, 1.05, 0.5, 700.0).values()) == {3}
    assert recommendations([], 1.05, 0.5, 700.0) == {}
    assert "cost_weighted" not in recommendations(only)  # no max power known: no cost-weighted pick
