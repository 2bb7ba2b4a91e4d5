"""Display units chosen from the figures themselves: a CPU test study lasts seconds and joules,
a 72B study days and megawatt-hours, and both must read well in one table."""

from __future__ import annotations


def _scale(max_value: float, units: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The largest unit in which the biggest figure is at least 1 (units ascend by divisor)."""
    chosen = units[0]
    for unit in units:
        if max_value >= unit[1]:
            chosen = unit
    return chosen


def time_unit(values_s: list[float]) -> tuple[str, float]:
    """(unit name, seconds per unit) for a column of durations in seconds; s for a column with no figure (trial54
    F11: an all-OOM study's trial table was headed "time ms", its smallest unit, over n/a alone)."""
    # ms: a tiny model's simulated job on many nodes read "1.52e-05 s" (trial 46).
    figures = [v for v in values_s if v is not None]
    if not figures:
        return ("s", 1.0)
    return _scale(max(figures), (("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0)))


def energy_unit(values_kj: list[float]) -> tuple[str, float]:
    """(unit name, kJ per unit) for a column of energies in kJ; kJ for a column with no figure (as time_unit)."""
    units = (("mJ", 1e-6), ("J", 1e-3), ("kJ", 1.0), ("kWh", 3600.0), ("MWh", 3.6e6))
    figures = [v for v in values_kj if v is not None]
    if not figures:
        return ("kJ", 1.0)
    return _scale(max(figures), units)


def energy_title(values_kj: list[float | None], unit_name: str) -> str:
    """A column's title, `energy kJ`; `energy` alone over a column with no figure (a time-only study's): its kJ was
    energy_unit's default, chosen from nothing, beside the J of the study's other reports (trial60 #10)."""
    return f"energy {unit_name}" if any(v is not None for v in values_kj) else "energy"


def figure(value: float | None, divisor: float = 1.0) -> str:
    """Three significant figures, thousands separated; n/a where there is no figure. The trailing zeros that make
    the three are kept: "12" beside "12.1" read as a coarser figure (trial57 #13), now "12.0"; but never a
    trailing dot ("100", not "100.") and a zero reads "0"."""
    if value is None:
        return "n/a"
    scaled = value / divisor
    if abs(float(f"{scaled:.3g}")) >= 1000:  # 999.7 rounds to 1,000: thousands, not "1.00e+03"
        return f"{scaled:,.0f}"
    if scaled == 0:
        return "0"
    return f"{scaled:#.3g}".rstrip(".")


# What a report shows for an energy no sensor saw and nothing estimated (a time-only study's): never 0, never a blank.
UNAVAILABLE = "unavailable"


def energy_figure(value_kj: float | None, divisor: float = 1.0) -> str:
    """An energy, or a figure made from one (TFLOP/kJ), in a column: `figure`, or "unavailable" where there is none."""
    return UNAVAILABLE if value_kj is None else figure(value_kj, divisor)


def per_energy_figure(value: float | None, energy_kj: float | None) -> str:
    """A figure made from an energy (TFLOP/kJ) in a column: "unavailable" where the energy is, else `figure`
    (whatever the figure itself: a zero energy leaves the ratio undefined, not unavailable)."""
    return UNAVAILABLE if energy_kj is None else figure(value)


def pct_text(value: float | None, missing: str = "n/a") -> str:
    """A signed change in percent (`+7.9%`); `missing` where there is none (n/a: no baseline to compare with;
    UNAVAILABLE: an energy change where an energy is unavailable)."""
    return missing if value is None else f"{value:+.1f}%"


def change_words(value: float | None, missing: str = "n/a") -> str:
    """A change in words, as the reports say a pick's (`49.8% less`, `0.2% more`, `the same` where it rounds to
    0.0%), for a column whose title names the figure (compare's "time vs 1"): "-49.8%" and "+0.0%" were the signed
    form the reports dropped (trial59 #10). `missing` as pct_text's."""
    if value is None:
        return missing
    if round(abs(value), 1) == 0:
        return "the same"
    return f"{abs(value):.1f}% {'less' if value < 0 else 'more'}"


def share_text(fraction: float) -> str:
    """A share of a whole in whole percent (`47%`); `<1%` for a part too small to round to 1, so a
    part that is there never reads 0%."""
    pct = 100.0 * fraction
    return "<1%" if 0 < pct < 0.5 else f"{pct:.0f}%"


def time_text(value_s: float | None) -> str:
    """One duration in the unit that reads best for it alone (`4.2 s`, `18.4 min`): never 0 for a non-zero one."""
    unit, divisor = time_unit([value_s or 0.0])
    return f"{figure(value_s, divisor)} {unit}"


# The least figure a phase of a step, or an energy in its report's unit, is given as (trial57 #4, #5): a calibrated
# overhead driven to ~0 read "fixed per-step overhead: 3.79e-07 ms", a saving of 0.92 kJ in a kWh report
# "0.000256 kWh". Elsewhere three significant figures keep a tiny figure.
FIGURE_FLOOR = 0.001


def floored_figure(value: float | None, divisor: float = 1.0) -> str:
    """A figure in a unit (`figure`), "<0.001" where it is non-zero but below 0.001 of that unit."""
    if value is not None and 0 < abs(value / divisor) < FIGURE_FLOOR:
        return f"<{FIGURE_FLOOR:g}"
    return figure(value, divisor)


def phase_time_text(value_s: float | None) -> str:
    """`time_text` for a phase of a step: "<0.001 ms" for one far below a microsecond, never e-notation."""
    unit, divisor = time_unit([value_s or 0.0])
    return f"{floored_figure(value_s, divisor)} {unit}"


def front_energy_unit(front) -> tuple[str, float]:
    """The one energy unit of a report (`energy_unit` of its front's energies), for every energy figure in it:
    its tables, pick lines, savings, tuning cost and chart labels. A report that chose one per figure read
    "2,023 kJ" in its table beside "saves 0.000256 kWh", and "GPUs: 1.51 kWh" beside "CPU: 615 kJ" in one chart
    (trial57 #4). The front's largest energy is at least 1 of the unit, so a figure below 0.001 of it
    (`report_energy_text`) is under 0.1% of that."""
    return energy_unit([p.energy_kj for p in front])


def report_energy_text(value_kj: float | None, unit: tuple[str, float]) -> str:
    """One energy in its report's unit (`front_energy_unit`): `0.920 kJ`, `<0.001 kWh` for a non-zero figure
    below a thousandth of the unit (never "0.000256 kWh" nor e-notation), `energy unavailable` for none."""
    if value_kj is None:
        return f"energy {UNAVAILABLE}"
    name, divisor = unit
    return f"{floored_figure(value_kj, divisor)} {name}"


def energy_text(value_kj: float | None) -> str:
    """One energy in the unit that reads best for it alone (`4.2 J`, `1.3 kWh`): never 0 for a non-zero one."""
    return energy_text_in(value_kj, energy_unit([value_kj or 0.0]))


def energy_text_in(value_kj: float | None, unit: tuple[str, float]) -> str:
    """One energy in a given unit (`energy_unit`), for figures read side by side (a run's progress lines):
    a list that switches from kJ to kWh reads 2,024 kJ as more than 1.08 kWh. Three significant figures,
    so a figure far below the unit still reads non-zero (`0.000412 kWh`); no figure reads `energy unavailable`."""
    if value_kj is None:
        return f"energy {UNAVAILABLE}"
    name, divisor = unit
    return f"{figure(value_kj, divisor)} {name}"


class RunEnergyUnit:
    """The energy unit of one run's progress lines: `unit` where given (the study's, which every worker of it shares),
    else chosen by the first non-zero figure shown, then kept."""

    def __init__(self, unit: tuple[str, float] | None = None) -> None:
        self.unit = unit

    def text(self, value_kj: float) -> str:
        if self.unit is None:
            if not value_kj:
                return energy_text(value_kj)  # nothing to choose a scale by yet
            self.unit = energy_unit([abs(value_kj)])
        return energy_text_in(value_kj, self.unit)


# An estimate says so wherever it is shown (the energy of a machine without sensors, from a power model):
# a column of estimates once, in its header; in a column of mixed sources, each estimate after its figure.
def estimate_header(energy_sources: list[str]) -> str:
    """" (estimated)" for a column's header when every energy in it is estimated, else ""."""
    return " (estimated)" if energy_sources and all(s == "estimated" for s in energy_sources) else ""


def estimate_mark(energy_sources: list[str], energy_source: str) -> str:
    """" (estimated)" after one estimated energy of a column whose header does not say it (mixed sources)."""
    return " (estimated)" if energy_source == "estimated" and not estimate_header(energy_sources) else ""
