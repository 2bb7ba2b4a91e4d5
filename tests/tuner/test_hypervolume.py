import pytest

from autotune.report.hypervolume import hypervolume_2d


def test_single_point_is_a_rectangle():
    assert hypervolume_2d([(1.0, 2.0)], (3.0, 5.0)) == pytest.approx(2.0 * 3.0)


def test_staircase_and_dominated_points():
    front = [(1.0, 3.0), (2.0, 1.0)]
    # (1,3): strip 1..2 x 3..4 area 1; (2,1): 2..4 x 1..4 area 6 -> 7; a dominated point adds nothing.
    assert hypervolume_2d(front, (4.0, 4.0)) == pytest.approx(7.0)
    assert hypervolume_2d(front + [(3.0, 3.5)], (4.0, 4.0)) == pytest.approx(7.0)


def test_points_outside_the_box_count_nothing():
    assert hypervolume_2d([(5.0, 1.0)], (4.0, 4.0)) == 0.0
