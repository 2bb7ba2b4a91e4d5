"""`autotune report --format md`: the front and the picks as GitHub Markdown, to paste into an issue."""

from __future__ import annotations

import re
from pathlib import Path

from autotune.report.deploy_notes import deployment_notes, device_notes_said_once
from autotune.report.device_words import view_device_words
from autotune.report.error_bars import figure_bar, header_bar
from autotune.report.failed_trials import failure_lines
from autotune.report.outside_calibration import error_lines
from autotune.report.noise import noise_line
from autotune.report.unmeasured_floor import unmeasured_floor_sentence
from autotune.report.units import (
    energy_figure, energy_title, energy_unit, estimate_header, estimate_mark, front_energy_unit, figure, per_energy_figure, time_unit,
)
from autotune.report.pareto_json import named_study, nodes_header, unsearched_nodes_sentence
from autotune.report.pareto_json import hardware_text, provenance_sentence, trial_counts, workload_sentence
from autotune.report.importance import OBJECTIVE_TITLES, importance_sentence
from autotune.report.inputs import inputs_sentence
from autotune.report.payback import baseline_missing, no_baseline_sentence
from autotune.report.payback import cost_sentence, payback_by_trial, payback_sentence
from autotune.report.picks import PICK_FILES, baseline_label, front_title, pick_config_files, pick_label, picks_by_trial
from autotune.report.power_limit import measured_default_w, sweep_sentence
from autotune.report.study_points import StudyView
from autotune.report.choosing import pick_notes
from autotune.report.pick_figures import (
    baseline_text, change_texts, figures_text, gpu_span_caveat, memory_text, pick_configuration_text, spans_gpus,
)
from autotune.report.table import knob_columns, knob_value, memory_header, pick_definitions_said
from autotune.counted import counted


def md_cell(value) -> str:
    """A table cell: pipes would split the cell and newlines end the row."""
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


# What Markdown (GitHub's, raw HTML on) reads as syntax inside a line: emphasis, code, links and autolinks
# (`:`), headings' closing `#`, table pipes, strikethrough, and the backslash itself. `<`, `>` and `&` become
# entities, so `<b>` or `<!--` in a name cannot open a tag or hide the rest of an issue.
_MD_SYNTAX = re.compile(r"([\\`*_{}\[\]()#+!|~:])")


def md_text(value) -> str:
    """A name (model, study, path) as literal Markdown text: shown as written, never rendered (trial 49 #8: a
    model named `<b>x</b> *y* [l](http://e.com)` came out bold, emphasised and a live link)."""
    text = " ".join(str(value).splitlines())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SYNTAX.sub(r"\\\1", text)


def _names(document: dict) -> list[str]:
    """The names a user chose that the report's sentences quote: the only text in them not written here."""
    inputs = document.get("inputs") or {}
    replayed = inputs.get("measurements") or {}
    names = [document.get("model"), document.get("study_name"), document.get("hardware"), document.get("calibrated_from"),
             document.get("hardware_file"), replayed.get("file"), document.get("storage")]
    return [n for n in names if isinstance(n, str) and n and md_text(n) != n]


def md_names(sentence: str, document: dict) -> str:
    """A sentence of the report's on one line (md_cell) with every name in it escaped (md_text), its own
    Markdown (`code`) kept."""
    names = sorted(set(_names(document)), key=len, reverse=True)  # the longest first: one name may hold another
    if not names:
        return md_cell(sentence)
    # The split keeps each name (the group) at the odd places: escaped once, not again as a cell's pipe.
    parts = re.split("(" + "|".join(map(re.escape, names)) + ")", sentence)
    return "".join(md_text(part) if i % 2 else md_cell(part) for i, part in enumerate(parts))


