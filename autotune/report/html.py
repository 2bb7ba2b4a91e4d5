"""report.html: one self-contained page (no script, no external file) that opens offline.

The page is a list of sections, each a function (view, document, run_dir) -> HTML. Later sections
(parameter importance, tuning cost and payback, power timelines) are new functions appended to
SECTIONS; nothing else changes. Every piece of text that comes from a study goes through `esc`.
"""

from __future__ import annotations

import json
from pathlib import Path

from autotune.counted import agreeing, counted
from autotune.atomic_write import write_text_atomic
from autotune.study.storage import STUDY_NAME

from autotune.report.noise import noise_line
from autotune.report.device_words import DeviceWords, view_device_words
from autotune.report.payback import baseline_missing, no_baseline_sentence
from autotune.report.pick_figures import change_texts, gpu_span_caveat, pick_configuration_text, spans_gpus
from autotune.report.unmeasured_floor import unmeasured_floor_sentence
from autotune.report.units import (
    UNAVAILABLE, energy_figure, energy_text, energy_title, estimate_header, estimate_mark, figure, floored_figure, front_energy_unit,
    per_energy_figure, report_energy_text, time_text, time_unit,
)
from autotune.report.pareto_json import nodes_header
from autotune.ds_config import deepspeed_config
from autotune.report.front import Point
from autotune.report.choosing import choosing_a_pick, pick_notes
from autotune.report.outside_calibration import error_lines
from autotune.report.html_analysis import importance_section, power_html, tuning_cost_section
from autotune.report.html_deploy import deployment_notes_html
from autotune.report.html_words import component_words, swatch
from autotune.report.timeline import PROVENANCE_WORDS, power_profile
from autotune.report.html_parts import esc, table as _table, trial_row_id
from autotune.report.inputs import inputs_sentence
from autotune.report.pareto_json import hardware_text, provenance_sentence, trial_counts, unrecorded_count, workload_sentence
from autotune.report.error_bars import figure_bar, header_bar
from autotune.report.picks import PICK_FILES, pick_config_files, pick_definitions, baseline_label, front_title, pick_label, picks_by_trial
from autotune.report.power_limit import pick_knobs_sentence, power_limit_section
from autotune.report.study_points import StudyView
from autotune.report.svg import Marker, scatter_svg, stacked_bar_svg
from autotune.candidate import knobs_sentence
from autotune.report.table import knob_columns, knob_value

# Components are drawn in this order; a measured result may name others, which follow.
COMPONENT_ORDER = ("gpu", "cpu", "memory_interconnect")



def _study_words(document: dict) -> str:
    """` (study NAME)` for a study not of the default name: several studies share one --storage database, and a
    report that does not say which is ambiguous (trial 49); "" for the default, which names nothing."""
    name = document.get("study_name")
    return f" (study {name})" if name and name != STUDY_NAME else ""


def page_heading(document: dict) -> str:
    """The page's one heading: its <h1> and its <title> (the browser tab's) say the same. Two wordings, `autotune: 32b
    on gh200` and `autotune report: 32b on 4 node(s) of gh200`, read as two headings in a row (trial57 #17)."""
    return (f"autotune report: {document['model']} on {nodes_header(document)} of {hardware_text(document)}"
            f"{_study_words(document)}")


def header_section(view: StudyView, document: dict, run_dir: Path) -> str:
    workload = document["workload"]
    counts = trial_counts(document, view)
    note = f'<p class="note">{esc(document["note"])}</p>' if document.get("note") else ""
    if "search" in document:
        from autotune.report.search import search_sentences

        lines = search_sentences({**document["search"], "predicted": document.get("predicted", [])}, document["backend"])
        note += "".join(f"<p>Search: {esc(line)}</p>" for line in lines)
    if noise_text := noise_line(document):
        note += f"<p>{esc(noise_text)}</p>"
    baseline = baseline_missing(view) if document["baseline"] is None else document["baseline"]
    inputs = f'<p class="inputs">{esc(said)}</p>\n' if (said := inputs_sentence(document.get("inputs"))) else ""
    return (
        f"<header><h1>{esc(page_heading(document))}</h1>\n"
        f'<p class="provenance provenance-{esc(document["source"] if isinstance(document["source"], str) else "mixed")}">'
        f"<strong>Where the figures come from:</strong> {esc(provenance_sentence(document))} "
        f"Backend: {esc(document['backend'])} ({esc(document.get('backend_reason', ''))}).</p>\n"
        f"<p>{esc(workload_sentence(workload, document.get('model_caveats')))} Trials: {esc(document['trials'])} ({esc(counts)}); "
        f"baseline trial: {esc(baseline)}.</p>\n{inputs}{note}</header>"
    )


