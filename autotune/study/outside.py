"""Trials autotune did not make: Optuna users feed a result measured elsewhere into a study with
`study.add_trial(optuna.trial.create_trial(...))`. Such a trial has values, but none of what autotune keeps with a
figure (the result: its source, its probe, its workload), so nothing says what its figures are.

One rule for them: left out everywhere. The report named it nowhere and counted it in nothing, while the guided
sampler's model took its values as a probe's (six more probes, no convergence; non-positive values ended the run
in a scipy traceback), and its candidate counted as held, so it was never probed (trial 66 #6). Now the guided
model and the candidates held leave it out too (its candidate may be probed), the report counts it as invalid
with the reason, and a run says so in one line. Optuna's own samplers (tpe, nsga2) read the study as Optuna does.

A trial whose kept `result` is no record autotune wrote (not an object, a time of -5 s, no `candidate` beside it) is
one such trial too, whatever its state: a FAIL trial edited by hand was taken over by the next run as a probe's
figures (-5,000 ms, then a scipy traceback), and a string or a missing candidate ended run and report in tracebacks
for good (trial 68 #3). It is left out as above, its line naming the value. So is one whose Optuna values or params
are not its kept record's (trial74 #3): autotune completes a trial with its result's figures, for the candidate its
params make, so a trial whose values disagree was made or edited by hand, and which of the two is true nothing says.
"""

from __future__ import annotations

import math
import weakref

import optuna
from optuna.trial import TrialState

from autotune.backends.base import STATUSES
from autotune.checks import number_problem, shown
from autotune.counted import agreeing

# The end of every reason a trial is left out for: the report's sentence (study_points.left_out_sentence) says it once.
LEFT_OUT = "; left out of the search, the front and the picks"
# A row's reason in the report, and the run's line after the trial numbers ("trial 5 was ...").
ADDED_OUTSIDE_REASON = ("added outside autotune (study.add_trial, or told by hand): no autotune result says where its "
                        "figures come from" + LEFT_OUT)


# kept_result_fault's answer for each finished trial asked, by the trial object (Optuna's storage hands back one object
# per finished trial): each count of the study's evaluated trials asks it of every trial, several times a trial, and a
# study's cost per trial grew with its trials. A finished trial cannot change (Optuna refuses:
# UpdateFinishedTrialError), so its answer holds; it goes with the object (a weak reference: an id is reused only once
# its object is gone).
_FINISHED_FAULTS: dict[int, tuple[weakref.ref, str | None]] = {}


def kept_result_fault(t: optuna.trial.FrozenTrial) -> str | None:
    """What is wrong with the trial's kept result as a probe's record (an object, a known status, an ok probe's time
    and energy finite and positive where given), or with the candidate it belongs to; None where it holds none, or a
    sound one."""
    if not isinstance(t, optuna.trial.FrozenTrial) or not t.state.is_finished():
        return _kept_result_fault(t)
    known = _FINISHED_FAULTS.get(id(t))
    if known is not None and known[0]() is t:
        return known[1]
    key = id(t)

    def forget(ref: weakref.ref) -> None:
        if _FINISHED_FAULTS.get(key, (None,))[0] is ref:
            del _FINISHED_FAULTS[key]

    _FINISHED_FAULTS[key] = (weakref.ref(t, forget), fault := _kept_result_fault(t))
    return fault


def _kept_result_fault(t) -> str | None:
    if "result" not in t.user_attrs:
        return None
    result = t.user_attrs["result"]
    if not isinstance(result, dict):
        return f"its result = {shown(result)} is not a probe's record (an object)"
    if result.get("status") not in STATUSES:
        return f"its result.status = {shown(result.get('status'))} is not one of {', '.join(STATUSES)}"
    for key in ("time_s", "energy_kj") if result["status"] == "ok" else ():  # a failed probe's figures rank nothing
        if result.get(key) is None:
            continue  # not measured: the run says the trial cannot be ranked (study/loop.py)
        # Finite and positive, no more: a study of 1e12 samples keeps figures past what a replay file may hold.
        problem = number_problem(result.get(key), low=0, low_open=True)
        if problem:
            return f"its result.{key} = {shown(result.get(key))} {problem}"
    candidate = t.user_attrs.get("candidate")
    if not isinstance(candidate, dict) or not isinstance(candidate.get("knobs"), dict):
        return "it holds a result but no candidate (the knobs its figures are for)"
    return _record_disagreement(t, result, candidate["knobs"])


