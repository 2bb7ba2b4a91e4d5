"""Progress over evaluated trials, fed by the study loop's callback: a bar on a terminal, a line per
trial elsewhere (a SLURM job's output file, a pipe), where rich would draw the bar only at the end."""

from __future__ import annotations

import contextlib
import time
from typing import Callable

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autotune.candidate import knobs_sentence
from autotune.measure.combine import not_measured, parts_text
from autotune.report.units import RunEnergyUnit, time_text
from autotune.study.loop import StudyProgress
from autotune.usage_errors import one_line


# The live bar's width for a failed probe's reason: the bar is one line, redrawn, and the report after it says
# every reason whole (report.failed_trials). A line per trial (a job's output file) says it whole: it is what
# `tail -f` shows of why a probe failed.
BAR_NOTE_CHARS = 60


def _outcome(result, note: str, energy_unit: RunEnergyUnit, note_chars: int | None = None) -> str:
    if result.ok:
        if result.energy_kj is not None:
            left_out = not_measured(result.details) if result.energy_source == "measured" else []  # a GPU-only total
            without = f" without {parts_text(left_out)}" if left_out else ""
            energy = f"{energy_unit.text(result.energy_kj)} ({result.energy_source}{without})"
        else:  # its source is "unavailable" (said once), or names where the figure should have come from
            energy = "energy unavailable" + ("" if result.energy_source == "unavailable" else f" ({result.energy_source})")
        figures = f"{time_text(result.time_s)} ({result.source}), {energy}"
        return f"{figures}; not ranked: {note}" if note else figures  # note: why the study cannot rank it
    note = one_line(note)
    if note_chars is not None and len(note) > note_chars:
        note = note[:note_chars - 3] + "..."
    return f"{result.status}: {note}" if note else result.status


# A real probe's first launch on a machine may build DeepSpeed's ops before it trains: said once, so that
# minutes without a line are not taken for a hang.
FIRST_PROBE_NOTE = "the first probe may spend minutes building DeepSpeed's ops before it trains"


def _start_callback(announce: Callable[[int, dict, str, str], None]) -> Callable[[int, dict, str], None]:
    """on_probe_start(number, params, resumed) -> announce(number, params, resumed, first-probe note or "")."""
    started = 0

    def on_probe_start(number, params, resumed):
        nonlocal started
        started += 1
        announce(number, params, resumed, FIRST_PROBE_NOTE if started == 1 else "")

    return on_probe_start


def _notes(*notes: str) -> str:
    """' (a; b)' of the notes given, '' of none."""
    given = [note for note in notes if note]
    return f" ({'; '.join(given)})" if given else ""


def study_energy_unit(checks: list) -> tuple[str, float]:
    """The energy unit of a study's progress lines (report.units.energy_unit), the same in each of its workers: that of
    the simulator's figure for its baseline candidate (else its first valid one), which the study's settings alone
    decide. Chosen by each worker's first probe, one worker of a study printed kWh where the others printed kJ
    (trial80 #6). kJ where the space has no valid candidate."""
    from autotune.report.units import energy_unit
    from autotune.simulator import simulate
    from autotune.space.baseline import baseline

    check = baseline(checks) or next((c for c in checks if c.valid), None)
    simulated_kj = simulate(check.candidate).energy_kj if check is not None else None  # the model, no probe
    return energy_unit([simulated_kj] if simulated_kj else [])


@contextlib.contextmanager
def trial_progress(console, total: int, done: int = 0, announce_probes: bool = False,
                   study_count: Callable[[], int] | None = None, quiet: bool = False,
                   energy_unit: tuple[str, float] | None = None):
    """`total`: evaluated candidates the study will hold at the end; `done`: those it holds already
    (a resumed study), so the count is the study's, not this session's. `announce_probes`: say when each
    probe starts (a real probe takes minutes, and a SLURM job's output file would show nothing meanwhile).
    `study_count`: the study's evaluated trials now, every worker's, so that "(k/N)" counts the shared
    budget's k rather than this worker's (two workers on one study ended at 7/12 and 5/12; the first to
    start cannot know that another will join). `quiet`: nothing per trial (a 300-trial job's output file).
    `energy_unit`: the study's (study_energy_unit); None, that of the first figure shown."""
    energy_unit = RunEnergyUnit(energy_unit)
    if quiet:  # --quiet: no line or bar per trial; the warnings still, which no trial line carries
        yield StudyProgress(on_note=lambda line: console.print(f"warning: {line}", soft_wrap=True, highlight=False,
                                                               markup=False))
        return

    def counted(count: int) -> int:
        return min(study_count(), total) if study_count is not None else count + 1

    if not console.is_terminal:
        count = min(done, total)

        def on_start_line(number, params, resumed, note):
            # A retry's resume first: in a job's output file it is what tells this start from the trial's first.
            started = f"started {time.strftime('%H:%M:%S')}"
            console.print(f"trial {number}: probing {knobs_sentence(params)}{_notes(resumed, started, note)}",
                          soft_wrap=True, highlight=False, markup=False)

        def on_line(number, params, result, note):
            nonlocal count
            if result is None:
                return  # a pruned proposal: nothing was evaluated
            count = counted(count)
            console.print(f"trial {number} ({count}/{total}): {knobs_sentence(params)}: {_outcome(result, note, energy_unit)}",
                          soft_wrap=True, highlight=False, markup=False)

        yield StudyProgress(on_trial=on_line, on_probe_start=_start_callback(on_start_line) if announce_probes else None,
                            on_note=lambda line: console.print(f"warning: {line}", soft_wrap=True, highlight=False, markup=False))
        return
    with Progress(
        TextColumn("[bold]trials"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("", total=total, completed=min(done, total))
        completed = min(done, total)

        def on_trial(number, params, result, note):
            nonlocal completed
            if result is None:
                return  # a pruned proposal: nothing was evaluated
            completed = counted(completed)
            bar.update(task, completed=completed)
            # Escaped: a probe's error may hold brackets ("[rank0]:"), which rich would read as markup.
            bar.update(task, description=escape(f"#{number}: {_outcome(result, note, energy_unit, BAR_NOTE_CHARS)}"))

        def on_start(number, params, resumed, note):
            bar.update(task, description=escape(f"#{number}: probing {knobs_sentence(params)}{_notes(resumed, note)}"))

        yield StudyProgress(on_trial=on_trial, on_probe_start=_start_callback(on_start) if announce_probes else None,
                            on_note=lambda line: bar.console.print(f"[yellow]warning: {escape(line)}[/]"))
