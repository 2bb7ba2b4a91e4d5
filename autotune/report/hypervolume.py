"""Hypervolume of a two-objective minimisation front: the area it dominates up to a reference point.

Optuna's own function is private (`optuna._hypervolume`); two objectives need only a sort and a sweep.
"""

from __future__ import annotations


def hypervolume_2d(points: list[tuple[float, float]], reference: tuple[float, float]) -> float:
    """Area dominated by `points` (x, y both minimised) inside the box up to `reference`."""
    inside = sorted((x, y) for x, y in points if x < reference[0] and y < reference[1])
    area, best_y = 0.0, reference[1]
    # Sweep by x: between one point's x and the next, the dominated height is ref_y - (lowest y so far).
    for i, (x, y) in enumerate(inside):
        best_y = min(best_y, y)
        next_x = inside[i + 1][0] if i + 1 < len(inside) else reference[0]
        area += (next_x - x) * (reference[1] - best_y)
    return area
