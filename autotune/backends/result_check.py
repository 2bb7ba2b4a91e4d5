"""A probe's ok result.json checked where the tuner reads it: every figure it takes, by type and range.

The probe is the user's training script as much as ours (a trainer of another version, a script of their own): a result
with a negative step time was shown as "-4,000 ms (measured)" and kept as the trial's objective values, which the study
then leaves out as no probe of it (study/outside.py), so the guided sampler proposed the same candidate 276 times under
--trials 11 (trial79 #11). Such a result is a failed trial whose error names the file, the field and its value.
"""

from __future__ import annotations

from pathlib import Path

from autotune.backends.probe_outcome import measured_figures
from autotune.candidate import Candidate
from autotune.checks import number_problem, shown
from autotune.errors import ConfigError

# Each field of result.json a figure is read from (docs/result-schema.md), whether an ok result holds it always, and its
# range. A window's energy and power may be absent (no sensor, no estimate): "unavailable", never 0.
_FIELDS = (
    (("step_time_s", "mean"), True, {"low": 0, "low_open": True}),
    (("steps", "measured"), True, {"low": 1, "integer": True}),
    (("tflops", "model_per_device"), True, {"low": 0, "low_open": True}),
    (("mfu",), True, {"low": 0}),
    (("energy", "energy_j"), False, {"low": 0, "low_open": True}),
    (("energy", "mean_power_w"), False, {"low": 0}),
    (("peak_memory_gib",), False, {"low": 0, "low_open": True}),
)
# Each figure of a record and the field of result.json it is worked out from, for the replay's bounds on the figures
# scaled to the workload (checked_record), one figure at a time, time_s first: an ok record needs it.
_RESULT_FIELDS = {"time_s": ("step_time_s", "mean"), "energy_kj": ("energy", "energy_j"),
                  "tflops": ("tflops", "model_per_device"), "peak_mem_gib": ("peak_memory_gib",)}


def result_fault(result: dict, candidate: Candidate) -> str | None:
    """What is wrong with an ok result's figures ('has step_time_s.mean = -0.5, which is out of range; it must be a
    number > 0'), else None; a field it lacks is measured_figures' to say (a trainer of another version)."""
    for path, always, bounds in _FIELDS:
        value, held = result, True
        for depth, part in enumerate(path):
            if value is None and not always:
                break  # no energy block: unavailable
            if not isinstance(value, dict):
                return f"has {'.'.join(path[:depth])} = {shown(value)}, not an object with {part}"
            held, value = part in value, value.get(part)
            if not held:
                break  # a field it lacks: measured_figures says so
        if not held or (value is None and not always):
            continue
        problem = number_problem(value, **bounds)
        if problem:
            return f"has {'.'.join(path)} = {shown(value)}, which {problem}"
    try:
        figures = measured_figures(result, candidate, Path("result.json"))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return scaled_figure_fault(figures, result, candidate.knobs.to_dict())


def lacking_field(result: dict) -> str | None:
    """'lacks tflops.model_per_device, a figure of every ok result' for the first such field it lacks, else None."""
    for path, always, _bounds in _FIELDS:
        value = result
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if always and value is None:
            return f"lacks {'.'.join(path)}, a figure of every ok result"
    return None


def scaled_figure_fault(figures: dict, result: dict, params: dict) -> str | None:
    """A figure a replay would refuse once scaled to the workload (a zero step time, a window's energy past any
    study's), traced to its field in result.json ('has step_time_s.mean = 1e-30, a damaged figure (scaled to the
    workload: ...)'), else None."""
    from autotune.backends.replay import checked_record  # replay reads probe_outcome, as this module does

    for key, field in _RESULT_FIELDS.items():
        if figures.get(key) is None:
            continue
        try:
            checked_record("it", {"params": params, "time_s": figures["time_s"], key: figures[key]})
        except ConfigError as why:
            raw = result
            for part in field:
                raw = raw[part]
            return f"has {'.'.join(field)} = {shown(raw)}, a damaged figure (scaled to the workload: {checked_problem(why)})"
    return None


def checked_problem(why: ConfigError) -> str:
    """A checked value's problem, without the origin and the record format's fix, which are not the user's."""
    return str(why).split(": ", 1)[-1].split("; see `autotune run --help`")[0]
