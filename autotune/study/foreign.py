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

import contextlib
import copy
import weakref
from dataclasses import dataclass, field

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


@dataclass
class _Scan:
    """foreign_trials' reading of a study's finished trials, in number order, kept to go on from where it ended."""

    basis: tuple  # the study's settings, backend and set-up retries: what a trial's reason depends on beside its own
    read: list = field(default_factory=list)  # the finished trials read, in number order
    foreign: dict[int, str] = field(default_factory=dict)
    evaluated_by: dict[str, int] = field(default_factory=dict)  # candidate key: the first trial that evaluated it

    def cut(self, kept: int) -> None:
        """Forget all but the first `kept` trials read. What each trial added has its number, and later trials only add
        (a candidate's first evaluating trial is set once), so what is left is what reading those alone leaves."""
        if kept < len(self.read):
            first_forgotten = self.read[kept].number
            self.read = self.read[:kept]
            self.foreign = {n: why for n, why in self.foreign.items() if n < first_forgotten}
            self.evaluated_by = {key: n for key, n in self.evaluated_by.items() if n < first_forgotten}


# Each study's scan (by the Study object, gone with it). Read once per trial and more (the stop callback, the budget,
# the progress line, the sampler's held candidates all count evaluated trials), a scan of every trial on each call made
# a study's cost per trial grow with its trials. Now each call reads the trials finished since. It cannot go stale,
# across workers either: Optuna refuses any change to a finished trial (UpdateFinishedTrialError), so a finished trial
# read once stays as read; other workers only add trials and finish theirs, and one that finished after a higher-
# numbered one comes before it in number order: the scan goes on from its place (the trials after it read again). The
# study's attributes a reason depends on are compared on each call, and a change reads every trial again. A trial must
# be the very object read (Optuna's storage hands back one object per finished trial, with deepcopy=False), else it is
# read again.
_scans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _scan_of(study: optuna.Study, basis: tuple, finished: list) -> _Scan:
    """The study's scan, cut to the first of `finished` (in number order) it read the same."""
    try:
        scan = _scans.get(study)
    except TypeError:  # a stand-in for a study that cannot be weakly referenced: read every trial
        return _Scan(basis)
    if scan is None or scan.basis != basis:
        scan = _Scan(copy.deepcopy(basis))  # a copy: a stand-in study's attributes may be changed in place
        with contextlib.suppress(TypeError):
            _scans[study] = scan
    same = 0
    for earlier, now in zip(scan.read, finished):
        if earlier is not now:
            break
        same += 1
    scan.cut(same)
    return scan


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
    finished = sorted((t for t in (trials if trials is not None else study.get_trials(deepcopy=False))
                       if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)), key=lambda t: t.number)
    scan = _scan_of(study, (settings, backend, released), finished)
    foreign, evaluated_by = scan.foreign, scan.evaluated_by
    for t in finished[len(scan.read):]:
        scan.read.append(t)
        candidate, result = t.user_attrs.get("candidate"), t.user_attrs.get("result")
        if ("duplicate_of" in t.user_attrs or not isinstance(result, dict)
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
    return dict(foreign)


def foreign_line(foreign: dict[int, str]) -> str | None:
    """One line naming the trials not probed in this study and why; None where there are none."""
    if not foreign:
        return None
    many = len(foreign) > 1
    return f"{len(foreign)} trial{'s' if many else ''} {'were' if many else 'was'} {NOT_PROBED_HERE}: {by_reason(foreign)}"
