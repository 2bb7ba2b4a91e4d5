"""Which trials count as evaluated, and which candidates a resumed study probes again.

- A trial counts as evaluated when its candidate really ran (`is_evaluated`): not pruned unrun, not a
  repeat of another trial's candidate, not interrupted.
- Interrupted trials (Ctrl-C, SIGTERM, a killed run) are queued again on resume (`retry_interrupted`);
  one whose probe had finished keeps its stored result (`killed_after_probe`): the probe is not run twice.
  A retry knows the trials it repeats (`retry_lineage`), so the backend may take over what they completed
  (launch: the finished repeats of `--repeats N`).
- A probe that failed on the set-up, before the trainer ran the candidate (`setup_failure`: the launcher
  missing, nodes out of reach, the launcher exiting without the trainer's result, the trainer's own set-up:
  an unwritable ~/.cache, DeepSpeed's op build), is marked so, and a
  resumed study probes its candidate again (`queue_setup_retries`): the user fixed the set-up in
  between, as the failing-start stop asks (failures.py). Such a trial stops counting as evaluated once
  it is queued again. A candidate's own failure, an out-of-memory and a timeout stay final, but for a
  timeout the launch backend found spent waiting on another build's lock (`setup_failure`), and one whose
  probe ran with other probe settings or --probe-timeout than the resume's (`TIMED_OUT_UNDER_ATTR`): a `--probe-steps 100000`
  typo timed every probe out, and the corrected command never probed those candidates again (the
  baseline among them; a newcomer's trial).
"""

from __future__ import annotations

import weakref
from typing import Collection

import optuna
from optuna.trial import TrialState

from autotune.backends.base import ProbeResult
from autotune.backends.probe_process import TIMEOUT_ON_BUILD_LOCK
from autotune.candidate import KNOBS, params_key
from autotune.study.outside import kept_result_fault
from autotune.study.unique import trial_knobs

# Set on a trial whose probe failed on the set-up (`setup_failure`); the study's list of such trials
# queued again when it resumed (they no longer count as evaluated: their retries do).
SETUP_FAILURE_ATTR = "setup_failure"
SETUP_RETRIED_ATTR = "setup_retried_trials"
RETRIED_ATTR = "retried_trials"
# The study's list of the trials of a failing-start stop (failures.py): with no probe of the study ever run, their
# failures point at the set-up as much as at the candidates (an unwritable HOME failed the trainer on rank 0, which
# read as the candidates' own failure: the baseline was never probed again; trial 43 F4). A resume probes each
# again, once; Optuna keeps a finished trial's attributes as they are, so the list is the study's.
FAILING_START_ATTR = "failing_start_trials"
# On an interrupted trial whose probe an error of the tuner stopped (not Ctrl-C or a signal): that error, in one line.
STOPPED_BY_ATTR = "stopped_by"
# On a trial whose probe timed out: the settings that decided it (Backend.timeout_settings()).
TIMED_OUT_UNDER_ATTR = "timed_out_under"
# On the retry queued for a trial finished from outside autotune while its probe ran (`study.tell` of a RUNNING trial,
# Optuna's way to cancel a hanging one): that probe's result, which the retry records without probing again. Not kept
# as `result`: a queued trial is not evaluated until it is taken.
TOLD_OUTSIDE_ATTR = "told_trial_result"


def is_evaluated(t: optuna.trial.FrozenTrial, released: Collection[int] = ()) -> bool:
    """A trial whose candidate was really evaluated (not pruned unrun, not a repeat, not interrupted).
    `released`: set-up failures queued again (`released_trials(study)`), which their retries replace."""
    # A queued trial is not evaluated whatever it holds: one queued with a copied trial's user_attrs (its result among
    # them, Optuna's way to queue a trial again "as it was") was counted "ok" and evaluated before it ran (trial74 #4).
    return ("result" in t.user_attrs and "duplicate_of" not in t.user_attrs and not killed_after_probe(t)
            and t.state != TrialState.WAITING and t.number not in released
            and not kept_result_fault(t))  # a wrong one is left out (outside.py)


