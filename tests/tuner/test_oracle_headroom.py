"""benchmarks/oracle_headroom.py: the least (a) a study that probes the baseline first can reach, and the
oracles (the guided sampler told where the front's interactions are, which of a probe's pairs carries its
miss, or given the interactions in its simulator)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from ground_truths import TableBackend, holds_term, truth_table  # noqa: E402
from oracle_headroom import (BothOracleSampler, InteractionOracleSampler, PairOracleSampler,  # noqa: E402
                             carrying_pairs, least_with_baseline)
from search_efficiency import case_settings  # noqa: E402

from autotune.candidate import params_key  # noqa: E402
from autotune.study import correction, run_study  # noqa: E402
from autotune.study.guided import GuidedSampler  # noqa: E402
from autotune.study.loop import valid_checks  # noqa: E402
from autotune.study.retries import is_evaluated
from autotune.study.valid import usable_values


def test_the_least_a_counts_the_baseline_and_covers_only_what_it_leaves():
    values = np.array([[1.0, 5.0], [2.0, 3.0], [3.0, 1.0], [4.0, 4.0]])
    front = values[:3]
    # Off the front, the baseline covers nothing: it and one probe per front point (none covers two).
    assert least_with_baseline(values, front, (4.0, 4.0)) == 4
    # On the front (or within 1% of a point), it covers that point: it and two more.
    assert least_with_baseline(values, front, (1.0, 5.0)) == 3
    assert least_with_baseline(values, front, (1.005, 5.02)) == 3
    # 2% off is not within 1%; a baseline that ran out of memory covers nothing.
    assert least_with_baseline(values, front, (1.02, 5.0)) == 4
    assert least_with_baseline(values, front, None) == 4
    # The baseline alone covers a one-point front.
    assert least_with_baseline(values, front[:1], (1.0, 5.0)) == 1


@pytest.fixture(scope="module")
def one_pair_32b_4():
    settings = case_settings("32b", "4")
    checks = valid_checks(settings)
    table, clean, terms = truth_table(checks, "one_pair", 0)
    return settings, checks, table, clean, terms


def test_the_pair_oracle_probes_a_holder_of_each_pair_right_after_the_seed_probes(one_pair_32b_4):
    settings, checks, table, clean, terms = one_pair_32b_4
    sampler = PairOracleSampler(checks, usable_values(checks), 0, terms)
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    run_study(study, settings, TableBackend(table), 6, checks=checks)
    knobs = [t.user_attrs["candidate"]["knobs"] for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
             if is_evaluated(t)]
    seeds = {params_key(sampler.predictions.params[i]) for i in sampler.seed_indices(2)}
    first_holder = next(n for n, k in enumerate(knobs) if holds_term(k, terms[0]))
    # The baseline, the predicted front's ends and knee, then the holder (the plain sampler holds the
    # pair only at probe 11 of this truth, docs/benchmarks.md).
    assert first_holder <= 1 + len(seeds)
    assert {params_key(k) for k in knobs[1:first_holder]} <= seeds
    # While a holder is owed the study cannot stop: with the pair held, the guided rule decides.
    fresh = PairOracleSampler(checks, usable_values(checks), 0, terms)
    empty = optuna.create_study(directions=["minimize", "minimize"], sampler=fresh)
    assert fresh._owed_holders(fresh.outlook(empty)) and not fresh.converged(empty)
    assert not sampler._owed_holders(sampler.outlook(study))


def test_the_interaction_oracle_puts_the_truth_s_factors_into_every_holder_s_prediction(one_pair_32b_4, predictions_32b_4):
    _, checks, _, _, terms = one_pair_32b_4
    told = InteractionOracleSampler(checks, usable_values(checks), 0, terms).predictions
    plain = predictions_32b_4
    holds = np.array([holds_term(p, terms[0]) for p in told.params])
    assert holds.any() and not holds.all()
    # one_pair: the pair is 25% faster, its energy as simulated.
    assert np.allclose(told.log_values[holds, 0] - plain.log_values[holds, 0], math.log(0.75))
    assert np.allclose(told.log_values[holds, 1], plain.log_values[holds, 1])
    assert np.allclose(told.time_parts[holds].sum(axis=1), 0.75 * plain.time_parts[holds].sum(axis=1))
    assert np.array_equal(told.log_values[~holds], plain.log_values[~holds])


def test_the_attribution_oracle_puts_a_miss_on_the_pair_that_carries_it(one_pair_32b_4, monkeypatch):
    settings, checks, table, _, terms = one_pair_32b_4
    both = BothOracleSampler(checks, usable_values(checks), 0, terms, terms)
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=both)
    run_study(study, settings, TableBackend(table), 6, checks=checks)
    pred = both.predictions
    carries = carrying_pairs(pred, terms)
    holders = np.array([holds_term(p, terms[0]) for p in pred.params])
    # one_pair: one value pair carries the truth's one interaction, and its column is the pair's holders.
    assert carries.sum() == 1 and np.array_equal(pred.features.pairs[:, carries][:, 0] > 0, holders)
    fitted = []
    monkeypatch.setattr(correction, "_fit_sparse", lambda *a, fit=correction._fit_sparse: fitted.append(fit(*a)) or fitted[-1])
    both._cache = None  # fit again, with the spy in place
    probed = sorted(both.outlook(study).observations.ok)
    assert holders[probed].any()  # the pair oracle had a holder probed
    held = pred.features.pairs[probed].any(axis=0)
    only_holders = held & ~pred.features.pairs[[i for i in probed if not holders[i]]].any(axis=0)
    time_gamma = fitted[0][1]
    # The holder's 25% miss is the carrying pair's alone; the pairs only the holder holds get nothing.
    assert time_gamma[carries][0] > 0.01 and np.all(time_gamma[held & ~carries] == 0)
    # The plain guided sampler, on the same probes, shares the miss among the holder's pairs.
    fitted.clear()
    GuidedSampler(checks, usable_values(checks), 0).outlook(study)
    assert fitted[0][1][only_holders & ~carries].max() > 1e-3


SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "oracle_headroom.py"


def _results(tmp_path, name: str, **changes) -> Path:
    run = {"model": "32b", "nodes": "4", "family": "one_pair", "seed": 0, "oracle": "pairs", "true_front": 8, "fewest": 4,
           "least_with_baseline": 5, "front_pairs": 1, "probes": 37, "converged": True, "to_epsilon_1pct": 9,
           "epsilon_at_stop": 1.0, **changes}
    path = tmp_path / name
    path.write_text(json.dumps({"budget": 60, "runs": [run]}))
    return path


def test_merged_runs_make_the_table_and_a_wrong_one_is_one_line_and_exit_2(tmp_path):
    good = subprocess.run([sys.executable, str(SCRIPT), "--cases", "--merge", str(_results(tmp_path, "good.json")),
                           "--out", str(tmp_path / "out.json")], capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stderr
    # Only the oracles the runs hold get a column; guided is the committed seed 0 run.
    assert good.stdout.splitlines()[2] == "| 32b on 4 | one_pair | 1 | 4 | 5 | 1 | 11 | 9 |"
    assert json.loads((tmp_path / "out.json").read_text())["runs"][0]["to_epsilon_1pct"] == 9
    for name, change in (("late.json", {"to_epsilon_1pct": 38}), ("seed.json", {"seed": -1}), ("oracle.json", {"oracle": "magic"})):
        bad = subprocess.run([sys.executable, str(SCRIPT), "--cases", "--merge", str(_results(tmp_path, name, **change))],
                             capture_output=True, text=True, timeout=120)
        error = bad.stderr.strip().splitlines()[-1]  # after argparse's usage lines
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert f"--merge {tmp_path / name}" in error and next(iter(change)) in error
