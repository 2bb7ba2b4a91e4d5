"""What deploying each pick needs beyond its DeepSpeed config, at the end of the terminal report: the sentences
report.md and report.html say (deploy_notes), laid out for a terminal: each once, under the picks that need it."""

from __future__ import annotations

import textwrap

from rich.console import Console

from autotune.report.deploy_notes import grouped_notes, pick_deployment_notes
from autotune.report.picks import PICK_FILES, picks_by_trial


def print_deployment_notes(view, console: Console) -> None:
    """What deploying each pick needs beyond its DeepSpeed config (deploy_notes, as report.md and report.html say
    it): each note once, under the picks that need it ("every pick" where all do)."""
    notes = pick_deployment_notes(view)
    if not notes:
        return
    console.print("To deploy a pick, beyond its DeepSpeed config (configs/<pick>.json; "
                  "`autotune export RUN_DIR --pick NAME` says the same):", highlight=False, markup=False)
    names = picks_by_trial(view)
    for trials, said in grouped_notes(notes):
        if len(trials) == len(notes) > 1:
            label = "every pick"
        else:
            picks = ", ".join(PICK_FILES.get(name, name) for trial in trials for name in names[trial])
            label = f"{picks} (trial{'s' if len(trials) > 1 else ''} {', '.join(map(str, trials))})"
        console.print(f"  {label}:", highlight=False, markup=False)  # indented: `grep ^knee` finds the pick's line alone
        for note in said:
            _print_item(console, note)


def _print_item(console: Console, text: str) -> None:
    """`    - text`, its further lines under the text on a terminal (a hanging indent; rich would start them at the
    margin); one line into a file or a pipe, as every sentence of the report is there (stdout_console), for grep."""
    width = None if console.soft_wrap else max(console.width, 20)
    line = textwrap.fill(text, width, initial_indent="    - ", subsequent_indent="      ", break_long_words=False,
                         break_on_hyphens=False) if width else f"    - {text}"
    console.print(line, soft_wrap=True, highlight=False, markup=False)
