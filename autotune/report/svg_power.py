"""Power over one training step as inline SVG: the sampled power as a line over phase-shaded bands
(the shape of the GH200 study's power-profile figure). Colours come from the page's CSS classes
`phase-<name>`; every text is escaped."""

from __future__ import annotations

from html import escape

from autotune.report.svg import Frame, axes, chart_point, chart_start, detail_strip_px, nice_ticks, point_detail
from autotune.report.device_words import GPU_WORDS, DeviceWords
from autotune.report.timeline import phase_bands, phase_label
from autotune.report.units import figure


def phase_css(phase: str | None) -> str:
    return f"phase-{phase or 'none'}"


def power_timeline_svg(samples: list[tuple[float, float, str | None]], title: str, words: DeviceWords = GPU_WORDS,
                       width_px: int = 760, height_px: int = 260, provenance: str = "measured",
                       phase_rows: dict[str | None, str] | None = None) -> str:
    """Power (W) against seconds, phases shaded behind the line, a legend of the phases drawn; `words`
    name the device the phases ran on; the y axis names a `provenance` other than measured (a screenshot
    of an estimated timeline loses the caption that says so). Each band is a `chart_point`: a link to its
    phase's row of the table beside the chart where `phase_rows` has one, its text under the legend on focus."""
    times = [t for t, _, _ in samples]
    powers = [p for _, p, _ in samples]
    # Significant figures, not decimals: a tiny model's phase lasts milliseconds, never "0.00-0.00 s".
    bands = [(start, end, phase, f"{phase_label(phase, words)}: {figure(start)}-{figure(end)} s")
             for start, end, phase in phase_bands(samples)]
    strip_px = detail_strip_px([label for *_, label in bands], width_px)
    # From 0 W: the idle floor is part of the story. Room below for the axis label, the phase legend, a band's text.
    frame = Frame(width_px, height_px + strip_px, left=70, right=20, top=20, bottom=64 + strip_px,
                  x_ticks=nice_ticks(0.0, max(times) or 1.0), y_ticks=nice_ticks(0.0, max(powers) * 1.05 or 1.0))
    px, py, top, plot_h = frame.px, frame.py, frame.top, frame.plot_h
    out = chart_start(frame, "power", title, points=True)
    for start, end, phase, label in bands:
        shape = (f'<rect class="band {escape(phase_css(phase))}" x="{px(start):.1f}" y="{top}" '
                 f'width="{px(end) - px(start):.1f}" height="{plot_h}"><title>{escape(label)}</title></rect>')
        row = (phase_rows or {}).get(phase)
        out += [chart_point(shape, label, f"#{row}" if row else None), point_detail(label, height_px + 14, width_px)]
    out += axes(frame, "time in the step (s)", "power (W)" if provenance == "measured" else f"power (W, {provenance})")  # over the bands, under the line
    line = " ".join(f"{px(t):.1f},{py(p):.1f}" for t, p in zip(times, powers))
    out.append(f'<polyline class="power-line" points="{line}"/>')
    out.append('<g class="legend" aria-hidden="true">')  # each band's name says its phase
    x = float(frame.left)
    for phase in dict.fromkeys(p for _, _, p in samples):  # legend, in order of first appearance
        label = phase_label(phase, words)
        out.append(f'<rect class="band {escape(phase_css(phase))}" x="{x:.1f}" y="{height_px - 14}" width="10" height="10"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{height_px - 5}">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    out += ["</g>", "</svg>"]
    return "\n".join(out)
