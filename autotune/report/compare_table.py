"""`autotune compare` on the terminal: the inputs that differ, each pick side by side, the configurations on
more than one front; drawn as the report draws its tables (rich, fitted to the terminal, whole into a pipe)."""

from __future__ import annotations

from itertools import combinations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autotune.candidate import power_limit_fraction_text
from autotune.counted import counted
from autotune.report.compare_inputs import input_label, not_recorded_sentence, same_sentence, value_text
from autotune.report.compare_study import ComparedStudy
from autotune.report.fitted_table import print_table
from autotune.report.pareto_json import hardware_text, nodes_header
from autotune.report.picks import PICK_FILES
from autotune.report.table import KNOB_COLUMNS, SM_CLOCK_COLUMN, stdout_console
from autotune.report.units import (
    UNAVAILABLE, change_words, energy_figure, energy_unit, figure, time_unit,
)

_KNOB_TITLES = {**dict((*KNOB_COLUMNS, SM_CLOCK_COLUMN)), "gpus": "GPUs", "power_limit_w": "power limit W"}


def figures_label(entry: dict) -> str:
    """Where a row's figures came from: `simulated`, or `time measured, energy estimated` where they differ;
    an estimate says so on its own row, as everywhere in the reports."""
    time, energy = entry["time_source"], entry["energy_source"]
    if entry["energy_kj"] is None:
        return f"time {time}, energy {UNAVAILABLE}"
    return time if time == energy else f"time {time}, energy {energy}"


def knobs_changed_text(changed: dict | None) -> str:
    """`same`, or `nodes 1 -> 2, power limit 1.0 -> 0.8`: how a study's pick differs from study 1's."""
    if changed is None:
        return ""
    return ", ".join(f"{_KNOB_TITLES.get(knob, knob)} {_value(knob, old)} -> {_value(knob, new)}"
                     for knob, (old, new) in changed.items()) or "same"