def _marker_class(view: StudyView, trial: int) -> str:
    if trial in {p.trial for p in view.front}:
        return "front"
    return "baseline" if trial == view.baseline_trial else "feasible" if view.point(trial) else "infeasible"


def _marker_name(view: StudyView, trial: int) -> str:
    # The names the tables and `export --pick` use (the tables say what each means): "within 5%" and "cost (eta
    # 0.5)" on the chart matched no row of the picks table.
    labels = [PICK_FILES.get(n, n) for n in picks_by_trial(view).get(trial, [])]
    return ", ".join(labels + (["baseline"] if trial == view.baseline_trial else []))


def _legend_keys(view: StudyView, line: str) -> str:
    """The scatter's keys, each with its shape as well as its colour (a grey print or a colour-blind reader
    tells the front from the rest by fill, not by shade of blue); ends with the infeasible key, its words to follow."""
    return (f'<span class="key front"></span> {esc(front_title(view.time_only))} (filled{line}; the picks drawn larger, '
            'labelled) <span class="key feasible"></span> other feasible (hollow) <span class="key baseline"></span> '
            'baseline (labelled) <span class="key infeasible"></span> (square) ')


def _point_head(view: StudyView, row: dict) -> str:
    """How a point's text begins: `trial 3 (ok; knee, cost-weighted)`. Its picks as the labels beside it name
    them: a screen reader hears the point's text and not the labels, and a hover on a point drawn under another's
    label said which trial it is, not that it is the knee."""
    trial = row["trial"]
    picked = f"; {name}" if (name := _marker_name(view, trial)) else ""
    return f"trial {trial} ({row['status']}{'' if view.point(trial) else ', infeasible'}{picked})"


# How a reader without a mouse gets a point's text: hover was the only way (a newcomer's trial).
POINT_HELP = ("Hover a point, or reach it with Tab, for its trial, configuration and figures (shown under the plot); "
              "click or tap it for its row in All evaluated trials.")


def time_plot_section(view: StudyView, document: dict, timed: list[dict]) -> str:
    """Where no trial has an energy figure (a time-only study with no sensor and no estimate): time to solution
    of each trial against its number, so the plot shows what was ranked and says energy is unavailable."""
    t_unit, t_div = time_unit([r["time_s"] for r in timed])
    markers = [
        Marker(r["trial"], r["time_s"] / t_div, _marker_class(view, r["trial"]),
               # Its time's label too, as the time-vs-energy plot's points say theirs: one measured among simulated ones.
               f"{_point_head(view, r)}: {knobs_sentence(r['params'])}; {time_text(r['time_s'])} ({r.get('source')}), "
               f"{energy_text(None)}",
               _marker_name(view, r["trial"]), f"#{trial_row_id(r['trial'])}")
        for r in timed
    ]
    time_source = " and ".join(document["source"]) if isinstance(document["source"], list) else document["source"]
    time_label = f"time to solution ({t_unit}{'' if time_source == 'measured' else ', ' + time_source})"
    svg = scatter_svg(markers, [], "trial", time_label,
                      f"Time to solution of every evaluated trial ({time_source} time; energy {UNAVAILABLE})",
                      log_allowed=(False, True), described_by="scatter-legend")  # trial numbers are counted: never a log axis
    legend = (
        f'<p class="legend" id="scatter-legend">{_legend_keys(view, "")}infeasible or failed with a time. '
        f"Energy is {UNAVAILABLE} for every trial (no sensor saw it and nothing "
        f"estimated it), so time is plotted against the trial number. {POINT_HELP}</p>"
    )
    return f'<section id="scatter"><h2>Time to solution</h2>\n{svg}\n{legend}</section>'


