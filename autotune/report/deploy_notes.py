"""What deploying a pick needs beyond its DeepSpeed config, as plain sentences: the one source that the terminal,
report.md and report.html each lay out in their own way. Each had its own code for it, and the terminal said none
of it: what `autotune run` prints named no rank count, no checkpointing to write, no power limit to set.

The sentences are the exported config's `autotune.not_in_this_config` (export.handover_notes: the rank count its
batch sizes hold for, checkpointing and Ulysses attention that are code, a power limit or clock cap set on every
node), and for a pick on several nodes what its launch.sh needs beside it (a hostfile, pdsh).
"""

from __future__ import annotations

import json


def deployment_notes(candidate, config_text: str | None = None) -> list[str]:
    """What training `candidate` needs beyond its DeepSpeed config. `config_text`: the exported config file as written,
    whose own `not_in_this_config` is what ships with it (report.html prints the file beside them); export's notes
    for the candidate where it has none (not written yet, or edited into something without the list)."""
    from autotune.export import handover_notes  # export pulls the launchers in: only when a report says the notes

    notes = _config_notes(config_text)
    notes = list(handover_notes(candidate) if notes is None else notes)
    if candidate.knobs.nodes > 1:
        notes.append(_hostfile_note(candidate))
    return notes


def _config_notes(config_text: str | None) -> list[str] | None:
    if config_text is None:
        return None
    try:
        notes = json.loads(config_text).get("autotune", {}).get("not_in_this_config")
    except (ValueError, AttributeError):
        return None
    return notes if isinstance(notes, list) and all(isinstance(n, str) for n in notes) else None


def _hostfile_note(candidate) -> str:
    """What the pick's launch.sh needs on several nodes, in the words launch.sh and `autotune export` say it in."""
    from autotune.export import hostfile_sentence

    return (f"to train it as probed, its launch.sh (beside its config in configs/) starts the {candidate.knobs.nodes} "
            f"nodes' ranks with the deepspeed launcher. {hostfile_sentence(candidate.knobs.nodes, candidate.gpus_per_node)} "
            "Under SLURM, `autotune export RUN_DIR --pick NAME --launcher srun` writes a launch.sh that trains in the "
            "allocation instead, with neither.")


def pick_deployment_notes(view) -> dict[int, list[str]]:
    """{trial: its deployment notes} for each trial the picks name, in pick order: picks sharing a trial share them."""
    from autotune.report.picks import picks_by_trial

    return {trial: deployment_notes(view.settings.candidate(view.point(trial).params)) for trial in picks_by_trial(view)}


def grouped_notes(notes_by_trial: dict[int, list[str]]) -> list[tuple[list[int], list[str]]]:
    """Each note once, with the trials that need it: [(trials, their notes)], a group for each set of trials that
    share notes, the groups of more trials first (trials and notes in the order they come). The picks of a study
    mostly share their rank count and checkpointing and differ in a power limit: said per trial, an 80-column
    terminal held the same five-line sentences three and four times over."""
    trials_of: dict[str, list[int]] = {}
    for trial, notes in notes_by_trial.items():
        for note in notes:
            trials_of.setdefault(note, []).append(trial)
    groups: dict[tuple[int, ...], list[str]] = {}
    for note, trials in trials_of.items():
        groups.setdefault(tuple(trials), []).append(note)
    # What more picks need first ("every pick"), then the notes of fewer, each group in the order its notes come.
    return sorted(((list(trials), notes) for trials, notes in groups.items()), key=lambda group: -len(group[0]))
