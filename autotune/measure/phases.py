"""Power-over-time arithmetic: trapezoid integration, and splitting a window by the trainer's phases.

Phase marks come from the trainer: [{"name": "vit_fwd"|"llm_fwd"|"backward"|"optimizer",
"start_s", "end_s", "step"}] with time.time() stamps. Energy of a phase = the integral of the node's
power timeline over the phase's intervals (linear between samples; before the first or after the
last sample the edge value is held). Phase energies therefore come from integrated power, even where
the window total comes from a counter; the block says so.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

def _clean(times_s, power_w):
    points = [(t, p) for t, p in zip(times_s, power_w) if p is not None]
    return [t for t, _ in points], [p for _, p in points]


def trapezoid_j(times_s, power_w) -> float | None:
    """Energy (J) of a sampled power series (W); None with fewer than two usable samples."""
    times, powers = _clean(times_s, power_w)
    if len(times) < 2:
        return None
    return sum((times[i] - times[i - 1]) * (powers[i] + powers[i - 1]) / 2 for i in range(1, len(times)))


def _power_at(times, powers, t: float) -> float:
    if t <= times[0]:
        return powers[0]
    if t >= times[-1]:
        return powers[-1]
    i = bisect_right(times, t)
    t0, t1, p0, p1 = times[i - 1], times[i], powers[i - 1], powers[i]
    return p0 + (p1 - p0) * (t - t0) / (t1 - t0) if t1 > t0 else p1


def integrate_between_j(times_s, power_w, start_s: float, end_s: float) -> float | None:
    """Energy (J) between two instants of a sampled power series; None without samples."""
    times, powers = _clean(times_s, power_w)
    if not times or end_s <= start_s:
        return None if not times else 0.0
    inside = slice(bisect_right(times, start_s), bisect_left(times, end_s))
    knots = [start_s, *times[inside], end_s]
    values = [_power_at(times, powers, start_s), *powers[inside], _power_at(times, powers, end_s)]
    return trapezoid_j(knots, values)


def attribute_phases(times_s, power_w, phases: list[dict]) -> dict:
    """{name: {"energy_j", "time_s", "mean_power_w", "steps"}} over every mark of each phase name."""
    totals: dict[str, dict] = {}
    for mark in phases or []:
        energy_j = integrate_between_j(times_s, power_w, float(mark["start_s"]), float(mark["end_s"]))
        entry = totals.setdefault(mark["name"], {"energy_j": 0.0, "time_s": 0.0, "steps": set()})
        if energy_j is None:
            entry["energy_j"] = None
        elif entry["energy_j"] is not None:
            entry["energy_j"] += energy_j
        entry["time_s"] += max(0.0, float(mark["end_s"]) - float(mark["start_s"]))
        entry["steps"].add(mark.get("step"))
    for entry in totals.values():
        energy_j, time_s = entry["energy_j"], entry["time_s"]
        entry["mean_power_w"] = energy_j / time_s if energy_j is not None and time_s > 0 else None
        entry["steps"] = len(entry["steps"])
    return totals


def phase_at(phases: list[dict], t: float) -> tuple[str | None, int | None]:
    """The phase (name, step) a timestamp falls in; (None, step-or-None) between phases."""
    for mark in phases or []:
        if float(mark["start_s"]) <= t < float(mark["end_s"]):
            return mark["name"], mark.get("step")
    return None, None


def labelled_timeline(times_s, power_by_scope: list[dict], total_w, phases, origin_s: float,
                      max_points: int = 4096) -> list[dict]:
    """[{"t_s", "power_w", "phase", "step", "scopes": {scope: W}}], t_s from the window's begin.

    Every step of the window is kept (a figure picks one step by its `step`); a very long window
    is thinned evenly to `max_points` so result.json stays small.
    """
    stride = max(1, -(-len(times_s) // max_points))
    timeline = []
    for i in range(0, len(times_s), stride):
        phase, step = phase_at(phases, times_s[i])
        timeline.append({"t_s": round(times_s[i] - origin_s, 4), "power_w": _round(total_w[i]),
                         "phase": phase, "step": step,
                         "scopes": {k: _round(v) for k, v in power_by_scope[i].items()}})
    return timeline


def _round(value):
    return None if value is None else round(value, 3)
