"""Knob importance: shares over feasible trials only, deterministic, and plain reasons when there
are too few trials or nothing varies."""

import json
import time

import optuna
import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState, create_trial

from autotune.candidate import KNOBS
from autotune.cli import main
from autotune.report.front import Point
from autotune.report.importance import (
    LONG_STUDY_TRIALS, MIN_TRIALS, N_TREES, SEED, SHALLOW_DEPTH, importance_method, knob_importance,
)
from autotune.report.study_points import StudyView
from autotune.study.loop import CONVERGED_ATTR
from autotune.study.storage import METRIC_NAMES

BASE = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
        "micro_batch": 1, "nodes": 4}
DISTRIBUTIONS = {
    "zero_stage": CategoricalDistribution([2, 3]), "optimizer_offload": CategoricalDistribution(["none", "sync"]),
    "activation_checkpointing": CategoricalDistribution(["recompute", "offload_async"]),
    "sp_degree": CategoricalDistribution([1, 2, 4]), "micro_batch": CategoricalDistribution([1, 2, 4]),
    "nodes": CategoricalDistribution([4]),
}


def _study_and_view(trials: list[tuple[dict, tuple[float, float]]], pruned: int = 0):
    """An in-memory study of COMPLETE trials (and PRUNED ones with params but no values), and the
    report's view of it: the complete ones are its feasible points."""
    study = optuna.create_study(directions=["minimize", "minimize"])
    points = []
    for params, values in trials:
        study.add_trial(create_trial(params=params, distributions=DISTRIBUTIONS, values=list(values)))
        number = len(study.trials) - 1
        points.append(Point(trial=number, params=params, time_s=values[0], energy_kj=values[1], gpus=16))
    for i in range(pruned):  # refused before running: params, no values; must not count
        study.add_trial(create_trial(params={**BASE, "sp_degree": 4}, distributions=DISTRIBUTIONS, state=TrialState.PRUNED))
    return study, StudyView(None, [], points, points, {}, None)


