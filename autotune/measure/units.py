"""The one place where units are converted. Every quantity elsewhere carries its unit in its name.

Sensors speak microjoules (RAPL), millijoules (NVML), microwatts (hwmon), milliwatts (NVML) and
millidegrees (hwmon); the library speaks joules, watts, seconds and degrees Celsius.
"""

from __future__ import annotations


def uj_to_j(energy_uj: float) -> float:
    return energy_uj * 1e-6


def mj_to_j(energy_mj: float) -> float:
    return energy_mj * 1e-3


def j_to_kj(energy_j: float) -> float:
    return energy_j * 1e-3


def kj_to_j(energy_kj: float) -> float:
    return energy_kj * 1e3


def uw_to_w(power_uw: float) -> float:
    return power_uw * 1e-6


def mw_to_w(power_mw: float) -> float:
    return power_mw * 1e-3


def ms_to_s(time_ms: float) -> float:
    return time_ms * 1e-3


def millidegree_to_c(temp_mdeg: float) -> float:
    return temp_mdeg * 1e-3


def mean_power_w(energy_j: float | None, time_s: float) -> float | None:
    """Average power over an interval; None where energy is unavailable or the interval is empty."""
    if energy_j is None or time_s <= 0:
        return None
    return energy_j / time_s


def relative_difference_pct(value: float, reference: float) -> float | None:
    """(value - reference) / reference in percent; None where the reference is zero."""
    if reference == 0:
        return None
    return 100.0 * (value - reference) / reference
