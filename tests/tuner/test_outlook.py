"""The guided sampler's front arithmetic: candidates drawn with the probed front, the order of the
pair-coverage probes, and the memory wall learnt from out-of-memory probes."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from autotune.memory import measured_device_peak_gib
from autotune.study.acquisition import enters_front
from autotune.study.guided import PAIR_REACH, pair_coverage_value, share_of_reach_to_enter
from autotune.study.outlook import (MEMORY_RATIO_SPREAD_FLOOR, SAME_SHAPE_OOM_CHANCE, Observations, _chance_to_run,
                                    _samples_with_front)


def _chance_twin_beats_probe(correlation: float) -> float:
    """A front probe (candidate 0) and its twin (candidate 1): the same corrected figure, 2% spread each,
    their errors correlated as given; one objective."""
    log_std = np.array([[0.02], [0.02]])
    covariance = correlation * 0.02**2 * np.ones((2, 1))
    covariance[0, 0] = 0.02**2
    samples, front = _samples_with_front(np.zeros((2, 1)), log_std, [covariance], probed=[0], on_front=[0], seed=0)
    assert front.shape == (128, 1, 1) and samples.shape == (2, 128, 1)
    return float(enters_front(samples, front)[1].mean())


def test_a_twin_of_a_front_probe_is_judged_by_how_it_differs_from_it():
    # Drawn apart, each carries its 2% spread and the twin beats the probe by 1% in about a third of the
    # draws; drawn together (they share nearly all their error) it almost never does.
    apart, together = _chance_twin_beats_probe(0.0), _chance_twin_beats_probe(0.99)
    assert apart > 0.2
    assert together < 0.02
    # Uncorrelated, the front is its mean figure in every draw, as before the joint draw.
    samples, front = _samples_with_front(np.zeros((2, 1)), np.full((2, 1), 0.02), [np.zeros((2, 1))], [0], [0], 0)
    assert np.all(front == 1.0) and samples[1].std() > 0.01


def test_share_of_reach_to_enter():
    front = np.array([[100.0, 200.0], [120.0, 150.0]])
    reach = np.array([0.2, 0.1])
    mean = np.array([[100.0, 200.0],   # a front point: 1% better in time takes log(1.01)
                     [90.0, 300.0],    # already enters (faster than the fastest)
                     [130.0, 160.0]])  # dominated: cheapest is energy vs the second point, time vs the first
    share = share_of_reach_to_enter(mean, front, reach)
    assert abs(share[0] - np.log(1.01) / 0.2) < 1e-12
    assert share[1] == 0.0
    expected = max(min(np.log(1.01 * 130 / 100) / 0.2, np.log(1.01 * 160 / 200) / 0.1),
                   min(np.log(1.01 * 130 / 120) / 0.2, np.log(1.01 * 160 / 150) / 0.1))
    assert abs(share[2] - expected) < 1e-12
    assert np.all(share_of_reach_to_enter(mean, np.zeros((0, 2)), reach) == 0.0)


def test_pair_coverage_prefers_the_pairs_of_near_front_candidates_over_more_pairs():
    # Candidates 0 and 1 could enter the front, 0 with a small error, 1 only with nearly the reach;
    # 2 holds one owed pair of candidate 0, 3 holds two of candidate 1; 4 could not enter at all.
    owed = np.array([[1, 1, 0, 0, 0],
                     [0, 0, 1, 1, 0],
                     [1, 0, 0, 0, 0],
                     [0, 0, 1, 1, 0],
                     [0, 0, 0, 0, 1]], dtype=float)
    share = np.array([0.1, 0.9, 0.5, 0.95, 3.0])
    could_enter = share < 1.0
    value = pair_coverage_value(owed, share, could_enter)
    # By count of owed pairs 3 (two) would beat 2 (one); by the chance to move the front 2 comes first.
    assert value[2] > value[3] and value[0] == value.max()
    assert value[4] == 0.0
    # A pair's weight is set by the candidate that needs the least error among those that could enter.
    assert abs(value[2] - ndtr(-PAIR_REACH * 0.1)) < 1e-12


class _Memory:
    """What `_chance_to_run` reads of the predictions: each candidate's memory estimate, shape id and device."""

    def __init__(self, memory_gib: list[float], shapes: list[str], device_gib: float = 100.0):
        self.memory_gib, self.shape_ids = np.array(memory_gib), np.unique(shapes, return_inverse=True)[1]
        self.device_gib = np.full(len(shapes), device_gib)

    def __len__(self) -> int:
        return len(self.shape_ids)


def _observed(ok=(), oom=(), peaks=None) -> Observations:
    return Observations({i: np.ones(2) for i in ok}, set(oom), set(), set(), {"measured"}, dict(peaks or {}))


