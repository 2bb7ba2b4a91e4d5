"""Which trial probes a candidate that several workers propose at once, and what a killed run leaves."""

from __future__ import annotations

import time

import optuna
from optuna.trial import TrialState

from autotune.candidate import KNOBS
from autotune.study.loop import _earlier_unfinished_holder, retry_interrupted
from autotune.candidate import params_key

KNOB_VALUES = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
               "micro_batch": 1, "nodes": 2, "power_limit": 1.0, "sm_clock_mhz": "max"}


def _propose(trial, knobs=KNOB_VALUES):
    for knob in KNOBS:
        trial.suggest_categorical(knob, [knobs[knob]])


def test_the_lower_trial_owns_a_candidate_both_propose():
    study = optuna.create_study()
    first, second = study.ask(), study.ask()
    _propose(second)
    _propose(first)
    key = params_key(KNOB_VALUES)
    assert _earlier_unfinished_holder(study, second.number, key) == first.number  # the later one yields
    assert _earlier_unfinished_holder(study, first.number, key) is None  # the earlier one probes


def test_a_later_trial_waits_for_an_earlier_one_still_being_proposed_but_not_for_ever():
    study = optuna.create_study()
    stuck, later = study.ask(), study.ask()  # `stuck` never gets its knobs (its worker died)
    _propose(later)
    start = time.monotonic()
    assert _earlier_unfinished_holder(study, later.number, params_key(KNOB_VALUES), wait_s=0.5) is None
    assert 0.4 <= time.monotonic() - start < 5


def test_a_queued_candidate_is_held_by_its_waiting_trial():
    study = optuna.create_study()
    study.enqueue_trial(KNOB_VALUES)
    later = study.ask()  # pops the queued trial
    assert later.number == 0
    study.enqueue_trial(KNOB_VALUES)  # queued again (a retry), waiting: number 1
    newest = study.ask()
    assert _earlier_unfinished_holder(study, newest.number + 1, params_key(KNOB_VALUES)) == 0


def test_a_run_killed_while_proposing_leaves_nothing_running_and_nothing_queued():
    study = optuna.create_study()
    half = study.ask()  # killed before any knob was set
    whole = study.ask()
    _propose(whole)
    assert retry_interrupted(study) == 1  # only the trial with a whole candidate is queued again
    states = {t.number: t.state for t in study.trials}
    assert states[half.number] == TrialState.FAIL and states[whole.number] == TrialState.FAIL
    assert [t.system_attrs["fixed_params"] for t in study.trials if t.state == TrialState.WAITING] == [KNOB_VALUES]
