"""Small inline-SVG charts for report.html: a scatter with a front line, and a stacked bar; the axes
every chart with a plot area draws (`Frame`, `chart_start`, `axes`: here once, for the power charts too).

Our own few lines instead of a plotting library: the page must open offline as one file, and the
tuner must not pull matplotlib (or a browser-side script) in for two charts. Every text is escaped;
colours come from CSS classes the page defines, so the charts carry no style of their own.

A point or part's text was a <title>, shown on mouse hover alone: a keyboard never reached it and a touch
screen has no hover (a newcomer's trial). Each is now a link (`chart_point`) to its row in the table of the same
figures beside the chart, named by the same text for a screen reader, and the chart draws the focused or
hovered one's text in a strip of its own (`point_detail`, shown by the page's CSS): still no script.

Axes are linear, except a scatter axis whose values are all positive and span more than `LOG_SPAN`
(10x): that one is logarithmic (`axis_ticks`), its label says "(log scale)". A node-range study's
times span 50-200x (a 4-node probe's 30 min beside a 256-node pick's 20 s); on a linear axis every
front point and pick sat in the first pixel column, labels on top of each other, and only the slow
baseline could be read. The power charts keep linear axes (they build their ticks with `nice_ticks`):
the power timeline runs from 0 s and 0 W (no logarithm), and the power-limit panels span one card's
limits (under 4x) with energies and times a few percent apart, read as differences.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from autotune.report.units import share_text


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    css_class: str  # how the page draws it: "feasible", "front", "infeasible", "baseline"
    tooltip: str  # shown on hover (SVG <title>), on focus (`point_detail`), and the link's name (`chart_point`)
    label: str = ""  # drawn beside the marker (pick names)
    href: str | None = None  # "#id" of the row in the page that holds the same figures as text


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 x 10^k)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        hi = lo + (abs(lo) * 0.1 or 1.0)
    raw_step = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw_step))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw_step)
    first = math.floor(lo / step) * step
    ticks, value = [], first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < hi:
        ticks.append(round(value, 12))
    return ticks


LOG_SPAN = 10.0  # an axis whose positive values span more than this factor is drawn logarithmic


def log_ticks(lo: float, hi: float, max_count: int = 10) -> list[float]:
    """Round tick values covering [lo, hi] (0 < lo < hi) for a logarithmic axis: 1, 2 and 5 x 10^k, or
    only the decades where those would be more than `max_count` (over about three decades)."""
    low, high = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1  # a decade spare: float log10
    for mantissas in ((1, 2, 5), (1,)):
        # From text, so a tick is exactly 0.2, never 0.2 plus a rounding error (its label prints as given).
        values = [float(f"{m}e{k}") for k in range(low, high + 1) for m in mantissas]
        first = max(v for v in values if v <= lo * (1 + 1e-9))
        last = min(v for v in values if v >= hi * (1 - 1e-9))
        ticks = [v for v in values if first <= v <= last]
        if len(ticks) <= max_count:
            break
    return ticks


def axis_ticks(lo: float, hi: float) -> tuple[list[float], bool]:
    """Ticks for values in [lo, hi], and whether the axis is logarithmic: so when every value is positive
    and they span more than `LOG_SPAN`, where a linear axis would crowd the small ones into its first pixels."""
    if math.isfinite(lo) and math.isfinite(hi) and lo > 0 and hi > LOG_SPAN * lo:
        return log_ticks(lo, hi), True
    return nice_ticks(lo, hi), False


def _fraction(value: float, ticks: list[float], log: bool) -> float:
    """Where a value lies from the first tick (0) to the last (1), on a linear or a logarithmic axis."""
    a, b = ticks[0], ticks[-1]
    if log:  # a value not above 0 (never one `axis_ticks` made this axis for) is drawn at the first tick
        value, a, b = math.log10(value) if value > 0 else math.log10(a), math.log10(a), math.log10(b)
    return (value - a) / ((b - a) or 1.0)


@dataclass(frozen=True)
class Frame:
    """A chart's size, the margins around its plot area (room for ticks, labels, a legend), and the
    ticks whose range the plot area spans: where a data value is drawn. An axis with `x_log` or
    `y_log` places values by their logarithm (its ticks from `axis_ticks`, all positive)."""

    width_px: int
    height_px: int
    left: int
    right: int
    top: int
    bottom: int
    x_ticks: list[float]
    y_ticks: list[float]
    x_log: bool = False
    y_log: bool = False

    @property
    def plot_w(self) -> int:
        return self.width_px - self.left - self.right

    @property
    def plot_h(self) -> int:
        return self.height_px - self.top - self.bottom

    def px(self, x: float) -> float:
        return self.left + _fraction(x, self.x_ticks, self.x_log) * self.plot_w

    def py(self, y: float) -> float:
        return self.top + self.plot_h - _fraction(y, self.y_ticks, self.y_log) * self.plot_h


def svg_start(css_class: str, title: str, width_px: int, height_px: int, points: bool, described_by: str = "",
              name: str = "") -> list[str]:
    """The <svg> element opened (class `chart <css_class>`), named by its title (read out, and shown on hover)
    or by `name` where that says more, described by the element of id `described_by` (a legend). A chart with
    `points` (links a keyboard reaches) is a group: an image's children are presentational, so a screen reader
    would skip the very points it can focus."""
    role = "group" if points else "img"
    described = f' aria-describedby="{escape(described_by)}"' if described_by else ""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" role="{role}" aria-label="{escape(name or title)}"{described} '
        f'viewBox="0 0 {width_px} {height_px}" width="{width_px}" height="{height_px}">',
        f"<title>{escape(title)}</title>",
    ]


def chart_start(frame: Frame, css_class: str, title: str, points: bool = False, described_by: str = "") -> list[str]:
    """`svg_start` at the frame's size, and the plot area's background; the caller closes it with "</svg>"."""
    return svg_start(css_class, title, frame.width_px, frame.height_px, points, described_by) + [
        f'<rect class="plot-area" x="{frame.left}" y="{frame.top}" width="{frame.plot_w}" height="{frame.plot_h}"/>',
    ]


def chart_point(shape: str, text: str, href: str | None) -> str:
    """A chart's point or part (`shape`, its <title> inside for mouse hover) that a keyboard reaches with Tab
    and a finger selects: a link to `href`, its row in the table of the same figures, named by `text` as
    its hover is; with no row to go to, a focusable group of the same name."""
    if href:
        return f'<a class="point" href="{escape(href)}" aria-label="{escape(text)}">{shape}</a>'
    return f'<g class="point" tabindex="0" role="img" aria-label="{escape(text)}">{shape}</g>'


HIT_RADIUS_PX = 11


def hit_areas(centres: list[tuple[float, float, str | None]]) -> list[str]:
    """Unpainted discs around small markers, each a link to its point's row: a finger hits a 4.5 px point drawn
    at half size on a phone only by luck. Drawn under every marker, so a disc never takes a neighbour's place;
    out of the Tab order and hidden from a screen reader, which reach the point itself."""
    discs = [f'<a href="{escape(href)}" tabindex="-1"><circle class="hit" cx="{cx:.1f}" cy="{cy:.1f}" r="{HIT_RADIUS_PX}"/></a>'
             for cx, cy, href in centres if href]
    return ['<g class="hit-areas" aria-hidden="true">', *discs, "</g>"] if discs else []


DETAIL_LINE_PX = 15
_DETAIL_CHAR_PX = 6.6  # a 12 px sans-serif character, on average: lines wrap before the chart's edge


def detail_lines(text: str, width_px: int) -> list[str]:
    """A point's text in lines that fit a chart `width_px` wide (its strip's 8 px margins left)."""
    return textwrap.wrap(text, max(20, int((width_px - 16) / _DETAIL_CHAR_PX))) or [""]


def point_detail(text: str, y: float, width_px: int) -> str:
    """The text of the `chart_point` drawn just before, in the chart's strip from `y` down: hidden until that point
    is focused (Tab, a tap) or hovered, by the page's CSS (`.point:focus + .point-detail`). Hidden from a
    screen reader, which reads the point's own name."""
    spans = "".join(f'<tspan x="8" dy="{0 if i == 0 else DETAIL_LINE_PX}">{escape(line)}</tspan>'
                    for i, line in enumerate(detail_lines(text, width_px)))
    return f'<text class="point-detail" aria-hidden="true" x="8" y="{y:.1f}">{spans}</text>'


