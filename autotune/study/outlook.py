"""What the study knows now: each valid candidate's predicted time and energy, corrected by the probes.

Everything is derived from the study's trials each time (nothing is kept between calls except the
simulator's predictions, which never change), so several workers, a resumed run and `autotune report`
all see the same model.

- ok probes re-weight the simulator's mechanisms (reweight.py), train the correction of what is left
  (correction.py) and make the probed front;
- the peak device memory ok probes measured places the memory wall before anything runs out: the
  estimate's error on a probe is taken for its shape's, and elsewhere for the probes' mean, give or
  take their spread (`_chance_to_fit`);
- out-of-memory probes move the memory wall: a candidate of the same shape (everything but
  micro-batch and device settings) whose memory estimate is at least the OOM'd one's runs out of
  memory too (chance to run SAME_SHAPE_OOM_CHANCE); anywhere else, a candidate whose estimate is at
  least the lowest one that ran out runs with the chance the probes around it give (`_chance_to_run`);
- failed probes, and candidates another worker is probing or has queued (RUNNING, WAITING), are
  not proposed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import optuna
from optuna.trial import TrialState

from autotune.candidate import KNOBS, params_key
from autotune.memory import measured_device_peak_gib
from autotune.pareto import front_indices
from autotune.study.acquisition import enters_front, improvement
from autotune.study.correction import corrected_log_prediction
from autotune.study.knob_kernel import knob_features
from autotune.study.reweight import reweighted_log_prediction
from autotune.study.foreign import foreign_trials
from autotune.study.outside import added_outside
from autotune.study.unique import OVER_BUDGET_ATTR

# A candidate that differs from one that ran out of memory only in micro-batch (no smaller) or device
# settings (power limit, SM clock) needs at least its memory: it runs out too, but for a flaky OOM.
# benchmarks/search_efficiency.py (`combined`: a lower wall, docs/benchmarks.md session 13): at 10%,
# with half the chance above the lowest OOM elsewhere, studies spent 8-27 probes on OOMs, power-limit
# twins of one that had run out among them; with 2% and `_chance_to_run`'s rule, 190 -> 107 over 12.
SAME_SHAPE_OOM_CHANCE = 0.02
# A probe's measured peak device memory against its estimate: the log of the ratio is taken as known
# to no better than this, however alike the probes' ratios are (allocator rounding, fragmentation).
MEMORY_RATIO_SPREAD_FLOOR = 0.02
SAMPLES = 128
_SHAPE_KNOBS = ("zero_stage", "optimizer_offload", "activation_checkpointing", "sp_degree", "nodes")



@dataclass
class Observations:
    ok: dict[int, np.ndarray]  # candidate index -> measured objective values (first evaluation)
    oom: set[int]
    failed: set[int]
    busy: set[int]  # being probed by another worker, or queued
    sources: set[str]  # where the ok probes' figures came from (measured, estimated, simulated)
    peak_mem_gib: dict[int, float] = field(default_factory=dict)  # ok probes' measured peak device memory

    @property
    def done(self) -> set[int]:
        return set(self.ok) | self.oom | self.failed


def _trial_params(t: optuna.trial.FrozenTrial) -> dict | None:
    params = t.params if len(t.params) == len(KNOBS) else t.system_attrs.get("fixed_params")
    return params if params and all(k in params for k in KNOBS) else None


def observe(study: optuna.Study, index: dict[str, int], current_trial: int | None = None) -> Observations:
    obs = Observations({}, set(), set(), set(), set())
    trials = study.get_trials(deepcopy=False)
    foreign = foreign_trials(study, trials)  # copies of other studies' trials: no figures of this study's (trial74 #2)
    for t in trials:
        params = _trial_params(t)
        i = index.get(params_key(params)) if params else None
        if (i is None or t.number == current_trial or "duplicate_of" in t.user_attrs or OVER_BUDGET_ATTR in t.user_attrs
                or added_outside(t, foreign)):  # its figures' source is unknown (outside.py)
            continue
        constraints = t.constraints
        if t.state in (TrialState.RUNNING, TrialState.WAITING):
            obs.busy.add(i)
        elif t.state == TrialState.COMPLETE and all(v <= 0 for v in constraints.values()) and t.values:
            result = t.user_attrs.get("result", {})
            obs.ok.setdefault(i, np.array(t.values, dtype=float))
            obs.sources.add(result.get("source", "measured"))
            peak = measured_device_peak_gib(result)
            if peak is not None:
                obs.peak_mem_gib.setdefault(i, peak)
        elif t.state == TrialState.PRUNED and constraints.get("probe_oom", 0) > 0:
            obs.oom.add(i)
        elif t.state in (TrialState.PRUNED, TrialState.COMPLETE) or (t.state == TrialState.FAIL and not t.user_attrs.get("interrupted")):
            obs.failed.add(i)
    for i in obs.ok:
        obs.oom.discard(i)
        obs.failed.discard(i)
    return obs


class Predictions:
    """The simulator's figures for every valid candidate, computed once per sampler (500+ candidates)."""

    def __init__(self, checks: list):
        from autotune.simulator import simulate

        valid = [c for c in checks if c.valid]
        self.params = [c.candidate.knobs.to_dict() for c in valid]
        self.index = {params_key(p): i for i, p in enumerate(self.params)}
        steps = [simulate(c.candidate) for c in valid]
        self.log_values = np.log(np.array([[s.time_s, s.energy_kj] for s in steps]))
        # Per mechanism (reweight.py): each phase's share of the time to solution, each component's energy.
        phases = sorted({p.name for s in steps for p in s.phases})
        components = sorted({name for s in steps for name in s.energy_components_kj})
        self.time_parts = np.array([[sum(p.time_s for p in s.phases if p.name == name) * s.time_s / s.step_time_s
                                     for name in phases] for s in steps])
        self.energy_parts = np.array([[s.energy_components_kj.get(name, 0.0) for name in components] for s in steps])
        self.memory_gib = np.array([c.memory.peak_mem_gib for c in valid])
        self.device_gib = np.array([c.memory.device_gib for c in valid])
        # One id per shape (everything but micro-batch and device settings): the memory rules compare
        # every candidate's shape with a probe's at each proposal.
        shapes: dict[tuple, int] = {}
        self.shape_ids = np.array([shapes.setdefault(tuple(p[k] for k in _SHAPE_KNOBS), len(shapes)) for p in self.params], dtype=int)
        self.features = knob_features(self.params)

    def __len__(self) -> int:
        return len(self.params)


