"""Power limits and SM clocks a space lists that a study does not search, and why.

Two causes: the hardware (a limit below the device's minimum, a clock outside its range, any on a profile
without NVIDIA GPUs: the validity rules refuse the value for every candidate), and the probes (no NVML, or
no permission to set limits and clocks: the study keeps them untouched). Either way the study searches a
narrower space than its file: `run` says so in one line before any probe, and the study keeps the record
(NOT_SEARCHED_ATTR) for pareto.json's `inputs.not_searched` and the reports, which advised "widen the space"
for a space that was wide already (trial75 #1, #5).
"""

from __future__ import annotations

from autotune.candidate import UNTOUCHED_DEVICE_SETTINGS
from autotune.space.files import SearchSpace
from autotune.space.rules import DEVICE_KNOB_PROBLEMS

# The study's record: a list of {"knob", "values", "why", "fix"} (fix: what lets them be searched, or None).
NOT_SEARCHED_ATTR = "not_searched"


def entry(knob: str, values, why: str, fix: str | None = None) -> dict:
    return {"knob": knob, "values": list(values), "why": why, "fix": fix}


def unsettable_on_hardware(space: SearchSpace, hardware) -> list[dict]:
    """The listed values the hardware cannot take whatever the other knobs, each knob's with the reason of its
    first; on a profile without GPUs one reason for both knobs."""
    found = []
    for knob, problem in DEVICE_KNOB_PROBLEMS.items():
        refused = [(value, why) for value in space.values(knob) if (why := problem(value, hardware))]
        if refused:
            why = (f"hardware '{hardware.name}' has no NVIDIA GPUs to set them on" if not hardware.cuda
                   else refused[0][1])
            found.append(entry(knob, [value for value, _ in refused], why))
    return found


def touched_values(space: SearchSpace, knob: str, skipped: list[dict]) -> list:
    """The values of a device knob that would change the device, less those already `skipped` (another entry's)."""
    left_out = {value for e in skipped if e["knob"] == knob for value in e["values"]}
    untouched = UNTOUCHED_DEVICE_SETTINGS[knob]
    return [value for value in space.values(knob) if value != untouched and value not in left_out]