def test_the_memory_wall_is_learnt_from_the_probes_on_either_side_of_it():
    #                  0     1     2     3     4     5     6
    pred = _Memory([40.0, 50.0, 60.0, 60.0, 65.0, 70.0, 80.0], ["a", "a", "a", "a", "b", "b", "c"])
    assert np.all(_chance_to_run(pred, _observed(ok=[0])) == 1.0)  # no OOM: no wall seen
    one = _chance_to_run(pred, _observed(ok=[0], oom=[2]))
    # Below the lowest estimate that ran out: untouched.
    assert one[0] == one[1] == 1.0
    # The same shape at no less memory (another power limit, a bigger micro-batch) runs out too.
    assert one[3] == SAME_SHAPE_OOM_CHANCE
    # Another shape above the wall: one OOM says a third.
    assert np.allclose(one[[4, 5, 6]], 1 / 3)
    # Each further OOM at or below a candidate's estimate lowers its chance ...
    two = _chance_to_run(pred, _observed(ok=[0], oom=[2, 4]))
    assert np.isclose(two[6], 1 / 4) and two[5] == SAME_SHAPE_OOM_CHANCE
    # ... and a probe that ran at a higher estimate raises it (estimates of other shapes err otherwise).
    ran_above = _chance_to_run(pred, _observed(ok=[0, 6], oom=[2]))
    assert np.isclose(ran_above[4], 1 / 2) and np.isclose(ran_above[5], 1 / 2)


def test_a_measured_peak_places_the_memory_wall_before_anything_runs_out():
    #                  0     1     2     3     4     5     6
    pred = _Memory([40.0, 50.0, 60.0, 60.0, 65.0, 70.0, 80.0], ["a", "a", "a", "a", "b", "b", "c"])
    # Probe 0 (shape a) measured 1.5x its estimate: shape a needs 1.5x its estimate everywhere, so 60 GiB
    # estimated is 90 of the device's 100 (runs), 70 would be 105 (runs out); other shapes take the mean.
    chance = _chance_to_run(pred, _observed(ok=[0], peaks={0: 60.0}))
    assert chance[1] > 0.999 and chance[2] > 0.999
    at_wall = np.log(100.0 / (1.5 * np.array([65.0, 70.0, 80.0]))) / MEMORY_RATIO_SPREAD_FLOOR
    assert np.allclose(chance[[4, 5, 6]], ndtr(at_wall)) and chance[5] < 0.01 and chance[6] < 1e-6
    # A second shape measured as estimated: its own factor for its shape, the mean of the two elsewhere,
    # known only to their spread.
    two = _chance_to_run(pred, _observed(ok=[0, 4], peaks={0: 60.0, 4: 65.0}))
    mean, spread = np.log(1.5) / 2, np.log(1.5) / 2
    assert np.isclose(two[5], ndtr(np.log(100.0 / 70.0) / spread)) and two[5] > 0.95
    assert np.isclose(two[6], ndtr((np.log(100.0 / 80.0) - mean) / spread))
    # What an out-of-memory probe says still holds where the peaks say the candidate fits.
    both = _chance_to_run(pred, _observed(ok=[0, 4], oom=[3], peaks={0: 60.0, 4: 65.0}))
    assert both[3] <= SAME_SHAPE_OOM_CHANCE and both[5] <= 1 / 3
    assert both[1] == two[1]  # below the estimate that ran out: what the peaks say


def test_only_a_device_peak_is_read_against_the_device_memory_estimate():
    gpu = {"peak_mem_gib": 61.5, "details": {"peak_mem_kind": "cuda_max_memory_allocated"}}
    assert measured_device_peak_gib(gpu) == 61.5
    assert measured_device_peak_gib({"peak_mem_gib": 61.5}) == 61.5  # a replay record: the probe's device peak
    # The trainer on CPU reports its process's resident set: nothing to say of a GPU's memory.
    assert measured_device_peak_gib({"peak_mem_gib": 3.2, "details": {"peak_mem_kind": "process_peak_rss"}}) is None
    for bad in (None, 0, -1.0, float("nan"), float("inf"), "61.5", True):
        assert measured_device_peak_gib({"peak_mem_gib": bad}) is None


def test_figures_that_match_the_simulator_are_trusted_only_when_they_are_its_own(predictions_32b_4):
    from autotune.study.correction import MIN_RESIDUAL_STD
    from autotune.study.outlook import outlook

    pred = predictions_32b_4
    probed = [0, 1, 2, 3, 4]
    ok = {i: np.exp(pred.log_values[i, :2]) * 1.05 for i in probed}  # the simulator's figures, off by one factor
    unprobed_values = pred.features.holds_unseen_value(probed)
    simulated = outlook(pred, Observations(dict(ok), set(), set(), set(), {"simulated"}), 2)
    assert simulated.simulator_exact and np.all(simulated.log_std <= 1e-3)
    # Measured figures that match it say nothing of the values no probe holds: their doubt stays.
    measured = outlook(pred, Observations(dict(ok), set(), set(), set(), {"measured"}), 2)
    assert not measured.simulator_exact
    assert np.median(measured.log_std[unprobed_values]) >= 0.9 * MIN_RESIDUAL_STD