def detail_strip_px(texts: list[str], width_px: int) -> int:
    """The height of the strip that holds the longest of these texts (`point_detail`)."""
    return max((len(detail_lines(t, width_px)) for t in texts), default=0) * DETAIL_LINE_PX + 8


def axes(frame: Frame, x_label: str, y_label: str, x_grid: bool = False) -> list[str]:
    """Grid lines at the y ticks (and at the x ticks with `x_grid`), the tick values, and both axis labels
    (a logarithmic axis's saying so: a reader must not take its even steps for even differences)."""
    x_label += " (log scale)" if frame.x_log else ""
    y_label += " (log scale)" if frame.y_log else ""
    left, top, right, bottom = frame.left, frame.top, frame.left + frame.plot_w, frame.top + frame.plot_h
    # Hidden from a screen reader, as the rest of a chart's drawing: the chart's name says what is plotted
    # against what, each point's name its own figures with their units and labels.
    out = ['<g class="axes" aria-hidden="true">']
    for t in frame.x_ticks:
        x = f"{frame.px(t):.1f}"
        if x_grid:
            out.append(f'<line class="grid" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{x}" y="{bottom + 16}" text-anchor="middle">{t:.6g}</text>')
    for t in frame.y_ticks:
        y = frame.py(t)
        out.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{t:.6g}</text>')
    middle = f"{top + frame.plot_h / 2:.1f}"
    out.append(f'<text class="axis-label" x="{left + frame.plot_w / 2:.1f}" y="{bottom + 36}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text class="axis-label" x="16" y="{middle}" text-anchor="middle" transform="rotate(-90 16 {middle})">{escape(y_label)}</text>')
    return out + ["</g>"]


