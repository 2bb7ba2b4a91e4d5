"""Trials that hold an autotune record, but that autotune did not probe in THIS study (trial74 #2).

Optuna users pool results with `study.add_trial(frozen_trial)` from another study, and copy a trial's user_attrs along:
its `candidate` and `result` then look like one of autotune's probes. Taken at face value, a copy of a 16-frame study's
trial became the fastest pick of a 60-frame study (its "workload held fixed for every trial"), its `baseline` mark
moved the baseline, a made-up `measured` figure was ranked in a study whose backend only simulates, and re-adding the
study's own trials counted each candidate's probe twice. What a copy's record says is kept in study.db, but it is no
measurement of this study: such a trial is left out of the probe counts, the guided model, the front and the picks,
as a trial added outside autotune is (outside.py), and named with the setting that gives it away.

What a trial alone shows (its values or params against its own record) is outside.kept_result_fault's; this module
holds what needs the study: its settings, its backend, and its other trials.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from autotune.candidate import params_key
from autotune.study.outside import LEFT_OUT, by_reason, kept_result_fault
from autotune.workload import WORKLOAD_KEYS

NOT_PROBED_HERE = ("not probed in this study, but added to it by hand (study.add_trial: a copied trial, or figures of its "
                   "own)" + LEFT_OUT)
# The source labels each backend's results carry (backends/simulate.py, backends/probe_outcome.py). A replay's
# records may be measured or simulated, so it is not checked; a study of no recorded backend neither.
_SOURCES_BY_BACKEND = {"simulate": {"simulated"}, "launch": {"measured"}}
_ENERGY_SOURCES_BY_BACKEND = {"simulate": {"simulated"}, "launch": {"measured", "estimated", "unavailable"}}


def _other_setting(candidate: dict, settings: dict) -> str | None:
    """The first setting of the trial's candidate that is not the study's (model, GPUs per node, workload), as
    "workload frames 16, this study's 60"; None where none differs. Only what both record is compared: an older
    study's records may lack a key, which is no difference. The hardware profile is not compared: a resumed study may
    take another file of the same node (settings.check_same_as), and its earlier trials keep the first one's path."""
    model, ours = candidate.get("model"), settings.get("model")
    if isinstance(model, dict) and isinstance(ours, dict):
        for key in ("name", "llm", "vision"):
            if key in model and key in ours and model[key] != ours[key]:
                shown = (model[key], ours[key]) if key == "name" else ("other sizes", "its own")
                return f"model {shown[0]}, this study's {shown[1]}"
    count = candidate.get("gpus_per_node")
    if count is not None and settings.get("gpus_per_node") is not None and count != settings["gpus_per_node"]:
        return f"{count} GPUs per node, this study's {settings['gpus_per_node']}"
    workload, held = candidate.get("workload"), settings.get("workload")
    if isinstance(workload, dict) and isinstance(held, dict):
        for key in (*WORKLOAD_KEYS, "precision"):
            if workload.get(key) is not None and held.get(key) is not None and workload[key] != held[key]:
                return f"workload {key.replace('_', ' ')} {workload[key]}, this study's {held[key]}"
    return None


def _other_source(result: dict, backend: str | None) -> str | None:
    """Which of the result's labels the study's backend never writes, as a phrase; None where both fit."""
    for key, by_backend in (("source", _SOURCES_BY_BACKEND), ("energy_source", _ENERGY_SOURCES_BY_BACKEND)):
        label = result.get(key)
        if backend in by_backend and label is not None and label not in by_backend[backend]:
            return f"its result's {key} is {label}, which this study's backend ({backend}) never gives"
    return None


def foreign_trials(study: optuna.Study, trials: list | None = None) -> dict[int, str]:
    """{trial: why it was not probed in this study} for each finished trial holding an autotune record that another
    study's settings made, whose labels this study's backend never gives, or whose candidate an earlier trial of the
    study evaluated (a second record of one probe: autotune marks its own repeats `duplicate_of`, and probes a
    candidate again only after the earlier trial stopped counting: interrupted, or a set-up failure queued again).
    `trials`: the study's, where the caller has read them already."""
    from autotune.study.retries import SETUP_RETRIED_ATTR, is_evaluated  # it reads unique.py, which reads this module

    attrs = study.user_attrs
    settings = attrs.get("settings") if isinstance(attrs.get("settings"), dict) else {}
    backend = attrs["backend"].get("name") if isinstance(attrs.get("backend"), dict) else None
    # Set-up failures queued again: their retries probe the candidate again, and are no copies.
    released = set(attrs.get(SETUP_RETRIED_ATTR, []))
    foreign, evaluated_by = {}, {}
    for t in sorted(trials if trials is not None else study.get_trials(deepcopy=False), key=lambda t: t.number):
        candidate, result = t.user_attrs.get("candidate"), t.user_attrs.get("result")
        finished = t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
        if (not finished or "duplicate_of" in t.user_attrs or not isinstance(result, dict)
                or kept_result_fault(t) is not None):  # no record, or one outside.py leaves out already
            continue
        key = params_key(candidate["knobs"])
        reason = None
        if (other := _other_setting(candidate, settings)) is not None:
            reason = f"its candidate is of {other}"
        elif (other := _other_source(result, backend)) is not None:
            reason = other
        elif key in evaluated_by and is_evaluated(t, released):
            reason = f"its candidate is trial {evaluated_by[key]}'s, which this study evaluated already"
        if reason is not None:
            foreign[t.number] = reason
        elif is_evaluated(t, released):
            evaluated_by.setdefault(key, t.number)
    return foreign


def foreign_line(foreign: dict[int, str]) -> str | None:
    """One line naming the trials not probed in this study and why; None where there are none."""
    if not foreign:
        return None
    many = len(foreign) > 1
    return f"{len(foreign)} trial{'s' if many else ''} {'were' if many else 'was'} {NOT_PROBED_HERE}: {by_reason(foreign)}"
