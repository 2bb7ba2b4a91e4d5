"""The SM clock each phase runs at, under the candidate's power limit and clock cap, and what that
does to the phase's time and power (the power curve itself: autotune/hardware/power_model.py).

A phase's time at clock fraction f is t * ((1 - s) + s / f), where s is the share of its time that
scales with the SM clock: most of a compute phase (GEMMs, attention), little of a memory-bound GPU
optimizer step, almost none of a collective or a host copy, whose speed the links set. The
clock_sensitivity_* constants of the profile's [simulator] table give s per kind of phase.
"""

from __future__ import annotations

from dataclasses import replace

from autotune.candidate import SM_CLOCK_UNTOUCHED, Candidate
from autotune.hardware.power_model import PowerCurve


def clock_cap_fraction(candidate: Candidate) -> float:
    """The sm_clock_mhz knob as a fraction of the highest clock (1.0: untouched or no clock control)."""
    gpu, clock = candidate.hardware.gpu, candidate.knobs.sm_clock_mhz
    if clock == SM_CLOCK_UNTOUCHED or gpu.max_sm_clock_mhz <= 0:
        return 1.0
    return min(1.0, float(clock) / gpu.max_sm_clock_mhz)


def power_limit_w(candidate: Candidate) -> float:
    """The power_limit knob in watts: a fraction of the default limit (the module's on a GH200)."""
    return candidate.knobs.power_limit * candidate.hardware.power.module_cap_w


def run_phase(candidate: Candidate, curve: PowerCurve, phase):
    """(the phase at the clock it runs at, its {"gpu", "cpu", "memory_interconnect"} watts)."""
    clock = curve.highest_clock_under(power_limit_w(candidate), phase.gpu_activity, phase.cpu_activity,
                                      phase.link_activity, clock_cap_fraction(candidate))
    s = phase.clock_sensitivity
    stretch = (1 - s) + s / clock
    shares_w = curve.shares_w(phase.gpu_activity, phase.cpu_activity, phase.link_activity, clock)
    return replace(phase, time_s=phase.time_s * stretch, clock_fraction=clock), shares_w
