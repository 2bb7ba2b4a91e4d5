"""The front and knee on arrays (autotune/pareto.py), shared by the report and the guided sampler."""

import numpy as np
import pytest

from autotune.pareto import front_indices, knee_index


def test_front_drops_dominated_rows_orders_by_time_and_keeps_the_first_of_exact_ties():
    values = np.array([[130.0, 650.0], [100.0, 1000.0], [120.0, 900.0], [110.0, 700.0], [110.0, 700.0], [200.0, 600.0]])
    assert front_indices(values) == [1, 3, 0, 5]
    assert front_indices(np.empty((0, 2))) == []


def test_knee_is_the_same_in_any_units():
    front = np.array([[100.0, 1000.0], [110.0, 700.0], [130.0, 650.0], [200.0, 600.0]])
    assert knee_index(front) == 1
    # Energy in J instead of kJ, time in hours: the knee must not follow the larger numbers.
    assert knee_index(front * np.array([1 / 3600, 1000.0])) == 1


def test_knee_of_two_points_or_of_ties_is_the_first_given():
    assert knee_index(np.array([[200.0, 600.0], [100.0, 1000.0]])) == 0
    assert knee_index(np.array([[100.0, 1000.0], [200.0, 600.0]])) == 0
    assert knee_index(np.array([[100.0, 1000.0]])) == 0
    # Two points equally far below the line through the ends: the first of them.
    assert knee_index(np.array([[0.0, 10.0], [2.0, 4.0], [4.0, 2.0], [10.0, 0.0]])) == 1


def test_front_keeps_every_exact_tie_when_asked_and_still_drops_what_a_tie_dominates():
    values = np.array([[130.0, 650.0], [100.0, 1000.0], [110.0, 700.0], [120.0, 900.0], [110.0, 700.0], [110.0, 800.0]])
    # Rows 2 and 4 tie exactly: neither dominates the other, so both stay, in the given order; row 5
    # (as fast, more energy) is dominated by each of them and goes.
    assert front_indices(values, keep_ties=True) == [1, 2, 4, 0]
    assert front_indices(values) == [1, 2, 0]  # the samplers' fronts: one row of a tie is enough
    assert front_indices(np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]), keep_ties=True) == [0, 1, 2]
    assert front_indices(np.empty((0, 2)), keep_ties=True) == []


@pytest.mark.parametrize("objectives", [1, 2, 3])
@pytest.mark.parametrize("keep_ties", [False, True])
def test_the_front_is_the_rows_no_other_row_dominates(objectives, keep_ties):
    """front_indices against its definition, row by row, on values with exact ties and repeated rows (its kept rows
    are compared at once since trial70 #7: the same rows in the same order)."""

    from autotune.pareto import dominates, front_indices

    rng = np.random.default_rng(objectives)
    values = rng.integers(0, 6, size=(300, objectives)).astype(float)
    order = np.lexsort(values.T[::-1])
    expected, kept = [], []
    for i in order:
        rows = [values[j] for j in kept]
        if any(dominates(row, values[i]) if keep_ties else np.all(row <= values[i]) for row in rows):
            continue
        kept.append(i)
        expected.append(int(i))
    assert front_indices(values, keep_ties=keep_ties) == expected
    assert front_indices(values[:0]) == []


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("keep_ties", [False, True])
def test_two_objective_front_without_a_loop_is_the_general_ones(seed, keep_ties):
    """Two finite objectives take a sorted running minimum (the guided sampler's fronts of 39,340 predictions):
    the same rows in the same order as the row-by-row comparison the rows with an infinite value still take."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2 + 4 * seed, size=(200 + 50 * seed, 2)).astype(float)
    values[rng.random(len(values)) < 0.3] *= 1.5  # some rows off the integer grid
    general = values.copy()
    general[-1] = np.inf  # a row the fast path does not take: the whole array goes by the loop
    # The loop's answer over the finite rows is its answer over all of them less the row with inf (dominated by
    # any finite row, it is never on a front of finite rows).
    expected = [i for i in front_indices(general[:-1].tolist() + [[np.inf, np.inf]], keep_ties=keep_ties)
                if i != len(values) - 1]
    finite = values[:-1]
    assert front_indices(finite, keep_ties=keep_ties) == expected
