"""No sampler is asked twice for one candidate: every Optuna trial of a study is a new candidate."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import optuna
import pytest

from autotune.backends.simulate import SimulateBackend
from autotune.candidate import KNOBS
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.retries import is_evaluated
from autotune.study.valid import usable_values, valid_checks
from autotune.candidate import params_key
from autotune.study.unique import UniqueCandidateSampler, unique_candidates

# 7B on one GH200 node over a small space (48 candidates, some invalid): a budget of 100 exhausts it.
SPACE = Path(__file__).with_name("small_7b_space.toml")


def _settings():
    return settings_for("--model", "7b", "--nodes", "1", "--space", str(SPACE))


SAMPLERS = {
    "tpe": lambda: optuna.samplers.TPESampler(seed=0, multivariate=True, n_startup_trials=5, constant_liar=True),
    "random": lambda: optuna.samplers.RandomSampler(seed=0),
    "nsga2": lambda: optuna.samplers.NSGAIISampler(seed=0, population_size=8),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_trial_is_a_new_candidate_until_the_space_is_exhausted(tmp_path, name):
    settings = _settings()
    checks = valid_checks(settings)
    valid = {params_key(c.candidate.knobs.to_dict()) for c in checks if c.valid}
    study = open_study(tmp_path, None, SAMPLERS[name](), cheap_figures=True)
    run_study(study, settings, SimulateBackend(), 100, checks=checks)
    keys = Counter(params_key(t.params) for t in study.trials)
    assert max(keys.values()) == 1  # no candidate in two trials
    evaluated = {params_key(t.params) for t in study.trials if is_evaluated(t)}
    assert evaluated == valid  # the budget exceeds the space: all valid ones, each once
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert all(params_key(t.params) not in valid for t in pruned)  # the only other trials: invalid ones
    assert len(study.trials) == len(evaluated) + len(pruned)
    assert not [t for t in study.trials if "duplicate_of" in t.user_attrs]


class _Stubborn(optuna.samplers.BaseSampler):
    """Always proposes one fixed candidate."""

    def __init__(self, knobs):
        self.knobs = knobs

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, name, distribution):
        return self.knobs[name]


def test_a_repeated_proposal_becomes_the_nearest_unprobed_valid_candidate(tmp_path):
    settings = _settings()
    checks = valid_checks(settings)
    valid = [c.candidate.knobs.to_dict() for c in checks if c.valid]
    first = valid[0]
    study = optuna.create_study(directions=["minimize"], sampler=UniqueCandidateSampler(_Stubborn(first), usable_values(checks), valid))
    choices = usable_values(checks)
    proposals = []
    for _ in range(3):
        trial = study.ask()
        proposals.append({k: trial.suggest_categorical(k, choices[k]) for k in KNOBS})
        # Stored as autotune stores an evaluated trial: one told without its result is added outside autotune
        # (study/outside.py), and holds no candidate.
        trial.set_user_attr("candidate", {"knobs": proposals[-1]})
        trial.set_user_attr("result", {"status": "ok", "time_s": 1.0, "energy_kj": None})
        study.tell(trial, 1.0)
    assert proposals[0] == first  # new: kept as proposed
    assert len({params_key(p) for p in proposals}) == 3
    for replaced in proposals[1:]:
        changed = sum(replaced[k] != first[k] for k in KNOBS)
        nearest = min(sum(v[k] != first[k] for k in KNOBS) for v in valid if v != first)
        assert params_key(replaced) in {params_key(v) for v in valid} and changed == nearest
    assert study.sampler.replaced == 2


def test_a_sampler_that_never_repeats_is_not_wrapped():
    class Guided(optuna.samplers.RandomSampler):
        proposes_unique_candidates = True

    sampler = Guided()
    assert unique_candidates(sampler, {}, []) is sampler
    wrapped = unique_candidates(optuna.samplers.RandomSampler(), {k: [0] for k in KNOBS}, [])
    assert isinstance(wrapped, UniqueCandidateSampler) and unique_candidates(wrapped, {}, []) is wrapped