def scatter_svg(
    markers: list[Marker],
    front_xy: list[tuple[float, float]],
    x_label: str,
    y_label: str,
    title: str,
    width_px: int = 760,
    height_px: int = 460,
    log_allowed: tuple[bool, bool] = (True, True),
    described_by: str = "",
) -> str:
    """A scatter of markers, the front as a polyline (in the order given), labelled axes. Each axis
    (x, y) where `log_allowed` says so is logarithmic when its values span more than `LOG_SPAN`."""
    xs = [m.x for m in markers] or [0.0, 1.0]
    ys = [m.y for m in markers] or [0.0, 1.0]
    (x_ticks, x_log), (y_ticks, y_log) = (
        axis_ticks(min(v), max(v)) if allowed else (nice_ticks(min(v), max(v)), False)
        for v, allowed in ((xs, log_allowed[0]), (ys, log_allowed[1])))
    # Room for tick labels, for pick labels to the right, and below for the focused point's text.
    strip_px = detail_strip_px([m.tooltip for m in markers], width_px)
    frame = Frame(width_px, height_px + strip_px, left=78, right=150, top=36, bottom=56 + strip_px,
                  x_ticks=x_ticks, y_ticks=y_ticks, x_log=x_log, y_log=y_log)
    px, py = frame.px, frame.py
    parts = chart_start(frame, "scatter", title, True, described_by) + axes(frame, x_label, y_label, x_grid=True)
    if len(front_xy) > 1:
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in front_xy)
        parts.append(f'<polyline class="front-line" points="{points}"/>')
    # Front and picks last, so they are drawn over the cloud of other trials.
    order = {"infeasible": 0, "feasible": 1, "baseline": 2, "front": 3}
    parts += hit_areas([(px(m.x), py(m.y), m.href) for m in markers])
    for m in sorted(markers, key=lambda m: (order.get(m.css_class, 1), bool(m.label))):
        cx, cy = px(m.x), py(m.y)
        if m.css_class == "infeasible":  # a square, so it reads apart from feasible points without colour
            tag, geometry = "rect", f'x="{cx - 5:.1f}" y="{cy - 5:.1f}" width="10" height="10"'
        else:
            tag, geometry = "circle", f'cx="{cx:.1f}" cy="{cy:.1f}" r="{6 if m.label else 4.5}"'
        shape = f'<{tag} class="marker {escape(m.css_class)}" {geometry}><title>{escape(m.tooltip)}</title></{tag}>'
        parts += [chart_point(shape, m.tooltip, m.href), point_detail(m.tooltip, height_px + 12, width_px)]
    # The point's own name says its picks: the labels are for the eye.
    parts += ['<g class="pick-labels" aria-hidden="true">', *_labels([(px(m.x), py(m.y), m.label) for m in markers if m.label]), "</g>"]
    parts.append("</svg>")
    return "\n".join(parts)


