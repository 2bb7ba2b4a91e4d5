"""Trials queued by hand with Optuna's `study.enqueue_trial` (study/queued.py)."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from tests.cli import autotune_main
from tests.tuner.test_storage import _run_with_a_queued_trial


@pytest.mark.parametrize("queued, said", [
    (True, "zero_stage True (a bool), which is not one of the allowed values 0, 1, 2, 3; it is left unprobed: queue one of "),
    (3.0, "zero_stage 3.0, which is not a whole number; write it without a decimal point or an exponent (3); it is left unprobed"),
])
def test_a_queued_value_of_another_type_is_refused_as_a_space_file_s_is(tmp_path, capsys, queued, said):
    """Trial 66 #2: Optuna's categorical lookup compares by ==, so a queued zero_stage True was probed as ZeRO-1
    and 3.0 as ZeRO-3, without a word; a space file refuses both."""
    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"zero_stage": queued}, 2)
    lines = [line for line in err.splitlines() if "was queued with" in line]
    assert len(lines) == 1 and lines[0].startswith(f"warning: trial {number} was queued with {said}"), err
    trial = optuna.load_study(study_name="s", storage=url).trials[number]
    assert trial.state == TrialState.PRUNED and "candidate" not in trial.user_attrs and said in trial.user_attrs["reason"]


def test_a_queued_whole_power_limit_is_the_space_s_float(tmp_path, capsys):
    """A power limit queued as 1 is the candidate of the space's 1.0 (its identity, params_key, is typed)."""
    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"micro_batch": 2, "power_limit": 1}, 2)
    assert "was queued with" not in err, err
    trial = optuna.load_study(study_name="s", storage=url).trials[number]
    knobs = trial.user_attrs["candidate"]["knobs"]
    assert knobs["power_limit"] == 1.0 and isinstance(knobs["power_limit"], float)


GUIDED = ("run", "--model", "7b", "--nodes", "2", "--backend", "simulate", "-q")
ZERO_3 = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
          "micro_batch": 2, "nodes": 2, "power_limit": 0.8, "sm_clock_mhz": "max"}


def test_a_converged_guided_study_takes_the_trials_queued_by_hand_and_names_those_it_leaves(tmp_path):
    """Trial 66 #1: a converged guided study, resumed with room in its budget, stopped at once and left the trials
    queued by hand WAITING without a word; one where the budget is spent now says it leaves them, and why."""
    from autotune.study.loop import CONVERGED_ATTR

    out = tmp_path / "run"
    assert autotune_main(*GUIDED, "--trials", "12", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    probes = study.user_attrs[CONVERGED_ATTR]["probes"]
    assert probes < 10 and all(t.params != ZERO_3 for t in study.trials)
    study.enqueue_trial(study.trials[1].params)  # a repeat: said, not probed again
    study.enqueue_trial(ZERO_3)
    queued = study.trials[-1].number

    resumed = autotune_main(*GUIDED, "--trials", "12", "--out", out)
    assert resumed.returncode == 0 and "left unprobed" not in resumed.stderr, resumed.stderr
    assert study.trials[queued].state == TrialState.COMPLETE and study.trials[queued].params == ZERO_3
    assert (f"warning: trial {queued - 1} was queued with the candidate of trial 1, evaluated already: it is not probed "
            "again") in resumed.stderr.splitlines(), resumed.stderr
    assert "converged after" in resumed.stderr  # and the converged model stopped it after the queued trial

    study.enqueue_trial({**ZERO_3, "micro_batch": 1})
    study.enqueue_trial({**ZERO_3, "micro_batch": 4})
    spent = autotune_main(*GUIDED, "--trials", str(probes + 1), "--out", out)
    assert spent.returncode == 0, spent.stderr
    assert f"warning: 2 queued trials (trials {queued + 1}, {queued + 2}) are left unprobed, WAITING in the study: the " \
           f"--trials budget of {probes + 1} is spent; a larger --trials takes them" in spent.stderr.splitlines(), spent.stderr


@pytest.mark.parametrize("queued", [{"micro_batch": 2}, {"zero_stage": True}])
def test_a_trial_queued_by_hand_is_no_proposal_of_the_sampler_and_counts_in_the_report(tmp_path, capsys, queued):
    """Trial 66 #3: a queued trial was listed in pareto.json's inputs.proposed_by under the sampler of the run that
    took it, and one whose values were refused was in no entry and no count, named nowhere in the report."""
    import json

    from autotune.report.inputs import inputs_sentence

    url, number, _ = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), queued, 2)
    document = json.loads((tmp_path / "run" / "pareto.json").read_text())
    by_hand = [who for who in document["inputs"]["proposed_by"] if who["sampler"] == "queued"]
    assert [(who["trials"], who["seed"]) for who in by_hand] == [([number], None)]
    sampled = [t for who in document["inputs"]["proposed_by"] if who["sampler"] == "random" for t in who["trials"]]
    assert number not in sampled and len(sampled) + 1 == len(optuna.load_study(study_name="s", storage=url).trials)
    assert document["trials"] == sum(document["trials_by_status"].values()) == len(sampled) + 1
    assert "queued by hand (--trials 4, autotune " in inputs_sentence(document["inputs"])


