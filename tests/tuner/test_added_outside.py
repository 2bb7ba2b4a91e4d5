"""A trial added with Optuna's `study.add_trial` (study/outside.py): left out everywhere, and said so."""

from __future__ import annotations

import json

import optuna

from autotune.candidate import params_key
from autotune.study.unique import held_keys
from tests.cli import autotune_main

RUN = ("run", "--model", "7b", "--nodes", "2", "--backend", "simulate", "-q")
ADDED = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
         "micro_batch": 1, "nodes": 2, "power_limit": 0.8, "sm_clock_mhz": "max"}


def test_a_trial_added_outside_autotune_is_left_out_of_the_search_and_the_report_and_said_so(tmp_path):
    """Trial 66 #6: its values steered the guided model (non-positive ones ended the run in a scipy traceback),
    its candidate was held and never probed, and the report named it nowhere."""
    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    assert all(t.params != ADDED for t in study.trials)
    study.add_trial(optuna.trial.create_trial(params=ADDED, distributions=study.trials[1].distributions, values=[-5.0, 0.0]))
    added = study.trials[-1].number
    assert params_key(ADDED) not in held_keys(study)  # free to be proposed: its figures are not autotune's

    resumed = autotune_main(*RUN, "--trials", "6", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    assert f"warning: trial {added} was added outside autotune (study.add_trial, or told by hand): no autotune result " \
           "says where its figures come from; left out of the search, the front and the picks" in resumed.stderr.splitlines()
    document = json.loads((out / "pareto.json").read_text())
    assert document["trials"] == len(study.trials)  # counted, as invalid
    assert added not in [point["trial"] for point in document["front"]]


def _kept_result_trial(study, state, edit) -> int:
    """A copy of trial 1 (its knobs made unprobed) added by hand with `edit` made to its user attrs."""
    earlier = study.trials[1]
    attrs = json.loads(json.dumps(earlier.user_attrs))
    attrs["candidate"]["knobs"] = {**attrs["candidate"]["knobs"], **ADDED}
    edit(attrs)
    values = [1.0, 1.0] if state == optuna.trial.TrialState.COMPLETE else None
    study.add_trial(optuna.trial.create_trial(params=ADDED, distributions=earlier.distributions, state=state,
                                              values=values, user_attrs=attrs))
    return study.trials[-1].number


def test_a_wrong_kept_result_is_left_out_in_one_line_and_the_good_trials_still_reported(tmp_path):
    """Trial 68 #3: a FAIL trial's result edited to -5 s was taken over as a probe's (-5,000 ms, then a scipy
    traceback); a result that is a string, or one without a candidate, ended run and report in tracebacks."""
    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    FAIL, COMPLETE = optuna.trial.TrialState.FAIL, optuna.trial.TrialState.COMPLETE
    negative = _kept_result_trial(study, FAIL, lambda a: a["result"].update(time_s=-5.0, energy_kj=1e-3))
    text = _kept_result_trial(study, FAIL, lambda a: a.update(result="garbage"))
    no_candidate = _kept_result_trial(study, COMPLETE, lambda a: a.pop("candidate"))

    reported = autotune_main("report", out)
    assert reported.returncode == 0, reported.stderr
    resumed = autotune_main(*RUN, "--trials", "6", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stderr.splitlines()
    hand = ": added or edited by hand; left out of the search, the front and the picks"
    assert f"warning: trial {negative}: its result.time_s = -5.0 is out of range; it must be a number > 0{hand}" in lines
    assert f'warning: trial {text}: its result = "garbage" is not a probe\'s record (an object){hand}' in lines
    assert f"warning: trial {no_candidate}: it holds a result but no candidate (the knobs its figures are for){hand}" in lines
    assert "-5,000 ms" not in resumed.stdout + resumed.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert document["trials"] == len(study.trials)  # each counted, as invalid
    assert {negative, text, no_candidate}.isdisjoint(point["trial"] for point in document["front"])
    assert document["front"]


def test_a_trial_added_outside_autotune_as_pruned_is_counted_and_named(tmp_path):
    """Trial 68 #13: a PRUNED trial added with add_trial (no reason) was in no count ("7 trials" against Optuna's 8),
    named by no run, and export said only that it was no feasible evaluated trial."""
    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    study.add_trial(optuna.trial.create_trial(params=ADDED, distributions=study.trials[1].distributions,
                                              state=optuna.trial.TrialState.PRUNED))
    added = study.trials[-1].number

    resumed = autotune_main(*RUN, "--trials", "4", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    assert f"warning: trial {added} was added outside autotune (study.add_trial, or told by hand): no autotune result " \
           "says where its figures come from; left out of the search, the front and the picks" in resumed.stderr.splitlines()
    assert json.loads((out / "pareto.json").read_text())["trials"] == len(study.trials)


def test_a_trial_whose_optuna_values_are_not_its_kept_result_is_left_out_of_the_model_and_named(tmp_path):
    """Trial74 #3: values (50, 50) beside a copied result: the report ranked it by the result, Optuna's best_trials by
    its values, and the guided model took the result's figures for its candidate's (seven more probes of its
    neighbours), without a word."""
    from autotune.study.outlook import observe

    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    added = _kept_result_trial(study, optuna.trial.TrialState.COMPLETE, lambda attrs: None)  # values (1, 1)
    # The guided model's observations, indexed here by trial number (any index holding every candidate will do).
    seen = observe(study, {params_key(t.params): t.number for t in study.trials})
    assert seen.ok and added not in seen.ok and added not in seen.failed

    reported = autotune_main("report", out)
    assert reported.returncode == 0, reported.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert added not in {p["trial"] for p in document["feasible"]} | set(document["recommendations"].values())
    time_s = study.trials[1].user_attrs["result"]["time_s"]
    assert (f"Left out of the search, the front and the picks as no probe of this study: trial {added} (its Optuna "
            f"value 1 is not its result.time_s = {time_s!r}: added or edited by hand)") in document["note"]
    assert document["note"] in " ".join(reported.stdout.split())