@dataclass
class Outlook:
    mean: np.ndarray  # (N, M) corrected prediction of each objective
    log_std: np.ndarray  # (N, M) uncertainty of log(objective)
    chance_to_run: np.ndarray  # (N,) chance the candidate does not run out of memory
    front: np.ndarray  # (K, M) probed feasible front (the model's figures of the probed candidates)
    reference: np.ndarray  # (M,) hypervolume reference point
    free: np.ndarray  # (N,) bool: not probed, not being probed
    chance_to_enter: np.ndarray  # (N,) x chance_to_run: chance to improve the front by more than 1%
    expected_improvement: np.ndarray  # (N,) x chance_to_run: expected hypervolume improvement
    observations: Observations
    log_measured: np.ndarray  # (ok probes, M) their measured log(objective), in the order of sorted(observations.ok)
    noise_std: np.ndarray  # (M,) the probes' measurement noise the correction found (log std)
    # Every ok probe is the simulator's figure times one factor per objective, and says it is simulated.
    simulator_exact: bool


def _chance_to_run(pred: Predictions, obs: Observations) -> np.ndarray:
    """(N,) the chance each candidate runs without running out of memory, from the probes so far.

    Below the lowest memory estimate that ran out, 1: the estimate's wall has not been seen there.
    At or above it, the rule of succession over the probes that speak to the candidate: one that ran
    out at an estimate no higher than its own says it runs out too, one that ran at an estimate no
    lower says it runs (a third after the first OOM, less with each further one, more where a probe
    ran above it: estimates of different shapes err differently). The same shape is SAME_SHAPE_OOM_CHANCE.
    Never more than the measured peak memory gives (`_chance_to_fit`)."""
    chance = _chance_to_fit(pred, obs)
    if not obs.oom:
        return chance
    memory = pred.memory_gib
    ran = memory[sorted(obs.ok)]
    ran_out = memory[sorted(obs.oom)]
    above = memory >= ran_out.min()
    runs_above = (ran[None, :] >= memory[above, None]).sum(axis=1)
    out_below = (ran_out[None, :] <= memory[above, None]).sum(axis=1)
    chance[above] = np.minimum(chance[above], (1 + runs_above) / (2 + runs_above + out_below))
    for o in obs.oom:
        same = (pred.shape_ids == pred.shape_ids[o]) & (memory >= memory[o])
        chance[same] = np.minimum(chance[same], SAME_SHAPE_OOM_CHANCE)
    return chance


