"""Power over one training step as inline SVG: the sampled power as a line over phase-shaded bands
(the shape of the GH200 study's power-profile figure). Colours come from the page's CSS classes
`phase-<name>`; every text is escaped."""

from __future__ import annotations

from html import escape

from autotune.report.svg import nice_ticks
from autotune.report.timeline import PHASE_LABELS, phase_bands


def phase_css(phase: str | None) -> str:
    return f"phase-{phase or 'none'}"


def power_timeline_svg(samples: list[tuple[float, float, str | None]], title: str,
                       width_px: int = 760, height_px: int = 260) -> str:
    """Power (W) against seconds, phases shaded behind the line, a legend of the phases drawn."""
    left, right, top, bottom = 70, 20, 20, 64
    plot_w, plot_h = width_px - left - right, height_px - top - bottom
    times = [t for t, _, _ in samples]
    powers = [p for _, p, _ in samples]
    x_ticks = nice_ticks(0.0, max(times) or 1.0)
    y_ticks = nice_ticks(0.0, max(powers) * 1.05 or 1.0)  # from 0 W: the idle floor is part of the story
    x1, y1 = x_ticks[-1] or 1.0, y_ticks[-1] or 1.0

    def px(t: float) -> float:
        return left + t / x1 * plot_w

    def py(p: float) -> float:
        return top + plot_h - p / y1 * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart power" role="img" '
        f'viewBox="0 0 {width_px} {height_px}" width="{width_px}" height="{height_px}">',
        f"<title>{escape(title)}</title>",
        f'<rect class="plot-area" x="{left}" y="{top}" width="{plot_w}" height="{plot_h}"/>',
    ]
    for start, end, phase in phase_bands(samples):
        label = f"{PHASE_LABELS.get(phase, phase)}: {start:.2f}-{end:.2f} s"
        out.append(
            f'<rect class="band {escape(phase_css(phase))}" x="{px(start):.1f}" y="{top}" '
            f'width="{px(end) - px(start):.1f}" height="{plot_h}"><title>{escape(label)}</title></rect>'
        )
    for t in y_ticks:
        out.append(f'<line class="grid" x1="{left}" y1="{py(t):.1f}" x2="{left + plot_w}" y2="{py(t):.1f}"/>')
        out.append(f'<text class="tick" x="{left - 8}" y="{py(t) + 4:.1f}" text-anchor="end">{t:.6g}</text>')
    for t in x_ticks:
        out.append(f'<text class="tick" x="{px(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{t:.6g}</text>')
    line = " ".join(f"{px(t):.1f},{py(p):.1f}" for t, p in zip(times, powers))
    out.append(f'<polyline class="power-line" points="{line}"/>')
    out.append(f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{top + plot_h + 34}" text-anchor="middle">time in the step (s)</text>')
    out.append(
        f'<text class="axis-label" x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">power (W)</text>'
    )
    x = float(left)
    for phase in dict.fromkeys(p for _, _, p in samples):  # legend, in order of first appearance
        label = PHASE_LABELS.get(phase, str(phase))
        out.append(f'<rect class="band {escape(phase_css(phase))}" x="{x:.1f}" y="{height_px - 14}" width="10" height="10"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{height_px - 5}">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    out.append("</svg>")
    return "\n".join(out)
