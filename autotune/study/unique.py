"""Never ask the sampler for a candidate the study already has.

TPE, random sampling and NSGA-II know nothing of our finite, categorical space: late in a study most
of their proposals are candidates already evaluated, pruned or running, and each such proposal cost
an Optuna trial (a 200-candidate study once took 2,713 trials and minutes of sampling). The wrapper
here lets the sampler propose as usual and, when the proposal is a candidate the study holds in any
trial (evaluated, pruned as invalid, running on another worker, queued), replaces it by the nearest
valid candidate no trial holds yet (fewest knobs changed; ties broken by a generator seeded with the
trial number, so a study is reproducible). Every Optuna trial is then a new candidate, and the only
trials that are not evaluated are invalid proposals, each pruned once, and the rare candidate two
workers propose in the same instant (loop.py settles those).

A sampler that never repeats by construction says so with `proposes_unique_candidates = True` and is
not wrapped.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import datetime

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState

from autotune.candidate import KNOBS, params_key
from autotune.study.foreign import foreign_trials
from autotune.study.outside import added_outside

# Set on a trial that found the --trials budget held by other workers' running probes, or too little time left
# before the run's time limit once it was proposed (study/time_limit.py; asked before a trial is made, too), and
# stopped before its probe (study/loop.py): its candidate was never evaluated.
OVER_BUDGET_ATTR = "over_budget"


# How long a worker waits for an earlier trial another worker is still proposing (a dead worker's
# half-proposed trial must not hold the study up for ever).
PROPOSAL_WAIT_S = 30.0


def trial_knobs(t: FrozenTrial) -> dict:
    """The knobs a trial has set so far; a queued trial's are its fixed params."""
    return {**t.system_attrs.get("fixed_params", {}), **t.params}


def settled_trials(study: optuna.Study, number: int, wait_s: float = PROPOSAL_WAIT_S) -> list[FrozenTrial]:
    """The study's trials once no trial numbered below `number` is still being proposed: every earlier
    RUNNING trial has all its knobs set, or started more than `wait_s` ago with them unset (its worker
    died). Without the wait, two workers in step (simulate and replay answer in milliseconds) both
    propose the best free candidate, each before the other's knobs are stored, and one of the two
    trials is wasted on a duplicate."""
    deadline = time.monotonic() + wait_s
    while True:
        trials = study.get_trials(deepcopy=False)
        pending = any(
            t.number < number and t.state == TrialState.RUNNING and not all(k in trial_knobs(t) for k in KNOBS)
            and t.datetime_start is not None and (datetime.now() - t.datetime_start).total_seconds() < wait_s
            for t in trials)
        if not pending or time.monotonic() > deadline:
            return trials
        time.sleep(0.05)


def held_keys(study: optuna.Study, except_number: int | None = None) -> set[str]:
    """Keys of every candidate some trial holds: finished in any state, running, or queued. An
    interrupted trial (Ctrl-C) or one stopped by the budget holds nothing: its candidate was never
    evaluated and may be proposed."""
    held = set()
    trials = settled_trials(study, except_number) if except_number is not None else study.get_trials(deepcopy=False)
    foreign = foreign_trials(study, trials)
    for t in trials:
        knobs = trial_knobs(t)
        # A trial added outside autotune, or not probed in this study, holds nothing either: its figures are left out
        # (outside.py, foreign.py), its candidate free.
        unprobed = t.user_attrs.get("interrupted") or t.user_attrs.get(OVER_BUDGET_ATTR) or added_outside(t, foreign)
        if t.number != except_number and all(k in knobs for k in KNOBS) and not unprobed:
            held.add(params_key(knobs))
    return held


def changed_knobs(proposal: dict, knobs: dict) -> int:
    """How many knobs of `knobs` differ from the `proposal` (one that leaves a knob out differs in it)."""
    return sum(proposal.get(k) != knobs[k] for k in KNOBS)


class UniqueCandidateSampler(optuna.samplers.BaseSampler):
    """Wraps a sampler so that no proposal repeats a candidate the study already holds.

    `choices`: per knob, the values the loop suggests from; `valid`: the knob dicts of every valid
    candidate, in the space's order. All knobs are sampled jointly in `sample_relative` (the base
    sampler's relative proposal, completed by its independent sampling) so the whole candidate can
    be checked before any value is stored.
    """

    proposes_unique_candidates = True

    def __init__(self, base: optuna.samplers.BaseSampler, choices: dict[str, list], valid: list[dict]):
        self.base = base
        self.space = {knob: CategoricalDistribution(choices[knob]) for knob in KNOBS}
        self.valid = {params_key(knobs): knobs for knobs in valid}
        self.replaced = 0  # proposals replaced in this process (benchmarks report it)

    def infer_relative_search_space(self, study, trial: FrozenTrial) -> dict:
        return dict(self.space)

    def sample_relative(self, study, trial: FrozenTrial, search_space: dict) -> dict:
        from autotune.study.queued import partly_queued, queued_completion

        if "fixed_params" in trial.system_attrs and partly_queued(trial) is None:
            return {}  # a queued candidate (baseline, retry): not the sampler's to change
        proposal = dict(self.base.sample_relative(study, trial, self.base.infer_relative_search_space(study, trial)))
        for knob in KNOBS:
            if knob not in proposal:
                proposal[knob] = self.base.sample_independent(study, trial, knob, self.space[knob])
        if partly_queued(trial) is not None:  # the rest of a candidate queued in part: a valid one
            return queued_completion(study, trial, proposal, self.valid.values())
        held = held_keys(study, except_number=trial.number)
        if params_key(proposal) not in held:
            return proposal
        free = [knobs for key, knobs in self.valid.items() if key not in held]
        if not free:
            return proposal  # nothing new is left; the loop stops on its own
        fewest = min(changed_knobs(proposal, knobs) for knobs in free)
        nearest = [knobs for knobs in free if changed_knobs(proposal, knobs) == fewest]
        self.replaced += 1
        return dict(random.Random(trial.number).choice(nearest))

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.base.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial: FrozenTrial) -> None:
        self.base.before_trial(study, trial)

    def after_trial(self, study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()


def unique_candidates(sampler: optuna.samplers.BaseSampler, choices: dict[str, list], valid: list[dict]):
    """`sampler`, wrapped unless it already proposes only new candidates."""
    if getattr(sampler, "proposes_unique_candidates", False):
        return sampler
    return UniqueCandidateSampler(sampler, choices, valid)
