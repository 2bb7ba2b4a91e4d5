"""Trials queued by hand: Optuna users put a known configuration in a study with `study.enqueue_trial(params)`,
which keeps the values in the trial's system attr `fixed_params`, and the next trial takes them.

A queued value is read as a space file's is (candidate.knob_value): a knob value is part of a candidate's
identity, so it must be of the knob's type. Optuna's categorical lookup compares by ==, so `zero_stage=True`
was probed as ZeRO-1 and `3.0` as ZeRO-3 without a word (trial 66 #2); such a trial is left unprobed, one
line saying why, as one with a value the space lacks is.

A queued trial is the user's explicit request: a converged guided study takes the queued trials before it stops
(`waiting_trials`), as it does a resume's retries. Where the study has no room left for them (its --trials budget
spent, every candidate it can evaluate evaluated, the time limit) they stay WAITING in the study, and the run
says so in one line (`left_waiting`): a resume that stopped at once had left them there without a word (trial 66 #1).
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.candidate import KNOBS, knob_value, params_key
from autotune.checks import refuse_unknown_keys
from autotune.counted import agreeing, counted
from autotune.errors import ConfigError
from autotune.study.unique import changed_knobs, held_keys


# The proposer pareto.json's inputs.proposed_by names for a trial queued by hand: no sampler drew it, and it was
# counted among the proposals of the sampler of the run that took it (trial 66 #3).
QUEUED_BY_HAND = "queued"


class QueuedOutsideSpace(Exception):
    """A trial queued by hand (Optuna's `study.enqueue_trial`) with a knob value the space does not hold."""


def _frozen(trial: optuna.Trial) -> optuna.trial.FrozenTrial:
    """The trial as stored: a live Trial does not show its system attrs."""
    return next(t for t in trial.study.get_trials(deepcopy=False) if t.number == trial.number)


def queued_params(trial: optuna.Trial) -> dict:
    """The knob values `trial` was queued with ({} for the sampler's proposal)."""
    return _frozen(trial).system_attrs.get("fixed_params", {})  # where enqueue_trial keeps them


def proposer(trial: optuna.Trial, proposed_by: dict) -> dict:
    """Who proposed `trial`, as loop.PROPOSED_BY_ATTR keeps it: `proposed_by` (the run's sampler, seed, budget and
    version), but for a trial queued by hand, QUEUED_BY_HAND with no seed."""
    if not _queued_by_hand(_frozen(trial)):
        return proposed_by
    return {**proposed_by, "sampler": QUEUED_BY_HAND, "seed": None}


def queued_repeat(trial: optuna.Trial, earlier: int) -> str | None:
    """One line for a trial queued by hand with a candidate trial `earlier` evaluated, None for any other trial: it is
    not probed again (its `duplicate_of` says so in the study), and the run that took it said nothing (trial 66 #1)."""
    if not _queued_by_hand(_frozen(trial)):
        return None
    return (f"trial {trial.number} was queued with the candidate of trial {earlier}, evaluated already: "
            "it is not probed again")


def queued_invalid(trial: optuna.Trial, reason: str) -> str | None:
    """One line for a trial queued by hand whose candidate is invalid (`reason`: out of memory by the estimate, or a
    rule it breaks), None for any other trial: the user asked for that configuration, and it was pruned without a
    word where every other queued case gets its line (trial 68 #1). Queued with some knobs only, no valid candidate
    holds their values (queued_completion): the others were the sampler's, and the line says so (trial74 #5)."""
    frozen = _frozen(trial)
    if not _queued_by_hand(frozen):
        return None
    if partly_queued(frozen) is None:
        return (f"trial {trial.number} was queued with a candidate that is not valid: {reason}; it is left unprobed: "
                "queue a valid one (`autotune space` lists them)")
    given = partly_queued(frozen)
    values = ", ".join(f"{knob} {value!r}" for knob, value in given.items()) or "no knob values"
    return (f"trial {trial.number} was queued with {values}, which no valid candidate of this study holds; with the "
            f"sampler's values for the other knobs it is not valid either ({reason}); it is left unprobed: queue values "
            "a valid candidate holds (`autotune space` lists them)")


def partly_queued(trial: FrozenTrial) -> dict | None:
    """The knob values of a trial queued with some knobs, not all (Optuna's `enqueue_trial` with a part of a candidate,
    or {}), or None for any other trial."""
    queued = trial.system_attrs.get("fixed_params")
    if queued is None or all(knob in queued for knob in KNOBS):
        return None
    return queued


def queued_completion(study: optuna.Study, trial: FrozenTrial, proposal: dict, valid: Iterable[dict]) -> dict:
    """The candidate a partly queued trial (partly_queued) is probed as: of the `valid` ones holding its queued values,
    the nearest to the sampler's `proposal` (fewest knobs changed; one no trial holds yet first; ties broken by the
    trial number, as unique.py does). Optuna filled the knobs a queued trial leaves out with the sampler's independent
    draws, which pay no heed to validity: queued as micro-batch 8 and SP 4, it ran out of memory with the sampler's
    ZeRO-2 and was dropped as an invalid candidate the user queued, where 76 valid ones held those values (trial74 #5).
    {} where no valid candidate holds them, or one of them is no knob's value (suggest_knobs and queued_invalid say so):
    the sampler fills the rest as before."""
    given = {}
    for knob, value in (partly_queued(trial) or {}).items():
        try:
            if knob not in KNOBS:
                raise ValueError(knob)
            given[knob] = knob_value(knob, value)
        except ValueError:  # a misspelt knob or a mistyped value: refused by suggest_knobs
            return {}
    holding = [knobs for knobs in valid if all(knobs[knob] == value for knob, value in given.items())]
    if not holding:
        return {}
    held = held_keys(study, except_number=trial.number)
    pool = [knobs for knobs in holding if params_key(knobs) not in held] or holding
    fewest = min(changed_knobs(proposal, knobs) for knobs in pool)
    return dict(random.Random(trial.number).choice([knobs for knobs in pool if changed_knobs(proposal, knobs) == fewest]))


def _queued_by_hand(frozen: optuna.trial.FrozenTrial) -> bool:
    """Queued by the user: the baseline and the retries (ours, and Optuna's heartbeat's) are queued too, by autotune."""
    own = "baseline" in frozen.user_attrs or "retry_of" in frozen.user_attrs or "failed_trial" in frozen.system_attrs
    return not own and "fixed_params" in frozen.system_attrs


def suggest_knobs(trial: optuna.Trial, choices: dict[str, list], space=None) -> dict:
    """The trial's knob values from the sampler (or a queued trial's own); `space`: the study's search space,
    to tell a queued value it lacks from one no valid candidate of it uses."""
    params, queued = {}, queued_params(trial)
    try:
        # A misspelt knob (zero_stag=3) was ignored, and the sampler's value probed in its place (trial 68 #2).
        refuse_unknown_keys(f"trial {trial.number} was queued with values", queued, KNOBS,
                            "it is left unprobed: queue it again with the knobs' names")
    except ConfigError as why:
        raise QueuedOutsideSpace(str(why)) from None
    with warnings.catch_warnings():  # Optuna's own warning of a queued value: QueuedOutsideSpace says it in our words
        warnings.simplefilter("ignore", UserWarning)
        for knob in KNOBS:
            if knob in queued:
                try:
                    knob_value(knob, queued[knob])
                except ValueError as why:
                    raise QueuedOutsideSpace(_mistyped(trial.number, knob, queued[knob], why, choices, space)) from None
            try:
                params[knob] = trial.suggest_categorical(knob, choices[knob])
            except ValueError:  # Optuna's "'0.5' not in (1.0, 0.9, ...)" for a queued value: a traceback ended the run
                raise QueuedOutsideSpace(_outside(trial.number, knob, queued.get(knob), choices, space)) from None
            if knob in queued:  # Optuna hands back the queued value itself: a power limit of 1 is the space's 1.0
                params[knob] = knob_value(knob, params[knob])
    return params


def _mistyped(number: int, knob: str, queued, why: ValueError, choices: dict[str, list], space) -> str:
    """A queued value that is no value of the knob at all: of another type (True, 3.0, '3'), or outside its range."""
    kind = f" (a {type(queued).__name__})" if isinstance(queued, bool) else ""  # True == 1 in Python: say what it is
    return (f"trial {number} was queued with {knob} {queued!r}{kind}, which {why}; it is left unprobed: "
            f"{_to_queue(knob, choices, space)}")


def _outside(number: int, knob: str, queued, choices: dict[str, list], space) -> str:
    """Why a queued trial's `knob` value cannot be probed: one the space lacks, or one no valid candidate uses."""
    if space is not None and queued in space.values(knob):
        # In the space, and in no valid candidate of it (ZeRO-0 for 32b on 4 nodes): --space cannot help.
        why = (f"which no valid candidate of this study has (each runs out of memory or breaks a rule: "
               f"`autotune space` says why); it is left unprobed: queue one of {_listed(choices[knob])}")
    else:
        held = space.values(knob) if space is not None else choices[knob]
        instead = "queue one of those values" if set(held) == set(choices[knob]) else _to_queue(knob, choices, space)
        # Not "widen --space": a study's space is fixed (a resume with a wider one is refused), and its nodes are
        # --nodes' (trial 68 #15). A new study is what takes the value.
        flag = "--nodes" if knob == "nodes" else "--space"
        why = (f"which this study's space does not hold ({_listed(held)}); it is left unprobed: {instead}, or start a new "
               f"study (--out NEW_DIR) whose {flag} holds it")
    return f"trial {number} was queued with {knob} {queued!r}, {why}"


def _to_queue(knob: str, choices: dict[str, list], space) -> str:
    """The values to queue instead: the space's that have valid candidates, said so where the space holds others (the
    warning listed only those as "this study's space", and a space of ZeRO 0-3 read as one without ZeRO-0; trial 66 #9)."""
    usable = _listed(choices[knob])
    if space is None or set(space.values(knob)) == set(choices[knob]):
        return f"queue one of {usable}"
    return f"queue one of {usable} (the values of this study's space that have valid candidates)"


def _listed(values) -> str:
    return ", ".join(map(str, values))


def waiting_trials(study: optuna.Study) -> list[int]:
    """The numbers of the study's queued trials no run has taken yet (WAITING): queued by hand, or a resume's retries
    (retries.py). A converged model does not stop the study before them: they were asked for (by the user, or by the
    run that said it would probe them again), and their figures may move the front it converged on."""
    return [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))]


