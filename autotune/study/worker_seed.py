"""Each worker of a study draws with a seed of its own (tpe, random, nsga2).

Optuna's seeded samplers draw the same sequence from the same seed. A resume with the same --seed, or a second
worker started beside the first (the seed defaults to 0), then proposed the candidates the study already held,
and the de-duplication (unique.py) swapped each for a valid neighbour one knob away: a local walk around the
first run's sample instead of more random draws (trial70 #5, #6). Optuna's advice for distributed studies is a
seed per worker.

So the sampler is built at the worker's first trial, with the --seed as given where that trial is the study's
first (trial 0: a fresh study, so the same command and seed give the same study, as before), else with a seed
derived from the --seed and that trial's number. The number is the study's size when the worker starts (a
resume), and no two workers get the same one (Optuna numbers trials in the storage), so every worker draws
afresh, and a resume of a given study is reproducible too. The guided sampler is deterministic by design and is
not built here (loop.make_sampler).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState


def worker_seed(seed: int | None, first_trial_number: int) -> int | None:
    """The seed a worker whose first trial is `first_trial_number` draws with: `seed` itself on the study's first
    trial (and None, unseeded, stays None), else one mixed from both (numpy's SeedSequence: nearby inputs give
    unrelated seeds, the same inputs the same seed on every platform)."""
    if seed is None or first_trial_number == 0:
        return seed
    return int(np.random.SeedSequence([seed, first_trial_number]).generate_state(1, dtype=np.uint32)[0])


class WorkerSeededSampler(optuna.samplers.BaseSampler):
    """Builds `build(seed)`, the sampler it stands for, at the worker's first trial (`before_trial`), with
    `worker_seed(seed, that trial's number)`, and hands every call on to it. `drawing_seed` is the seed it drew
    with (None until then, or where unseeded)."""

    def __init__(self, build: Callable[[int | None], optuna.samplers.BaseSampler], seed: int | None):
        self._build, self.seed = build, seed
        self._base: optuna.samplers.BaseSampler | None = None
        self.drawing_seed: int | None = None

    @property
    def base(self) -> optuna.samplers.BaseSampler:
        if self._base is None:  # asked before any trial (nothing in a study does): the seed as given
            self._start(0)
        return self._base

    def _start(self, first_trial_number: int) -> None:
        self.drawing_seed = worker_seed(self.seed, first_trial_number)
        self._base = self._build(self.drawing_seed)

    def before_trial(self, study, trial: FrozenTrial) -> None:
        if self._base is None:
            self._start(trial.number)
        self._base.before_trial(study, trial)

    def infer_relative_search_space(self, study, trial: FrozenTrial) -> dict:
        return self.base.infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial: FrozenTrial, search_space: dict) -> dict:
        return self.base.sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.base.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()
