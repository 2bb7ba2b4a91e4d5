"""The guided sampler's front arithmetic (acquisition.py) against its step-by-step definition.

Trial70 #7: the definition held (candidates x samples x front points) arrays at every proposal, 9 s and
gigabytes over 39,340 candidates. The rewrites must give the proposals they gave: the hypervolume
improvement to float rounding, whether a point enters the front exactly, ties (equal x's, points on a
step, on the reference, dominated points) included."""

from __future__ import annotations

import numpy as np
import pytest

from autotune.study.acquisition import enters_front, hypervolume_improvement


def _hypervolume_improvement_by_steps(samples, front, reference):
    """The definition the closed form replaced, as it was (a3fc637)."""
    x, y = samples[..., 0][..., None], samples[..., 1][..., None]
    if len(front):
        ordered = front[np.argsort(front[:, 0])]
        starts = np.concatenate([[-np.inf], ordered[:, 0]])
        ends = np.concatenate([ordered[:, 0], [reference[0]]])
        levels = np.concatenate([[reference[1]], np.minimum.accumulate(ordered[:, 1])])
    else:
        starts, ends, levels = np.array([-np.inf]), np.array([reference[0]]), np.array([reference[1]])
    ends = np.minimum(ends, reference[0])
    width = np.clip(ends - np.maximum(starts, x), 0.0, None)
    height = np.clip(np.minimum(levels, reference[1]) - y, 0.0, None)
    return (width * height).sum(axis=-1)


def _enters_front_point_by_point(samples, front, margin=1.01):
    """The definition the binary search replaced, as it was (a3fc637)."""
    if not front.shape[-2]:
        return np.ones(samples.shape[:-1], dtype=bool)
    front = front[None, None] if front.ndim == 2 else front[None]
    covered = np.all(front <= margin * samples[:, :, None, :], axis=-1)
    return ~covered.any(axis=-1)


def _front_and_samples(rng, points: int, on_grid: bool):
    """A front of `points` points (not always mutually non-dominated: the definition takes any), and
    samples around it; on a grid of a few values, so that x's, y's and steps tie."""
    draw = (lambda *shape: rng.integers(1, 8, shape).astype(float)) if on_grid else (lambda *shape: rng.uniform(1, 8, shape))
    front = draw(points, 2)
    samples = draw(40, 16, 2)
    return front, samples


@pytest.mark.parametrize("on_grid", [False, True])
@pytest.mark.parametrize("points", [0, 1, 2, 5, 12])
def test_the_closed_form_hypervolume_improvement_is_the_staircase_sum(points, on_grid):
    rng = np.random.default_rng(points + 100 * on_grid)
    for _ in range(20):
        front, samples = _front_and_samples(rng, points, on_grid)
        # A reference inside the front's span too (points right of it or above it add nothing).
        for reference in (np.array([9.0, 9.0]), np.array([6.0, 5.0]), np.array([7.0, 7.0])):
            expected = _hypervolume_improvement_by_steps(samples, front, reference)
            got = hypervolume_improvement(samples, front, reference)
            assert got.shape == expected.shape
            # Float rounding of the total staircase area: the prefix sums differ from the step sum there.
            assert np.allclose(got, expected, rtol=1e-12, atol=1e-12 * reference.prod())
            # Ties: a point that adds nothing adds exactly nothing, and equal points add equal areas.
            assert np.array_equal(got == 0, expected == 0)
            assert np.array_equal(got[:, :, None] == got[:, None, :], expected[:, :, None] == expected[:, None, :])


def test_the_closed_form_on_a_known_staircase():
    front = np.array([[1.0, 3.0], [2.0, 1.0]])
    reference = np.array([4.0, 4.0])
    points = np.array([[0.5, 0.5], [1.5, 2.0], [3.0, 3.5], [2.0, 1.0], [5.0, 0.0]])
    # (0.5, 0.5): 0.5 x 3.5 left of the front, 1 x 2.5 under the first step, 2 x 0.5 under the second.
    assert hypervolume_improvement(points, front, reference) == pytest.approx([1.75 + 2.5 + 1.0, 0.5, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("on_grid", [False, True])
@pytest.mark.parametrize("points", [0, 1, 2, 5, 12])
def test_entering_the_front_by_binary_search_is_the_point_by_point_answer(points, on_grid):
    rng = np.random.default_rng(7 + points + 100 * on_grid)
    for _ in range(20):
        front, samples = _front_and_samples(rng, points, on_grid)
        # One front for every sample, and one drawn per sample (outlook's joint draw).
        per_sample = front[None] * rng.choice([1.0, 1.01, 0.99], size=(samples.shape[1], 1, 1))
        for fronts in (front, per_sample):
            assert np.array_equal(enters_front(samples, fronts), _enters_front_point_by_point(samples, fronts))
            # One objective.
            assert np.array_equal(enters_front(samples[..., :1], fronts[..., :1]),
                                  _enters_front_point_by_point(samples[..., :1], fronts[..., :1]))


def test_a_point_exactly_at_the_margin_of_a_front_point_does_not_enter():
    front = np.array([[101.0, 202.0]])
    at_margin = np.array([[[100.0, 200.0]]])
    assert not enters_front(at_margin, front)[0, 0]
    assert enters_front(np.nextafter(at_margin, 0.0), front)[0, 0]


def test_memory_does_not_grow_with_the_front():
    """Trial70 #7: per proposal, (39,340 candidates x 128 samples x front points) arrays; now a few arrays
    the size of the samples, however many points the front has."""
    import tracemalloc

    rng = np.random.default_rng(3)
    samples = rng.uniform(1, 8, (2000, 128, 2))
    front = np.sort(rng.uniform(1, 8, (60, 2)), axis=0) * [1.0, -1.0] + [0.0, 9.0]  # x up, y down: a front
    per_sample = np.repeat(front[None], 128, axis=0)
    for measure in (lambda: hypervolume_improvement(samples, front, np.array([9.0, 9.0])),
                    lambda: enters_front(samples, front), lambda: enters_front(samples, per_sample)):
        tracemalloc.start()
        measure()
        peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak_bytes < 8 * samples.nbytes  # the definition's took 60 x
