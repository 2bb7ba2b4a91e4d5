"""The Pareto front and its knee on plain arrays of objectives (all minimised): one definition for the
report (front of measured points, the knee pick) and the guided sampler (front of predictions)."""

from __future__ import annotations

import numpy as np


def front_indices(values: np.ndarray) -> list[int]:
    """Indices of the non-dominated rows of `values` (N, M), ordered by the first objective then the
    next; of exact ties only the first row (in the given order) is kept."""
    values = np.asarray(values, dtype=float)
    if not len(values):
        return []
    order = np.lexsort(values.T[::-1])  # stable: exact ties stay in the given order
    kept: list[int] = []
    for i in order:
        v = values[i]
        if any(np.all(values[j] <= v) for j in kept):
            continue
        kept.append(int(i))
    return kept


def knee_index(front: np.ndarray) -> int:
    """The row of a two-objective front farthest below the line joining its two ends, objectives
    scaled to [0, 1] over the front (the ends scale to (0, 1) and (1, 0), so the distance below the
    line x + y = 1 is 1 - x - y). Ties, and a front of two points (both on the line), go to the first
    row in the given order."""
    front = np.asarray(front, dtype=float)
    low, span = front.min(axis=0), np.ptp(front, axis=0)
    scaled = (front - low) / np.where(span > 0, span, 1.0)
    # Rounded: floating error must not break a tie the figures do not have.
    return int(np.argmax(np.round(1.0 - scaled.sum(axis=1), 12)))
