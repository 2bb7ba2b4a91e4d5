"""benchmarks/pair_cover.py: the greedy cover of value pairs and the mean probes until random pairs are held;
benchmarks/search_efficiency.py: when a study first held the pairs that make the true front."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from pair_cover import greedy_cover, mean_probes_to_hold  # noqa: E402
from search_efficiency import front_pairs_held_at  # noqa: E402


def test_the_greedy_cover_takes_the_candidate_adding_most_pairs_first():
    #                  pair 0  1  2  3  4
    pairs = np.array([[1, 1, 0, 0, 0],
                      [0, 1, 1, 1, 0],
                      [0, 0, 0, 1, 1],
                      [1, 0, 0, 0, 0]], dtype=bool)
    # Candidate 1 holds three; pairs 0 and 4 are left, no candidate holds both: one probe each.
    assert greedy_cover(pairs) == [3, 1, 1]


def test_the_mean_probes_until_random_pairs_are_held_follow_the_cover_order():
    added = [3, 1]  # the first probe holds 3 of the 4 pairs, the second the last one
    # One pair: held at the first probe with 3/4, else at the second.
    assert np.isclose(mean_probes_to_hold(added, 1), 1 * 0.75 + 2 * 0.25)
    # Two pairs drawn with replacement: both among the first probe's with (3/4)^2.
    assert np.isclose(mean_probes_to_hold(added, 2), 1 * 0.5625 + 2 * (1 - 0.5625))
    # Every pair held by one probe: one probe, however many are drawn.
    assert mean_probes_to_hold([5], 3) == 1.0


def test_a_front_pair_is_held_by_the_first_probe_that_holds_it_and_runs():
    terms = [("zero_stage", "3", "sp_degree", "4", np.log(0.7), 0.0),    # faster, on the front: counted
             ("zero_stage", "3", "sp_degree", "2", np.log(1.2), 0.05),   # slower and dearer: not counted
             ("zero_stage", "1", "sp_degree", "4", np.log(0.8), 0.0),    # faster, but no front point holds it
             ("zero_stage", "2", "sp_degree", "4", 0.05, np.log(0.9))]   # cheaper, on the front, never probed
    front = [{"zero_stage": 3, "sp_degree": 4}, {"zero_stage": 2, "sp_degree": 4}]
    run = {"knobs": [{"zero_stage": 1, "sp_degree": 4, "micro_batch": 1}, {"zero_stage": 3, "sp_degree": 4, "micro_batch": 8},
                     {"zero_stage": 3, "sp_degree": 4, "micro_batch": 2}],
           "sequence": [(1.0, 1.0), None, (2.0, 2.0)]}  # the second probe ran out of memory: it measured nothing
    assert front_pairs_held_at(terms, front, run) == [3, None]
    assert front_pairs_held_at([], front, run) == []
