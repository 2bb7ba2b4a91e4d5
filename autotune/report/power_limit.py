"""The power limit in the report: how a pick's limit and clock read, and what the limit did to the best
parallel configuration (the fastest pick's other knobs, at every evaluated limit) as a small chart.

The sweep compares the same configuration at several limits, so the trade-off it shows is the
limit's alone; its energy saved and slowdown are against that configuration's untouched (1.0) run,
marked where they are within the two runs' measured noise (report.within_noise).
"""

from __future__ import annotations

from html import escape

from autotune.candidate import (
    UNTOUCHED_DEVICE_SETTINGS, knobs_sentence, limited_device, power_limit_fraction_text,
)
from autotune.report.error_bars import extrapolated, point_bar, simulator_error
from autotune.report.error_scope import outside_words
from autotune.report.front import Point
from autotune.report.html_parts import esc, table
from autotune.report.picks import missing_change, savings
from autotune.report.svg import (
    Frame, axes, chart_point, chart_start, detail_strip_px, hit_areas, nice_ticks, point_detail,
)
from autotune.report.units import energy_figure, energy_title, figure, front_energy_unit, report_energy_text, time_text, time_unit
from autotune.report.within_noise import labelled_change_text, savings_error, savings_noise


def _setting(params: dict, knob: str):
    """A point's power limit or clock (runs recorded before these knobs existed name none: untouched)."""
    return params.get(knob, UNTOUCHED_DEVICE_SETTINGS[knob])


def _limit(point: Point) -> float:
    return _setting(point.params, "power_limit")


def measured_default_w(point: Point) -> float | None:
    """The default power limit NVML reported on the devices of the point's probe (backends.launch keeps it where the
    probe set a limit, and a replay of its record); None where none was read: simulated, or run at the default."""
    value = ((point.extra or {}).get("details") or {}).get("default_power_limit_w")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _hardware(view):
    settings = getattr(view, "settings", None)
    return getattr(settings, "hardware", None)


def pick_knobs_sentence(view, point: Point) -> str:
    """knobs_sentence with the power limit in watts too (trial57 #12: "0.7 x default" alone told a SLURM user
    nothing to set): of the default the probe read where it read one, else of the study's profile's."""
    return knobs_sentence(point.params, _hardware(view), measured_default_w(point))


def power_limit_column_title(hardware, points: list[Point] = ()) -> str:
    """A table's power-limit column: "power limit (x 680 W)", of the default the study's `points` recorded where they
    did (limit_default_w; "x default" where they recorded several), else of the profile's."""
    if hardware is None or not hardware.cuda:
        return "power limit"
    default_w = limit_default_w(list(points), hardware)
    return f"power limit (x {default_w:g} W)" if default_w else "power limit (x default)"


def power_limit_sweep(view) -> list[Point]:
    """The fastest pick's configuration at each evaluated power limit, highest limit first."""
    fastest = view.point(view.picks["fastest"]) if "fastest" in view.picks else None
    if fastest is None:
        return []
    others = {k: v for k, v in fastest.params.items() if k != "power_limit"}
    same = [p for p in view.points if {k: v for k, v in p.params.items() if k != "power_limit"} == others]
    by_limit = {_limit(p): p for p in sorted(same, key=lambda p: p.trial)}
    return [by_limit[limit] for limit in sorted(by_limit, reverse=True)]


# What the sweep is, as every output titles it (trial59 #13: the page's "best parallel configuration" beside the
# terminal's and report.md's words read as another chart).
SWEEP_TITLE = "power limit of the fastest configuration"


def sweep_sentence(view) -> str | None:
    """One line for the terminal and Markdown; None when fewer than two limits were evaluated."""
    sweep = power_limit_sweep(view)
    if len(sweep) < 2:
        return None
    base = next((p for p in sweep if _limit(p) == UNTOUCHED_DEVICE_SETTINGS["power_limit"]), None)
    error = simulator_error(view)
    parts = []
    hardware = _hardware(view)
    default_w = limit_default_w(view.points, hardware)
    for p in sweep:
        part = f"{power_limit_fraction_text(_limit(p))}{limit_watts_text(p, default_w)}: trial {p.trial}"  # `1.0` as the table has it
        if base is not None and p is not base:
            change, noise, stated = savings(p, base), savings_noise(p, base), savings_error(p, base, error)
            missing = missing_change("energy_saved_pct", p, base)
            saved = labelled_change_text(change, "energy_saved_pct", noise, "energy", stated, missing=missing)
            part += f" ({saved}, {labelled_change_text(change, 'time_change_pct', noise, 'time', stated)})"
        parts.append(part)
    default = limit_default_text(view.points, hardware)
    return f"{SWEEP_TITLE} ({default + '; ' if default else ''}{_sources(sweep, error)}): " + "; ".join(parts)


