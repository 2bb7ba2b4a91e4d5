"""How a study in which probes fail ends.

- A run whose first FAILING_START_PROBES probes all fail, while no probe of the study has ever run
  (finished, or run out of memory), stops there with a UserError that names the last failure (a replay
  only where they ran but could not be ranked: its recorded failures are the recording's,
  Backend.failures_may_be_the_setup): that points at the set-up (a module missing on the nodes, an unreachable host, no sensor) rather than
  at the configurations, and the rest of the budget would fail the same way. The trials are kept; the
  same command resumes, with as many tries again (and probes again those that failed on the set-up,
  retries.py).
- `no_probe_succeeded` says why no probe of a study ran to its end (every one failed, timed out or ran
  out of memory): the CLI exits non-zero on it, whatever the budget. A study that probed every candidate of
  its space (FAILING_START_PROBES or fewer) and saw every one fail, with none ever run, never reaches the
  failing-start stop, yet its failures point at the set-up just as much: it marks them as that stop does, so
  the same command, once the set-up is fixed, probes them again (not a resume that probes nothing). Where no
  failure of it is probed again (every one the candidate's own, the trainer having run it), the line names a larger
  --trials, never "run the same command again": that resume, its budget spent, probes nothing. A failure the trainer
  wrote before it said whose a failure was (`unjudged_by_trainer`) is final too, and said to be of unknown cause.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import optuna
from optuna.trial import TrialState

from autotune.counted import counted
from autotune.backends.probe_options import probe_default
from autotune.errors import UserError
from autotune.study.retries import (FAILING_START_ATTR, SETUP_FAILURE_ATTR, TIMED_OUT_UNDER_ATTR, is_evaluated,
                                    released_trials)

# Failed probes in a row, at a run's start and with none of the study's ever run, after which the run
# stops (see above). Three: one failure may be the candidate's; three different candidates failing
# before any has run is the set-up's, and each costs the user a probe's start-up on the cluster.
FAILING_START_PROBES = 3


class FailingStart(UserError):
    """The run's first probes all failed and none of the study's has ever run (see the docstring)."""


def retried_after_failing_start(failed: list) -> list[int]:
    """Of a failing start's trials, those a resume probes again (retries.FAILING_START_ATTR): every one whose probe
    did not run to its end. One that ran but cannot be ranked (its energy only estimated) ran: its candidate is not
    probed twice."""
    return [t.number for t in failed if (t.user_attrs.get("result") or {}).get("status") != "ok"]


def failing_start(evaluated: list, own: set[int], failures_may_be_the_setup: bool = True) -> FailingStart | None:
    """A FailingStart when this run's probes (`own`: the numbers of its trials) are FAILING_START_PROBES or more,
    every one failed, and no probe of the study has ever run (on shared storage another worker's that ran counts too).
    `failures_may_be_the_setup` (Backend's): False for a replay, whose recorded failures are the recording's
    (the rest of it is looked up); its probes that ran but cannot be ranked (no energy to rank by) still stop
    it, as a flag fixes them."""
    if any(t.state != TrialState.FAIL for t in evaluated):
        return None
    now = [t for t in evaluated if t.number in own]
    if len(now) < FAILING_START_PROBES:
        return None
    if not failures_may_be_the_setup and any(t.user_attrs["result"].get("status") != "ok" for t in now):
        return None
    last = max(now, key=lambda t: t.number)
    return FailingStart(
        f"stopped: the {len(now)} probes of this run all failed or timed out and no probe of this study has run "
        f"yet, which points at the set-up rather than the configurations. {_trial_failure(last)}. "
        f"{_fix_that(now)}: {_what_a_resume_does(now, probed_again=failures_may_be_the_setup)}"
    )


def _trial_failure(t: optuna.trial.FrozenTrial) -> str:
    """"Trial N: its reason (its log: PATH)", as the stops and refusals name a failed trial."""
    details = t.user_attrs["result"].get("details") or {}
    log = f" (its log: {Path(details['trial_dir']) / 'log.txt'})" if details.get("trial_dir") else ""
    return f"Trial {t.number}: {t.user_attrs.get('reason') or t.user_attrs['result'].get('status') or 'failed'}{log}"


# A --probe-timeout below this is likely too short for a probe to start at all: torchrun, then Python, torch and
# DeepSpeed start on every rank before the trainer's first step (tens of seconds on a cluster's file system).
PROBE_START_S = 30.0


def _fix_that(failed: list) -> str:
    """"Fix that and run the same command again", or, where every probe timed out (none on a build lock: that one's
    error names its fix), the timeout as the thing to change: the same command times out again (trial 54 F7)."""
    results = [t.user_attrs["result"] for t in failed]
    if not results or any(r.get("status") != "timeout" for r in results) or any(
            t.user_attrs.get(SETUP_FAILURE_ATTR) for t in failed):
        return "Fix that and run the same command again"
    timeouts = {(t.user_attrs.get(TIMED_OUT_UNDER_ATTR) or {}).get("--probe-timeout") for t in failed}
    timeout_s = timeouts.pop() if len(timeouts) == 1 else None
    if not isinstance(timeout_s, (int, float)):  # not a launch study's (a test's backend): no timeout to name
        return ("Every one timed out: if probes need longer (the first may build DeepSpeed's ops), raise --probe-timeout, "
                "else fix what hangs them (their logs say how far they got), and run the command again")
    if timeout_s < PROBE_START_S:
        return (f"Every one timed out at --probe-timeout {timeout_s:g} s, likely too short for a probe to start (Python, "
                "torch and DeepSpeed start first, and the first probe may build DeepSpeed's ops): raise --probe-timeout "
                f"(default {probe_default('probe_timeout_s'):g}) and run the command again")
    return (f"Every one timed out at --probe-timeout {timeout_s:g} s: if probes need longer (the first may build "
            "DeepSpeed's ops), raise --probe-timeout, else fix what hangs them (their logs say how far they got), and "
            "run the command again")


def _what_a_resume_does(failed: list, probed_again: bool = False) -> str:
    setup = sum(bool(t.user_attrs.get(SETUP_FAILURE_ATTR)) for t in failed)
    again = retried_after_failing_start(failed) if probed_again else []
    if again and setup < len(failed):  # probed again (retries.FAILING_START_ATTR)
        these = "this candidate" if len(again) == 1 else f"these {len(again)} candidates"
        return (f"the study resumes and probes {these} again (no probe of the study had run, so "
                "their failures may be the set-up's)")
    if not setup:
        return "the study resumes, and its failed trials are kept"
    kept = "" if setup == len(failed) else " (the others' failures are the candidates' own, and are kept)"
    return f"the study resumes and probes again the {counted(setup, 'candidate')} that failed on the set-up{kept}"


def no_probe_succeeded(study: optuna.Study, others_left: bool = True, replayed: bool = False,
                       unrecorded_left: bool = False) -> str | None:
    """Why no probe of a study that evaluated candidates succeeded (every one failed, timed out or ran out
    of memory), in one line with the fix; None when one ran to its end, or none was evaluated. Whatever the
    budget: the failing-start stop above needs three failures in one run. A probe that ran but cannot be
    ranked (energy only estimated, or missing) succeeded as a probe: its figures and why they are not
    ranked are in the report. `others_left`: whether the space holds valid candidates not evaluated yet
    (on replay: recorded ones). `replayed`: a replay study, whose candidates were looked up, not probed;
    `unrecorded_left`: the space holds valid candidates its file lacks. A study (not a replay) at its space's end
    whose every evaluated probe failed or timed out, none having ever run, records them for a resume to probe
    again (retries.FAILING_START_ATTR), as the failing-start stop does: the space was too small to reach it."""
    released = released_trials(study)
    evaluated = [t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released)]
    if not evaluated or any(t.user_attrs["result"].get("status") == "ok" for t in evaluated):
        return None
    outcomes = Counter(_OUTCOME_WORDS.get(t.user_attrs["result"].get("status"), "failed") for t in evaluated)
    said = " and ".join(f"{count} {words}" for words, count in outcomes.most_common())
    head = (f"no probe of this study succeeded (of its {counted(len(evaluated), 'evaluated candidate')}, {said}), so nothing "
            "is on its front")
    others = "probe others with a larger --trials" if others_left else "every candidate of the space was probed"
    # The memory-saving values only where memory was what failed them: widening fixes no failure (trial54 F4).
    widen = ("widen the space (ZeRO-3, offload, checkpointing, more --nodes in a --space file)" if outcomes["ran out of memory"]
             else "widen the space (other candidates in a --space file)")
    failed = [t for t in evaluated if t.state == TrialState.FAIL]
    failure = f". {_trial_failure(max(failed, key=lambda t: t.number))}" if failed else ""
    if replayed and others_left:
        # A recorded failure is not fixed by running the replay again ("Fix that"): the recording's other records are.
        return f"{head}{failure}: replay the other recorded candidates with a larger --trials"
    if replayed:
        # A larger --trials replays nothing more, and a recorded failure is not fixed by running the replay again:
        # the next step is a probe on hardware, of the candidates the file lacks or of a wider space.
        if unrecorded_left:
            return (f"{head}{failure}. Every recorded candidate was evaluated (the recording is exhausted): measure the "
                    "valid candidates it lacks (--backend launch)")
        return (f"{head}{failure}. Every recorded candidate, and so every valid one of the space, was evaluated: {widen} "
                "and measure its new candidates (--backend launch)")
    if not failed:
        return f"{head}: {others}, or {widen}" if others_left else f"{head}: {others}; {widen}"
    setup = sum(bool(t.user_attrs.get(SETUP_FAILURE_ATTR)) for t in failed)
    again = "" if setup == len(evaluated) else f" ({others})"
    # The space ran out before the failing-start stop's FAILING_START_PROBES: with no probe of the study ever run,
    # these failures may be the set-up's all the same, and a resume that probed nothing left "Fix that" a dead end.
    probed_again = not others_left and len(failed) == len(evaluated)
    if probed_again:
        marked = retried_after_failing_start(failed)
        if marked:
            study.set_user_attr(FAILING_START_ATTR, sorted(set(study.user_attrs.get(FAILING_START_ATTR, [])) | set(marked)))
    if setup or probed_again or _all_timed_out(failed):
        return f"{head}{failure}. {_fix_that(failed)}{again}: {_what_a_resume_does(failed, probed_again=probed_again)}"
    # No failure here is probed again: "Fix that and run the same command again" promised a resume that, its --trials
    # budget spent or its space probed, probed nothing and ended on this same line (trial 69 #7).
    final = _final_words(failed)
    if others_left:
        return (f"{head}{failure}: {final}. A larger --trials probes others (the study resumes, and its failed trials are "
                "kept); where a failure is the machine's rather than the candidate's (its log says), fix that first")
    return f"{head}{failure}: {final}, and every candidate of the space was probed: {widen}"


def unjudged_by_trainer(t: optuna.trial.FrozenTrial) -> bool:
    """A failure the trainer wrote (it names its `failed_rank`) without saying whether it was the set-up's: a trainer
    older than result.json's `setup_failure` wrote it, and such a trainer called its set-up's failures (an unwritable
    ~/.cache) its own as well (trial 69 #7). Which it was, nothing on record tells."""
    details = t.user_attrs["result"].get("details") or {}
    return "failed_rank" in details and "setup_failure" not in details and "refused" not in details


def _final_words(failed: list) -> str:
    """Why no failure of `failed` is probed again: the candidates' own, as the trainer said; or, for one recorded before
    the trainer said so (unjudged_by_trainer), that nothing tells whose it was: "the candidate's own" was not true of an
    old study's set-up failure."""
    unjudged = sum(unjudged_by_trainer(t) for t in failed)
    if not unjudged:
        return ("its failure is the candidate's own (the trainer ran it) and final" if len(failed) == 1
                else "their failures are the candidates' own (the trainer ran them) and final")
    whose = "whether each was the candidate's own or the set-up's, only its log says"
    if len(failed) == 1:
        return ("its failure is final, and was recorded before autotune marked set-up failures: whether it was the "
                "candidate's own or the set-up's, only its log says")
    if unjudged == len(failed):
        return f"their failures are final, and were recorded before autotune marked set-up failures: {whose}"
    return (f"their failures are final: {len(failed) - unjudged} the candidates' own (the trainer ran them), {unjudged} "
            f"recorded before autotune marked set-up failures ({whose})")


def _all_timed_out(failed: list) -> bool:
    """Whether every one of `failed` timed out, none on the set-up: _fix_that then names --probe-timeout, and a resume
    under another one probes them again (retries.TIMED_OUT_UNDER_ATTR)."""
    return all(t.user_attrs["result"].get("status") == "timeout" and not t.user_attrs.get(SETUP_FAILURE_ATTR)
               for t in failed)


# How a probe that did not succeed ended, as a sentence counts them.
_OUTCOME_WORDS = {"oom": "ran out of memory", "timeout": "timed out", "failed": "failed"}