def scatter_section(view: StudyView, document: dict, run_dir: Path) -> str:
    figured = [r for r in view.trials if r.get("time_s") is not None and r.get("energy_kj") is not None]
    timed = [r for r in view.trials if r.get("time_s") is not None and r.get("energy_kj") is None]
    if not figured and timed:
        return time_plot_section(view, document, timed)
    if not figured:
        return '<section id="scatter"><h2>Time vs energy</h2><p>No trial has figures to plot.</p></section>'
    t_unit, t_div = time_unit([r["time_s"] for r in figured])
    e_unit, e_div = front_energy_unit(view.front)  # the report's one unit (trial57 #4)
    markers = []
    for r in figured:
        trial = r["trial"]
        # Each point's energy in the report's unit, as the axis and the tables: a figure far below it reads "<0.001".
        tooltip = (
            f"{_point_head(view, r)}: {knobs_sentence(r['params'])}; "
            f"{time_text(r['time_s'])} ({r.get('source')}), "
            f"{report_energy_text(r['energy_kj'], (e_unit, e_div))} ({r.get('energy_source')})"
        )  # each point's own labels: a hover on one estimated point among measured ones must say so
        markers.append(Marker(r["time_s"] / t_div, r["energy_kj"] / e_div, _marker_class(view, trial), tooltip,
                              _marker_name(view, trial), f"#{trial_row_id(trial)}"))
    line = [(p.time_s / t_div, p.energy_kj / e_div) for p in view.front if p.energy_kj is not None]
    # Every label of the plotted energies: a trial without one (unavailable) is not on this plot (said below).
    energy_sources = document["energy_source"] if isinstance(document["energy_source"], list) else [document["energy_source"]]
    time_source = " and ".join(document["source"]) if isinstance(document["source"], list) else document["source"]
    energy_source = " and ".join(s for s in energy_sources if s != UNAVAILABLE) or UNAVAILABLE
    title = f"Time vs energy to solution of every evaluated trial ({time_source} time, {energy_source} energy)"
    # The axes say it too: a screenshot of the plot loses the SVG's title, and must not pass estimates off as measured.
    time_label, energy_label = (f"{what} to solution ({unit}{'' if source == 'measured' else ', ' + source})"
                                for what, unit, source in (("time", t_unit, time_source), ("energy", e_unit, energy_source)))
    svg = scatter_svg(markers, line, time_label, energy_label, str(title), described_by="scatter-legend")
    legend = (
        f'<p class="legend" id="scatter-legend">{_legend_keys(view, ", joined by the line")}infeasible or failed with figures. '
        + POINT_HELP
        + (f" {counted(len(timed), 'trial')} with a time but energy {UNAVAILABLE} (no sensor saw it and nothing estimated it) "
           f"{agreeing(len(timed), 'is', 'are')} "
           "not on this plot; the tables below list them." if timed else "")
        + "</p>"
    )
    return f'<section id="scatter"><h2>Time vs energy</h2>\n{svg}\n{legend}</section>'


