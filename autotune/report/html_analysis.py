"""report.html sections that look behind the front: which knobs mattered, what tuning cost and when
it pays back, and the power over one step of each pick. Each says where its figures come from."""

from __future__ import annotations

from pathlib import Path

from autotune.report.device_words import GPU_WORDS, DeviceWords
from autotune.report.front import Point
from autotune.report.html_parts import esc, table
from autotune.report.html_words import swatch
from autotune.report.importance import OBJECTIVE_TITLES, held_fixed, importance_method
from autotune.report.pareto_json import source_label
from autotune.report.payback import cost_sentence, payback_sentence
from autotune.report.picks import pick_label
from autotune.report.study_points import StudyView
from autotune.report.svg import share_bars_svg, stacked_bar_svg
from autotune.report.svg_power import phase_css, power_timeline_svg
from autotune.report.timeline import PROVENANCE_WORDS, phase_label, power_profile, simulated_phases
from autotune.report.units import figure, floored_figure, front_energy_unit, phase_time_text, time_unit



def importance_section(view: StudyView, document: dict, run_dir: Path) -> str:
    importance = document.get("importance") or {}
    sources = {"time_to_solution_s": document["source"], "energy_to_solution_kj": document["energy_source"]}
    blocks = []
    for name, shares in importance.items():
        title = f"{OBJECTIVE_TITLES.get(name, name)} ({source_label(sources.get(name, ''))})"
        if isinstance(shares, str):
            body = f'<p class="note">{esc(shares)}</p>'
        else:
            body = share_bars_svg(shares, f"share of the variation of {title} each knob explains")
        blocks.append(f'<div class="importance"><h3>{esc(title)}</h3>\n{body}</div>')
    fixed = held_fixed(view)
    fixed_text = f" Held at one value over these trials, so not ranked: {', '.join(fixed)}." if fixed else ""
    return (
        '<section id="importance"><h2>Which knobs mattered</h2>\n'
        f'<div class="importance-row">{"".join(blocks)}</div>\n'
        f'<p class="explain">{esc(importance_method(len(view.points)))}. Shares describe this study\'s {len(view.points)} feasible trials, '
        f"as the sampler chose them, not the whole space.{esc(fixed_text)}</p></section>"
    )


def tuning_cost_section(view: StudyView, document: dict, run_dir: Path) -> str:
    cost = document.get("tuning_cost")
    if not cost:
        return ""
    rows = []
    unit = front_energy_unit(view.front)  # the report's one unit (trial57 #4: kWh here, kJ in its tables)
    for row in cost["payback"]:
        # The terminal's and report.md's words (trial59 #4: "kWh saved: -0.170" read backwards where they say "uses
        # 0.170 kWh more"); the terminal says no saving of the baseline against itself, nor does this.
        baseline = row["trial"] == view.baseline_trial
        rows.append([
            esc(pick_label(row["name"], view.pick_parameters)),
            esc(row["trial"]),
            esc("none: the baseline" if baseline else payback_sentence(row, unit)),
            esc(figure(row["payback_training_hours"])),  # three significant figures, as every output (trial60 #5)
        ])
    payback = (
        table(["pick", "trial", "energy against the baseline, and when tuning is repaid", "payback h"], rows, "payback")
        if rows else "<p>No pick, so no payback.</p>"
    )
    return (
        '<section id="tuning-cost"><h2>Tuning cost and payback</h2>\n'
        f'<p class="provenance">{esc(cost_sentence(cost, unit))}</p>\n{payback}\n'
        '<p class="explain">Saved per run of the workload = baseline energy - pick energy, both on the study\'s '
        "fixed workload: what compares picks. Saved per hour of this pick's training = that / pick time: the energy the "
        "pick saves on the work an hour of its training does, against the baseline doing the same work, not a drop in "
        "power per wall-clock hour (a faster pick may draw more power than the baseline); it grows with the pick's "
        "speed. Payback hours = tuning energy / the hourly saving.</p></section>"
    )


def phase_row_id(trial: int, phase: str | None) -> str:
    """The id of a phase's row in a pick's phase table: the chart's bands of that phase link there."""
    return f"phases-{trial}-{phase or 'none'}"


def _phase_table(block: dict, words: DeviceWords, trial: int) -> str:
    phases = block.get("phases") or {}
    if not phases:
        return ""
    rows = [
        # Three significant figures: a CPU probe's phases last milliseconds and take joules, never "0".
        [swatch(f"band {phase_css(name)}") + esc(phase_label(name, words)), esc(figure(p.get("time_s"))), esc(figure(p.get("energy_j"))),
         esc(figure(p.get("mean_power_w"))), esc(p.get("steps"))]
        for name, p in phases.items()
    ]
    return table(["phase (all steps of the window)", "time s", "energy J", "mean power W", "steps"], rows, "phases",
                 [phase_row_id(trial, name) for name in phases])


def power_html(point: Point, words: DeviceWords = GPU_WORDS) -> str:
    """Power over one step (measured or estimated timeline), else the simulated phase breakdown;
    `words` name the devices the phases ran on."""
    details = point.extra.get("details") or {}
    profile = power_profile(details, words)
    if profile is not None:
        what = PROVENANCE_WORDS.get(profile.provenance, profile.provenance)
        scope = f"step {profile.step}" if profile.step is not None else "the whole window (steps too short to draw one)"
        node = f"node {profile.node}" if profile.node is not None else "the node"
        title = f"power of {node} over {scope}, trial {point.trial}: {what}"
        caption = (
            f"Power of {node} over {scope}, {what}" + (f" ({profile.sensors})" if profile.sensors else "")
            + ". Phases are shaded from the trainer's phase marks, as exact as the sampling period."
        )
        tabled = details["energy"].get("phases") or {}  # a band of a phase the table has no row for links nowhere
        svg = power_timeline_svg(profile.samples, title, words, provenance=profile.provenance,
                                 phase_rows={name: phase_row_id(point.trial, name) for name in tabled})
        return (f'<figure class="power">{svg}\n<figcaption>{esc(caption)}</figcaption></figure>\n'
                f'{_phase_table(details["energy"], words, point.trial)}')
    phases = simulated_phases(details)
    if phases and point.source == "simulated":
        step_s = sum(s for _, s in phases)
        labelled = [(phase_label(name, words), s) for name, s in phases]
        bar = stacked_bar_svg(labelled, f"simulated phases of one step, trial {point.trial}", phase_time_text, width_px=760,
                              css_classes=[f"band {phase_css(name)}" for name, _ in phases],
                              row_ids=[phase_row_id(point.trial, name) for name, _ in phases])
        # Each row's swatch is the bar's colour key: the bar names only the phases wide enough to hold a name.
        # In the unit the longest phase reads best in, as the bar's: a phase far below it reads "<0.001", never e-notation.
        unit, divisor = time_unit([s for _, s in phases])
        rows = [[swatch(f"band {phase_css(name)}") + esc(label), esc(floored_figure(s, divisor)), esc(f"{100 * s / step_s:.1f}%")]
                for (name, _), (label, s) in zip(phases, labelled)]
        return (
            f'<figure class="power">{bar}\n<figcaption>Simulated by the analytic model (nothing was measured): '
            f"the phases of one {step_s:.3g} s step. No power timeline exists for a simulated trial.</figcaption></figure>\n"
            f'{table(["phase (simulated)", f"time {unit}", "share"], rows, "phases", [phase_row_id(point.trial, n) for n, _ in phases])}'
        )
    return "<p>No power timeline for this trial: its result holds no energy timeline or phase breakdown.</p>"