def _row(cells) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def markdown_report(view: StudyView, document: dict, configs: Path | None = None) -> str:
    """`configs`: the run directory's configs/, whose files each pick's deployment line names (pick_config_files)."""
    counts = trial_counts(document, view)

    def say(sentence: str) -> str:  # a sentence of ours that may quote a name: the name escaped, the rest kept
        return md_names(sentence, document)

    lines = [
        f"### autotune: {md_text(document['model'])} on {md_cell(nodes_header(document))} of {md_names(hardware_text(document), document)}"
        + (f", study {md_text(study)}" if (study := named_study(document)) else ""),
        "",
        f"**{say(provenance_sentence(document))}** Backend `{document['backend']}`. "
        f"{counted(document['trials'], 'trial')} ({say(counts)}); "
        + (f"baseline trial {document['baseline']}." if document["baseline"] is not None
           else f"no baseline: {say(baseline_missing(view))}."),
        "",
        say(workload_sentence(document["workload"], document.get("model_caveats"))),
        "",
    ]
    if failed := failure_lines(view.trials):  # a probe's error is its own text: literal, never Markdown
        heading, reasons = failed
        lines += [f"**{md_cell(heading[0].upper() + heading[1:])}**", "", *(f"- {md_text(r)}" for r in reasons), ""]
    if unsearched := unsearched_nodes_sentence(document):
        lines += [unsearched, ""]
    if inputs := inputs_sentence(document.get("inputs")):
        lines += [say(inputs), ""]
    if document.get("note"):
        lines += [f"> **{say(document['note'])}**", ""]
    if noise_text := noise_line(document):
        lines += [say(noise_text), ""]
    error = document.get("simulator_error")
    sentence, outside = error_lines(document)
    if sentence:
        lines += [say(sentence), ""]
    if outside:  # up front, before the table (trial57 #3)
        lines += [f"> **{say(outside)}**", ""]
    if view.front:
        labels = {t: [pick_label(n, view.pick_parameters) for n in names] for t, names in picks_by_trial(view).items()}
        columns = knob_columns((p.params for p in view.front), view.settings.hardware, view.points)
        knob_titles = [title for _, title in columns]
        t_unit, t_div = time_unit([p.time_s for p in view.front])
        e_unit, e_div = energy_unit([p.energy_kj for p in view.front])
        per_device = f"TFLOP/s {view_device_words(view).per()}{header_bar(error, view.front, 'tflops')}"
        sources = [p.energy_source for p in view.front]
        lines += [
            f"**{front_title(view.time_only)}**",
            "",
            _row(["trial", *knob_titles, f"time {t_unit}{header_bar(error, view.front, 'time_s')}",
                  f"{energy_title([p.energy_kj for p in view.front], e_unit)}{header_bar(error, view.front, 'energy_kj')}{estimate_header(sources)}", per_device,
                  f"TFLOP /kJ{estimate_header(sources)}", memory_header(view.front), "pick"]),
            _row(["---:"] + ["---"] * len(knob_titles) + ["---:"] * 5 + ["---"]),
        ]
        for p in view.front:
            lines.append(_row([
                p.trial,
                *(knob_value(p.params, knob) for knob, _ in columns),
                figure(p.time_s, t_div) + figure_bar(error, view.front, p, "time_s"),
                energy_figure(p.energy_kj, e_div) + figure_bar(error, view.front, p, "energy_kj") + estimate_mark(sources, p.energy_source),
                figure(p.tflops) + figure_bar(error, view.front, p, "tflops"),
                per_energy_figure(p.tflop_per_kj, p.energy_kj) + estimate_mark(sources, p.energy_source),
                figure(p.peak_mem_gib),  # what a pick needs of each device: the terminal had it, md did not (trial 49 #2)
                ", ".join(labels.get(p.trial, [])),
            ]))
        lines.append("")
    lines += pick_lines(view, document, error, configs)
    said, choosing = pick_definitions_said(view)
    if said:  # knee and cost-weighted were defined nowhere in md, and nothing said which pick to deploy (trial 49 #4)
        lines += ["**What the picks are**", "", *(f"- {line}" for line in said), ""] + ([choosing, ""] if choosing else [])
    if sweep_sentence(view):
        lines += [say(sweep_sentence(view)), ""]
    if floor := unmeasured_floor_sentence(document.get("unmeasured_floor"), view.settings.hardware.name):
        lines += [say(floor), ""]
    if "search" in document:
        # Whether the study finished is a reader's first question of a report pasted into an issue (the
        # terminal and the page said it; this one did not).
        from autotune.report.search import search_sentences

        found = search_sentences({**document["search"], "predicted": document.get("predicted", [])}, document["backend"])
        lines += ["**Search**", "", *(f"- {say(line)}" for line in found), ""] if found else []
    lines += analysis_lines(view, document)
    return "\n".join(lines) + "\n"


def baseline_line(view: StudyView, document: dict, error, words, spans: bool) -> str:
    """The head of the picks: the baseline every percentage is against, its configuration and its absolute figures
    (report.md said only "vs baseline trial 0", which it showed nowhere)."""
    if document["baseline"] is None:  # not "vs baseline trial None" (trial75 #18)
        return f"**Picks** ({md_names(no_baseline_sentence(view), document)})"
    return f"**Picks** (vs baseline trial {document['baseline']}{baseline_text(view, error, words, spans)})"