def released_trials(study: optuna.Study) -> set[int]:
    """Trials that hold a result yet count as no probe of the study: those whose probe failed on the set-up and whose
    candidate a resumed run queued again, and those not probed in it (foreign.foreign_trials: a copy of another
    study's trial, a second record of one probe; trial74 #2)."""
    from autotune.study.foreign import foreign_trials  # it reads is_evaluated

    return set(study.user_attrs.get(SETUP_RETRIED_ATTR, [])) | set(foreign_trials(study))


def evaluated_count(study: optuna.Study, recording: bool = False) -> int:
    """Trials of the study whose candidate was evaluated, every worker's: what --trials budgets.
    `recording`: also those whose result is stored while their worker still records the outcome (RUNNING:
    the progress line of a trial is printed then, its own and another worker's alike)."""
    released = released_trials(study)
    return sum(is_evaluated(t, released) or (recording and t.state == TrialState.RUNNING and killed_after_probe(t)
                                             and t.number not in released)
               for t in study.get_trials(deepcopy=False))


def setup_failure(result: ProbeResult) -> bool:
    """Whether a probe failed before the trainer ran the candidate, which points at the set-up, not at
    the candidate: the launch backend could not start the launcher (not installed), could not reach the
    candidate's nodes (a hostfile or an allocation too small), or the launcher ended without the trainer's
    result (a module missing on the nodes, ssh or pdsh refused, srun refused the step), or with a result
    the tuner cannot read (another version on the nodes), or with the trainer's result saying
    `setup_failure` (trainer/setup_fault.py: it failed before DeepSpeed saw the candidate, as on an unwritable
    ~/.cache, or in building DeepSpeed's ops; named a `failed_rank`, it was kept final and the baseline never probed
    again, trial 69 #7). Any other result the trainer writes names the `failed_rank` of a failure of its own
    (DeepSpeed's error, a candidate it refuses): the candidate's.
    Final too: out of memory (a result), a timeout (a hang may be the candidate's, and a retry costs the
    whole timeout) and a launcher killed by SIGKILL (the kernel's OOM killer; one a stop signal from outside ended
    never gets here: launch.ProbeStoppedOutside interrupts its trial); but not a timeout the
    backend found spent waiting on a torch extension build's lock older than the probe
    (`timeout_cause: build_lock`): that time went to another build, not to the candidate. Replayed and
    simulated failures are recorded or computed: they carry no `launcher`, and stay final."""
    details = result.details or {}
    if result.status == "timeout":
        return "launcher" in details and details.get("timeout_cause") == TIMEOUT_ON_BUILD_LOCK
    if result.status != "failed" or "launcher" not in details or "refused" in details:
        return False
    if "failed_rank" in details:
        return details.get("setup_failure") is True
    exit_code = details.get("exit_code")
    return exit_code is None or exit_code >= 0


def killed_after_probe(t: optuna.trial.FrozenTrial) -> bool:
    """A trial whose probe finished (its result is stored) but whose run died before recording the outcome
    (kill -9, Ctrl-C in between): it is RUNNING, or FAIL without the reason every recorded failure carries.
    Its retry takes the stored result: the probe is not run twice, nor lost."""
    if "result" not in t.user_attrs or "duplicate_of" in t.user_attrs or "reason" in t.user_attrs:
        return False
    # A wrong kept result is not taken over as a probe's (outside.py): a FAIL trial edited to -5 s was (trial 68 #3).
    return t.state in (TrialState.RUNNING, TrialState.FAIL) and not kept_result_fault(t)


def evaluated_trials(study: optuna.Study) -> dict[str, optuna.trial.FrozenTrial]:
    done, released = {}, released_trials(study)
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)):
        if is_evaluated(t, released):
            done.setdefault(_candidate_key(study, t), t)
    return done


