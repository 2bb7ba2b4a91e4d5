"""What deploying a pick needs beyond its DeepSpeed config, as plain sentences: the one source that the terminal,
report.md and report.html each lay out in their own way. Each had its own code for it, and the terminal said none
of it: what `autotune run` prints named no rank count, no checkpointing to write, no power limit to set.

The sentences are the exported config's `autotune.not_in_this_config` (export.handover_notes: the rank count its
batch sizes hold for, checkpointing and Ulysses attention that are code, a power limit or clock cap set on every
node), and for a pick on several nodes what its launch.sh needs beside it (a hostfile, pdsh). Picks whose power-limit
notes differ in the limit alone share one, its command written with LIMIT (shared_device_notes).
"""

from __future__ import annotations

import json


# Written for the power limit in the one note the picks that differ in it alone share (shared_device_notes).
LIMIT_PLACEHOLDER = "LIMIT"


def deployment_notes(candidate, config_text: str | None = None, device_note: str | None = None,
                     measured_default_w: float | None = None, *, probed: bool) -> list[str]:
    """What training `candidate` needs beyond its DeepSpeed config. `config_text`: the exported config file as written,
    whose own `not_in_this_config` is what ships with it (report.html prints the file beside them); export's notes
    for the candidate where it has none (not written yet, or edited into something without the list).
    `device_note`: said in place of the candidate's own power-limit note (shared_device_notes). `measured_default_w`:
    the default power limit the pick's probe read (power_limit.measured_default_w), which its watts are of. `probed`:
    whether a probe measured the pick (export.was_probed), which its launch.sh runs again; else it probes it first."""
    from autotune.export import device_settings_note, handover_notes  # export pulls the launchers in: only when said

    notes = _config_notes(config_text)
    notes = list(handover_notes(candidate, measured_default_w) if notes is None else notes)
    if device_note is not None:
        own = device_settings_note(candidate.knobs, candidate.hardware, measured_default_w=measured_default_w,
                                   gpus_per_node=candidate.gpus_per_node)
        notes = [device_note if note == own else note for note in notes]
    if candidate.knobs.nodes > 1:
        notes.append(_hostfile_note(candidate, probed))
    return notes


def shared_device_notes(view) -> dict[int, str]:
    """{trial: the power-limit note it shares}, for the picks whose notes differ in the limit alone: the note once, the
    limit written LIMIT in its command, and which pick uses which ("LIMIT: 0.7 (476 W) for min-energy, 0.8 (544 W)
    for knee and cost-weighted (x default, W per module on the gh200 profile)"). Said per pick, the five-line sentence
    stood three times over with only 0.7/0.8/0.9 differing (trial57 #11). A pick whose note no other shares keeps
    its own (no entry)."""
    from autotune.candidate import power_limit_fraction_text
    from autotune.export import device_settings_note
    from autotune.report.picks import PICK_FILES, picks_by_trial
    from autotune.report.power_limit import limit_default_text, limit_default_w, limit_watts_text

    hardware = view.settings.hardware
    default_w = limit_default_w(view.points, hardware)  # the study's, as its sweep and table give the watts
    sharing: dict[str, list[int]] = {}
    for trial in picks_by_trial(view):
        candidate = view.settings.candidate(view.point(trial).params)
        if candidate.knobs.power_limit != 1.0:
            note = device_settings_note(candidate.knobs, hardware, LIMIT_PLACEHOLDER, gpus_per_node=candidate.gpus_per_node)
            sharing.setdefault(note, []).append(trial)
    names, shared = picks_by_trial(view), {}
    for note, trials in sharing.items():
        if len(trials) < 2:
            continue
        points = [view.point(trial) for trial in trials]
        whose = [f"{power_limit_fraction_text(point.params['power_limit'])}{limit_watts_text(point, default_w)} for "
                 + " and ".join(PICK_FILES.get(name, name) for name in names[point.trial]) for point in points]
        of = limit_default_text(view.points, hardware)
        shared.update(dict.fromkeys(trials, f"{note}; {LIMIT_PLACEHOLDER}: {', '.join(whose)}" + (f" ({of})" if of else "")))
    return shared


def device_notes_said_once(view) -> dict[int, str]:
    """shared_device_notes for a report that says each pick's notes beside it (report.md, report.html): the shared
    note under the first of its picks, and under each later one where it is said and with which LIMIT."""
    from autotune.candidate import power_limit_fraction_text
    from autotune.report.picks import PICK_FILES, picks_by_trial

    names, said_by, said = picks_by_trial(view), {}, {}
    for trial, note in shared_device_notes(view).items():
        if note not in said_by:
            said_by[note], said[trial] = names[trial][0], note
            continue
        limit = power_limit_fraction_text(view.point(trial).params["power_limit"])
        first = PICK_FILES.get(said_by[note], said_by[note])
        said[trial] = (f"its power limit is set as the note under {first} above says, with {LIMIT_PLACEHOLDER} {limit} "
                       "(its line above gives the watts)")
    return said


def _config_notes(config_text: str | None) -> list[str] | None:
    if config_text is None:
        return None
    try:
        notes = json.loads(config_text).get("autotune", {}).get("not_in_this_config")
    except (ValueError, AttributeError):
        return None
    return notes if isinstance(notes, list) and all(isinstance(n, str) for n in notes) else None


def _hostfile_note(candidate, probed: bool) -> str:
    """What the pick's launch.sh needs on several nodes, in the words launch.sh and `autotune export` say it in: of a
    simulated pick, whose launch.sh probes it (nothing ran on hardware), "to train it as probed" told a user it had
    been (as `export` once did: trial64 #11)."""
    from autotune.export import hostfile_sentence

    purpose = "to train it as probed" if probed else "to probe it (its figures were simulated)"
    return (f"{purpose}, its launch.sh (beside its config in configs/) starts the {candidate.knobs.nodes} "
            f"nodes' ranks with the deepspeed launcher. {hostfile_sentence(candidate.knobs.nodes, candidate.gpus_per_node)} "
            "Under SLURM, `autotune export RUN_DIR --pick NAME --launcher srun` writes a launch.sh that trains in the "
            "allocation instead, with neither.")


def pick_deployment_notes(view) -> dict[int, list[str]]:
    """{trial: its deployment notes} for each trial the picks name, in pick order: picks sharing a trial share them."""
    from autotune.export import was_probed
    from autotune.report.picks import picks_by_trial
    from autotune.report.power_limit import measured_default_w

    shared = shared_device_notes(view)  # said once for the picks that differ in the limit alone: grouped below
    return {trial: deployment_notes(view.settings.candidate(view.point(trial).params), device_note=shared.get(trial),
                                    measured_default_w=measured_default_w(view.point(trial)),
                                    probed=was_probed(view.point(trial)))
            for trial in picks_by_trial(view)}


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
