"""What each pick needs beyond its DeepSpeed config, said beside the pick in report.html.

The exported config carries it in `autotune.not_in_this_config` (export.handover_notes): the rank count its
batch sizes hold for, checkpointing and Ulysses attention that are code, a power limit or clock cap set on
every node. Inside the <pre> it was cut off in print and hidden in a 420 px scroll box on screen (trial 49),
so the page states it as text too: deploy_notes.deployment_notes, the notes the terminal and report.md say.
"""

from __future__ import annotations

import re

from autotune.report.deploy_notes import deployment_notes, device_notes_said_once
from autotune.report.html_parts import esc
from autotune.report.power_limit import measured_default_w


def _with_code(note: str) -> str:
    """A note escaped, its `commands` set as code (the notes write them in backticks, as a terminal shows them)."""
    parts = re.split(r"`([^`]+)`", note)
    return "".join(f"<code>{esc(part)}</code>" if i % 2 else esc(part) for i, part in enumerate(parts))


def deployment_notes_html(config_text: str, candidate, view=None, trial: int | None = None) -> str:
    """The notes of pick `trial` of `view`: a power-limit note its picks share said under the first of them only
    (deploy_notes.device_notes_said_once), as report.md says it. Without a view, a measured pick's."""
    from autotune.export import was_probed  # export imports the report package: only when said

    point = view.point(trial) if view is not None and trial is not None else None
    device_note = device_notes_said_once(view).get(trial) if view is not None else None
    default_w = measured_default_w(point) if point is not None else None
    notes = deployment_notes(candidate, config_text, device_note, default_w,
                             probed=point is None or was_probed(point))
    if not notes:
        return ""
    items = "".join(f"<li>{_with_code(note)}</li>" for note in notes)
    return ('<div class="deploy"><h4>To deploy it (not in the DeepSpeed config below)</h4>\n'
            f"<ul>{items}</ul></div>\n")
