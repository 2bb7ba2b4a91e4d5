"""Which trial probes a candidate that several workers propose at once, and what a killed run leaves."""

from __future__ import annotations

import time

import optuna
from optuna.trial import TrialState

from autotune.candidate import KNOBS
from autotune.study.loop import _earlier_unfinished_holder
from autotune.study.retries import retry_interrupted
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


def test_a_proposal_waits_for_the_knobs_of_an_earlier_trial_still_being_proposed():
    import threading

    from autotune.study.unique import settled_trials

    study = optuna.create_study()
    earlier, later = study.ask(), study.ask()  # another worker is proposing `earlier`
    threading.Timer(0.3, _propose, (earlier,)).start()
    trials = settled_trials(study, later.number, wait_s=10)
    assert trials[earlier.number].params == KNOB_VALUES  # its candidate counts as taken
    assert settled_trials(study, earlier.number, wait_s=10)[later.number].params == {}  # never waits on a later one


def test_a_candidate_the_study_has_evaluated_is_not_probed_again_nor_complete_twice(tmp_path):
    from autotune.study import run_study

    settings, study, _, _, _ = _study_with_a_probe_whose_run_died(tmp_path, "failed")
    first = study.trials[1]
    study.enqueue_trial(first.params)  # proposed again (another worker's, when nothing else was free)
    backend = _CountingBackend()
    run_study(study, settings, backend, 6)
    twin = next(t for t in study.trials if t.user_attrs.get("duplicate_of") == first.number)
    assert twin.state == TrialState.FAIL and params_key(first.params) not in backend.asked
    assert [t.number for t in study.best_trials if t.params == first.params] in ([], [first.number])


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


class _CountingBackend:
    """The simulator, counting which candidates it was asked to evaluate."""

    def __init__(self):
        from autotune.backends.simulate import SimulateBackend

        self.inner, self.asked = SimulateBackend(), []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def evaluate(self, candidate, trial_number=0):
        self.asked.append(params_key(candidate.knobs.to_dict()))
        return self.inner.evaluate(candidate, trial_number)


def _study_with_a_probe_whose_run_died(tmp_path, how: str):
    """A 32b study of 3 probes, then a 4th whose result was stored but whose run died before recording it:
    `running` (kill -9: the trial stays RUNNING), `failed` (Ctrl-C in between: FAIL without a reason),
    `heartbeat` (a shared storage's heartbeat failed it and Optuna queued its own retry, user attrs copied)."""
    from autotune.backends.simulate import SimulateBackend
    from autotune.commands.options import settings_for
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler
    from autotune.study.retries import evaluated_trials
    from autotune.study.valid import valid_checks

    settings = settings_for("--model", "32b", "--nodes", "4")
    study = open_study(tmp_path, None, make_sampler(0, 8))
    run_study(study, settings, SimulateBackend(), 3)
    done = evaluated_trials(study)
    check = next(c for c in valid_checks(settings) if c.valid and params_key(c.candidate.knobs.to_dict()) not in done)
    knobs = check.candidate.knobs.to_dict()
    study.enqueue_trial(knobs)
    trial = study.ask()
    for knob in KNOBS:
        trial.suggest_categorical(knob, study.trials[0].distributions[knob].choices)
    assert trial.params == knobs
    trial.set_user_attr("candidate", check.candidate.to_dict())
    result = SimulateBackend().evaluate(check.candidate, trial.number)
    trial.set_user_attr("result", result.to_dict())
    if how in ("failed", "heartbeat"):
        study.tell(trial.number, state=TrialState.FAIL)
    if how == "heartbeat":
        frozen = study.trials[trial.number]
        study.add_trial(optuna.create_trial(state=TrialState.WAITING, params=frozen.params,
                                            distributions=frozen.distributions, user_attrs=frozen.user_attrs,
                                            system_attrs={"failed_trial": trial.number}))
    return settings, study, trial.number, knobs, result


import pytest  # noqa: E402


@pytest.mark.parametrize("how", ["running", "failed", "heartbeat"])
def test_a_probe_whose_run_died_before_recording_it_is_neither_lost_nor_run_again(tmp_path, how):
    from autotune.study import run_study
    from autotune.study.retries import evaluated_trials

    settings, study, killed, knobs, result = _study_with_a_probe_whose_run_died(tmp_path, how)
    backend = _CountingBackend()
    run_study(study, settings, backend, 6)
    assert params_key(knobs) not in backend.asked  # its stored result was taken, not probed again
    retry = evaluated_trials(study)[params_key(knobs)]
    assert retry.number > killed and retry.state == TrialState.COMPLETE
    assert retry.values == [result.time_s, result.energy_kj]
    assert study.trials[killed].state == TrialState.FAIL
    assert sum(t.user_attrs.get("retry_of") == killed or t.system_attrs.get("failed_trial") == killed
               for t in study.trials) == 1  # one retry: Optuna's, or ours
    assert len(evaluated_trials(study)) == 6  # the budget counts the probe once
    from autotune.report import study_view

    rows = study_view(study).trials  # the report: the retry is the candidate's outcome, the dead run's trial not a second one
    assert killed not in [r["trial"] for r in rows] and [r["status"] for r in rows if r["trial"] == retry.number] == ["ok"]
    assert "fail" not in [r["status"] for r in rows]
