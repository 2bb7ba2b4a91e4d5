"""Whether the least-energy pick still uses the least energy once the parts of the node no sensor saw are counted.

A GPU-only total (NVML alone: pareto.json `energy_not_measured` ["cpu", "memory_interconnect"]) leaves out
parts that draw at least their idle power for as long as the job runs, so a slower configuration's unmeasured
energy is larger. A power limit saves GPU energy by running longer: a pick that leads by less than what those
parts draw over the time it adds would not use the least energy on the node (a newcomer's trial: on the H100
study, power limit 0.35 led 0.5 by 0.022 kJ of GPU energy while adding 4 s, about 0.11 kJ of host power).

The floor counted is the hardware profile's idle power of the unmeasured parts per GPU (the power model the
probes fall back to without a sensor, measure/estimate.py, at utilisation 0), times each point's GPUs and time:
an estimate, and a lower bound (busy, the parts draw more, which widens the gap the same way).
"""

from __future__ import annotations

from autotune.measure.combine import not_measured, parts_text
from autotune.measure.estimate import PowerModel
from autotune.report.front import Point
from autotune.report.study_points import StudyView


def unmeasured_floor(view: StudyView) -> dict | None:
    """Where the least-energy pick's measured energy leaves parts of the node out and another feasible point,
    faster, would use less with those parts counted at their idle floor: {"pick", "rival" (trials), "parts",
    "floor_w_per_gpu", "pick_kj", "rival_kj" (each [measured, with the floor])}; None otherwise."""
    trial = view.picks.get("min_energy")
    pick = view.point(trial) if trial is not None else None
    parts = _left_out(pick)
    if not parts:
        return None
    shares_w = PowerModel.from_hardware(view.settings.hardware, accelerators=1).accelerator_power_w(0.0)
    floor_w = sum(shares_w.get(part, 0.0) for part in parts)
    if floor_w <= 0.0:
        return None

    def with_floor(p: Point) -> float:
        return p.energy_kj + floor_w * (p.gpus or 1) * p.time_s / 1e3

    # Only points whose measured energy leaves out the same parts compare on one footing.
    rivals = [p for p in view.points if p.time_s < pick.time_s and _left_out(p) == parts]
    rival = min(rivals, key=with_floor, default=None)
    if rival is None or with_floor(rival) >= with_floor(pick):
        return None
    return {"pick": pick.trial, "rival": rival.trial, "parts": parts, "floor_w_per_gpu": round(floor_w, 3),
            "pick_kj": [pick.energy_kj, with_floor(pick)], "rival_kj": [rival.energy_kj, with_floor(rival)]}


def _left_out(point: Point | None) -> list[str]:
    if point is None or point.energy_source != "measured" or point.energy_kj is None:
        return []
    return sorted(not_measured(point.extra.get("details")))


def unmeasured_floor_sentence(floor: dict | None, hardware: str) -> str | None:
    """The terminal's, Markdown's and the page's line on `unmeasured_floor`'s finding; None without one."""
    if not floor:
        return None
    (pick_kj, pick_floor), (rival_kj, rival_floor) = floor["pick_kj"], floor["rival_kj"]
    return (f"least energy as measured, which leaves out {parts_text(floor['parts'])} (no sensor): counted at their idle "
            f"power alone ({floor['floor_w_per_gpu']:.3g} W per GPU, the {hardware} profile's estimate), the faster trial "
            f"{floor['rival']} would use less than trial {floor['pick']} ({_kj(rival_kj)} + {_kj(rival_floor - rival_kj)} = "
            f"{_kj(rival_floor)} kJ against {_kj(pick_kj)} + {_kj(pick_floor - pick_kj)} = {_kj(pick_floor)} kJ, estimated); "
            "measure the whole node to choose between them")


def _kj(value: float) -> str:
    return f"{value:.4g}"