# Each study's candidate keys of its finished trials (by the Study object, gone with it), each with the trial object it
# was read from: the trial loop asks evaluated_trials on every trial, and a key is the knobs' JSON (params_key), which
# made each ask cost more with each trial. A finished trial cannot change (Optuna refuses: UpdateFinishedTrialError);
# another object of that number (a deep copy, the trial re-read) is read anew.
_candidate_keys: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _candidate_key(study: optuna.Study, t: optuna.trial.FrozenTrial) -> str:
    try:
        keys = _candidate_keys.setdefault(study, {})
    except TypeError:  # a stand-in for a study that cannot be weakly referenced
        keys = {}
    read = keys.get(t.number)
    if read is None or read[0] is not t:
        read = keys[t.number] = (t, params_key(t.user_attrs["candidate"]["knobs"]))
    return read[1]


def timed_out_otherwise(t: optuna.trial.FrozenTrial, probe_settings: dict | None) -> bool:
    """A trial whose probe timed out under other probe settings than `probe_settings` (the resume's)."""
    under = t.user_attrs.get(TIMED_OUT_UNDER_ATTR)
    return bool(probe_settings) and isinstance(under, dict) and under != probe_settings


def setup_retries(study: optuna.Study, probe_settings: dict | None = None) -> list[optuna.trial.FrozenTrial]:
    """The trials whose candidates a resume queues again (queue_setup_retries), in the order it queues them: reads the
    study only, so the report says what a resume probes first."""
    trials = study.get_trials(deepcopy=False)
    released = released_trials(study)

    failing_start = set(study.user_attrs.get(FAILING_START_ATTR, []))

    def retryable(t) -> bool:
        return (bool(t.user_attrs.get(SETUP_FAILURE_ATTR)) or t.number in failing_start
                or timed_out_otherwise(t, probe_settings))

    taken = {params_key(trial_knobs(t)) for t in trials
             if (t.state in (TrialState.RUNNING, TrialState.WAITING) and all(k in trial_knobs(t) for k in KNOBS))
             or (is_evaluated(t, released) and not retryable(t))}
    again = []
    for t in trials:
        if t.state != TrialState.FAIL or not retryable(t) or not is_evaluated(t, released):
            continue
        key = params_key(t.params)
        if key in taken:
            continue
        taken.add(key)
        again.append(t)
    return again


def queue_setup_retries(study: optuna.Study, probe_settings: dict | None = None) -> list[int]:
    """On resume, queue again the candidate of each trial whose probe failed on the set-up, or timed out
    under other probe settings than `probe_settings` (see the module docstring); that trial then counts no
    more as evaluated. Once per trial, and not for a candidate another trial has evaluated since or holds
    queued or running. Returns the trial numbers whose candidates were queued."""
    queued = []
    for t in setup_retries(study, probe_settings):
        attrs = {"retry_of": t.number, **({"baseline": True} if t.user_attrs.get("baseline") else {})}
        study.enqueue_trial(t.params, user_attrs=attrs)
        queued.append(t.number)
    if queued:
        study.set_user_attr(SETUP_RETRIED_ATTR, sorted(set(study.user_attrs.get(SETUP_RETRIED_ATTR, [])) | set(queued)))
    return queued


def found_invalid(t: optuna.trial.FrozenTrial) -> bool:
    """A trial whose candidate was found invalid (a rule broken, no fit, a queued value outside the space), never
    probed: its reason is kept before it is PRUNED (loop._Objective._prune_invalid), so one whose worker died in
    between holds it, and no result. Pruned, never probed again: its retry was counted an interrupted probe and left
    WAITING (trial80 #7). A probe held back before it started keeps a reason too, and is interrupted."""
    return ("reason" in t.user_attrs and "result" not in t.user_attrs and not t.user_attrs.get("interrupted")
            and "duplicate_of" not in t.user_attrs)


