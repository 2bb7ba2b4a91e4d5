"""pareto.json's `inputs`: what set the answer besides the model, hardware, workload and backend the
document already names, so a team lead handed the file can tell two studies apart and re-run one
(trial 47: a study without power limits and the default one read alike, and their least-energy picks
differed by 16%). Read from the study, where `run` keeps them. No time stamp and no command line: two
runs of one command into two directories write the same bytes, which is how a user checks a re-run."""

from __future__ import annotations

import hashlib
import json

from autotune.counted import agreeing, counted
from autotune.candidate import KNOBS
from autotune.space.unsearched import NOT_SEARCHED_ATTR
from autotune.study.foreign import foreign_trials
from autotune.study.loop import PROPOSED_BY_ATTR
from autotune.study.retries import released_trials


def content_sha256(value) -> str:
    """A SHA-256 of a JSON value's content, keys sorted: the same for the same figures however written."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def proposers(trials, released=()) -> list[dict]:
    """Each distinct proposer with the trials it proposed, in the order of their first trial. Trials of
    a study older than the record are left out (their count is the difference to `trials`). `released`: trials
    holding a result that counts as no probe of the study (retries.released_trials: a set-up failure whose retry is
    the probe; a copy of another study's trial was counted evaluated by the proposer it keeps, trial74 #2, and
    study_inputs leaves copies out altogether)."""
    from autotune.study.retries import is_evaluated

    groups: dict[str, dict] = {}
    for t in trials:
        who = t.user_attrs.get(PROPOSED_BY_ATTR)
        if not isinstance(who, dict):
            continue
        group = groups.setdefault(json.dumps(who, sort_keys=True), {**who, "trials": [], "evaluated": 0})
        group["trials"].append(t.number)
        # A proposal the space refused is a trial too, not a probe: "--trials 20: 30" read as the budget overrun.
        group["evaluated"] += is_evaluated(t, released)
    return list(groups.values())


def study_inputs(study, settings) -> dict:
    """The space searched (every knob's values), the hardware profile's content hash (a copied profile
    edited in place keeps its name and path), who proposed the trials, and the backend's own inputs: a
    launch's probe settings, a replay's file and its records' hash."""
    backend = study.user_attrs.get("backend") or {}
    stored = (study.user_attrs.get("settings") or {}).get("hardware_profile")
    # A trial copied from another study keeps the proposer that proposed it there ("guided seed 0: 3 evaluated of 5
    # trials" said of a study of three), and a copy from an older autotune read as this study's "proposer not recorded".
    # It is named where the report leaves it out (foreign.py).
    every_trial = study.get_trials(deepcopy=False)
    foreign = foreign_trials(study, every_trial)
    trials = [t for t in every_trial if t.number not in foreign]
    return {
        "space": {knob: list(settings.space.values(knob)) for knob in KNOBS},
        "hardware_sha256": content_sha256(stored) if stored is not None else None,
        "proposed_by": proposers(trials, released_trials(study)),
        # Trials no `proposed_by` entry covers: those an autotune older than the record proposed (trial52 #6).
        "proposer_not_recorded": sum(not isinstance(t.user_attrs.get(PROPOSED_BY_ATTR), dict) for t in trials),
        "probe_settings": ({**(backend.get("probe_settings") or {}), **(backend.get("run_settings") or {})}
                           if backend.get("probe_settings") or backend.get("run_settings") else None),
        "measurements": backend.get("measurements"),
        # The space file's power limits and clocks the study did not search, and why (space.unsearched).
        "not_searched": study.user_attrs.get(NOT_SEARCHED_ATTR) or [],
    }


def inputs_sentence(inputs: dict | None) -> str | None:
    """report.md's and report.html's line of what produced the study beyond its header: who proposed its
    trials, the profile's hash, a replay's file, a launch's probe settings. None for a pareto.json older
    than the record."""
    if not inputs:
        return None
    parts = []
    if inputs["proposed_by"]:
        parts.append("trials proposed by " + ", ".join(
            f"{proposer_text(who)}: {who['evaluated']} evaluated"
            + (f" of {counted(len(who['trials']), 'trial')}" if len(who["trials"]) != who["evaluated"] else "")
            for who in inputs["proposed_by"]))
    if unrecorded := inputs.get("proposer_not_recorded"):
        parts.append(f"{counted(unrecorded, 'trial')}: proposer not recorded (an older autotune)")
    not_searched = inputs.get("not_searched")
    parts.append(f"searched {space_words(inputs['space'])}"
                 + (f" ({not_searched_sentence(not_searched)})" if not_searched else ""))
    if inputs.get("hardware_sha256"):
        parts.append(f"hardware profile sha256 {inputs['hardware_sha256'][:12]}")
    if replayed := inputs.get("measurements"):
        parts.append(f"replayed {measurements_text(replayed)}")
    if probe := inputs.get("probe_settings"):
        parts.append(f"probes {probe_settings_text(probe)}")
    return "Inputs: " + "; ".join(parts) + " (pareto.json `inputs`)."


def not_searched_sentence(skipped: list[dict]) -> str:
    """`power_limit 0.7 and sm_clock_mhz 1500 are not searched: <why>; <fix>`: the values of a space file a study
    left out (space.unsearched's entries, pareto.json `inputs.not_searched`), those of one cause in one clause."""
    causes: dict[tuple, list[dict]] = {}
    for left_out in skipped:
        causes.setdefault((left_out["why"], left_out.get("fix")), []).append(left_out)
    return ". ".join(f"{not_searched_values(entries)} not searched: {why}" + (f"; {fix}" if fix else "")
                     for (why, fix), entries in causes.items())


def not_searched_values(skipped: list[dict]) -> str:
    """`power_limit 0.7 and sm_clock_mhz 1500 are`: the values of `not_searched` entries, and the verb they take."""
    from autotune.report.picks import listed

    values = sum(len(e["values"]) for e in skipped)
    knobs = listed(e["knob"] + " " + listed(e["values"]) for e in skipped)
    return f"{knobs} {agreeing(values, 'is', 'are')}"


def space_words(space: dict) -> str:
    """`the default space`, or `a --space file's power_limit 1.0, the other knobs as in the default space`: the knob
    values a --space file changed from the built-in default (the node counts are --nodes's, said in the header).
    Not "the default space but ...": a study of a file of its own read as one of the default (trial75 #1)."""
    from autotune.space.files import load_space

    default = load_space(nodes=(1,))  # the file lists no node counts
    knobs = [knob for knob in space if knob != "nodes"]
    changed = [f"{knob} {'/'.join(map(str, space[knob]))}" for knob in knobs
               if tuple(space[knob]) != tuple(default.values(knob))]
    if not changed:
        return "the default space"
    return f"a --space file's {', '.join(changed)}" + (", the other knobs as in the default space" if len(changed) < len(knobs) else "")


# How the reports and `autotune compare` word the parts of `inputs`.
def proposer_text(who: dict) -> str:
    """`guided seed 0 (--trials 30, autotune 0.1.0)`, or `queued by hand (...)`: one entry of `proposed_by`."""
    from autotune.study.queued import QUEUED_BY_HAND

    by = "queued by hand" if who["sampler"] == QUEUED_BY_HAND else f"{who['sampler']} seed {who['seed']}"
    return f"{by} (--trials {who['trials_budget']}, autotune {who['autotune_version']})"


def measurements_text(replayed: dict) -> str:
    """`/runs/m.jsonl (528 records, sha256 be740b63307c)`: a replay's `measurements`."""
    return f"{replayed['file']} ({counted(replayed['records'], 'record')}, sha256 {replayed['sha256'][:12]})"


def probe_settings_text(probe: dict) -> str:
    """`--probe-steps 5 --probe-timeout 900 --allow-estimated-energy`: a switch that is on as the flag alone, one
    that is off left out."""
    return " ".join(flag if value is True else f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
                    for flag, value in probe.items() if value is not False)