def recorded_defaults_w(points: list[Point]) -> list[float]:
    """The default limits the points' probes recorded (measured_default_w), each once, lowest first."""
    return sorted({w for p in points if (w := measured_default_w(p)) is not None})


def limit_default_w(points: list[Point], hardware) -> float | None:
    """What every fraction of a study's lines is in watts of (its sweep, its table's column, its picks' shared
    LIMIT): the default its probes recorded, where they recorded one (the 1.0 row's too: its probe set no limit, so
    read none, but ran on the same GPUs), else the profile's; None where the profile has no limit to set, or the
    probes recorded several (files of two clusters merged: replay warns). One line gave 1.0 in the profile's 700 W and
    0.8 in a 1000 W default's 800 W, the limited point above the untouched one (trial75 #2). `points`: the study's."""
    if hardware is None or not hardware.cuda:
        return None
    recorded = recorded_defaults_w(points)
    if len(recorded) > 1:
        return None
    return recorded[0] if recorded else hardware.power.module_cap_w


def limit_watts_text(point: Point, default_w: float | None) -> str:
    """" (612 W)": a point's limit in watts of `default_w` (limit_default_w); empty without one."""
    return f" ({_limit(point) * default_w:.0f} W)" if default_w else ""


def limit_default_text(points: list[Point], hardware) -> str:
    """"x default, W per module on the gh200 profile": what the fractions and watts of limit_default_w(points,
    hardware) are of; empty where the profile has no limit to set."""
    if hardware is None or not hardware.cuda:
        return ""
    device, recorded = limited_device(hardware), recorded_defaults_w(points)
    if len(recorded) > 1:
        return (f"x default; no watts: the probes' devices reported {len(recorded)} default limits "
                f"({', '.join(f'{w:g} W' for w in recorded)})")
    if recorded:
        return f"x default, W per {device}: of the {recorded[0]:g} W default NVML reported on the probes' devices"
    return f"x default, W per {device} on the {hardware.name} profile"


def _labels(points: list[Point], key: str) -> str:
    """"measured", "simulated", or "estimated and measured": every label of the points' figures."""
    return " and ".join(sorted({getattr(p, key) for p in points}))


def _sources(sweep: list[Point], error: dict | None, where: str = "") -> str:
    """Every label the sweep's points carry (one point's would hide an estimated energy among measured ones),
    then `where` (the page's table has each row's), and where a simulated one's error is not known (the limits a
    calibration never measured): its changes are then marked within no error, which would read as changes beyond it."""
    time_sources, energy_sources = (_labels(sweep, key) for key in ("source", "energy_source"))
    unknown = [q.trial for q in sweep if extrapolated(error, q)]  # (a profile with no error at all says so above)
    return f"{time_sources} time, {energy_sources} energy{where}" + (
        f"; +- ?%: the simulator's error was not measured at {outside_words(error, unknown)}" if unknown else "")


def limit_row_id(trial: int) -> str:
    """The id of a sweep point's row in the power-limit table: both panels' points link there (svg.chart_point)."""
    return f"limit-row-{trial}"


