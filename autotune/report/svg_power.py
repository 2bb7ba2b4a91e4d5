"""Power over one training step as inline SVG: the sampled power as a line over phase-shaded bands
(the shape of the GH200 study's power-profile figure). Colours come from the page's CSS classes
`phase-<name>`; every text is escaped."""

from __future__ import annotations

from html import escape

from autotune.report.svg import Frame, axes, chart_start, nice_ticks
from autotune.report.timeline import PHASE_LABELS, phase_bands


def phase_css(phase: str | None) -> str:
    return f"phase-{phase or 'none'}"


def power_timeline_svg(samples: list[tuple[float, float, str | None]], title: str,
                       width_px: int = 760, height_px: int = 260) -> str:
    """Power (W) against seconds, phases shaded behind the line, a legend of the phases drawn."""
    times = [t for t, _, _ in samples]
    powers = [p for _, p, _ in samples]
    # From 0 W: the idle floor is part of the story. Room below for the axis label and the phase legend.
    frame = Frame(width_px, height_px, left=70, right=20, top=20, bottom=64,
                  x_ticks=nice_ticks(0.0, max(times) or 1.0), y_ticks=nice_ticks(0.0, max(powers) * 1.05 or 1.0))
    px, py, top, plot_h = frame.px, frame.py, frame.top, frame.plot_h
    out = chart_start(frame, "power", title)
    for start, end, phase in phase_bands(samples):
        label = f"{PHASE_LABELS.get(phase, phase)}: {start:.2f}-{end:.2f} s"
        out.append(
            f'<rect class="band {escape(phase_css(phase))}" x="{px(start):.1f}" y="{top}" '
            f'width="{px(end) - px(start):.1f}" height="{plot_h}"><title>{escape(label)}</title></rect>'
        )
    out += axes(frame, "time in the step (s)", "power (W)")  # over the bands, under the line
    line = " ".join(f"{px(t):.1f},{py(p):.1f}" for t, p in zip(times, powers))
    out.append(f'<polyline class="power-line" points="{line}"/>')
    x = float(frame.left)
    for phase in dict.fromkeys(p for _, _, p in samples):  # legend, in order of first appearance
        label = PHASE_LABELS.get(phase, str(phase))
        out.append(f'<rect class="band {escape(phase_css(phase))}" x="{x:.1f}" y="{height_px - 14}" width="10" height="10"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{height_px - 5}">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    out.append("</svg>")
    return "\n".join(out)