def _value(knob: str, value) -> str:
    # A limit as every output writes it (1.0, never a bare 1: trial59 #10).
    if knob == "power_limit" and isinstance(value, (int, float)):
        return power_limit_fraction_text(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _units(entries: list[dict], energy: tuple[str, float]) -> tuple[tuple[str, float], tuple[str, float]]:
    """One time unit for a whole table (figures read side by side must share it), and `energy`, the output's."""
    return time_unit([e["time_s"] for e in entries]), energy


def output_energy_unit(document: dict) -> tuple[str, float]:
    """The one energy unit of a comparison (trial57 #4): from every figure it shows, its picks' and its shared
    front's, so its two tables never read one energy in kJ and another in kWh."""
    shown = [e for row in document["picks"] for e in row["studies"] if e]
    shown += [e for c in document["shared_front"]["configurations"] for points in c["studies"] for e in points or []]
    return energy_unit([e["energy_kj"] for e in shown])


def _figure_cells(entry: dict, units, reference_row: bool) -> list[str]:
    (_, t_div), (_, e_div) = units
    changes = ["", ""] if reference_row else [
        change_words(entry["time_change_pct"]),
        change_words(entry["energy_change_pct"], UNAVAILABLE if entry["energy_kj"] is None else "n/a")]
    unknown = entry.get("error_unknown") or []  # "+- ?%" as its study's report marks them (compare.error_unknown)
    return [figure(entry["time_s"], t_div) + (" +- ?%" if "time_s" in unknown else ""),
            energy_figure(entry["energy_kj"], e_div) + (" +- ?%" if "energy_kj" in unknown else ""),
            figures_label(entry), *changes]


def _add_figure_columns(table: Table, units) -> None:
    (t_unit, _), (e_unit, _) = units
    for title in (f"time {t_unit}", f"energy {e_unit}"):
        table.add_column(title, justify="right")
    table.add_column("figures")
    for title in ("time vs 1", "energy vs 1"):
        table.add_column(title, justify="right")


def print_comparison(studies: list[ComparedStudy], document: dict, console: Console | None = None) -> None:
    """`document`: compare.compare_document(studies)."""
    console = console or stdout_console()
    console.print(f"Comparing {len(studies)} studies; every change is against study 1, in percent of its figure:")
    for number, study in enumerate(studies, 1):
        console.print(f"  {number}: {escape(str(study.run_dir))}: {escape(study_header(study.document))}")
    _print_inputs(studies, document, console)
    for line in document["caveats"]:
        console.print(f"[yellow]caveat: {escape(line)}[/]")
    energy = output_energy_unit(document)
    _print_picks(studies, document, console, energy)
    _print_shared_front(studies, document, console, energy)


def study_header(document: dict) -> str:
    """`7b on 1 node of gh200, backend simulate; time simulated, energy simulated`: a study as the report's
    first line names it."""
    source, energy = (" and ".join(v) if isinstance(v, list) else v for v in (document["source"], document["energy_source"]))
    figures = "no figures" if (source, energy) == ("none", "none") else f"time {source}, energy {energy}"
    return f"{document['model']} on {nodes_header(document)} of {hardware_text(document)}, backend {document['backend']}; " \
           f"{figures}"


def _print_inputs(studies: list[ComparedStudy], document: dict, console: Console) -> None:
    inputs = document["inputs"]
    if inputs["differ"]:
        table = Table(title="Inputs that differ")
        table.add_column("input")
        for study in document["studies"]:
            table.add_column(f"study {study['study']}")
        for name, values in inputs["differ"].items():
            table.add_row(escape(input_label(name)), *(escape(value_text(name, v)) for v in values))
        print_table(console, table)
    else:
        console.print("No input the pareto.json files record differs between the studies.")
    console.print(escape(same_sentence(inputs["same"])))
    if said := not_recorded_sentence(inputs["not_recorded"], studies):
        console.print(f"[yellow]{escape(said)}[/]")


def no_pick_words(document: dict) -> str:
    """Why a study lacks a pick another has: it ranked by time alone, or has no picks at all (its note says why)."""
    if not document["recommendations"]:
        return "no picks in this study (see its caveat)"
    return "no such pick: ranked by time only" if document.get("objectives") == ["time"] else "no such pick in this study"


def _print_picks(studies: list[ComparedStudy], document: dict, console: Console, energy: tuple[str, float]) -> None:
    rows = document["picks"]
    if not rows:
        console.print("No study has picks to compare.")
        return
    units = _units([e for row in rows for e in row["studies"] if e], energy)
    table = Table(title="Picks side by side (a pick is each study's own: its configuration, not its trial, is compared)")
    for title in ("pick", "study", "trial", "configuration"):
        table.add_column(title, justify="right" if title in ("study", "trial") else "left")
    _add_figure_columns(table, units)
    table.add_column("knobs vs 1")
    for row in rows:
        for number, entry in enumerate(row["studies"], 1):
            pick = PICK_FILES.get(row["pick"], row["pick"]) if number == 1 else ""
            if entry is None:
                table.add_row(pick, str(number), "", escape(no_pick_words(studies[number - 1].document)), *[""] * 6)
                continue
            # A pick unchanged from study 1's is said so: the sentence again, row after row, hid the ones that changed.
            same = number > 1 and entry["knobs_changed"] == {}
            table.add_row(pick, str(number), str(entry["trial"]), "same as study 1" if same else escape(entry["configuration"]),
                          *_figure_cells(entry, units, number == 1), knobs_changed_text(entry["knobs_changed"]))
        table.add_section()
    print_table(console, table, keys=3)  # a split table's every part keeps pick, study and trial


def matched_words(studies: list[ComparedStudy]) -> str:
    """The README's rule, as it holds for these studies: per pair of studies, so with studies of 4, 4 and 8 nodes
    the two of 4 match on their node count, and the one of 8 on every other knob (its trials say its count)."""
    shared = [bool(set(a.node_counts) & set(b.node_counts)) for a, b in combinations(studies, 2)]
    if all(shared):
        return "every knob"
    if not any(shared):
        return "every knob but nodes (the studies share no node count)"
    return "every knob, nodes too between studies that share a node count"


def _print_shared_front(studies: list[ComparedStudy], document: dict, console: Console, energy: tuple[str, float]) -> None:
    configurations = document["shared_front"]["configurations"]
    matched = matched_words(studies)
    if not configurations:
        console.print(f"No configuration is on more than one study's front (matched on {matched}).")
        return
    entries = [e for c in configurations for points in c["studies"] for e in points]
    units = _units(entries, energy)
    table = Table(title=f"On more than one study's front: {counted(len(configurations), 'configuration')}, matched on {matched}")
    # Study and trial first, the keys a split table repeats in each part (at 80 columns a second part of blank
    # cells and "-10.0%" said neither); the configuration names its section's first row.
    table.add_column("study", justify="right")
    table.add_column("trial", justify="right")
    table.add_column("configuration")
    _add_figure_columns(table, units)
    for configuration in configurations:
        first = True
        for number, points in enumerate(configuration["studies"], 1):
            # A study matched at its own node count says it, where it holds the configuration and where it does
            # not ("not evaluated" under a sentence of 8 nodes was of its 4); one at the configuration's count needs not.
            own_count = "nodes" not in configuration["matched_on"] or number in configuration["matched_without_nodes"]
            for entry in points or [None]:
                words = escape(configuration["configuration"]) if first else ""
                first = False
                if entry is None:
                    counts = "/".join(map(str, document["studies"][number - 1]["node_counts"]))
                    table.add_row(str(number), f"({counted(counts, 'node')})" if own_count else "", words, "", "",
                                  escape(configuration["why_absent"][number - 1]), "", "")
                    continue
                trial = f"{entry['trial']}" + (f" ({counted(entry['nodes'], 'node')})" if own_count else "")
                table.add_row(str(number), trial, words, *_figure_cells(entry, units, number == 1))
        table.add_section()
    print_table(console, table, keys=2)