def _panel(xs: list[float], ys: list[float], tips: list[str], trials: list[int], y_label: str, x_label: str,
           width_px=360, height_px=240) -> str:
    """One panel of the sweep: each point a link to its table row, its text under the plot while it is focused."""
    strip_px = detail_strip_px(tips, width_px)
    frame = Frame(width_px, height_px + strip_px, left=64, right=16, top=16, bottom=48 + strip_px,
                  x_ticks=nice_ticks(min(xs), max(xs)), y_ticks=nice_ticks(min(ys) * 0.95, max(ys) * 1.05))
    px, py = frame.px, frame.py
    out = chart_start(frame, "power-limit", f"{y_label} against {x_label}", points=True) + axes(frame, x_label, y_label)
    out.append('<polyline class="front-line" points="' + " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys)) + '"/>')
    out += hit_areas([(px(x), py(y), f"#{limit_row_id(trial)}") for x, y, trial in zip(xs, ys, trials)])
    for x, y, tip, trial in zip(xs, ys, tips, trials):
        shape = f'<circle class="sweep-point" cx="{px(x):.1f}" cy="{py(y):.1f}" r="4.5"><title>{escape(tip)}</title></circle>'
        out += [chart_point(shape, tip, f"#{limit_row_id(trial)}"), point_detail(tip, height_px + 12, width_px)]
    out.append("</svg>")
    return "\n".join(out)


def power_limit_section(view, document: dict, run_dir) -> str:
    """report.html: energy and time against the power limit for the fastest pick's configuration (SWEEP_TITLE)."""
    sweep = power_limit_sweep(view)
    if len(sweep) < 2:
        return ""
    limits = [_limit(p) for p in sweep]
    t_unit, t_div = time_unit([p.time_s for p in sweep])
    e_unit, e_div = front_energy_unit(view.front)  # the report's one energy unit (trial57 #4)
    # Each point's figures (its energy in the report's unit, "<0.001" far below it: never a column of zeros), with
    # their labels, as the time-vs-energy plot's hover and axes have them (a screenshot loses the table beside it).
    hardware = _hardware(view)
    default_w = limit_default_w(view.points, hardware)
    tips = [f"trial {p.trial}: power limit {power_limit_fraction_text(limit)}{limit_watts_text(p, default_w)}, {time_text(p.time_s)} ({p.source}), "
            f"{report_energy_text(p.energy_kj, (e_unit, e_div))} ({p.energy_source})" for p, limit in zip(sweep, limits)]
    x_label = "power limit (fraction of the default)"
    # Energy is drawn at the limits that have it (a time-only study's may be unavailable; the table says so).
    have = [i for i, p in enumerate(sweep) if p.energy_kj is not None]
    time_label, energy_label = (f"{what} to solution ({unit}{'' if labels == 'measured' else ', ' + labels})"
                                for what, unit, labels in (("time", t_unit, _labels(sweep, "source")),
                                                           ("energy", e_unit, _labels([sweep[i] for i in have], "energy_source"))))
    charts = _panel([limits[i] for i in have], [sweep[i].energy_kj / e_div for i in have], [tips[i] for i in have],
                    [sweep[i].trial for i in have], energy_label, x_label) if have else ""
    charts += _panel(limits, [p.time_s / t_div for p in sweep], tips, [p.trial for p in sweep], time_label, x_label)
    base = next((p for p in sweep if _limit(p) == UNTOUCHED_DEVICE_SETTINGS["power_limit"]), None)
    error = simulator_error(view)
    rows = []
    for p, limit in zip(sweep, limits):
        change = savings(p, base) if base is not None else {"energy_saved_pct": None, "time_change_pct": None}
        noise, stated = savings_noise(p, base), savings_error(p, base, error)
        rows.append([esc(power_limit_fraction_text(limit) + limit_watts_text(p, default_w)), esc(p.trial), esc(figure(p.time_s, t_div) + point_bar(error, p, "time_s")),
                     esc(energy_figure(p.energy_kj, e_div) + point_bar(error, p, "energy_kj")),
                     esc(labelled_change_text(change, "energy_saved_pct", noise, "energy", stated,
                                              missing_change("energy_saved_pct", p, base))),
                     esc(labelled_change_text(change, "time_change_pct", noise, "time", stated)),
                     esc(p.source if p.energy_source == p.source else f"{p.source} time, {p.energy_source} energy")])
    # In the words every configuration is said in (trial59 #13: "zero_stage 3, ..." here alone), less the limit it sweeps.
    what = knobs_sentence({k: v for k, v in sweep[0].params.items() if k != "power_limit"})
    sources = _sources(sweep, error, " (each row's labels in the source column)")  # not its error: that is in its cells
    return (
        f'<section id="power-limit"><h2>{esc(SWEEP_TITLE[0].upper() + SWEEP_TITLE[1:])}</h2>\n'
        f"<p>The fastest pick's configuration ({esc(what)}) at every evaluated power limit "
        f"({esc('; '.join(filter(None, (limit_default_text(view.points, hardware), sources))))}). Energy and time change are "
        "against the same configuration at its default limit (1.0), n/a where that was not evaluated. Hover a point, "
        "or reach it with Tab, for its figures (shown under its plot); click or tap it for its row below.</p>\n"
        f'<div class="importance-row">{charts}</div>\n'
        + table([power_limit_column_title(hardware, view.points), "trial", f"time {t_unit}", energy_title([p.energy_kj for p in sweep], e_unit), "energy change", "time change", "source"], rows,
                "power-limit", [limit_row_id(p.trial) for p in sweep])
        + "</section>"
    )
