"""The Pareto front and its knee on plain arrays of objectives (all minimised): one definition for the
report (front of measured points, the knee pick) and the guided sampler (front of predictions)."""

from __future__ import annotations

import numpy as np


def front_indices(values: np.ndarray, keep_ties: bool = False) -> list[int]:
    """Indices of the non-dominated rows of `values` (N, M), ordered by the first objective then the
    next, exact ties in the given order.

    Rows with exactly the same values do not dominate each other. `keep_ties=True` keeps every one of
    them: the report's front, where two configurations that tie are two choices a user must see.
    The default keeps only the first: the samplers' fronts of predictions, where a twin adds nothing
    to beat or to seed from.
    """
    values = np.asarray(values, dtype=float)
    if not len(values):
        return []
    order = np.lexsort(values.T[::-1])  # stable: exact ties stay in the given order
    if values.shape[1] == 2 and np.isfinite(values).all():
        return _front_indices_2d(values[order], order, keep_ties)
    kept: list[int] = []
    # The kept rows' values, compared with each row at once: a loop over them took a second per call on a space of
    # 39,340 candidates, several times per probe (trial70 #7).
    kept_values = np.empty_like(values)
    for i in order:
        v = values[i]
        # Lexicographic order puts every row that dominates v (or ties it) before v, and a dropped one
        # is dominated by a kept one that then dominates v too: checking the kept rows is enough.
        earlier = kept_values[:len(kept)]
        no_worse = np.all(earlier <= v, axis=1)
        if (no_worse & np.any(earlier < v, axis=1) if keep_ties else no_worse).any():
            continue
        kept_values[len(kept)] = v
        kept.append(int(i))
    return kept


def _front_indices_2d(ordered: np.ndarray, order: np.ndarray, keep_ties: bool) -> list[int]:
    """front_indices for two finite objectives, rows already in lexicographic order, without a loop
    (the guided sampler takes the front of 39,340 predictions per proposal: a second each, trial70 #7).

    Every earlier row is no slower, so a row is dominated or tied by an earlier one exactly when one of
    them uses no more energy: it stays when its energy is below every earlier row's. With
    `keep_ties` its exact twins (the run of equal rows just before it) do not count against it; any
    other earlier row with no more energy dominates it."""
    energy = ordered[:, 1]
    least_before = np.concatenate([[np.inf], np.minimum.accumulate(energy)[:-1]])
    if keep_ties:
        starts_run = np.ones(len(ordered), dtype=bool)
        starts_run[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
        run_start = np.maximum.accumulate(np.where(starts_run, np.arange(len(ordered)), 0))
        least_before = least_before[run_start]
    return [int(i) for i in order[energy < least_before]]


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """a is no worse than b in every objective and better in one (all minimised)."""
    return bool(np.all(a <= b) and np.any(a < b))


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
