"""Which knobs mattered: the share of each objective's variation a knob explains (fANOVA).

- Over the feasible, evaluated, distinct trials only (the report's points): trials refused before
  running carry params but no values, and a duplicate would count one configuration twice.
- fANOVA (Hutter et al., ICML 2014) through Optuna, on log(time) and log(energy): a random forest
  fitted to the trials, then each knob's share of the variance of its predictions. Logs, because the
  objectives span orders of magnitude across node counts, and a knob that halves time matters as
  much on a slow configuration as on a fast one. It handles categorical knobs (one-hot), is seeded
  (the same study always gives the same shares), and its answer reads plainly ("x% of the variation").
  PED-ANOVA (Optuna's default) would be faster, but it needs several trials inside its top
  quantile, which 10-60 trials rarely give.
- Knobs with one value over those trials are left out: there is nothing to attribute to them.
- A long study's forest stops at SHALLOW_DEPTH levels (`importance_method` says so): a full-depth forest's marginal
  variances grow with its leaves, one per trial, and took 46 s of `report` at 800 trials (trial 70 #1).
"""

from __future__ import annotations

import math
import warnings

import optuna
from optuna.trial import TrialState

from autotune.candidate import KNOBS
from autotune.report.study_points import StudyView
from autotune.study.loop import CONVERGED_ATTR
from autotune.study.retries import evaluated_trials
from autotune.study.storage import METRIC_NAMES

# Fewer trials than this give shares that move with every new trial: say so instead of showing them.
MIN_TRIALS = 8
# 32 trees give the same ranking as Optuna's default 64 at half the cost (~0.25 s for 60 trials).
N_TREES = 32
SEED = 0

# Past this many feasible trials, trees stop at SHALLOW_DEPTH levels (Optuna's default: 64, in effect unbounded). On a
# random 800-trial 7b study the shares moved by under 0.01 (sp_degree 0.595 -> 0.599) at a seventh of the cost; at
# 100-300 trials by under 0.01 too. Up to it, a study's shares are computed as before, at full depth.
LONG_STUDY_TRIALS = 100
SHALLOW_DEPTH = 6


def max_depth(feasible_trials: int) -> int | None:
    """The trees' depth limit for a study of `feasible_trials` (the report's points): None (Optuna's default) up to
    LONG_STUDY_TRIALS."""
    return SHALLOW_DEPTH if feasible_trials > LONG_STUDY_TRIALS else None


def importance_method(feasible_trials: int) -> str:
    """How the shares of a study of `feasible_trials` were computed (pareto.json's `importance_method`)."""
    depth = max_depth(feasible_trials)
    shallow = (f", each at most {depth} levels deep as the study has over {LONG_STUDY_TRIALS} feasible trials"
               if depth else "")
    return (f"fANOVA (random forest of {N_TREES} trees{shallow}, seed {SEED}) on log(time) and log(energy) over the "
            "feasible evaluated trials; a share is the fraction of the objective's variation the knob explains alone")


def _objective_importance(study: optuna.Study, knobs: list[str], index: int, depth: int | None) -> dict[str, float] | str:
    values = {t.values[index] for t in study.get_trials(deepcopy=False)}  # study.trials copied every trial (3 s at 800)
    if len(values) == 1:
        return f"every feasible trial has the same {METRIC_NAMES[index]}: no knob changed it"
    evaluator = optuna.importance.FanovaImportanceEvaluator(n_trees=N_TREES, seed=SEED,
                                                            **({"max_depth": depth} if depth else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        shares = optuna.importance.get_param_importances(
            study, evaluator=evaluator, params=knobs, target=lambda t: math.log(t.values[index])
        )
    return {knob: round(float(share), 4) for knob, share in shares.items()}


def knob_importance(study: optuna.Study, view: StudyView) -> dict:
    """{objective name: {knob: share, largest first} or a sentence saying why there is none}."""
    names = METRIC_NAMES[: len(study.directions)]  # a time-only study (--objectives time) has one
    wanted = {p.trial for p in view.points}
    trials = [
        t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.number in wanted and t.values is not None and all(v > 0 for v in t.values)
    ]
    if len(trials) < MIN_TRIALS:
        # A guided study that stopped on its own would stop again: more --trials would not help there.
        # A replay evaluates what its file records: once each is, more --trials replay nothing.
        # A study that evaluated its whole space (or recording) evaluates nothing more either (trial54 F2).
        from autotune.report.search import nothing_more_to_evaluate, recorded_keys

        backend = (study.user_attrs.get("backend") or {}).get("name")
        recorded = recorded_keys(study, backend)
        fix = ("the guided study converged on its front first; a --sampler random study of its own would measure it"
               if study.user_attrs.get(CONVERGED_ATTR) else
               nothing_more_to_evaluate(study, view.settings, backend, resume_said=False)
               or ("every record of the replayed file is evaluated: measure more candidates (--backend launch)"
                   if recorded is not None and len(evaluated_trials(study)) >= len(recorded) else "run more --trials"))
        reason = f"not enough trials: {len(trials)} feasible, importance needs at least {MIN_TRIALS} ({fix})"
        return {name: reason for name in names}
    knobs = [k for k in KNOBS if len({repr(t.params.get(k)) for t in trials}) > 1 and all(k in t.params for t in trials)]
    if not knobs:
        reason = "every feasible trial has the same knob values: nothing to attribute"
        return {name: reason for name in names}
    # The evaluator reads every COMPLETE trial of the study it is given: give it only ours.
    subset = optuna.create_study(directions=["minimize"] * len(names))
    subset.add_trials(trials)
    depth = max_depth(len(view.points))  # as importance_method says it of the report's points
    return {name: _objective_importance(subset, knobs, index, depth) for index, name in enumerate(names)}


def held_fixed(view: StudyView) -> list[str]:
    """Knobs with one value over the feasible trials (not ranked: nothing to attribute to them)."""
    return [k for k in KNOBS if len({repr(p.params.get(k)) for p in view.points}) <= 1] if view.points else []


OBJECTIVE_TITLES = {"time_to_solution_s": "time to solution", "energy_to_solution_kj": "energy to solution"}


def importance_sentence(shares: dict | str, top: int = 3) -> str:
    """`sp_degree 45%, nodes 44%, micro_batch 8%`, or the reason there are no shares."""
    if isinstance(shares, str):
        return shares
    return ", ".join(f"{knob} {100 * share:.0f}%" for knob, share in list(shares.items())[:top])
