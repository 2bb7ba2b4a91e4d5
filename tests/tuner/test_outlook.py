"""The guided sampler's front arithmetic: candidates drawn with the probed front, and the order of
the pair-coverage probes."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from autotune.study.acquisition import enters_front
from autotune.study.guided import PAIR_REACH, pair_coverage_value, share_of_reach_to_enter
from autotune.study.outlook import _samples_with_front


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