def picks_section(view: StudyView, document: dict, run_dir: Path) -> str:
    if not document["picks"]:
        return f'<section id="picks"><h2>Recommended configurations</h2><p class="note">{esc(document.get("note") or "No picks.")}</p></section>'
    rows = []
    words = view_device_words(view)
    t_unit, t_div = time_unit([view.point(r["trial"]).time_s for r in document["picks"]])
    e_unit, e_div = front_energy_unit(view.front)
    error = document.get("simulator_error")
    picked = [view.point(row["trial"]) for row in document["picks"]]
    sources = [p.energy_source for p in picked]
    base = view.baseline_point()
    spans = spans_gpus(view)
    for row in document["picks"]:
        p = view.point(row["trial"])
        ties = pick_notes(view, row)
        # On a line of its own under the pick's name: in parentheses after "min-energy (least energy)" it made two
        # in a row (trial61).
        tie = f'<br><span class="note">{esc(ties[0].upper() + ties[1:])}</span>' if ties else ""
        rows.append([
            f'<a href="#trial-{p.trial}">{esc(pick_label(row["name"], view.pick_parameters))}</a>{tie}',
            esc(p.trial),
            # Its GPUs and GPU-h where the picks span GPU counts, as the terminal and report.md (trial59 #8).
            esc(pick_configuration_text(view, p, words, spans)),
            esc(figure(p.time_s, t_div) + figure_bar(error, picked, p, "time_s")),
            esc(energy_figure(p.energy_kj, e_div) + figure_bar(error, picked, p, "energy_kj") + estimate_mark(sources, p.energy_source)),
            esc(figure(p.tflops) + figure_bar(error, picked, p, "tflops")),
            esc(per_energy_figure(p.tflop_per_kj, p.energy_kj) + estimate_mark(sources, p.energy_source)),
            # "7.7% less energy", "10.0% less time", as the terminal and report.md say them (trial57 #9: "energy saved
            # +7.7%" beside "-10.0%", a plus and a minus both good); no change against itself, as in the terminal.
            *(["the baseline"] * 3 if p.trial == view.baseline_trial else
              [esc(text) for text in change_texts(view, row, p, base)]),
        ])
    headers = ["pick", "trial", "configuration", f"time {t_unit}{header_bar(error, picked, 'time_s')}",
               f"{energy_title([p.energy_kj for p in picked], e_unit)}{header_bar(error, picked, 'energy_kj')}{estimate_header(sources)}", f"TFLOP/s {words.per()}{header_bar(error, picked, 'tflops')}",
               f"TFLOP/kJ{estimate_header(sources)}",
               "energy change", "time change", "TFLOP/kJ change"]
    against = next((baseline_label(p, base) for p in picked if baseline_label(p, base)), "")
    sentence, outside = error_lines(document)  # the line before the table, as the terminal and report.md say it (trial57 #3)
    explain = (f"{esc(sentence)} " if sentence else "") + (
        f"Savings are against the baseline trial {esc(document['baseline'])} (what one would run untuned"
        f"{'; ' + esc(against) if against else ''}); "
        "n/a where the baseline is not feasible. " if document["baseline"] is not None
        else f"N{esc(no_baseline_sentence(view)[1:])}. "  # not "the baseline trial None" (trial75 #18)
    )
    floor = unmeasured_floor_sentence(document.get("unmeasured_floor"), view.settings.hardware.name)
    floor_html = f'\n<p class="note">{esc(floor[0].upper() + floor[1:])}.</p>' if floor else ""
    if caveat := gpu_span_caveat(view, words):  # what the GPU-h above are for, as the terminal says it
        floor_html = f'\n<p class="note">{esc(caveat)}</p>' + floor_html
    outside_html = f'<p class="note">{esc(outside)}</p>\n' if outside else ""
    return (f'<section id="picks"><h2>Recommended configurations</h2>\n{outside_html}{_table(headers, rows, "picks")}{floor_html}\n'
            f'<p class="explain">{explain}</p>\n{_definitions_html(view, words)}</section>')


def _definitions_html(view: StudyView, words: DeviceWords) -> str:
    """What each pick is, and how to choose among them (picks.pick_definitions, as report.md says them): a lead who
    never ran the tool must be able to weigh the knee or cost-weighted pick, and be told which to deploy."""
    params = view.pick_parameters
    items = "".join(f"<li>{esc(definition)}</li>" for definition in pick_definitions(params, view.picks, words))
    power = ""
    if "cost_weighted" in view.picks and params.max_power_per_gpu_w is not None:
        power = (f"The cost-weighted pick's max power: {params.max_power_per_gpu_w:g} W per {esc(words.one)} x the "
                 f"configuration's {esc(words.many)}.")
    # One pick (a time-only study) leaves nothing to choose between.
    choosing = f" {esc(choosing_a_pick(view))}" if len(set(view.picks)) > 1 else ""
    return (f'<div class="definitions"><p>What each pick is:</p>\n<ul>{items}</ul>\n'
            f"<p>{power}{choosing}</p></div>")