def _record_disagreement(t: optuna.trial.FrozenTrial, result: dict, knobs: dict) -> str | None:
    """Where the trial's own params or Optuna values are not its kept record's, what differs; else None. autotune
    suggests the params its candidate is built from, and completes a trial with its result's time (and energy): a
    trial added by hand with values of its own (50, 50) beside a copied result was ranked by the result's figures while
    Optuna's best_trials ranked it by its values, and the guided model took those figures for its candidate's."""
    for knob, value in t.params.items():
        if knob in knobs and knobs[knob] != value:
            return f"its candidate.knobs {knob} = {shown(knobs[knob])} is not its param {shown(value)}"
    if t.state != TrialState.COMPLETE or t.values is None:
        return None
    for key, value in zip(("time_s", "energy_kj"), t.values):  # a time-only study has one value
        kept = result.get(key)
        # A figure the result does not hold is no disagreement (kept_result_fault passes it too): the values stand alone.
        if kept is None:
            continue
        if not isinstance(kept, (int, float)) or not math.isclose(value, kept, rel_tol=1e-9):
            return f"its Optuna value {value:g} is not its result.{key} = {shown(kept)}"
    return None


def outside_reason(t: optuna.trial.FrozenTrial, foreign: dict[int, str] | None = None) -> str | None:
    """Why the trial is left out as not autotune's (see the module docstring), or None where it is autotune's.
    `foreign`: the study's trials not probed in it (foreign.foreign_trials), where the caller has them."""
    if t.state == TrialState.COMPLETE and "result" not in t.user_attrs:
        # autotune stores the result before its objective returns the values that complete a trial, so only a
        # trial made outside it completes without one.
        return ADDED_OUTSIDE_REASON
    if t.state == TrialState.PRUNED and not {"reason", "result", "duplicate_of"} & set(t.user_attrs):
        # Every trial autotune prunes keeps why (an invalid candidate, a refused queued value), its out-of-memory
        # result, or the trial it repeats: one pruned by add_trial was in no count and named nowhere (trial 68 #13).
        return ADDED_OUTSIDE_REASON
    fault = kept_result_fault(t)
    if fault:
        return f"{fault}: added or edited by hand{LEFT_OUT}"
    if foreign and t.number in foreign:
        from autotune.study.foreign import NOT_PROBED_HERE  # it reads this module

        return f"{foreign[t.number]}: {NOT_PROBED_HERE}"
    return None


def added_outside(t: optuna.trial.FrozenTrial, foreign: dict[int, str] | None = None) -> bool:
    """A trial added outside autotune, one whose kept result is no record of autotune's, or (given the study's
    `foreign` trials) one not probed in this study (outside_reason)."""
    return outside_reason(t, foreign) is not None


def by_reason(reasons: dict[int, str]) -> str:
    """Trials and why, those of one reason together: "trials 4, 5 (why); trial 7 (why)"."""
    numbers_by_reason: dict[str, list[int]] = {}
    for number, reason in sorted(reasons.items()):
        numbers_by_reason.setdefault(reason, []).append(number)
    return "; ".join(f"trial{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))} ({reason})"
                     for reason, numbers in numbers_by_reason.items())


def added_outside_lines(study: optuna.Study) -> list[str]:
    """Lines naming the study's trials added outside autotune, and that they are left out: one for those without a
    result (COMPLETE or PRUNED), one for each whose kept result is wrong (its value named), one for those not probed
    in this study (foreign.py); none where no trial is."""
    trials = [t for t in study.get_trials(deepcopy=False) if added_outside(t)]
    numbers = [t.number for t in trials if outside_reason(t) == ADDED_OUTSIDE_REASON]
    lines = [f"trial {t.number}: {outside_reason(t)}" for t in trials if t.number not in numbers]
    if numbers:
        lines.insert(0, f"{agreeing(len(numbers), 'trial', 'trials')} {', '.join(map(str, numbers))} "
                        f"{agreeing(len(numbers), 'was', 'were')} {ADDED_OUTSIDE_REASON}")
    from autotune.study.foreign import foreign_line, foreign_trials  # it reads this module

    return lines + ([line] if (line := foreign_line(foreign_trials(study))) else [])