def left_waiting(study: optuna.Study, evaluated: int, n_trials: int, valid_total: int, stopped_by_time: bool) -> str | None:
    """One line for the trials queued by hand a run leaves WAITING, and why (None where it leaves none). `evaluated`: the
    study's evaluated candidates (what --trials counts); `valid_total`: the candidates it can evaluate."""
    # The user's own queued trials: the baseline autotune queues itself was called "1 queued trial (trial 0)" beside
    # the time-limit stop line, and a resume's retries have their own line (trial 68 #7).
    numbers = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)) if _queued_by_hand(t)]
    if not numbers:
        return None
    them = agreeing(len(numbers), "it", "them")
    if evaluated >= n_trials:
        why = f"the --trials budget of {n_trials} is spent; a larger --trials takes {them}"
    elif evaluated >= valid_total:
        why = (f"every candidate this study can evaluate is evaluated, so {agreeing(len(numbers), 'it', 'each')} repeats an "
               "evaluated one or is one the study cannot evaluate (invalid, or with no record to replay)")
    elif stopped_by_time:
        # Not "the same command takes them later": where no probe fitted, the same command stops there again (the
        # stop line says so, and what time lets a probe start).
        why = f"the time limit left no room for a probe; a run with time for one takes {them} (the stopped: line says how much)"
    else:
        why = f"the study stopped before taking {them}; the same command takes {them}"
    trials = f"{agreeing(len(numbers), 'trial', 'trials')} {', '.join(map(str, numbers))}"
    return (f"{counted(len(numbers), 'queued trial')} ({trials}) {agreeing(len(numbers), 'is', 'are')} left unprobed, "
            f"WAITING in the study: {why}")