def _components_html(point: Point, words: DeviceWords, unit: tuple[str, float]) -> str:
    components = point.extra.get("energy_components_kj") or {}
    if point.energy_kj is None:
        return f"<p>Energy {UNAVAILABLE} for this trial (no sensor saw it and nothing estimated it): no breakdown by component.</p>"
    if not components:
        return "<p>No energy breakdown by component for this trial.</p>"
    names = [c for c in COMPONENT_ORDER if c in components] + sorted(set(components) - set(COMPONENT_ORDER))
    parts = [(component_words(name, words), float(components[name])) for name in names if components[name] is not None]
    total = sum(v for _, v in parts) or 1.0
    e_unit, e_div = unit  # the report's (units.front_energy_unit): one unit in the bar and its table (trial57 #4)
    # The bar labels only the parts wide enough for a name: each row's swatch is the bar's colour key.
    rows = [[swatch(f"part-{i}") + esc(name), esc(floored_figure(v, e_div)), esc(f"{100 * v / total:.1f}%")]
            for i, (name, v) in enumerate(parts)]
    row_ids = [f"components-{point.trial}-{i}" for i in range(len(parts))]  # the bar's parts link to their rows
    bar = stacked_bar_svg(parts, f"energy by component, trial {point.trial} ({point.energy_source} energy)",
                          lambda v: report_energy_text(v, unit), row_ids=row_ids)
    source = f'<p class="explain">Energy {esc(PROVENANCE_WORDS.get(point.energy_source, point.energy_source))}.</p>'
    return f'<div class="components">{bar}\n{_table(["component", f"energy {e_unit}", "share"], rows, "components", row_ids)}{source}</div>'


def _config_html(view: StudyView, names: list[str], point: Point, run_dir: Path) -> str:
    configs = run_dir / "configs"
    files = [pick_config_files(configs, name) for name in names]
    links = " ".join(f'<a href="configs/{esc(study_file)}">configs/{esc(study_file)}</a>' for study_file, _ in files)
    edited = [kept for _, kept in files if kept]
    if edited:  # the page shows what the study evaluated, never a user's edit under the study's figures
        links += (f" ({', '.join(f'<code>configs/{esc(kept)}</code>' for kept in edited)} "
                  f"{'differs' if len(edited) == 1 else 'differ'} from what autotune wrote there: edited, and kept as "
                  "it is; not shown)")
    path = configs / files[0][0]
    candidate = view.settings.candidate(point.params)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
    else:  # not exported (an older run): show the same config the export would write, minus its notes
        text = json.dumps(deepspeed_config(candidate), indent=2)
        links += " (not written yet: run <code>autotune report RUN_DIR --html</code>)"
    notes = deployment_notes_html(text, candidate, view, point.trial)
    return f"{notes}<p>DeepSpeed config: {links}</p>\n<pre>{esc(text)}</pre>"


def _step_heading(point: Point, words: DeviceWords) -> str:
    """What the chart under it shows: a simulated trial has no power timeline, only the time of each phase."""
    has_timeline = power_profile(point.extra.get("details") or {}, words) is not None
    return "Power over one step" if has_timeline else "Time by phase in one step"


def pick_details_section(view: StudyView, document: dict, run_dir: Path) -> str:
    blocks = []
    words = view_device_words(view)
    for trial, names in picks_by_trial(view).items():
        point = view.point(trial)
        title = ", ".join(pick_label(n, view.pick_parameters) for n in names)
        blocks.append(
            f'<article class="pick" id="trial-{trial}"><h3>{esc(title)}: trial {trial}</h3>\n'
            f"<p>{esc(pick_knobs_sentence(view, point))}; {esc(counted(point.gpus, words.one, words.many))}.</p>\n"
            f"<h4>Energy by component</h4>\n{_components_html(point, words, front_energy_unit(view.front))}\n"
            f"<h4>{_step_heading(point, words)}</h4>\n{power_html(point, words)}\n"
            f"{_config_html(view, names, point, run_dir)}</article>"
        )
    if not blocks:
        return ""
    return '<section id="pick-details"><h2>Each pick</h2>\n' + "\n".join(blocks) + "</section>"


def _trial_row(row: dict, feasible: set[int], t_div: float, e_div: float, sources: list[str],
               columns: tuple[tuple[str, str], ...]) -> list[str]:
    status = row["status"] if row["status"] != "ok" or row["trial"] in feasible else "ok (infeasible)"
    energy = energy_figure(row.get("energy_kj"), e_div) + estimate_mark(sources, row.get("energy_source") or "")
    # A trial that ran shows its time, and its energy as "unavailable" where it has none (never a blank, read as 0);
    # one with no figures at all (OOM, a crash) leaves them blank beside its reason.
    figures_or_reason = (
        [esc(figure(row["time_s"], t_div)), esc(energy), esc(figure(row.get("tflops")))]
        if row.get("time_s") is not None
        else ["", "", ""]
    )
    return [
        esc(row["trial"]),
        f'<span class="status status-{esc(row["status"])}">{esc(status)}</span>',
        *(esc(knob_value(row["params"], knob)) for knob, _ in columns),
        *figures_or_reason,
        esc(_reason_with_retry(row)),
    ]