def _chance_to_fit(pred: Predictions, obs: Observations) -> np.ndarray:
    """(N,) the chance each candidate's peak memory fits the device, from the peak device memory the ok
    probes measured (1 where none did).

    The memory estimate's error is a factor: a probe that measured 30% more than its estimate says the
    candidates of its shape (everything but micro-batch and device settings) need 30% more than theirs,
    and candidates of shapes no probe has had are taken to be off by the probes' mean factor. Either is
    known to the probes' spread in log ratio (at least MEMORY_RATIO_SPREAD_FLOOR), so a candidate the
    factor puts at the device's memory has half a chance. Out-of-memory probes only bound the wall from
    above, one at a time; a measured peak places it for every candidate at once.
    (benchmarks/search_efficiency.py, `memory_wall` and `combined`: probes that ran out of memory
    176 -> 66 over 24 studies, docs/benchmarks.md session 14.)"""
    from scipy.special import ndtr

    if not obs.peak_mem_gib:
        return np.ones(len(pred))
    probed = sorted(obs.peak_mem_gib)
    log_ratio = np.log(np.array([obs.peak_mem_gib[i] for i in probed]) / pred.memory_gib[probed])
    spread = max(float(log_ratio.std()), MEMORY_RATIO_SPREAD_FLOOR)
    expected = np.full(len(pred), float(log_ratio.mean()))
    probed_shapes = pred.shape_ids[probed]
    for shape in set(probed_shapes.tolist()):
        expected[pred.shape_ids == shape] = float(log_ratio[probed_shapes == shape].mean())
    return ndtr((np.log(pred.device_gib / pred.memory_gib) - expected) / spread)


