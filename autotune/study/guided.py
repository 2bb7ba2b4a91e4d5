"""The guided sampler (the default): the simulator's prediction of every candidate, corrected by the
probes so far, decides what to probe next and when the search is done.

Why this acquisition. A probe costs minutes of a whole allocation, while the simulator predicts every
valid candidate in milliseconds, so the sampler scores all of them at every step instead of
searching a surrogate. Each candidate's posterior is the simulator's figure, its mechanisms re-weighted
by the probes (reweight.py), x exp(GP correction)
(see correction.py), drawn 128 times, times the chance that it runs at all (the memory wall learnt
from out-of-memory probes, see outlook.py). The score is the chance that the candidate beats the
front by more than 1% in time or energy (the front: the probed candidates, drawn with the candidate,
so a twin of a front probe is judged by how it differs from it), with the expected hypervolume
improvement (EHVI) to break ties. That chance is what the study is judged by (every point of the
true front reached within 1%), and it is what the early stop asks (`converged`: no candidate keeps
STOP_CHANCE of it), so the next probe is always the candidate the stop rule is most worried about.
EHVI alone was measured to do worse (benchmarks/search_efficiency.py, docs/benchmarks.md): it
favours large, uncertain gains and leaves the front's near-ties, each a point of the front more than
1% from its neighbours, to the end.
With one objective (--objectives time) the chance is that of beating the best time by 1%.

The first probes: the baseline (enqueued by the loop), then the ends and the knee of the front the
simulator predicts, so the front is anchored before the model is trusted to fill it in. Then, unless
the simulator has reproduced every probe so far, every value of every knob is measured once before the
study may stop (coverage; a probe that ran out of memory or failed measured nothing, and does not
count): a simulator that is wrong in a region no probe resembles (a knob
interaction it does not model) cannot be corrected there, and a GP fitted on a few alike residuals
would otherwise be confident about it. A coverage probe is the most promising candidate that holds an
unprobed value; it is taken as soon as it is about as good a bet as the best candidate
(COVERAGE_SHARE_OF_BEST), else once no candidate is a good bet any more. Once every value is probed
that a candidate which could enter the front holds (see below), the same goes for pairs of values (an
interaction is a pair: "SP 4 with offload async"), but only those of candidates that could enter the
front were the simulator PAIR_REACH times as wrong on them as on the worst probe so far whose every
knob value another probe also holds (`_residual_and_reach`), or MIN_PAIR_REACH if that is more:
covering every pair would cost dozens of probes, but a simulator that has reproduced every probe may
still lack one interaction no probe hit. Pairs that a smaller error would bring onto the front are
covered first (`pair_coverage_value`). A pair held by one probe only, one the simulator overrated, is
owed a second probe where that miss would put a candidate holding the pair on the front
(`_suspect_pairs`): one probe cannot say which of its pairs carries its miss. The values only
candidates far from the front hold come last (benchmarks/search_efficiency.py, 32b/4 `one_pair` seed
0: first, SP 2, 4 and 8 and no checkpointing, none within the reach of the front, delayed a -25% pair
by four probes; last, (a) better in 21 of 72 studies, worse in 9, for 2% more probes run).

It never proposes an invalid candidate (it only knows valid ones), one already probed, or one another
worker is probing or has queued. Everything is recomputed from the study's trials at each call, so
SQLite or PostgreSQL storage, resume, several workers and optuna-dashboard keep working.
"""

from __future__ import annotations

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial
from threadpoolctl import threadpool_limits

from autotune.counted import agreeing, counted
from autotune.pareto import front_indices, knee_index
from autotune.study.acquisition import ENTER_MARGIN
from autotune.study.reweight import leave_one_out_log_residual
from autotune.study.outlook import Outlook, Predictions, observe, outlook
from autotune.study.queued import partly_queued, queued_completion
from autotune.study.unique import settled_trials
from autotune.study.stop_rule import MIN_OK_PROBES_TO_STOP, MIN_PAIR_REACH, PAIR_REACH, STOP_CHANCE, SUSPECT_MISS

