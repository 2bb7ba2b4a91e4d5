"""The terminal report: the Pareto front as a table and the picks, drawn with rich."""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autotune.candidate import SM_CLOCK_UNTOUCHED, Knobs
from autotune.report.deploy_terminal import print_deployment_notes
from autotune.report.choosing import choosing_a_pick, pick_notes
from autotune.report.device_words import view_device_words
from autotune.report.error_bars import figure_bar, header_bar
from autotune.report.failed_trials import failure_lines
from autotune.report.fitted_table import print_table
from autotune.report.noise import noise_line
from autotune.report.outside_calibration import error_lines
from autotune.report.importance import OBJECTIVE_TITLES, importance_sentence
from autotune.report.pareto_json import (
    hardware_text, named_study, nodes_header, not_measured_text, trial_counts, unsearched_nodes_sentence, workload_sentence,
)
from autotune.report.pick_figures import (
    baseline_text, change_texts, figures_text, gpu_span_caveat, memory_kind, pick_configuration_text, spans_gpus,
)
from autotune.report.payback import cost_sentence, no_baseline_sentence, payback_by_trial, payback_sentence
from autotune.report.picks import (
    PICK_FILES, baseline_label, pick_definitions, pick_label, picks_by_trial, time_only_energy_words,
)
from autotune.report.power_limit import power_limit_column_title, sweep_sentence
from autotune.report.units import (
    energy_figure, energy_title, energy_unit, estimate_header, front_energy_unit, estimate_mark, figure, per_energy_figure, time_unit,
)
from autotune.report.study_points import StudyView
from autotune.report.unmeasured_floor import unmeasured_floor_sentence
from autotune.counted import counted


KNOB_COLUMNS = (
    ("zero_stage", "ZeRO"),
    ("optimizer_offload", "opt offload"),
    ("activation_checkpointing", "ckpt"),
    ("sp_degree", "SP"),
    ("micro_batch", "mb"),
    ("nodes", "nodes"),
    ("power_limit", "power limit"),  # the fraction of the default limit
)
SM_CLOCK_COLUMN = ("sm_clock_mhz", "SM clock MHz")


def knob_value(params: dict, knob: str):
    """A knob's value in a trial; a study from before the knob existed ran it untouched."""
    return params.get(knob, getattr(Knobs(), knob))


def knob_columns(params: Iterable[dict], hardware=None, study_points=()) -> tuple[tuple[str, str], ...]:
    """The knob columns of a table of these trials' params: KNOB_COLUMNS, and the SM clock cap where one of
    them has one. Without it a capped trial read as an untouched one, its row another's with other figures
    (a newcomer's trial: the least-energy pick, capped at 1500 MHz, read like the fastest). With the study's
    `hardware`, the power limit's title says the watts its fractions are of ("power limit (x 680 W)"): of the default
    the probes among `study_points` (the study's) recorded, where they did (power_limit_column_title)."""
    capped = any(knob_value(p, "sm_clock_mhz") != SM_CLOCK_UNTOUCHED for p in params)
    titled = tuple((knob, power_limit_column_title(hardware, study_points) if knob == "power_limit" else title) for knob, title in KNOB_COLUMNS)
    return titled + ((SM_CLOCK_COLUMN,) if capped else ())


