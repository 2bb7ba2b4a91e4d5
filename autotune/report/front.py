"""The time-energy Pareto front of feasible points and the picks a user is offered."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from autotune.candidate import UNTOUCHED_DEVICE_SETTINGS
from autotune.measure.units import kj_to_j
from autotune.pareto import front_indices, knee_index


@dataclass(frozen=True)
class Point:
    trial: int
    params: dict
    time_s: float
    # None: no sensor saw it and nothing estimated it ("unavailable"); only a time-only study has such points.
    energy_kj: float | None
    tflops: float | None = None
    tflop_per_kj: float | None = None
    peak_mem_gib: float | None = None
    source: str = ""
    energy_source: str = ""
    gpus: int | None = None  # of this point's configuration: the cost-weighted pick scales max power by it
    extra: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        return {
            "trial": self.trial,
            "params": self.params,
            "time_s": self.time_s,
            "energy_kj": self.energy_kj,
            "tflops": self.tflops,
            "tflop_per_kj": self.tflop_per_kj,
            "peak_mem_gib": self.peak_mem_gib,
            "source": self.source,
            "energy_source": self.energy_source,
            "gpus": self.gpus,
        }


def _objectives(points: list[Point], time_only: bool = False) -> np.ndarray:
    """(N, 2) time and energy, or (N, 1) time alone: a time-only study's points may have no energy."""
    if time_only:
        return np.array([[p.time_s] for p in points], dtype=float).reshape(-1, 1)
    return np.array([[p.time_s, p.energy_kj] for p in points], dtype=float).reshape(-1, 2)


def _configuration_key(params: dict) -> str:
    """One configuration's identity; a run from before the device knobs existed ran them untouched."""
    return json.dumps({**UNTOUCHED_DEVICE_SETTINGS, **params}, sort_keys=True, default=str)


def pareto_front(points: list[Point], time_only: bool = False) -> list[Point]:
    """Points no other point beats in both time and energy, fastest first. Two configurations with
    exactly the same time and energy are both on it, lower trial first: neither beats the other, and a
    user may prefer either for what the figures do not say. The same configuration twice with the
    same figures is one choice, kept once, as its lower trial.

    `time_only` (a study of --objectives time): the front of that one objective, the fastest points,
    whatever their energy: the user did not ask to rank by it, and it may be an estimate."""
    by_trial = sorted(points, key=lambda p: p.trial)
    objectives = _objectives(by_trial, time_only)
    front, seen = [], set()
    for i in front_indices(objectives, keep_ties=True):
        point = by_trial[i]
        key = (point.time_s, None if time_only else point.energy_kj, _configuration_key(point.params))
        if key not in seen:
            seen.add(key)
            front.append(point)
    return front


def knee(front: list[Point]) -> Point | None:
    """The point farthest below the line from the fastest to the least-energy point, in objectives
    normalised to [0, 1] over the front (the classic knee of a two-objective front). Ties, and a
    front of two points, go to the lower trial."""
    if not front:
        return None
    by_trial = sorted(front, key=lambda p: p.trial)
    return by_trial[knee_index(_objectives(by_trial))]


def fastest(front: list[Point]) -> Point | None:
    return min(front, key=lambda p: (p.time_s, p.energy_kj, p.trial), default=None)


def _least_first(value: float | None) -> tuple[bool, float]:
    """A sort key that puts a figure a point does not have after every figure: unknown is no reason to prefer it."""
    return (value is None, value or 0.0)


def time_only_fastest(front: list[Point]) -> Point | None:
    """The pick of a time-only study (--objectives time): the least time; of an exact tie in time, the least peak
    memory, then the fewest GPUs, then the lowest trial. Energy ranks nothing there, and the lowest trial alone
    chose a configuration at 69.6 GiB per GPU over one at 31.0 GiB with the same time (trial61): the headroom
    and the allocation are what a tie in time still tells apart."""
    return min(front, key=lambda p: (p.time_s, _least_first(p.peak_mem_gib), _least_first(p.gpus), p.trial),
               default=None)