# A coverage probe (a knob value not probed yet) is taken early only if its chance to enter the front
# is at least this share of the best candidate's (benchmarks/search_efficiency.py: coverage probes first,
# by most new values, delayed the front by 2-5 probes; by chance alone, they hit the memory wall).
COVERAGE_SHARE_OF_BEST = 0.5


def pair_reach(log_residual: np.ndarray, noise_std: np.ndarray) -> np.ndarray:
    """(M,) how wrong (log) the model may be on a pair of knob values no probe has held: PAIR_REACH times
    the largest miss on a probe (`log_residual` (k, M), less its mean), less what measurement noise
    alone makes the largest of k misses (about sigma sqrt(2 ln k)): only the excess is error the
    simulator may repeat elsewhere; and at least MIN_PAIR_REACH."""
    miss, by_noise = _misses(log_residual, noise_std)
    return np.maximum(PAIR_REACH * np.clip(np.abs(miss).max(axis=0) - by_noise, 0.0, None), MIN_PAIR_REACH)


def _misses(log_residual: np.ndarray, noise_std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each probe's miss (`log_residual` (k, M) less its mean: the part the correction's offset
    carries), and (M,) what measurement noise alone makes the largest of k misses (about
    sigma sqrt(2 ln k))."""
    return log_residual - log_residual.mean(axis=0), noise_std * np.sqrt(2 * np.log(max(len(log_residual), 2)))


def share_of_reach_to_enter(mean: np.ndarray, front: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """(N,) the error (log, per objective a share of `reach` (M,)) by which the model must overrate each
    candidate (`mean` (N, M)) for it to beat the front (K, M) by more than 1%: below 1, the candidate
    could enter the front were the model that wrong on it; 0 if it enters as it is."""
    if not len(front):
        return np.zeros(len(mean))
    # Beating front point p by the margin in objective m takes an error of log(margin x mean / p) there;
    # the candidate must beat every front point, in whichever objective is cheapest for each.
    needed = np.log(ENTER_MARGIN * mean[:, None, :] / front[None, :, :]) / reach  # (N, K, M)
    return np.clip(needed.min(axis=2).max(axis=1), 0.0, None)


def pair_coverage_value(owed: np.ndarray, share: np.ndarray, could_enter: np.ndarray) -> np.ndarray:
    """(N,) what probing each candidate that `could_enter` tells of the value pairs still owed (`owed`
    (N, P): 1 where the candidate holds the pair): the sum, over the owed pairs it holds, of the chance
    that the pair hides an interaction that moves the front, i.e. one at least as large as the least
    error (`share_of_reach_to_enter`) any candidate holding the pair needs, an interaction's size taken
    as normal with the reach PAIR_REACH standard deviations. The pairs of near-front candidates come
    first, and of those a probe that holds many (benchmarks/search_efficiency.py: by count of pairs
    alone, the pair of a -29% interaction one power step off the front waited for 18 coverage probes)."""
    from scipy.special import ndtr

    holders = np.where((owed > 0) & could_enter[:, None], share[:, None], np.inf)
    weight = ndtr(-PAIR_REACH * holders.min(axis=0))
    return np.where(could_enter, owed @ weight, 0.0)


def _one_blas_thread():
    """The model's matrices are small (probes x candidates): BLAS threads cost more to wake than they
    save, and where another process shares the cores (a second worker, a probe's ranks starting, a
    login node) OpenBLAS's threads spin against it: one test's guided study took 41 s with them and
    8 s without while another process ran beside it. The probes are other processes: untouched."""
    return threadpool_limits(limits=1, user_api="blas")


class GuidedSampler(optuna.samplers.BaseSampler):
    # It only proposes free candidates, so loop.py must not wrap it in unique.py's sampler: the
    # wrapper would also hide `converged`, and the study would never stop early.
    proposes_unique_candidates = True

    def __init__(self, checks: list, choices: dict[str, list], seed: int | None = None):
        self._checks = checks
        self._choices = choices
        self._seed = 0 if seed is None else seed
        self._predictions: Predictions | None = None
        self._fallback = optuna.samplers.RandomSampler(seed=seed)
        self._cache: tuple[tuple, Outlook] | None = None
        self._reach_cache: tuple[tuple, tuple] | None = None
        self._seed_cache: dict[int, list[int]] = {}

    @property
    def predictions(self) -> Predictions:
        if self._predictions is None:
            self._predictions = Predictions(self._checks)
        return self._predictions

    # --- the model at this point of the study ----------------------------------------------------

    def outlook(self, study: optuna.Study, current_trial: int | None = None) -> Outlook:
        pred = self.predictions
        obs = observe(study, pred.index, current_trial)
        # The same trials give the same model: the stop check and the next proposal share one fit. The
        # key holds the figures too, so one sampler may serve several studies of the same candidates.
        measured = tuple((i, obs.ok[i].tobytes()) for i in sorted(obs.ok))
        key = (measured, tuple(sorted(obs.sources)), tuple(sorted(obs.oom)), tuple(sorted(obs.failed)),
               tuple(sorted(obs.busy)), len(study.directions))
        if self._cache is None or self._cache[0] != key:
            with _one_blas_thread():
                self._cache = (key, outlook(pred, obs, len(study.directions), self._seed))
        return self._cache[1]

    def seed_indices(self, objectives: int) -> list[int]:
        """The simulator's predicted front: its fastest end, its least-energy end, its knee. Found once
        (the predictions never change): twice per proposal, the front of 39,340 candidates took 2 s of
        each (trial70 #7)."""
        if objectives not in self._seed_cache:
            values = np.exp(self.predictions.log_values[:, :objectives])
            front = front_indices(values)
            if objectives == 1:
                self._seed_cache[objectives] = front[:1]
            else:
                ordered = sorted(front, key=lambda i: values[i, 0])
                picks = [ordered[0], ordered[-1], ordered[knee_index(values[ordered])]]
                self._seed_cache[objectives] = list(dict.fromkeys(picks))
        return list(self._seed_cache[objectives])

    def next_candidate(self, study: optuna.Study, current_trial: int | None) -> int | None:
        view = self.outlook(study, current_trial)
        for i in self.seed_indices(len(study.directions)):
            if view.free[i] and view.chance_to_run[i] > 0.5:
                return i
        if not view.free.any():
            return None
        best = self._most_promising(view)
        covering = self._coverage(view)
        if covering is None:
            return best
        # A coverage probe that is also a good bet costs nothing; one far from the front waits until
        # nothing is a good bet (else it delays the front by a probe per knob value).
        good_bet = view.chance_to_enter[covering] >= COVERAGE_SHARE_OF_BEST * view.chance_to_enter[best]
        return covering if good_bet or view.chance_to_enter[best] < STOP_CHANCE else best

    @staticmethod
    def _most_promising(view: Outlook, among: np.ndarray | None = None) -> int:
        """The chance to enter the front by more than 1% first, EHVI among equal chances, then doubt."""
        allowed = view.free if among is None else view.free & among
        chance = np.round(view.chance_to_enter, 6)
        return int(np.lexsort((view.log_std.sum(axis=1), view.expected_improvement, chance, allowed))[-1])

    def _coverage(self, view: Outlook) -> int | None:
        """A probe the study owes before it may stop (None: none is owed). Among the candidates that could
        enter the front were the model wrong on them by `pair_reach`: first the most promising one that
        holds a knob value no probe has had yet; then the one whose pairs of knob values no probe has had
        are most likely to hide an interaction that moves the front (`pair_coverage_value`; most
        promising among equals). Last, the most promising candidate that holds a value no probe has had
        and no candidate near the front holds."""
        if view.simulator_exact:
            return None
        features = self.predictions.features
        obs = view.observations
        # A probe that ran out of memory or failed measured nothing: its values and pairs are still owed.
        seen = sorted(set(obs.ok) | obs.busy)
        runnable = view.free & (view.chance_to_run > 0.5)
        new = runnable & features.holds_unseen_value(seen)
        share = self._share_of_reach_to_enter(view)
        could_enter = runnable & (share < 1.0)
        if (new & could_enter).any():
            return self._most_promising(view, new & could_enter)
        owed = (features.unseen_pairs(seen) & features.pairs[could_enter].any(axis=0)) | self._suspect_pairs(view, runnable)
        if owed.any() and could_enter.any():
            value = np.round(pair_coverage_value(features.pairs[:, owed], share, could_enter), 9)
            return self._most_promising(view, could_enter & (value == value.max()))
        # Owed with no candidate that could enter by `pair_reach`: only a suspect pair, whose holders enter by
        # their probe's own miss (_suspect_pairs). Among no candidates _most_promising named an evaluated one,
        # the baseline: a replay of measured and simulated records proposed it ~300 times over and said it
        # would probe it next (trial60 #1).
        holders = runnable & (features.pairs[:, owed] > 0).any(axis=1)
        if owed.any() and holders.any():
            return self._most_promising(view, holders)
        if new.any():
            return self._most_promising(view, new)
        return None

    def _suspect_pairs(self, view: Outlook, runnable: np.ndarray) -> np.ndarray:
        """(P,) value pairs held by one ok probe only, one the re-weighted simulator overrated (measured
        faster or cheaper, beyond noise) and no probe it got right holds, where a runnable candidate
        holding the pair would enter the front were the whole miss the pair's: one probe cannot tell
        which of its twenty-odd pairs carries a miss, and the correction shares it among them, so the
        candidate that would show it stays predicted near the simulator (benchmarks/search_efficiency.py:
        32b 2-8 `combined` stopped 11% short of the front's fast end, the -29% pair probed once)."""
        features, obs = self.predictions.features, view.observations
        probed = sorted(obs.ok)
        suspect = np.zeros(features.pairs.shape[1], dtype=bool)
        if len(probed) < 2 or not len(view.front):
            return suspect
        miss, by_noise = _misses(self._residual_and_reach(view)[0], view.noise_std)
        gain = np.clip(-miss - by_noise, 0.0, None)  # (k, M) how far the simulator overrated each probe
        clean = [i for i, g in zip(probed, gain) if g.max() <= SUSPECT_MISS]
        once = features.pairs[probed].sum(axis=0) == 1
        cleared = features.pairs[clean + sorted(obs.busy)].any(axis=0)
        for j, i in enumerate(probed):
            if gain[j].max() <= SUSPECT_MISS:
                continue
            pairs = (features.pairs[i] > 0) & once & ~cleared
            if not pairs.any():
                continue
            holders = runnable & (features.pairs[:, pairs] > 0).any(axis=1)
            share = share_of_reach_to_enter(view.mean[holders], view.front, np.maximum(gain[j], 1e-9))
            entering = share < 1.0
            if entering.any():
                suspect |= pairs & (features.pairs[holders][entering] > 0).any(axis=0)
        return suspect

    def _residual_and_reach(self, view: Outlook) -> tuple[np.ndarray, np.ndarray]:
        """The re-weighted simulator's leave-one-out log residual on each ok probe (k, M), and `pair_reach`
        of the probes whose every knob value another probe holds (of all, while fewer than two do)."""
        probed = sorted(view.observations.ok)
        # The reach depends on the ok probes alone, while the outlook also changes with the trials
        # running: the proposal and the stop check after each probe share one set of k refits.
        key = (tuple(probed), view.log_measured.tobytes(), view.noise_std.tobytes())
        if self._reach_cache is None or self._reach_cache[0] != key:
            pred = self.predictions
            with _one_blas_thread():
                residual = leave_one_out_log_residual(pred.time_parts, pred.energy_parts, probed, view.log_measured)
            # A probe that alone holds a value (the only 2-node probe) is missed, left out, by that value's
            # own error as well as any pair's, and the re-weighted simulator cannot learn a value from no
            # probe: in `combined` truths such misses made the reach x2-4 (log 0.7-1.4), so every pair was
            # owed and the reach no longer told near-front pairs from others (benchmarks/search_efficiency.py:
            # (a) better in 1 study, worse in none, probes run 2,565 -> 2,524, docs/benchmarks.md session 15).
            sharing = pred.features.shares_every_value(probed)
            basis = residual[sharing] if sharing.sum() >= 2 else residual
            self._reach_cache = (key, (residual, pair_reach(basis, view.noise_std)))
        return self._reach_cache[1]

    def _share_of_reach_to_enter(self, view: Outlook) -> np.ndarray:
        """(N,) `share_of_reach_to_enter` with the reach of this point of the study: PAIR_REACH times the
        re-weighted simulator's largest leave-one-out error on a probe whose every knob value another probe
        holds (each objective's log residual, less its mean: the part the correction's offset carries),
        less what measurement noise alone would make the largest of them (`pair_reach`). Below 1: the
        candidate could enter the front."""
        probed = sorted(view.observations.ok)
        if not probed:
            return np.full(len(view.free), np.inf)
        return share_of_reach_to_enter(view.mean, view.front, self._residual_and_reach(view)[1])

    def converged(self, study: optuna.Study) -> bool:
        """The early stop (STOP_RULE)."""
        return self.outstanding(study) is None

    def outstanding(self, study: optuna.Study) -> str | None:
        """What the stop rule still asks for, in words (None: the study has converged). A study that
        stops before (its --trials budget, Ctrl-C) says this in its report, so the user knows what more
        probes would buy."""
        view = self.outlook(study)
        objectives = len(study.directions)
        if len(view.observations.ok) < MIN_OK_PROBES_TO_STOP and view.free.any():
            return f"fewer than {MIN_OK_PROBES_TO_STOP} probes succeeded"
        if any(view.free[i] and view.chance_to_run[i] > 0.5 for i in self.seed_indices(objectives)):
            return "the ends and the knee of the front the simulator predicts are not all probed"
        if self._coverage(view) is not None:
            return "knob values or pairs of them where the simulator may be wrong are not all measured"
        hopeful = int((view.free & (view.chance_to_enter >= STOP_CHANCE)).sum())
        if hopeful:
            return (f"{counted(hopeful, 'unprobed candidate')} still {agreeing(hopeful, 'has', 'have')} a {STOP_CHANCE:.0%} or higher chance of beating "
                    f"the probed front by more than {ENTER_MARGIN - 1:.0%}")
        return None

    # --- Optuna's sampler interface --------------------------------------------------------------

    def infer_relative_search_space(self, study, trial: FrozenTrial) -> dict:
        return {knob: CategoricalDistribution(values) for knob, values in self._choices.items()}

    def sample_relative(self, study, trial: FrozenTrial, search_space: dict) -> dict:
        if "fixed_params" in trial.system_attrs and partly_queued(trial) is None:
            return {}  # an enqueued trial (baseline, retry): its knobs are given
        settled_trials(study, trial.number)  # another worker's proposal under way counts as being probed
        i = self.next_candidate(study, trial.number)
        proposal = {} if i is None else dict(self.predictions.params[i])
        if partly_queued(trial) is not None:  # queued in part: the valid candidate holding its values nearest to ours
            return queued_completion(study, trial, proposal, (c.candidate.knobs.to_dict() for c in self._checks if c.valid))
        return proposal

    def sample_independent(self, study, trial, param_name, param_distribution):
        # Only reached when every candidate is probed or taken: the loop then stops or refuses it.
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)
