"""Front arithmetic for the guided sampler, vectorised over candidates and posterior samples.

All objectives are minimised. A "front" here is an array (K, n_objectives) of mutually
non-dominated points (autotune/pareto.py finds it); samples are arrays (N candidates, S samples,
n_objectives).
"""

from __future__ import annotations

import numpy as np

# A point within this factor of the front (in every objective) does not count as new: the
# benchmark's target is every true-front point reached within 1%.
ENTER_MARGIN = 1.01


def hypervolume_improvement(samples: np.ndarray, front: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Area each sample point (..., 2) adds to the 2-D front's dominated area inside `reference`.

    The front's dominated region is a staircase: to the right of its j-th point (sorted by the first
    objective) it reaches down to that point's second objective. A new point (x, y) adds, per step
    between consecutive front x's, the width right of x times the height between y and the step."""
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


def improvement(samples: np.ndarray, front: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Hypervolume improvement for two objectives; for one, how much faster than the best so far."""
    if samples.shape[-1] == 2:
        return hypervolume_improvement(samples, front, reference)
    best = front[:, 0].min() if len(front) else reference[0]
    return np.clip(best - samples[..., 0], 0.0, None)


def enters_front(samples: np.ndarray, front: np.ndarray, margin: float = ENTER_MARGIN) -> np.ndarray:
    """Whether each sample point is more than `margin` better than every front point in some objective,
    i.e. no front point is within the margin of it in all objectives. `front`: (K, M), or (S, K, M)
    drawn with the samples (one front per sample)."""
    if not front.shape[-2]:
        return np.ones(samples.shape[:-1], dtype=bool)
    front = front[None, None] if front.ndim == 2 else front[None]
    covered = np.all(front <= margin * samples[:, :, None, :], axis=-1)
    return ~covered.any(axis=-1)