def _samples_with_front(log_mean: np.ndarray, log_std: np.ndarray, with_probes: list[np.ndarray], probed: list[int],
                        on_front: list[int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """SAMPLES draws of every candidate's figures (N, S, M) and, in the same draws, of the probed front's
    true figures (S, K, M; `on_front`: positions in `probed`), drawn jointly per objective from the
    correction's posterior: the front's figures first, then each candidate's given them.

    A candidate that differs from a front probe in one setting (another offload at the same power
    limit) shares most of its error with it: drawn apart, the two would each carry the probes'
    measurement noise, and each near-tie of the front would keep a chance to beat it by 1% that is the
    noise's. Drawn together, only their difference counts. (Measured alone this changed little: the
    near-ties' spread was mostly the doubt's, which is independent of the probes; it was measured and
    kept together with the doubt's floor at 0.5%, correction.py.)"""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((SAMPLES, log_mean.shape[1]))  # one draw for every candidate: compared on the same draws
    front_candidates = [probed[j] for j in on_front]
    log_samples = np.repeat(log_mean[:, None, :], SAMPLES, axis=1)
    log_front = np.repeat(log_mean[front_candidates][None, :, :], SAMPLES, axis=0)
    for m, covariance in enumerate(with_probes):
        with_front = covariance[:, on_front]  # (N, K)
        among_front = with_front[front_candidates]  # (K, K)
        if not len(on_front) or not np.any(among_front):
            log_samples[:, :, m] += log_std[:, None, m] * z[None, :, m]
            continue
        values, vectors = np.linalg.eigh((among_front + among_front.T) / 2)
        values = np.clip(values, 0.0, None)
        drawn = (rng.standard_normal((SAMPLES, len(on_front))) * np.sqrt(values)) @ vectors.T  # (S, K)
        # Given the front's draw: the candidate's mean moves by its regression on the front's error, and
        # its spread is what the front does not explain (pseudo-inverse: probes the fit knows exactly).
        keep = values > 1e-12 * max(values.max(), 1e-300)
        inverse = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
        weights = with_front @ inverse  # (N, K)
        explained = (weights * with_front).sum(axis=1)
        spread = np.sqrt(np.clip(log_std[:, m] ** 2 - explained, 0.0, None))
        log_samples[:, :, m] += weights @ drawn.T + spread[:, None] * z[None, :, m]
        log_front[:, :, m] += drawn
    return np.exp(log_samples), np.exp(log_front)


def outlook(pred: Predictions, obs: Observations, objectives: int, seed: int = 0) -> Outlook:
    """Corrected predictions and, for every candidate, its chance to enter the front and its EHVI."""
    probed = sorted(obs.ok)
    measured = np.log(np.array([obs.ok[i][:objectives] for i in probed])) if probed else np.zeros((0, objectives))
    raw = measured - pred.log_values[probed][:, :objectives] if probed else np.zeros((0, objectives))
    reproduced = bool(probed) and float(np.abs(raw - raw.mean(axis=0)).max()) < 1e-9
    # Only figures labelled simulated (the simulate backend, a replay of `autotune space --simulate`)
    # are taken as the simulator's by construction: no doubt is kept and no coverage probe owed. Measured
    # figures that happen to match it on the first probes (a truth that differs only in knob interactions
    # not probed yet) prove nothing of the candidates no probe resembles: trusted, every candidate's doubt
    # was ~0 and chances of exactly 0 came true (benchmarks/chance_calibration.py, `interactions` truths).
    exact = reproduced and obs.sources == {"simulated"}
    # The simulator with its mechanisms re-weighted by the probes is the prior the correction starts
    # from; one that reproduces every probe up to one factor is left as it is.
    base = pred.log_values[:, :objectives]
    if probed and not reproduced:
        base = reweighted_log_prediction(pred.time_parts, pred.energy_parts, probed, measured)
    means, stds, noise, with_probes = [], [], [], []
    for m in range(objectives):
        mu, sd, noise_std, covariance = corrected_log_prediction(pred.features, base[:, m], probed, measured[:, m], exact)
        means.append(mu)
        stds.append(sd)
        noise.append(noise_std)
        with_probes.append(covariance)
    log_mean, log_std = np.stack(means, axis=1), np.stack(stds, axis=1)
    predicted = np.exp(log_mean)
    # The front to beat is the model's figure of each probed candidate: where the fit takes part of a
    # residual for measurement noise, a probe that measured 2% low does not hide a neighbour that is
    # truly 1% better. Where probes are exact (the simulate backend) the two are the same.
    front_values = predicted[probed].reshape(-1, objectives)
    on_front = front_indices(front_values) if len(front_values) else []
    front = front_values[on_front]
    predicted_front = predicted[front_indices(predicted)]
    reference = 1.1 * np.vstack([predicted_front, front]).max(axis=0)
    samples, front_samples = _samples_with_front(log_mean, log_std, with_probes, probed, on_front, seed)
    chance_to_run = _chance_to_run(pred, obs)
    free = np.ones(len(pred), dtype=bool)
    free[list(obs.done | obs.busy)] = False
    enter = enters_front(samples, front_samples).mean(axis=1) * chance_to_run
    gain = improvement(samples, front, reference).mean(axis=1) * chance_to_run
    return Outlook(predicted, log_std, chance_to_run, front, reference, free, enter, gain, obs, measured, np.array(noise), exact)
