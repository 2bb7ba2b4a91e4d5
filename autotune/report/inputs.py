"""pareto.json's `inputs`: what set the answer besides the model, hardware, workload and backend the
document already names, so a team lead handed the file can tell two studies apart and re-run one
(trial 47: a study without power limits and the default one read alike, and their least-energy picks
differed by 16%). Read from the study, where `run` keeps them. No time stamp and no command line: two
runs of one command into two directories write the same bytes, which is how a user checks a re-run."""

from __future__ import annotations

import hashlib
import json

from autotune.counted import counted
from autotune.candidate import KNOBS
from autotune.study.loop import PROPOSED_BY_ATTR


def content_sha256(value) -> str:
    """A SHA-256 of a JSON value's content, keys sorted: the same for the same figures however written."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def proposers(trials) -> list[dict]:
    """Each distinct proposer with the trials it proposed, in the order of their first trial. Trials of
    a study older than the record are left out (their count is the difference to `trials`)."""
    from autotune.study.retries import is_evaluated

    groups: dict[str, dict] = {}
    for t in trials:
        who = t.user_attrs.get(PROPOSED_BY_ATTR)
        if not isinstance(who, dict):
            continue
        group = groups.setdefault(json.dumps(who, sort_keys=True), {**who, "trials": [], "evaluated": 0})
        group["trials"].append(t.number)
        # A proposal the space refused is a trial too, not a probe: "--trials 20: 30" read as the budget overrun.
        group["evaluated"] += is_evaluated(t)
    return list(groups.values())


def study_inputs(study, settings) -> dict:
    """The space searched (every knob's values), the hardware profile's content hash (a copied profile
    edited in place keeps its name and path), who proposed the trials, and the backend's own inputs: a
    launch's probe settings, a replay's file and its records' hash."""
    backend = study.user_attrs.get("backend") or {}
    stored = (study.user_attrs.get("settings") or {}).get("hardware_profile")
    return {
        "space": {knob: list(settings.space.values(knob)) for knob in KNOBS},
        "hardware_sha256": content_sha256(stored) if stored is not None else None,
        "proposed_by": proposers(study.get_trials(deepcopy=False)),
        # Trials no `proposed_by` entry covers: those an autotune older than the record proposed (trial52 #6).
        "proposer_not_recorded": sum(not isinstance(t.user_attrs.get(PROPOSED_BY_ATTR), dict)
                                     for t in study.get_trials(deepcopy=False)),
        "probe_settings": ({**(backend.get("probe_settings") or {}), **(backend.get("run_settings") or {})}
                           if backend.get("probe_settings") or backend.get("run_settings") else None),
        "measurements": backend.get("measurements"),
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
            + (f" of {len(who['trials'])} trials" if len(who["trials"]) != who["evaluated"] else "")
            for who in inputs["proposed_by"]))
    if unrecorded := inputs.get("proposer_not_recorded"):
        parts.append(f"{counted(unrecorded, 'trial')}: proposer not recorded (an older autotune)")
    parts.append(f"searched {space_words(inputs['space'])}")
    if inputs.get("hardware_sha256"):
        parts.append(f"hardware profile sha256 {inputs['hardware_sha256'][:12]}")
    if replayed := inputs.get("measurements"):
        parts.append(f"replayed {measurements_text(replayed)}")
    if probe := inputs.get("probe_settings"):
        parts.append(f"probes {probe_settings_text(probe)}")
    return "Inputs: " + "; ".join(parts) + " (pareto.json `inputs`)."


def space_words(space: dict) -> str:
    """`the default space` or `the default space but power_limit 1.0`: the knob values a --space file changed
    from the built-in default (the node counts are --nodes's, said in the header)."""
    from autotune.space.files import load_space

    default = load_space(nodes=(1,))  # the file lists no node counts
    changed = [f"{knob} {'/'.join(map(str, values))}" for knob, values in space.items()
               if knob != "nodes" and tuple(values) != tuple(default.values(knob))]
    return "the default space" + (f" but {', '.join(changed)}" if changed else "")


# How the reports and `autotune compare` word the parts of `inputs`.
def proposer_text(who: dict) -> str:
    """`guided seed 0 (--trials 30, autotune 0.1.0)`, or `queued by hand (...)`: one entry of `proposed_by`."""
    from autotune.study.queued import QUEUED_BY_HAND

    by = "queued by hand" if who["sampler"] == QUEUED_BY_HAND else f"{who['sampler']} seed {who['seed']}"
    return f"{by} (--trials {who['trials_budget']}, autotune {who['autotune_version']})"


def measurements_text(replayed: dict) -> str:
    """`/runs/m.jsonl (528 records, sha256 be740b63307c)`: a replay's `measurements`."""
    return f"{replayed['file']} ({replayed['records']} records, sha256 {replayed['sha256'][:12]})"


def probe_settings_text(probe: dict) -> str:
    """`--probe-steps 5 --probe-timeout 900 --allow-estimated-energy`: a switch that is on as the flag alone, one
    that is off left out."""
    return " ".join(flag if value is True else f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
                    for flag, value in probe.items() if value is not False)