def _changes(head: str, row: dict, p, base, view: StudyView, ties: str, memory: str) -> str:
    """A pick's line with its changes against the baseline, its ties and its peak memory (`memory`: memory_text)."""
    against = baseline_label(p, base)  # a baseline whose figures are of another kind than the pick's
    return (
        f"{head}: {', '.join(change_texts(view, row, p, base))}"
        + (f" (baseline trial {base.trial}: {against})" if against else "") + _ties_clause(ties) + memory
    )


def _ties_clause(ties: str) -> str:
    """"; tie with trial 2 within the simulator's error", before the peak memory: in parentheses after it, they
    followed its "(estimated)" (trial61: two parentheses in a row)."""
    return f"; {ties}" if ties else ""


def deployment_lines(view: StudyView, name: str, p, said_by: str | None, document: dict,
                     configs: Path | None = None) -> list[str]:
    """What deploying a pick needs beyond its DeepSpeed config, as sub-items (deploy_notes.deployment_notes, as the
    terminal and report.html say them: the rank count, checkpointing as code, a power limit set on every node, a
    hostfile), which report.md left out (trial 49 #2). Once per trial: a later pick of it points back."""
    from autotune.export import was_probed  # export imports the report package: only when said

    if said_by is not None:
        return [f"  - deploying it needs what {said_by} above does"]
    notes = deployment_notes(view.settings.candidate(p.params), device_note=device_notes_said_once(view).get(p.trial),
                             measured_default_w=measured_default_w(p), probed=was_probed(p))
    study_file, kept = pick_config_files(configs, name) if configs is not None else (f"{PICK_FILES.get(name, name)}.json", None)
    # An edited configs/<pick>.json is not what the study evaluated: the pick is in <pick>.new.json (trial76 #4).
    edited = f"; configs/{kept} is edited, kept as it is, and not the study's" if kept else ""
    return [f"  - deploying it needs, beyond its DeepSpeed config (configs/{study_file}{edited}):",
            *(f"    - {md_names(note, document)}" for note in notes)]


def pick_lines(view: StudyView, document: dict, error, configs: Path | None = None) -> list[str]:
    """The picks: each one's configuration, absolute figures and changes against the baseline."""
    if not document["picks"]:
        return []
    words, spans = view_device_words(view), spans_gpus(view)
    lines = [baseline_line(view, document, error, words, spans), ""]
    base = view.baseline_point()
    noted: dict[int, str] = {}  # trial -> the pick whose deployment notes said it
    for row in document["picks"]:
        p = view.point(row["trial"])
        label = pick_label(row["name"], view.pick_parameters)
        ties = pick_notes(view, row)
        # The absolute figures, as the terminal gives them; an estimate says so wherever it is shown.
        head = (f"- **{label}**: trial {p.trial}, "
                f"{pick_configuration_text(view, p, words, spans)}; {figures_text(p, error, front_energy_unit(view.front))}{' (estimated)' if p.energy_source == 'estimated' else ''}")
        if p.trial == view.baseline_trial:  # no change against itself, as in the terminal
            lines.append(f"{head}: the baseline itself{_ties_clause(ties)}{memory_text(p, words)}")
        else:
            lines.append(_changes(head, row, p, base, view, ties, memory_text(p, words)))
        lines += deployment_lines(view, row["name"], p, noted.get(p.trial), document, configs)
        noted.setdefault(p.trial, label)
    if caveat := gpu_span_caveat(view, words):
        lines.append(f"\n{caveat}")
    lines.append("")
    return lines


def analysis_lines(view: StudyView, document: dict) -> list[str]:
    """Which knobs mattered, and what tuning cost with each pick's payback."""
    lines = []
    importance = document.get("importance")
    if isinstance(importance, dict):
        lines += ["**Which knobs mattered** (share of each objective's variation, fANOVA over the feasible trials)", ""]
        lines += [f"- {OBJECTIVE_TITLES.get(name, name)}: {md_names(importance_sentence(shares), document)}"
                  for name, shares in importance.items()]
        lines.append("")
    cost = document.get("tuning_cost")
    if cost:
        lines += [f"**Tuning cost**: {md_names(cost_sentence(cost, front_energy_unit(view.front)), document)}", ""]
        lines += [
            f"- {', '.join(pick_label(n, view.pick_parameters) for n in names)} (trial {row['trial']}): {md_names(payback_sentence(row, front_energy_unit(view.front)), document)}"
            for names, row in payback_by_trial(cost["payback"])
        ]
        lines.append("")
    return lines