def interrupted_retries(study: optuna.Study, trials: list, include_running: bool = True) -> list[tuple]:
    """(trial, its knob values or None) of each trial a stopped run left unfinished that retry_interrupted queues
    again (None: killed before its first suggest, with no values to queue), in its order; reads the study only."""
    done_before = retried_trials(study, trials)
    unfinished = []
    for t in trials:
        running = include_running and t.state == TrialState.RUNNING
        if not (running or (t.state == TrialState.FAIL and (t.user_attrs.get("interrupted") or killed_after_probe(t)))):
            continue
        if t.number in done_before or found_invalid(t):
            continue
        # A trial killed before its first suggest still has its queued knobs (the baseline, a retry).
        unfinished.append((t, t.params if len(t.params) == len(KNOBS) else t.system_attrs.get("fixed_params")))
    return unfinished


def retries_queued_earlier(study: optuna.Study) -> list[int]:
    """The trials whose candidates a run queued again that no run has probed since (a run stopped before it took
    them), in the order a resume takes them (Optuna takes queued trials in order). A retry that records the result
    of a trial told from outside probes nothing, and is not among them."""
    return [t.user_attrs["retry_of"] for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
            if isinstance(t.user_attrs.get("retry_of"), int) and TOLD_OUTSIDE_ATTR not in t.user_attrs]


def interrupted_to_probe(study: optuna.Study, include_running: bool) -> list[int]:
    """The trials a stopped run left unfinished whose candidates retry_interrupted queues again and a resume probes,
    in its order: not one whose probe had finished (its retry takes the stored result), nor one killed before its
    first suggest (nothing to queue)."""
    return [t.number for t, params in interrupted_retries(study, study.get_trials(deepcopy=False), include_running)
            if params and not killed_after_probe(t)]


def first_on_resume(study: optuna.Study) -> tuple[dict, int, str] | None:
    """(knob values, trial number, why) of the candidate a resumed run probes first, before its sampler proposes any:
    a queued trial no run took ("queued"), else the first set-up failure it probes again ("setup"), else the first
    trial a stopped run left unfinished ("interrupted"), as `autotune run` queues them (Optuna takes queued trials in
    order). None where the sampler proposes the next. Another worker's RUNNING trial is not taken for a dead one,
    and a timeout under other probe settings is not weighed: neither is known here."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        params = t.system_attrs.get("fixed_params")
        if params and len(params) == len(KNOBS):
            return dict(params), t.number, "queued"
    again = setup_retries(study)
    if again:
        return dict(again[0].params), again[0].number, "setup"
    for t, params in interrupted_retries(study, study.get_trials(deepcopy=False), include_running=False):
        if params and not killed_after_probe(t):  # one whose probe finished takes its stored result: no probe
            return dict(params), t.number, "interrupted"
    return None


def retry_interrupted(study: optuna.Study, include_running: bool = True) -> int:
    """Queue again the candidates of trials a stopped run left unfinished.

    Interrupted trials (Ctrl-C, SIGTERM) are FAIL with an `interrupted` mark. RUNNING trials (the
    process was killed outright) are failed first, but only with one worker per storage: on shared
    storage a RUNNING trial may be a live worker's, and Optuna's heartbeats retry the dead ones.
    """
    trials = study.get_trials(deepcopy=False)
    for t in trials if include_running else ():
        if t.state == TrialState.RUNNING and found_invalid(t):
            study.tell(t.number, state=TrialState.PRUNED)  # as its worker would have: its constraints are stored
    retried = set(study.user_attrs.get(RETRIED_ATTR, []))  # ours, kept in the study
    queued = 0
    for t, params in interrupted_retries(study, trials, include_running):
        if t.state == TrialState.RUNNING:
            # Public API: tell() finishes a RUNNING trial by number. A run killed between creating a
            # trial and its first suggest leaves one with no params: failed too, or it stays forever.
            study.tell(t.number, state=TrialState.FAIL)
        if not params:
            continue
        attrs = {"retry_of": t.number, **({"baseline": True} if t.user_attrs.get("baseline") else {})}
        study.enqueue_trial(params, user_attrs=attrs)
        retried.add(t.number)
        queued += 1
    if queued:
        study.set_user_attr(RETRIED_ATTR, sorted(retried))
    return queued


def taken_over(trials: list, number: int) -> bool:
    """Whether a retry of trial `number` is queued or made (ours, `retry_of`, or Optuna's heartbeat callback's,
    `failed_trial`): another worker took it for a dead worker's, and probes it again. A retry that keeps the outcome
    of a trial told from outside (TOLD_OUTSIDE_ATTR) is this worker's own."""
    return any(t.number != number and number in (t.system_attrs.get("failed_trial"), t.user_attrs.get("retry_of"))
               and TOLD_OUTSIDE_ATTR not in t.user_attrs for t in trials)