_LABEL_LINE_PX = 15


def _labels(anchors: list[tuple[float, float, str]]) -> list[str]:
    """Pick labels beside their markers, pushed down so no two overlap (picks often sit close
    together on a front); a label moved away from its marker gets a leader line back to it."""
    out, last_y = [], -1e9
    for cx, cy, text in sorted(anchors, key=lambda a: (a[1], a[0])):
        y = max(cy - 7, last_y + _LABEL_LINE_PX)
        last_y = y
        if y - (cy - 7) > 1:
            out.append(f'<line class="leader" x1="{cx:.1f}" y1="{cy:.1f}" x2="{cx + 9:.1f}" y2="{y - 4:.1f}"/>')
        out.append(f'<text class="pick-label" x="{cx + 9:.1f}" y="{y:.1f}">{escape(text)}</text>')
    return out


def stacked_bar_svg(
    parts: list[tuple[str, float]], title: str, value_text: Callable[[float], str], width_px: int = 560,
    height_px: int = 34, css_classes: list[str] | None = None, row_ids: list[str] | None = None,
) -> str:
    """One horizontal bar split into named shares (energy by component in kJ; time by phase in seconds),
    each part's hover text its `value_text`: the report's one energy unit for energies (units.report_energy_text;
    a unit per part read "GPUs: 1.51 kWh" beside "CPU: 615 kJ" in one chart, trial57 #4), never "0". Classes
    `part-<index>` unless `css_classes` names one per part. Each part is a `chart_point`, a link to its row of
    the table beside the bar where `row_ids` names one per part."""
    total = sum(v for _, v in parts if v > 0)
    shares = [f"{name}: {value_text(value)} ({share_text(value / total)})" for name, value in parts if total > 0 and value > 0]
    strip_px = detail_strip_px(shares, width_px)
    out = svg_start("bar", title, width_px, height_px + strip_px, points=True)
    x = 0.0
    for index, (name, value) in enumerate(parts):
        if total <= 0 or value <= 0:
            continue
        w = value / total * width_px
        share = f"{name}: {value_text(value)} ({share_text(value / total)})"
        css = css_classes[index] if css_classes else f"part-{index}"
        shape = (f'<rect class="{escape(css)}" x="{x:.1f}" y="0" width="{w:.1f}" height="{height_px}">'
                 f"<title>{escape(share)}</title></rect>")
        out += [chart_point(shape, share, f"#{row_ids[index]}" if row_ids else None), point_detail(share, height_px + 14, width_px)]
        if w > 70:  # label only where it fits; the table beside the bar has every figure
            out.append(f'<text class="bar-label" aria-hidden="true" x="{x + 6:.1f}" y="{height_px / 2 + 4:.1f}">{escape(name)}</text>')
        x += w
    out.append("</svg>")
    return "\n".join(out)


def share_bars_svg(shares: dict[str, float], title: str, width_px: int = 460, bar_px: int = 18) -> str:
    """One horizontal bar per name, as long as its share of 1, largest first (knob importance)."""
    label_px, gap_px = 190, 6  # room for the longest knob name, activation_checkpointing
    height_px = len(shares) * (bar_px + gap_px) + gap_px
    scale = width_px - label_px - 50
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])
    # An image to a screen reader (its bars read nothing): so its name says every share, as the hover does.
    said = "; ".join(f"{name}: {100 * share:.1f}%" for name, share in ranked)
    out = svg_start("shares", title, width_px, height_px, points=False, name=f"{title}: {said}")
    for i, (name, share) in enumerate(ranked):
        y = gap_px + i * (bar_px + gap_px)
        w = max(0.0, min(1.0, share)) * scale
        out.append(f'<text x="{label_px - 6}" y="{y + bar_px - 5}" text-anchor="end">{escape(name)}</text>')
        out.append(
            f'<rect class="share-bar" x="{label_px}" y="{y}" width="{w:.1f}" height="{bar_px}">'
            f"<title>{escape(f'{name}: {100 * share:.1f}%')}</title></rect>"
        )
        out.append(f'<text x="{label_px + w + 4:.1f}" y="{y + bar_px - 5}">{escape(share_text(share))}</text>')  # never "0%"
    out.append("</svg>")
    return "\n".join(out)
