"""The trial loop: ask Optuna for a candidate, check it, evaluate it, tell Optuna what happened.

- Constraints (value <= 0 is feasible), set on every trial so samplers see the same keys:
  `rule_violation` (1 when a validity rule is broken), `memory_excess_gib` (the memory estimate
  over usable device memory), `probe_oom` (1 when a probe ran out of memory).
- A candidate that breaks a rule or would not fit is never evaluated: its trial is PRUNED with the
  violated constraint, which TPE counts as infeasible evidence, so the sampler learns the wall.
- A candidate already evaluated in this study is not evaluated again: its earlier result is told.
- `--trials N` counts evaluated candidates; the loop also stops when every valid candidate has been
  evaluated. Resuming counts what the study already holds, so nothing completed is lost or repeated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import optuna
from optuna.trial import TrialState

from autotune.backends.base import Backend, ProbeResult
from autotune.candidate import KNOBS
from autotune.errors import UserError
from autotune.space import baseline, check_candidate, enumerate_space
from autotune.study.settings import StudySettings

CONSTRAINT_KEYS = ("rule_violation", "memory_excess_gib", "probe_oom")
# Proposals per evaluated trial before the loop gives up on finding new valid candidates.
MAX_PROPOSALS_PER_TRIAL = 25


@dataclass
class StudyProgress:
    """Callbacks the CLI uses to draw progress; all optional."""

    on_trial: Callable[[int, dict, ProbeResult | None, str], None] | None = None


def make_sampler(seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
    """TPE (multivariate, constraint-aware) with a short random start: the baseline is enqueued first
    and budgets are 10-60 trials, so waiting for 10 random trials (the default) wastes a third of them.
    GPSampler would fit well too, but it imports torch, which the simulate path must not load.
    """
    return optuna.samplers.TPESampler(
        seed=seed,
        multivariate=True,
        n_startup_trials=max(3, min(10, n_trials // 4)),
        constant_liar=True,
    )


def _params_key(params: dict) -> str:
    return json.dumps({k: params[k] for k in KNOBS}, sort_keys=True)


def _suggest(trial: optuna.Trial, settings: StudySettings) -> dict:
    space = settings.space
    params = {}
    for knob in KNOBS:
        choices = list(space.values(knob))
        if knob == "optimizer_offload" and not settings.hardware.cuda and len(choices) > 1:
            # SuperOffload cannot run without CUDA: keep it out of the sampler's choices entirely.
            choices = [c for c in choices if c != "async"] or choices
        params[knob] = trial.suggest_categorical(knob, choices)
    return params


def _set_constraints(trial: optuna.Trial, rule: float, memory_excess: float, oom: float) -> None:
    for key, value in zip(CONSTRAINT_KEYS, (rule, memory_excess, oom)):
        trial.set_constraint(key, float(value))


def _evaluated(study: optuna.Study) -> dict[str, optuna.trial.FrozenTrial]:
    done = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        if "candidate" in t.user_attrs and "duplicate_of" not in t.user_attrs:
            done.setdefault(_params_key(t.user_attrs["candidate"]["knobs"]), t)
    return done


def _record(trial: optuna.Trial, candidate, result: ProbeResult) -> None:
    trial.set_user_attr("candidate", candidate.to_dict())
    trial.set_user_attr("result", result.to_dict())


def _tell_result(study, trial, result: ProbeResult, memory_excess: float) -> None:
    _set_constraints(trial, 0.0, memory_excess, 1.0 if result.status == "oom" else 0.0)
    if result.ok and result.time_s is not None and result.energy_kj is not None:
        study.tell(trial, [result.time_s, result.energy_kj])
    elif result.status == "oom":
        study.tell(trial, state=TrialState.PRUNED)  # infeasible evidence for the sampler
    else:
        study.tell(trial, state=TrialState.FAIL)


def _retry_interrupted(study: optuna.Study) -> None:
    """Trials left RUNNING by a killed run are failed and their candidates queued again."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study._storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)
        if t.params:
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number}, skip_if_exists=True)


def valid_checks(settings: StudySettings) -> list:
    """Every candidate of the study's space checked; refuses a space in which nothing can run."""
    checks = list(enumerate_space(settings.space, settings.model, settings.hardware, settings.workload, settings.gpus_per_node))
    if not any(c.valid for c in checks):
        reasons = sorted({c.reason.split(" (")[0] for c in checks})[:3]
        raise UserError(
            f"nothing in the space fits or is valid ({'; '.join(reasons)}); widen it: more --nodes, ZeRO-3, "
            "offload or checkpointing in the --space file (see `autotune space`)"
        )
    return checks


def run_study(
    study: optuna.Study,
    settings: StudySettings,
    backend: Backend,
    n_trials: int,
    progress: StudyProgress | None = None,
    checks: list | None = None,
) -> int:
    """Evaluate up to n_trials candidates in total (counting earlier runs); returns how many ran now."""
    progress = progress or StudyProgress()
    checks = checks if checks is not None else valid_checks(settings)
    valid_total = sum(c.valid for c in checks)
    if not study.trials:
        study.set_user_attr("settings", settings.to_dict())
        base = baseline(checks)
        if base is not None:
            study.enqueue_trial(base.candidate.knobs.to_dict(), user_attrs={"baseline": True})
    _retry_interrupted(study)

    done = _evaluated(study)
    ran_now = 0
    proposals = 0
    while len(done) < min(n_trials, valid_total) and proposals < MAX_PROPOSALS_PER_TRIAL * n_trials:
        proposals += 1
        trial = study.ask()
        params = _suggest(trial, settings)
        candidate = settings.candidate(params)
        check = check_candidate(candidate)
        trial.set_user_attr("candidate", candidate.to_dict())
        if not check.valid:
            # A rule breaker has no memory estimate; one that does not fit has an excess > 0.
            if check.memory is None:
                _set_constraints(trial, 1.0, 0.0, 0.0)
            else:
                _set_constraints(trial, 0.0, max(check.memory.device_excess_gib, check.memory.host_excess_gib), 0.0)
            trial.set_user_attr("reason", check.reason)
            study.tell(trial, state=TrialState.PRUNED)
            if progress.on_trial:
                progress.on_trial(trial.number, params, None, check.reason)
            continue
        key = _params_key(params)
        if key in done:
            earlier = done[key]
            trial.set_user_attr("duplicate_of", earlier.number)
            trial.set_user_attr("result", earlier.user_attrs.get("result"))
            for ckey in CONSTRAINT_KEYS:
                trial.set_constraint(ckey, earlier.constraints.get(ckey, 0.0))
            if earlier.state == TrialState.COMPLETE:
                study.tell(trial, earlier.values)
            else:
                study.tell(trial, state=TrialState.FAIL)
            continue
        result = backend.evaluate(candidate, trial.number)
        _record(trial, candidate, result)
        _tell_result(study, trial, result, check.memory.device_excess_gib)
        done[key] = study.get_trials(deepcopy=False)[trial.number]
        ran_now += 1
        if progress.on_trial:
            progress.on_trial(trial.number, params, result, result.error or "")
    return ran_now
