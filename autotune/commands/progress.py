"""Progress over evaluated trials, fed by the study loop's callback: a bar on a terminal, a line per
trial elsewhere (a SLURM job's output file, a pipe), where rich would draw the bar only at the end."""

from __future__ import annotations

import contextlib

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autotune.report.table import knobs_sentence
from autotune.report.units import energy_text, time_text
from autotune.study.loop import StudyProgress


def _outcome(result, note: str) -> str:
    if result.ok:
        energy = energy_text(result.energy_kj) if result.energy_kj is not None else "energy unavailable"
        figures = f"{time_text(result.time_s)} ({result.source}), {energy} ({result.energy_source})"
        return f"{figures}; not ranked: {note}" if note else figures  # note: why the study cannot rank it
    return f"{result.status} {note[:60]}".rstrip()


@contextlib.contextmanager
def trial_progress(console, total: int, done: int = 0):
    """`total`: evaluated candidates the study will hold at the end; `done`: those it holds already
    (a resumed study), so the count is the study's, not this session's."""
    if not console.is_terminal:
        count = min(done, total)

        def on_line(number, params, result, note):
            nonlocal count
            if result is None:
                return  # a pruned proposal: nothing was evaluated
            count += 1
            console.print(f"trial {number} ({count}/{total}): {knobs_sentence(params)}: {_outcome(result, note)}",
                          soft_wrap=True, highlight=False, markup=False)

        yield StudyProgress(on_trial=on_line)
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

        def on_trial(number, params, result, note):
            if result is None:
                return  # a pruned proposal: nothing was evaluated
            bar.advance(task)
            bar.update(task, description=f"#{number}: {_outcome(result, note)}")

        yield StudyProgress(on_trial=on_trial)