def min_energy(front: list[Point]) -> Point | None:
    return min(front, key=lambda p: (p.energy_kj, p.time_s, p.trial), default=None)


# A point at exactly max_slowdown x the fastest time must count as within it, whatever the rounding.
_SLOWDOWN_REL_TOL = 1e-9


def within_slowdown(points: list[Point], max_slowdown: float) -> list[Point]:
    """The points no slower than max_slowdown x the fastest time of them (1.05: at most 5% slower)."""
    if max_slowdown < 1.0:
        raise ValueError(f"max_slowdown must be >= 1 (got {max_slowdown})")
    quickest = fastest(points)
    if quickest is None:
        return []
    limit_s = max_slowdown * quickest.time_s * (1 + _SLOWDOWN_REL_TOL)
    return [p for p in points if p.time_s <= limit_s]


def best_under_slowdown(front: list[Point], max_slowdown: float) -> Point | None:
    """The least energy among points no slower than max_slowdown x the fastest time (1.05: at most 5%
    slower). Searching the front is enough: a point off it is beaten by one on it that is no slower."""
    return min_energy(within_slowdown(front, max_slowdown))


def zeus_cost_j(point: Point, eta: float, max_power_w: float) -> float:
    """Zeus's cost, eta * E + (1 - eta) * P_max * T, in joules (Zeus, NSDI 2023).

    P_max is `max_power_w` (per GPU) x the point's GPUs, so the time term prices a second at what the
    whole job could draw at most: eta 1 is pure energy, eta 0 pure time, and in between the two terms
    are on the same scale. The per-GPU figure is the caller's: see `report.picks.max_power_per_gpu_w`.
    """
    if point.gpus is None:
        raise ValueError(f"point of trial {point.trial} has no GPU count; the cost-weighted pick needs it")
    return eta * kj_to_j(point.energy_kj) + (1 - eta) * max_power_w * point.gpus * point.time_s


def cost_weighted(points: list[Point], eta: float, max_power_w: float) -> Point | None:
    """The point of least Zeus cost (see `zeus_cost_j`) among `points`, every feasible one; ties go to the faster,
    then the lower trial.

    Not the front alone: the time term is GPUs x time, which the front does not rank, so across GPU counts the least
    cost may lie off it (trial72 #9: at eta 0, a 32-GPU point beaten in time and energy by a 64-GPU one used fewer
    GPU-h than any front point, and the pick was the front's least, 5% dearer). A user comparing node counts asks
    for the fewest GPU-hours, not the fewest among points chosen by time and energy alone. Where every point has the
    same GPUs, the cost grows with time and with energy and its least is on the front anyway."""
    if not 0.0 <= eta <= 1.0:
        raise ValueError(f"eta must be within [0, 1] (got {eta})")
    return min(points, key=lambda p: (zeus_cost_j(p, eta, max_power_w), p.time_s, p.trial), default=None)


def recommendations(
    front: list[Point], max_slowdown: float = 1.05, eta: float = 0.5, max_power_w: float | None = None,
    time_only: bool = False, feasible: list[Point] | None = None,
) -> dict[str, int]:
    """Trial numbers of the picks: fastest, min_energy, knee, max_slowdown and, when the per-GPU max
    power is known, cost_weighted (empty when nothing is feasible). `feasible`: every feasible point, which
    cost_weighted chooses among (the front where not given: the same pick where all have one GPU count). `time_only` (--objectives time):
    the fastest alone (time_only_fastest breaks its ties): every other pick ranks by energy, which the user did
    not ask for (and may not have allowed as an estimate)."""
    if not front:
        return {}
    if time_only:
        return {"fastest": time_only_fastest(front).trial}
    picks = {
        "fastest": fastest(front).trial,
        "min_energy": min_energy(front).trial,
        "knee": knee(front).trial,
        "max_slowdown": best_under_slowdown(front, max_slowdown).trial,
    }
    if max_power_w is not None:
        picks["cost_weighted"] = cost_weighted(front if feasible is None else feasible, eta, max_power_w).trial
    return picks