def test_a_refused_queued_value_s_warning_tells_the_space_from_its_values_with_valid_candidates(tmp_path, capsys):
    """Trial 66 #9: "which this study's space does not hold (1, 2, 3)" of a space of ZeRO 0-3, whose ZeRO-0 has no
    valid candidate for 7b on 2 nodes: the values to queue were called the space."""
    _, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "2"), {"zero_stage": 5, "nodes": 2}, 2)
    lines = [line for line in err.splitlines() if "was queued with" in line]
    assert lines == [f"warning: trial {number} was queued with zero_stage 5, which is not one of the allowed values 0, 1, 2, 3; "
                     "it is left unprobed: queue one of 1, 2, 3 (the values of this study's space that have valid candidates)"], err


def test_a_time_limit_stop_names_the_trials_queued_by_hand_not_the_baseline_and_agrees_with_the_stop_line(tmp_path):
    """Trial 68 #7: a stop before the first probe called the baseline autotune queued itself "1 queued trial (trial 0)
    ... the same command takes it later", beside the stop line's "the same command stops here again"."""
    out = tmp_path / "run"
    run = ("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "4", "--out", out, "--time-limit", "1")
    first = autotune_main(*run)
    assert "stops here again" in first.stderr and "queued trial" not in first.stderr, first.stderr
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    knobs = dict(study.trials[0].system_attrs["fixed_params"])
    study.enqueue_trial({**knobs, "micro_batch": 1 if knobs["micro_batch"] != 1 else 2})
    mine = study.trials[-1].number

    again = autotune_main(*run)
    assert f"warning: 1 queued trial (trial {mine}) is left unprobed, WAITING in the study: the time limit left no room " \
           "for a probe; a run with time for one takes it (the stopped: line says how much)" in again.stderr.splitlines(), \
        again.stderr
    assert "takes it later" not in again.stderr


def test_a_queued_candidate_that_is_not_valid_is_said_in_one_line(tmp_path, capsys):
    """Trial 68 #1: a queued candidate that does not fit in memory was pruned without a word, where every other
    queued case had its line."""
    queued = {"zero_stage": 1, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
              "micro_batch": 4, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}
    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), queued, 2)
    trial = optuna.load_study(study_name="s", storage=url).trials[number]
    assert trial.state == TrialState.PRUNED and trial.user_attrs["reason"].startswith("needs ")
    assert f"warning: trial {number} was queued with a candidate that is not valid: {trial.user_attrs['reason']}; it is " \
           "left unprobed: queue a valid one (`autotune space` lists them)" in err.splitlines(), err


def test_a_queued_key_that_is_no_knob_is_refused_in_one_line(tmp_path, capsys):
    """Trial 68 #2: a misspelt knob (zero_stag) was ignored without a word, and the sampler's value probed instead."""
    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"zero_stag": 2}, 2)
    trial = optuna.load_study(study_name="s", storage=url).trials[number]
    assert trial.state == TrialState.PRUNED and "candidate" not in trial.user_attrs
    assert f"warning: trial {number} was queued with values: unknown key zero_stag; allowed: activation_checkpointing, " \
           "micro_batch, nodes, optimizer_offload, power_limit, sm_clock_mhz, sp_degree, zero_stage; it is left unprobed: " \
           "queue it again with the knobs' names" in err.splitlines(), err


