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
