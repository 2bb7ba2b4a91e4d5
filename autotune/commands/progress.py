"""A progress bar over evaluated trials (rich), fed by the study loop's callback."""

from __future__ import annotations

import contextlib

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autotune.report.units import energy_text, time_text
from autotune.study.loop import StudyProgress


@contextlib.contextmanager
def trial_progress(console, total: int, done: int = 0):
    """`total`: evaluated candidates the study will hold at the end; `done`: those it holds already
    (a resumed study), so the bar counts the study, not this session."""
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
            if result.ok:
                energy = energy_text(result.energy_kj) if result.energy_kj is not None else "energy unavailable"
                bar.update(
                    task, description=f"#{number}: {time_text(result.time_s)} ({result.source}), {energy} ({result.energy_source})"
                )
            else:
                bar.update(task, description=f"#{number}: {result.status} {note[:60]}")

        yield StudyProgress(on_trial=on_trial)