def test_a_queued_node_count_outside_the_space_names_nodes_and_a_new_study_not_widen_space(tmp_path, capsys):
    """Trial 68 #15: "or widen --space", a fix the study refuses (its space is fixed) and for nodes not even the flag."""
    _, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"nodes": 2}, 2)
    assert f"warning: trial {number} was queued with nodes 2, which this study's space does not hold (1); it is left " \
           "unprobed: queue one of those values, or start a new study (--out NEW_DIR) whose --nodes holds it" \
           in err.splitlines(), err


def _resume_with_queued(tmp_path, sampler: str, queued: list[dict]) -> tuple[optuna.Study, list[int], str]:
    """A simulated 7b study of 2 trials, `queued` put in it with enqueue_trial, then resumed with room for them all:
    (the study, the queued trials' numbers, the resume's stderr)."""
    out = tmp_path / "run"
    flags = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--sampler", sampler, "--out", out)
    assert autotune_main(*flags, "--trials", "2").returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    for params in queued:
        study.enqueue_trial(params)
    numbers = [t.number for t in study.trials[-len(queued):]]
    resumed = autotune_main(*flags, "--trials", str(2 + len(queued)))
    assert resumed.returncode == 0, resumed.stderr
    return study, numbers, resumed.stderr


@pytest.mark.parametrize("sampler", ["random", "nsga2", "guided"])
def test_a_partly_queued_trial_is_completed_with_a_valid_candidate_holding_its_values(tmp_path, sampler):
    """Trial74 #5: a trial queued with some knobs was filled in by the sampler's independent draws, which pay no heed
    to validity: {'micro_batch': 8, 'sp_degree': 4} with the sampler's ZeRO-2 ran out of memory and was dropped with
    "queued with a candidate that is not valid", where 76 valid candidates held those values; {} likewise."""
    part = {"micro_batch": 8, "sp_degree": 4}
    study, numbers, err = _resume_with_queued(tmp_path, sampler, [part, part, part, {}, {"zero_stage": 3}])
    assert "not valid" not in err, err
    trials = [study.trials[n] for n in numbers]
    assert all(t.state == TrialState.COMPLETE for t in trials), [(t.number, t.state, t.user_attrs.get("reason")) for t in trials]
    assert all(t.params["micro_batch"] == 8 and t.params["sp_degree"] == 4 for t in trials[:3])
    assert len({tuple(sorted(t.params.items())) for t in trials[:3]}) == 3  # three candidates, none probed twice
    assert trials[4].params["zero_stage"] == 3


def test_a_partly_queued_trial_no_valid_candidate_completes_says_whose_values_were_not_valid(tmp_path):
    """Trial74 #5: the line blamed the user's queue for values the sampler chose ("queued with a candidate that is not
    valid: ..."); queued values no valid candidate holds (async offload needs ZeRO-3) now say so."""
    study, (number,), err = _resume_with_queued(tmp_path, "random", [{"zero_stage": 1, "optimizer_offload": "async"}])
    (line,) = [line for line in err.splitlines() if f"trial {number} was queued" in line]
    assert line.startswith(f"warning: trial {number} was queued with zero_stage 1, optimizer_offload 'async', which no "
                           "valid candidate of this study holds; with the sampler's values for the other knobs it is not "
                           "valid either ("), line
    assert line.endswith("it is left unprobed: queue values a valid candidate holds (`autotune space` lists them)")
    assert study.trials[number].state == TrialState.PRUNED


def test_a_trial_queued_with_a_copied_result_is_neither_ok_nor_evaluated_before_it_runs(tmp_path):
    """Trial74 #4: `enqueue_trial(t.params, user_attrs=t.user_attrs)` (queueing a trial again "as it was") counted the
    queued trial "ok" in the report and evaluated in the resume's line before it ran."""
    from autotune.study.retries import evaluated_count

    out = tmp_path / "run"
    assert autotune_main(*GUIDED, "--trials", "3", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    study.enqueue_trial(study.trials[1].params, user_attrs=study.trials[1].user_attrs)
    assert evaluated_count(study) == 3
    reported = autotune_main("report", out)
    assert reported.returncode == 0, reported.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert document["trials"] == 3 and document["trials_by_status"] == {"ok": 3}