def _reason_with_retry(row: dict) -> str:
    """A timeout or set-up failure a resume probed again names its retry, as "why trials failed" does (trial77 #7);
    an interrupted trial's reason names it already."""
    reason = row.get("reason") or ""
    if row.get("probed_again_as") is None or "probed again" in reason:
        return reason
    return f"{reason}; probed again as trial {row['probed_again_as']}"


def trials_section(view: StudyView, document: dict, run_dir: Path) -> str:
    feasible = {p.trial for p in view.points}
    t_unit, t_div = time_unit([r["time_s"] for r in view.trials])
    e_unit, e_div = front_energy_unit(view.front)
    # Every row that shows an energy cell: an "unavailable" one keeps the header from calling the column estimated.
    sources = [r.get("energy_source") or "" for r in view.trials if r.get("time_s") is not None]
    columns = knob_columns((r["params"] for r in view.trials), view.settings.hardware, view.points)
    headers = ["trial", "status", *(title for _, title in columns), f"time {t_unit}", f"{energy_title([r.get('energy_kj') for r in view.trials], e_unit)}{estimate_header(sources)}",
               f"TFLOP/s {view_device_words(view).per()}", "reason"]
    evaluated = [r for r in view.trials if r["status"] != "invalid"]
    # Candidates refused before running (rules, memory estimate) are many and teach little: fold them.
    refused = [r for r in view.trials if r["status"] == "invalid"]
    html = '<section id="trials"><h2>All evaluated trials</h2>\n'
    html += _table(headers, [_trial_row(r, feasible, t_div, e_div, sources, columns) for r in evaluated], "trials",
                   [trial_row_id(r["trial"]) for r in evaluated]) if evaluated else "<p>None.</p>"
    if refused:
        unrecorded = unrecorded_count(view)
        why = "a rule or the memory estimate" + (f"; {unrecorded} of them no record in the replayed file" if unrecorded else "")
        html += (
            f"\n<details><summary>{counted(len(refused), 'candidate')} refused before running (invalid: {esc(why)})</summary>\n"
            f"{_table(headers, [_trial_row(r, feasible, t_div, e_div, sources, columns) for r in refused], 'trials', [trial_row_id(r['trial']) for r in refused])}</details>"
        )
    return html + "</section>"


