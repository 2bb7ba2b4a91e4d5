"""tpe, random and nsga2 draw with a seed of each worker's own: the --seed as given on a fresh study, one derived
from it and the worker's first trial on a resume or beside another worker (trial70 #5, #6)."""

from __future__ import annotations

import optuna
import pytest

from autotune.backends.simulate import SimulateBackend
from autotune.candidate import KNOBS, params_key
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.guided import GuidedSampler
from autotune.study.loop import make_sampler
from autotune.study.unique import unique_candidates
from autotune.study.valid import usable_values, valid_checks
from autotune.study.worker_seed import worker_seed


def _space():
    """7b on one node: 3,072 candidates, 980 of them valid, so a fresh random draw seldom hits a held one."""
    settings = settings_for("--model", "7b", "--nodes", "1")
    return settings, valid_checks(settings)


def _proposals(study) -> list[str]:
    return [params_key(t.params) for t in study.trials]


@pytest.mark.parametrize("kind", ["random", "nsga2"])
def test_a_resume_with_the_same_seed_draws_afresh_not_neighbours_of_the_first_runs_draws(tmp_path, kind):
    """The resumed sampler drew the first run's sequence again, every draw a candidate the study held, each swapped
    for an unprobed neighbour one knob away (90 of 100 new trials in trial70 #5)."""
    settings, checks = _space()
    first = open_study(tmp_path, None, make_sampler(1, 15, kind, checks), cheap_figures=True)
    run_study(first, settings, SimulateBackend(), 15, checks=checks)
    held = len(first.trials)
    resumed = open_study(tmp_path, None, make_sampler(1, 30, kind, checks), cheap_figures=True)
    run_study(resumed, settings, SimulateBackend(), 30, checks=checks)
    new = len(resumed.trials) - held
    assert new >= 15
    # Swapped proposals: at most a chance hit or two of a held candidate among 3,072 (all of them before).
    assert resumed.sampler.replaced <= 2, (resumed.sampler.replaced, new)
    assert resumed.sampler.base.drawing_seed == worker_seed(1, held) != 1


def test_a_fresh_study_draws_with_the_seed_as_given_and_is_reproducible(tmp_path):
    settings, checks = _space()
    studies = []
    for name in ("a", "b"):
        study = open_study(tmp_path / name, None, make_sampler(3, 10, "random", checks), cheap_figures=True)
        run_study(study, settings, SimulateBackend(), 10, checks=checks)
        studies.append(study)
    assert _proposals(studies[0]) == _proposals(studies[1])
    assert studies[0].sampler.base.drawing_seed == 3


def _ask(study, choices) -> str:
    """One proposal, recorded as autotune records an evaluated trial (a trial without its result holds nothing)."""
    trial = study.ask()
    knobs = {k: trial.suggest_categorical(k, choices[k]) for k in KNOBS}
    trial.set_user_attr("candidate", {"knobs": knobs})
    trial.set_user_attr("result", {"status": "ok", "time_s": 1.0, "energy_kj": 1.0})
    study.tell(trial, [1.0, 1.0])
    return params_key(knobs)


def test_two_workers_started_together_with_one_seed_draw_different_candidates(tmp_path):
    """Both workers built RandomSampler(seed=5): each proposed the other's candidates, and most of one worker's
    proposals were swapped for one-knob neighbours (trial70 #6)."""
    _, checks = _space()
    choices = usable_values(checks)
    valid = [c.candidate.knobs.to_dict() for c in checks if c.valid]
    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(storage=url, study_name="s", directions=["minimize", "minimize"])
    workers = [optuna.load_study(study_name="s", storage=url,
                                 sampler=unique_candidates(make_sampler(5, 40, "random", checks), choices, valid))
               for _ in range(2)]
    for _ in range(20):
        for worker in workers:  # in step: each takes the next trial in turn
            _ask(worker, choices)
    assert [w.sampler.base.drawing_seed for w in workers] == [5, worker_seed(5, 1)]
    assert sum(w.sampler.replaced for w in workers) <= 2


def test_the_guided_sampler_is_not_reseeded():
    _, checks = _space()
    sampler = make_sampler(7, 30, "guided", checks)
    assert isinstance(sampler, GuidedSampler)
    assert unique_candidates(sampler, {}, []) is sampler  # deterministic: never wrapped, never reseeded
