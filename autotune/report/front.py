"""The time-energy Pareto front of feasible points and the picks a user is offered."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Point:
    trial: int
    params: dict
    time_s: float
    energy_kj: float
    tflops: float | None = None
    tflop_per_kj: float | None = None
    peak_mem_gib: float | None = None
    source: str = ""
    energy_source: str = ""
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
        }


def _dominates(a: Point, b: Point) -> bool:
    return a.time_s <= b.time_s and a.energy_kj <= b.energy_kj and (a.time_s < b.time_s or a.energy_kj < b.energy_kj)


def pareto_front(points: list[Point]) -> list[Point]:
    """Points no other point beats in both time and energy, fastest first; exact ties keep the first trial."""
    front = []
    seen = set()
    for p in sorted(points, key=lambda p: (p.time_s, p.energy_kj, p.trial)):
        if (p.time_s, p.energy_kj) in seen or any(_dominates(q, p) for q in points):
            continue
        seen.add((p.time_s, p.energy_kj))
        front.append(p)
    return front


def knee(front: list[Point]) -> Point | None:
    """The point farthest below the line from the fastest to the least-energy point, in objectives
    normalised to [0, 1] over the front (the classic knee of a two-objective front). With two
    points, the one nearer the ideal (0, 0)."""
    if not front:
        return None
    if len(front) == 1:
        return front[0]
    t0, t1 = min(p.time_s for p in front), max(p.time_s for p in front)
    e0, e1 = min(p.energy_kj for p in front), max(p.energy_kj for p in front)

    def norm(p: Point) -> tuple[float, float]:
        return ((p.time_s - t0) / ((t1 - t0) or 1.0), (p.energy_kj - e0) / ((e1 - e0) or 1.0))

    if len(front) == 2:
        return min(front, key=lambda p: (sum(norm(p)), p.trial))
    # The extremes normalise to (0, 1) and (1, 0): distance below the line x + y = 1 is 1 - x - y.
    return max(front, key=lambda p: (1 - sum(norm(p)), -p.trial))


def recommendations(front: list[Point]) -> dict[str, int]:
    """Trial numbers of the picks: fastest, min_energy, knee (empty when nothing is feasible)."""
    if not front:
        return {}
    fastest = min(front, key=lambda p: (p.time_s, p.energy_kj, p.trial))
    min_energy = min(front, key=lambda p: (p.energy_kj, p.time_s, p.trial))
    return {"fastest": fastest.trial, "min_energy": min_energy.trial, "knee": knee(front).trial}