class _StdoutConsole(Console):
    """rich ends the process with status 1 when the reader of stdout goes away (`autotune report RUN | head`);
    the CLI ends every command so as a tool SIGPIPE ended (141), as it does for JSON, so the error goes there."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of standard output went away")


def stdout_console() -> Console:
    """The terminal's width on a terminal. Piped or captured output (a job's output file, `| grep`) gets
    a 160-column table instead of rich's 80-column default, and each sentence on one line: rich broke
    them at the table's width, so grep found half a pick's line. A table that cannot fit 160 columns
    without a cut is printed wider (fitted_table.print_table). COLUMNS is not read there: shells and
    tools export the terminal's (pytest sets 80 for its children), which says nothing of a file's width."""
    piped = not sys.stdout.isatty()
    return _StdoutConsole(width=160 if piped else None, soft_wrap=piped)


def memory_header(points) -> str:
    """"mem GiB (estimated)": the kinds of the figures below (memory_kind)."""
    kinds = sorted({memory_kind(p) for p in points if p.peak_mem_gib is not None})
    return f"mem GiB ({', '.join(kinds)})" if kinds else "mem GiB"


def print_report(view: StudyView, document: dict, console: Console | None = None) -> None:
    console = console or stdout_console()
    # A study whose points came from several sources lists them all ("measured and estimated").
    source, energy_source = (" and ".join(v) if isinstance(v, list) else v for v in (document["source"], document["energy_source"]))
    # "none": no trial has figures (every probe ran out of memory or failed), not figures of kind "none".
    figures = ("no trial has time or energy figures yet" if document["source"] == ["none"]
               else f"time is [bold]{source}[/], energy is [bold]{energy_source}[/]"
               + escape(not_measured_text(document.get("energy_not_measured") or [])))
    console.print(
        # A name is the user's: `bad[/]name [red]x` printed as "badname x" (trial 49 #9) unless escaped.
        f"[bold]{escape(document['model'])}[/] on {escape(nodes_header(document))} of {escape(hardware_text(document))}"
        + (f", study {escape(study)}" if (study := named_study(document)) else "")
        + f", backend {escape(document['backend'])}: {figures}"
    )
    console.print(escape(workload_sentence(document["workload"], document.get("model_caveats"))))
    if unsearched := unsearched_nodes_sentence(document):
        console.print(escape(unsearched))
    console.print(escape(f"{counted(document['trials'], 'trial')} ({trial_counts(document, view)})"))
    if failed := failure_lines(view.trials):  # under the counts that say how many failed: why they did
        heading, lines = failed
        console.print(escape(heading))
        for line in lines:
            console.print(escape(f"  {line}"))
    if document.get("note"):
        console.print(f"[yellow]{escape(document['note'])}[/]")
    if noise_text := noise_line(document):
        console.print(escape(noise_text))
    error = document.get("simulator_error")
    sentence, outside = error_lines(document)
    if sentence:
        console.print(f"[dim]{escape(sentence)}[/]")
    if outside:  # up front, not at the end of the sentence above (trial57 #3)
        console.print(f"[yellow]{escape(outside)}[/]")
    if not view.front:
        _print_analysis(view, document, console)
        return
    # The table names a pick as `export --pick` does ("max-slowdown"): its meaning ("least energy within 5% of
    # fastest") wrapped the column onto four lines at 80 columns, and is said in the pick's line below and defined
    # at the end of the report.
    labels = {t: ",".join(PICK_FILES.get(n, n) for n in names) for t, names in picks_by_trial(view).items()}
    words = view_device_words(view)
    table = Table(title=f"Fastest (ranked by time only; {time_only_energy_words(energy_source)})" if view.time_only
                  else f"Pareto front (time vs energy to solution: {source} time, {energy_source} energy)")
    table.add_column("trial", justify="right")
    columns = knob_columns((p.params for p in view.front), view.settings.hardware, view.points)
    for _, title in columns:
        table.add_column(title)
    t_unit, t_div = time_unit([p.time_s for p in view.front])
    e_unit, e_div = energy_unit([p.energy_kj for p in view.front])
    sources = [p.energy_source for p in view.front]
    # The error bar in the header when every figure below is simulated; else after each simulated one.
    for column in (f"time {t_unit}{header_bar(error, view.front, 'time_s')}",
                   f"{energy_title([p.energy_kj for p in view.front], e_unit)}{header_bar(error, view.front, 'energy_kj')}{estimate_header(sources)}",
                   f"TFLOP/s {words.per()}{header_bar(error, view.front, 'tflops')}", f"TFLOP /kJ{estimate_header(sources)}",
                   memory_header(view.front)):
        table.add_column(column, justify="right")
    table.add_column("pick")
    for p in view.front:
        table.add_row(
            str(p.trial),
            *(str(knob_value(p.params, knob)) for knob, _ in columns),
            figure(p.time_s, t_div) + figure_bar(error, view.front, p, "time_s"),
            energy_figure(p.energy_kj, e_div) + figure_bar(error, view.front, p, "energy_kj") + estimate_mark(sources, p.energy_source),
            figure(p.tflops) + figure_bar(error, view.front, p, "tflops"),
            per_energy_figure(p.tflop_per_kj, p.energy_kj) + estimate_mark(sources, p.energy_source),  # per estimated energy
            figure(p.peak_mem_gib),
            labels.get(p.trial, ""),
        )
    print_table(console, table)  # its first column, the trial, names each row
    base = view.baseline_point()
    # Where the picks span GPU counts, each line gives its GPUs and GPU-h, and a caveat follows them, as in report.md
    # (trial57 #6: "2 node(s); ... -50.3% time" read as a free 2x speed-up, at the same GPU-h as the baseline).
    spans = spans_gpus(view)
    # The baseline every pick's changes are against, where the table above does not show it (trial57 #8: each line
    # said "vs baseline trial 0", shown nowhere but in the progress lines -q hides), as report.md heads its picks.
    if document["picks"] and view.baseline_trial is None:
        console.print(escape(no_baseline_sentence(view)))
    elif document["picks"] and not any(p.trial == view.baseline_trial for p in view.front):
        console.print(escape(f"baseline (trial {view.baseline_trial}){baseline_text(view, error, words, spans)}"))
    for row in document["picks"]:
        p = view.point(row["trial"])
        line = f"[bold]{escape(pick_label(row['name'], view.pick_parameters))}[/]: trial {p.trial}, {pick_configuration_text(view, p, words, spans)}"
        line += f"; {figures_text(p, error, (e_unit, e_div))}"
        # What follows the figures, in one parenthetical (trial61: "(tie ...)  (against ...)" read as two asides
        # broken off one another): an estimate's mark (said wherever it is shown), the changes, then the ties.
        asides = ["estimated"] if p.energy_source == "estimated" else []
        # Against a feasible baseline, which has a time; an energy change it cannot state reads "unavailable".
        if row["time_change_pct"] is not None and p.trial != view.baseline_trial:
            against = baseline_label(p, base)
            # The baseline first, as report.md heads its changes: "the same energy than baseline trial 0" (trial59 #3).
            # "its time measured, energy unavailable" after a comma: in parentheses it nested two deep (trial60 #3).
            asides.append(escape(f"against baseline trial {view.baseline_trial}{f', {against}' if against else ''}: "
                                 f"{', '.join(change_texts(view, row, p, base))}"))
        elif p.trial == view.baseline_trial:
            asides.append("the baseline itself")
        if ties := pick_notes(view, row):
            asides.append(f"[yellow]{escape(ties)}[/]")
        console.print(line + (f"  ({'; '.join(asides)})" if asides else ""))
    if document["picks"] and (caveat := gpu_span_caveat(view, words)):
        console.print(escape(caveat))
    sweep = sweep_sentence(view)
    if sweep:
        console.print(escape(sweep))
    if floor := unmeasured_floor_sentence(document.get("unmeasured_floor"), view.settings.hardware.name):
        console.print(f"[yellow]{escape(floor)}[/]")
    _print_analysis(view, document, console)
    # Last, where a reader who scrolled past the table looks for what to do: every pick defined and how to choose
    # (the one cost-weighted line before said only its formula, and knee was defined nowhere), then what deploying
    # the chosen one needs beyond its config.
    said, choosing = pick_definitions_said(view)
    for line in definition_lines(said):
        console.print(f"[dim]{escape(line)}[/]")
    if choosing:
        console.print(escape(choosing))
    print_deployment_notes(view, console)


def pick_definitions_said(view: StudyView) -> tuple[list[str], str | None]:
    """What each of the study's picks is (picks.pick_definitions), cost-weighted's with the max power it weighs
    time by, and how to choose among them (CHOOSING_A_PICK; None for one pick, a time-only study's, which leaves
    nothing to choose). Said by report.md and at the end of the terminal report."""
    if not view.picks:
        return [], None
    parameters, words = view.pick_parameters, view_device_words(view)
    said = pick_definitions(parameters, view.picks, words)
    if "cost_weighted" in view.picks and parameters.max_power_per_gpu_w is not None:
        said = [line + (f" (max power per {words.one} here: {parameters.max_power_per_gpu_w:g} W, the hardware "
                        f"profile's most for one {words.one} with its share of the host)")
                if line.startswith("cost-weighted:") else line for line in said]
    return said, choosing_a_pick(view) if len(view.picks) > 1 else None


def definition_lines(said: list[str]) -> list[str]:
    """The picks' definitions ("NAME: what it is") as the terminal prints them, each "pick NAME: ...": those of one
    clause (no ':' or ';' of their own, which would blur where the next begins) share a line, the longer ones keep
    their own. Five lines closed every run, three of them a few words each (trial57 #11)."""
    short = [line for line in said if not any(mark in line.split(": ", 1)[-1] for mark in ":;")]
    shared = ["; ".join(f"pick {line}" for line in short)] if short else []
    return shared + [f"pick {line}" for line in said if line not in short]


def _print_analysis(view: StudyView, document: dict, console: Console) -> None:
    if "search" in document:
        from autotune.report.search import search_sentences

        for line in search_sentences({**document["search"], "predicted": document.get("predicted", [])}, document["backend"]):
            console.print(f"search: {escape(line)}")
    importance = document.get("importance")
    if isinstance(importance, dict):
        for name, shares in importance.items():
            console.print(f"knobs that mattered for {OBJECTIVE_TITLES.get(name, name)}: {escape(importance_sentence(shares))}")
    cost = document.get("tuning_cost")
    if cost:
        console.print(f"tuning cost: {escape(cost_sentence(cost, front_energy_unit(view.front)))}")
        for names, row in payback_by_trial(cost["payback"]):
            labels = ", ".join(pick_label(n, view.pick_parameters) for n in names)
            console.print(f"  {escape(labels)} (trial {row['trial']}): {escape(payback_sentence(row, front_energy_unit(view.front)))}")