def told_outside_words(t: optuna.trial.FrozenTrial) -> str:
    """"trial 0 was finished from outside autotune (state COMPLETE, values [1.0, 1.0]: Optuna's study.tell)"."""
    values = f", values {t.values}" if t.values is not None else ""
    return f"trial {t.number} was finished from outside autotune (state {t.state.name}{values}: Optuna's study.tell)"


def keep_told_outcome(study: optuna.Study, number: int, knobs: dict, result: dict, attrs: dict) -> int:
    """Queue the candidate of trial `number`, finished from outside autotune while its probe ran, with that probe's
    result (TOLD_OUTSIDE_ATTR) and `attrs` (the probe's wall, the baseline mark): its retry records the outcome without
    a second probe (a timeout costs --probe-timeout again, a hang on real hardware). Returns the retry's number."""
    study.enqueue_trial(knobs, user_attrs={"retry_of": number, TOLD_OUTSIDE_ATTR: result, **attrs})
    return max(t.number for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
               if t.user_attrs.get("retry_of") == number)


def trials_by_number(trials: list) -> dict[int, optuna.trial.FrozenTrial]:
    """The study's trials by number. Optuna numbers them from 0 in order, but a trial deleted from the database by
    hand (Optuna has no API for it, so its users do it in SQL) leaves a gap: a trial's number is then not its index
    in study.get_trials(), and indexing the list by number raised IndexError in report and run (trial 66 #4)."""
    return {t.number: t for t in trials}


def retry_lineage(by_number: dict[int, optuna.trial.FrozenTrial], number: int) -> list[int]:
    """The trials whose candidate trial `number` probes again, the nearest first: the one it retries (Optuna's
    heartbeat retry names it in the system attr `failed_trial`, and copies the user attrs, an older `retry_of`
    among them; ours in `retry_of`), the one that trial retried, and so on. [] for a first attempt.
    `by_number`: the study's trials, trials_by_number's; a retried trial deleted since ends the lineage."""
    lineage, current = [], by_number[number]
    while True:
        parent = current.system_attrs.get("failed_trial", current.user_attrs.get("retry_of"))
        if not isinstance(parent, int) or not 0 <= parent < current.number or parent in lineage or parent not in by_number:
            return lineage
        lineage.append(parent)
        current = by_number[parent]


def retry_words(by_number: dict[int, optuna.trial.FrozenTrial], lineage: list[int]) -> str:
    """A retry in a few words, for its start line: "retry of interrupted trial 0", or "retry of trial 3, which
    failed on the set-up"; "" for a first attempt. `lineage`: retry_lineage's, the nearest first."""
    if not lineage:
        return ""
    if by_number[lineage[0]].user_attrs.get(SETUP_FAILURE_ATTR):
        return f"retry of trial {lineage[0]}, which failed on the set-up"
    if by_number[lineage[0]].user_attrs.get(TIMED_OUT_UNDER_ATTR):
        return f"retry of trial {lineage[0]}, which timed out under other probe settings"
    return f"retry of interrupted trial {lineage[0]}"


def retried_trials(study: optuna.Study, trials: list) -> set[int]:
    """The trials a stopped run left unfinished that were queued again: by retry_interrupted (the study's
    RETRIED_ATTR), or by Optuna's heartbeat callback itself (the retry's system attr `failed_trial`)."""
    return set(study.user_attrs.get(RETRIED_ATTR, [])) | {t.system_attrs["failed_trial"] for t in trials
                                                          if "failed_trial" in t.system_attrs}