SECTIONS = [
    header_section, scatter_section, picks_section, power_limit_section, importance_section, tuning_cost_section,
    pick_details_section, trials_section,
]

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; padding: 0 16px; max-width: 1200px; color: #222; line-height: 1.4; }
/* A phone (390 px) shows the whole page: charts scale to the column, wide tables scroll in their own box. */
svg.chart { max-width: 100%; height: auto; } .table-scroll { overflow-x: auto; max-width: 100%; }
.importance-row > * { min-width: 0; max-width: 100%; } code { overflow-wrap: anywhere; }
@media (max-width: 600px) { body { margin: 12px auto; padding: 0 10px; } table { font-size: 0.8em; } }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 1.6em; }
.provenance { background: #eef4ff; border-left: 4px solid #3b6fd8; padding: 8px 12px; }
.provenance-simulated { background: #fff6e5; border-left-color: #d89a3b; }
.note { background: #fff3cd; border-left: 4px solid #e0a800; padding: 8px 12px; font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
thead th { background: #f3f3f3; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 8px; max-height: 420px; overflow: auto; font-size: 0.85em;
      white-space: pre-wrap; overflow-wrap: anywhere; }  /* a long note line wraps: no sideways scrolling */
.deploy { border-left: 4px solid #d89a3b; background: #fff6e5; padding: 4px 12px; margin: 8px 0; }
.deploy h4 { margin: 4px 0; } .deploy ul { margin: 4px 0; padding-left: 20px; }
.status-ok { color: #1a7f37; } .status-oom, .status-failed, .status-timeout { color: #c62828; font-weight: 600; }
.status-invalid { color: #777; }
.chart .plot-area { fill: #fff; stroke: #999; } .chart .grid { stroke: #eee; }
.chart text { font-size: 12px; fill: #333; } .chart .axis-label { font-size: 13px; }
.front-line { fill: none; stroke: #3b6fd8; stroke-width: 2; }
/* Front and other points differ by more than colour: the front filled, the others hollow rings. */
.marker.front, .sweep-point { fill: #3b6fd8; } .marker.feasible { fill: #fff; stroke: #5b7fc8; stroke-width: 1.5; }
.marker.baseline { fill: #ff9f1c; } .marker.infeasible { fill: none; stroke: #c62828; stroke-width: 1.5; }
/* A point reached with Tab or a tap (a link to its table row) is ringed, and its text shows under the plot. */
.chart .point:focus > * { stroke: #111; stroke-width: 3; } .chart .hit { fill: transparent; }  /* a finger's target */
.chart .point-detail { display: none; } .chart .point:focus + .point-detail, .chart .point:hover + .point-detail { display: inline; }
tr[id] { scroll-margin-top: 3em; } tr:target > td { background: #fff3b0; }
.chart .pick-labels { pointer-events: none; }  /* a label over a neighbour's point never takes its hover or tap */
.pick-label { font-weight: 600; } .leader { stroke: #888; stroke-width: 0.8; }
.legend .key { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-left: 10px; }
.legend .key.front { background: #3b6fd8; } .legend .key.feasible { background: #fff; border: 1.5px solid #5b7fc8; }
.legend .key.baseline { background: #ff9f1c; } .legend .key.infeasible { border: 1.5px solid #c62828; border-radius: 0; }
.part-0 { fill: #3b6fd8; } .part-1 { fill: #ff9f1c; } .part-2 { fill: #2a9d8f; } .part-3 { fill: #9b5de5; }
.part-4 { fill: #999; } .chart .bar-label { fill: #fff; font-weight: 600; }
.importance-row { display: flex; flex-wrap: wrap; gap: 24px; } .importance h3 { font-size: 1em; margin: 8px 0 2px; }
.share-bar { fill: #3b6fd8; } .power-line { fill: none; stroke: #222; stroke-width: 1.5; }
.band.phase-vit_fwd { fill: #cfe3ff; } .band.phase-llm_fwd { fill: #b8e0d2; } .band.phase-backward { fill: #ffd6a5; }
.band.phase-optimizer { fill: #e4c1f9; } .band.phase-none { fill: #f2f2f2; } .band.phase-compute { fill: #b8e0d2; }
.band.phase-communication { fill: #cfe3ff; } .band.phase-activation_offload { fill: #ffd6a5; }
.band.phase-gpu_optimizer { fill: #e4c1f9; } .band.phase-host_optimizer { fill: #f9c6c9; }
.band.phase-zero3_block_overhead { fill: #fde68a; } .band.phase-step_overhead { fill: #d6d3d1; }
.band { fill: #e5e5e5; }  /* a phase without its own colour: never SVG's default black */
.swatch { vertical-align: -1px; } .swatch rect { stroke: #999; stroke-width: 0.5; }
.chart .band + .bar-label { fill: #222; }
figure.power { margin: 8px 0; } figcaption { font-size: 0.9em; color: #444; }
article.pick { border: 1px solid #ddd; border-radius: 6px; padding: 4px 16px; margin: 12px 0; }
/* Paper has no scroll bar: a config cut at the box's height lost its offload settings and notes (trial 49). */
@media print { pre { max-height: none; overflow: visible; } article.pick { break-inside: auto; }
               .chart .point-detail { display: none !important; } }  /* a point focused before printing too */
"""


def render_report_html(view: StudyView, document: dict, run_dir: Path) -> str:
    body = "\n".join(section(view, document, run_dir) for section in SECTIONS)
    title = page_heading(document)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        # Without it a phone lays the page out 980 px wide and zooms it all out.
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def write_report_html(path: Path, view: StudyView, document: dict, run_dir: Path) -> Path:
    # A browser tab reloading mid-write never sees half a page.
    return write_text_atomic(path, render_report_html(view, document, run_dir))