def _grid(n: int):
    """sp_degree drives time (x1, x2, x4 faster); micro_batch nudges energy; zero_stage does nothing."""
    rows = []
    for i in range(n):
        params = {**BASE, "sp_degree": (1, 2, 4)[i % 3], "micro_batch": (1, 2, 4)[(i // 3) % 3], "zero_stage": (2, 3)[i % 2]}
        time_s = 1000.0 / params["sp_degree"]
        rows.append((params, (time_s, 500.0 + 40.0 * params["micro_batch"])))
    return rows


def test_shares_rank_the_knob_that_drives_each_objective():
    study, view = _study_and_view(_grid(18), pruned=5)
    importance = knob_importance(study, view)
    assert list(importance) == list(METRIC_NAMES)
    time_shares, energy_shares = importance["time_to_solution_s"], importance["energy_to_solution_kj"]
    assert next(iter(time_shares)) == "sp_degree" and time_shares["sp_degree"] > 0.8
    assert next(iter(energy_shares)) == "micro_batch" and energy_shares["micro_batch"] > 0.8
    assert sum(time_shares.values()) == pytest.approx(1.0, abs=1e-3)
    assert "nodes" not in time_shares  # one value over the trials: nothing to attribute
    assert knob_importance(study, view) == importance  # seeded: the same study gives the same shares


def test_too_few_trials_say_so_and_pruned_trials_do_not_count():
    study, view = _study_and_view(_grid(MIN_TRIALS - 1), pruned=10)
    importance = knob_importance(study, view)
    assert importance["time_to_solution_s"].startswith(f"not enough trials: {MIN_TRIALS - 1} feasible")
    assert importance["time_to_solution_s"].endswith("(run more --trials)")
    # A guided study that stopped on its own would stop again with a larger budget: not that advice.
    study.set_user_attr(CONVERGED_ATTR, {"probes": MIN_TRIALS - 1, "rule": "..."})
    converged = knob_importance(study, view)["time_to_solution_s"]
    assert "run more --trials" not in converged and "the guided study converged on its front first" in converged


def test_nothing_varies_says_so():
    same_values = [(p, (100.0, 50.0)) for p, _ in _grid(9)]
    study, view = _study_and_view(same_values)
    assert "same time_to_solution_s" in knob_importance(study, view)["time_to_solution_s"]
    same_knobs = [(BASE, (100.0 + i, 50.0 + i)) for i in range(9)]
    study, view = _study_and_view(same_knobs)
    assert "same knob values" in knob_importance(study, view)["energy_to_solution_kj"]


def test_pareto_json_and_outputs_carry_importance(simulated_run, capsys):
    doc = json.loads((simulated_run / "pareto.json").read_text())
    assert set(doc["importance"]) == set(METRIC_NAMES) and "fANOVA" in doc["importance_method"]
    for shares in doc["importance"].values():
        assert isinstance(shares, dict) and set(shares) <= set(KNOBS) and sum(shares.values()) == pytest.approx(1.0, abs=1e-3)
    html = (simulated_run / "report.html").read_text()
    assert html.count('class="chart shares"') == 2 and "Which knobs mattered" in html
    top = next(iter(doc["importance"]["time_to_solution_s"]))
    assert main(["report", str(simulated_run), "--format", "md"]) == 0
    assert f"- time to solution: {top} " in capsys.readouterr().out


def test_single_point_run_says_not_enough_trials(single_point_run):
    doc = json.loads((single_point_run / "pareto.json").read_text())
    assert doc["importance"]["energy_to_solution_kj"].startswith("not enough trials: 1 feasible")
    assert "not enough trials: 1 feasible" in (single_point_run / "report.html").read_text()


def test_importance_of_60_trials_costs_little():
    study, view = _study_and_view(_grid(60))
    knob_importance(*_study_and_view(_grid(9)))  # pays scikit-learn's import (about 1.5 s on a slow machine)
    start = time.perf_counter()
    knob_importance(study, view)
    assert time.perf_counter() - start < 1.5  # about 0.5 s on 2 slow cores



def _noisy(n: int):
    """`n` trials over the whole grid of DISTRIBUTIONS, each figure scattered by up to 20% (seeded): unlike _grid's, a
    forest over them grows about one leaf per trial."""
    import random

    draw = random.Random(3)
    rows = []
    for _ in range(n):
        params = {**BASE, **{k: draw.choice(d.choices) for k, d in DISTRIBUTIONS.items()}}
        time_s = 1000.0 / params["sp_degree"] * (1.3 if params["optimizer_offload"] == "sync" else 1.0)
        rows.append((params, (time_s * draw.uniform(0.8, 1.2), (500.0 + 40.0 * params["micro_batch"]) * draw.uniform(0.8, 1.2))))
    return rows


def test_a_long_study_fits_shallow_trees_and_says_so_and_a_short_one_is_as_before(monkeypatch):
    """Trial 70 #1: the importance took 46 s of `report` on an 800-trial study, a full-depth forest's marginal variances
    growing with its leaves. Past LONG_STUDY_TRIALS feasible trials the trees stop at SHALLOW_DEPTH levels, and the
    method (pareto.json's `importance_method`, the HTML report) says so; a shorter study's shares are as before."""
    import math

    made = []
    real = optuna.importance.FanovaImportanceEvaluator

    def evaluator(**kwargs):
        made.append(kwargs)
        return real(**kwargs)

    def full_depth(study) -> dict:
        shares = optuna.importance.get_param_importances(
            study, evaluator=real(n_trees=N_TREES, seed=SEED), target=lambda t: math.log(t.values[0]),
            params=["zero_stage", "optimizer_offload", "activation_checkpointing", "sp_degree", "micro_batch"])
        return {knob: round(float(share), 4) for knob, share in shares.items()}

    short, short_view = _study_and_view(_noisy(LONG_STUDY_TRIALS))
    long, long_view = _study_and_view(_noisy(LONG_STUDY_TRIALS + 50))
    monkeypatch.setattr(optuna.importance, "FanovaImportanceEvaluator", evaluator)
    shares = knob_importance(short, short_view)["time_to_solution_s"]
    assert [m.get("max_depth") for m in made] == [None, None] and shares == full_depth(short)
    assert "levels deep" not in importance_method(len(short_view.points))

    made.clear()
    shares = knob_importance(long, long_view)["time_to_solution_s"]
    assert [m.get("max_depth") for m in made] == [SHALLOW_DEPTH] * 2
    full = full_depth(long)
    assert list(shares) == list(full) and all(abs(shares[k] - full[k]) < 0.02 for k in full), (shares, full)
    assert (f"random forest of {N_TREES} trees, each at most {SHALLOW_DEPTH} levels deep as the study has over "
            f"{LONG_STUDY_TRIALS} feasible trials, seed {SEED}") in importance_method(len(long_view.points))


def test_a_study_that_evaluated_its_whole_space_is_not_told_to_run_more_trials(tmp_path):
    """Trial 54 F2: a space of fewer valid candidates than importance needs, every one evaluated: a larger --trials
    evaluates nothing more, and the note, the importance line and export's refusal say what does."""
    from autotune.errors import UserError
    from autotune.export import choose_trial

    space = tmp_path / "one.toml"
    space.write_text('zero_stage = [3]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["recompute"]\n'
                     'sp_degree = [1]\nmicro_batch = [1]\npower_limit = [1.0]\nsm_clock_mhz = ["max"]\n')
    out = tmp_path / "r"
    assert main(["run", "--model", "32b", "--nodes", "4", "--space", str(space), "--backend", "simulate", "--out",
                 str(out), "-q"]) == 0
    doc = json.loads((out / "pareto.json").read_text())
    for said in doc["importance"].values():
        assert said.endswith("(every valid candidate of the space (1) was evaluated: widen the space)"), said
    assert doc["note"].endswith("no trade-off to choose from; every valid candidate of the space (1) was evaluated: "
                                "widen the space to compare."), doc["note"]
    assert "--trials" not in doc["note"]
    # Export of a study with nothing feasible: the same advice, not "run `autotune run` with more --trials".
    empty = StudyView(None, [{"trial": 0, "status": "oom", "reason": "oom"}], [], [], {}, None)
    with pytest.raises(UserError, match=r"\(1 trial: 1 oom\); every valid candidate of the space \(1\) was evaluated"):
        choose_trial(empty, "knee", None, "every valid candidate of the space (1) was evaluated: widen the space")


def test_a_table_with_no_figure_is_headed_in_base_units_and_export_offers_no_empty_choice():
    """Trial 54 F11: an all-OOM study's trial table read "time ms" and "energy mJ" over n/a alone, and `export --trial`
    of it said "choose one of: none"."""
    from autotune.errors import UserError
    from autotune.export import choose_trial
    from autotune.report.units import energy_unit, time_unit

    assert time_unit([None, None]) == ("s", 1.0) and energy_unit([]) == ("kJ", 1.0)
    assert time_unit([0.002]) == ("ms", 1e-3) and energy_unit([5000.0]) == ("kWh", 3600.0)
    empty = StudyView(None, [{"trial": 0, "status": "oom", "reason": "oom: out of memory"}], [], [], {}, None)
    with pytest.raises(UserError) as refused:
        choose_trial(empty, None, 0)
    assert str(refused.value).endswith("; the study has no feasible trial to export") and "none" not in str(refused.value)
