"""What the probes so far say about the simulator's error: a Gaussian process on log(measured/predicted),
where "predicted" is the simulator with its mechanisms re-weighted by the same probes (reweight.py).

One GP per objective over the valid candidates. The residual's mean over the probes is taken out
first: a simulator that is uniformly 20% off is corrected everywhere by one probe, and the GP only
has to learn how the error varies. Its kernel (see `Kernel`, knob_kernel.py) adds three parts:
- a Matern kernel on the knobs (ordinal knobs as numbers scaled to [0, 1], categorical ones one-hot):
  a probe corrects the candidates that resemble it (the same configuration at another power limit);
- the main effects of knob values and of pairs of knob values (an order-2 additive kernel on shared
  values): a probe with "SP 4" and "offload async" informs every candidate with either, and more
  the ones with both. Errors a simulator makes are of that kind (a mechanism mis-weighted for one
  ZeRO stage, an interaction of this SP degree with that offload), and a distance kernel cannot
  carry them across candidates that differ in other knobs.

Before three probes the hyper-parameters cannot be fitted, so a fixed prior is used: a residual of
about 15% (one standard deviation) that varies over about one knob's range. From three probes on the
three amplitudes, the Matern length and a noise term are fitted by maximum likelihood: structured
residuals are carried to the candidates that share their knob values, and where probes have near
twins (the same configuration at another power limit) residuals that disagree between twins are
taken as measurement noise. The Matern length is at least MIN_LENGTH_SCALE, so that a short-range
error is one that twins share: shorter, noise and a short-range error cannot be told apart, and the
fit follows the measurements.

Then each value pair some probe holds gets a variance of its own (sparse Bayesian learning: type-II
maximum likelihood per pair, `_fit_sparse`). An interaction is one pair among a hundred or more, so a
probe the simulator got right says that none of its twenty-odd pairs holds one, and those pairs are
cleared; a probe's residual goes to the pairs no such probe has held (evenly among pairs that always
appear together). With one variance shared by every pair, a probe that hit an interaction left a few
percent of spread on every candidate, and studies probed dozens of near-ties of the predicted front
before any other region (benchmarks/search_efficiency.py, `interactions`). Pairs no probe holds keep
the even fit's share.

A fit can only learn from what was probed: residuals that are all alike fit small amplitudes, which
would vouch for candidates no probe resembles (a knob interaction no probe has hit). So every
candidate keeps some doubt, less the more it resembles a probe: MIN_RESIDUAL_STD at first, and from
MIN_PROBES_TO_CALIBRATE_DOUBT probes on, how far the fit misses a probe it was not given
(leave-one-out, less the probes' measurement noise) on candidates whose every knob value some probe
has had, in proportion to the square root of the share of their value pairs no probe has held
together, and no less than DOUBT_FLOOR_STD. None where the probes are the simulator's own figures up
to one factor (the simulate backend).
"""

from __future__ import annotations

import math

import numpy as np

from autotune.study.knob_kernel import Kernel, KnobFeatures, matern_of

PRIOR_RESIDUAL_STD = 0.15  # log(measured/predicted), before anything is fitted
MIN_PROBES_TO_FIT = 3
# Doubt left on a candidate no probe resembles: about the simulator's calibrated error (3-4%,
# docs/simulator.md) plus a margin. 3% was measured to stop only a few probes earlier.
MIN_RESIDUAL_STD = 0.05
# From this many ok probes on, the doubt is how far the fit misses a probe it was not given
# (leave-one-out), kept between DOUBT_FLOOR_STD and MIN_RESIDUAL_STD: a simulator the probes show to be
# right within 1% is not doubted by 5% (benchmarks/search_efficiency.py: the front reached in fewer
# probes, studies stopped earlier).
MIN_PROBES_TO_CALIBRATE_DOUBT = 8
# Half the front's 1% margin: at 1%, a near-tie of the front 0.5% from it kept a 7% chance to beat it
# by 1% on the doubt alone, and studies probed a dozen power-limit and offload variants of the front's
# configurations before any region no probe resembled (benchmarks/search_efficiency.py, session 10:
# with the front drawn jointly (outlook.py), 0.5% cut the probes run on `perturbed` truths by a quarter,
# the front reached as soon; docs/benchmarks.md).
DOUBT_FLOOR_STD = 0.005
# The part of the leave-one-out error taken for measurement noise is at most this (log) std: a probe's
# time and energy over a measured window repeat within a few percent, so a larger fitted noise is error
# the fit has not learnt (with no twins probed the two cannot be told apart), and stays doubt.
MAX_NOISE_STD = 0.03
# Features span [0, 1] per knob: a longer length scale would let a few probes vouch for regions of the
# space (another SP degree, another offload) that none of them resembles.
MAX_LENGTH_SCALE = 0.7
# ... and no shorter than this. Neighbouring values of a four-valued knob (power limit 1.0, 0.9, 0.8,
# 0.7; micro-batch 1-8) are 1/3 apart: a Matern part much shorter correlates a probe with no other
# candidate, so all it can fit is measurement noise, which the likelihood then prefers to call error
# (it is nearly flat between the two) and passes on to the probe's twins. With a floor of 0.1, 2.5%
# noise (benchmarks/search_efficiency.py, `noise`, 7b/1 seed 0, 25 probes) was fitted as 0.1% noise and
# a 2% Matern part of length 0.23; the corrected predictions then missed the candidates' true figures by
# 2.2% (rms), four times the re-weighted simulator's own miss. Measured with PAIR_NOISE_MARGIN below
# (docs/benchmarks.md, session 12).
MIN_LENGTH_SCALE = 0.5


# Before MIN_PROBES_TO_FIT: all of the prior's residual in the Matern part, a little noise.
_PRIOR_THETA = np.array([2 * math.log(PRIOR_RESIDUAL_STD), math.log(MAX_LENGTH_SCALE), math.log(1e-8), math.log(1e-8), math.log(1e-4)])


def _negative_log_likelihood(theta, kernel: Kernel, parts: tuple, y: np.ndarray) -> tuple[float, np.ndarray]:
    """-log p(y | theta) up to a constant, and its gradient by theta."""
    from scipy.linalg import cho_solve

    gram, slopes = kernel.gram_and_slopes(theta, parts)
    try:
        chol = np.linalg.cholesky(gram + kernel.noise_diagonal(theta, len(y)))
    except np.linalg.LinAlgError:
        return 1e10, np.zeros(len(theta))
    alpha = cho_solve((chol, True), y)
    # d(-log p)/d theta_j = tr((K^-1 - alpha alpha^T) dK/d theta_j) / 2
    w = cho_solve((chol, True), np.eye(len(y))) - np.outer(alpha, alpha)
    gradient = [0.5 * float((w * slope).sum()) for slope in slopes]
    gradient.append(0.5 * math.exp(theta[4]) * float(np.trace(w)))
    return float(0.5 * y @ alpha + np.log(np.diag(chol)).sum()), np.array(gradient)


def _fit(kernel: Kernel, parts: tuple, y: np.ndarray, fixed_log_noise: float | None = None) -> np.ndarray:
    """Maximum-likelihood log(Matern amplitude, length, main-effect amplitude, pair amplitude, noise)
    on the probes' `parts`. With `fixed_log_noise` (the parts' pair part weighted per pair,
    `_fit_sparse`) the pair amplitude stays 1 and the noise is that."""
    from scipy.optimize import minimize

    bounds = [(math.log(1e-8), 0.0), (math.log(MIN_LENGTH_SCALE), math.log(MAX_LENGTH_SCALE)),
              (math.log(1e-8), 0.0), (math.log(1e-8), 0.0), (math.log(1e-6), math.log(1e-2))]
    if fixed_log_noise is not None:
        bounds[3] = (0.0, 0.0)
        bounds[4] = (fixed_log_noise, fixed_log_noise)
    best = None
    # Two starts: the prior (all in the Matern part) and a mix of all three parts.
    for start in (_PRIOR_THETA, np.array([math.log(0.05**2), math.log(MIN_LENGTH_SCALE), math.log(0.01), math.log(0.01), math.log(1e-4)])):
        start = np.clip(start, [b[0] for b in bounds], [b[1] for b in bounds])
        result = minimize(_negative_log_likelihood, start, args=(kernel, parts, y), jac=True, method="L-BFGS-B", bounds=bounds)
        if best is None or result.fun < best.fun:
            best = result
    return best.x


# MacKay updates per fit of the pair variances (the variances of cleared pairs fall geometrically), and
# rounds of pair variances and other hyper-parameters fitted in turn.
SPARSE_ITERATIONS = 60
SPARSE_ROUNDS = 2
# A pair's variance is fitted to what the measurement noise times this (in variance: twice its standard
# deviation) leaves unexplained. Some 150 pairs, each free to take a variance, against 25 probes: at the
# noise itself, type-II maximum likelihood puts a residual of one or two noise deviations on the pairs
# only that probe holds, and the hundred-odd candidates holding them follow the noise. Where probes are
# exact the fitted noise is small, and an interaction no noise explains is still taken whole.
PAIR_NOISE_MARGIN = 4.0


def _pair_variances(kernel: Kernel, theta: np.ndarray, at: np.ndarray, parts: tuple, y: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """(P,) a variance per value pair: for pairs some probe holds, the type-II maximum likelihood
    (sparse Bayesian learning, MacKay's update, from `gamma`) with the rest of the kernel fixed: a
    probe whose residual is small clears its pairs, a residual is put on the pairs no clean probe holds
    (shared evenly among pairs that always appear together). Pairs no probe holds keep `gamma`.
    `parts`: the probes' (`at`) own."""
    f = kernel.f
    phi = f.pairs[at]
    seen = phi.any(axis=0)
    gamma = gamma.copy()
    if not seen.any():
        return gamma
    phi = phi[:, seen]
    without_pairs = np.r_[theta[:3], -np.inf, theta[4]]
    rest = kernel.gram(without_pairs, parts) + PAIR_NOISE_MARGIN * kernel.noise_diagonal(theta, len(at))
    g = np.maximum(gamma[seen], 1e-6)
    for _ in range(SPARSE_ITERATIONS):
        inverse = np.linalg.inv(rest + (phi * g) @ phi.T)
        q = phi.T @ (inverse @ y)
        s = (phi * (inverse @ phi)).sum(axis=0)
        g = np.clip(g * q**2 / np.maximum(s, 1e-12), 1e-10, 1.0)
    gamma[seen] = g
    return gamma


def _fit_sparse(kernel: Kernel, at: np.ndarray, parts: tuple, y: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta (pair amplitude 1) and a variance per value pair, fitted in turn from the even fit `theta`
    on the probes' (`at`) `parts`: the pairs' variances, then the Matern and main-effect parts again
    with those, and so on. The noise stays the even fit's: with a variance per pair the likelihood
    would explain noise as pairs."""
    k = kernel.f.varying
    gamma = np.full(kernel.f.pairs.shape[1], math.exp(theta[3]) / (k * (k - 1) / 2) if k > 1 else 0.0)
    if k < 2:
        return theta, gamma
    for _ in range(SPARSE_ROUNDS):
        gamma = _pair_variances(kernel, theta, at, parts, y, gamma)
        theta = _fit(kernel, kernel.weighted(parts, at, at, gamma), y, theta[4])
    return theta, _pair_variances(kernel, theta, at, parts, y, gamma)


def _doubt_std(probed: np.ndarray, chol: np.ndarray, y: np.ndarray, noise_var: float, unseen_pair_share: np.ndarray) -> np.ndarray:
    """(N,) MIN_RESIDUAL_STD, or once the probes span the space the fit's leave-one-out error (its closed
    form for a GP: residual_i / [K^-1]_ii, Rasmussen & Williams eq. 5.12) within the doubt's bounds,
    times the square root of the candidate's share of value pairs no probe has held together.

    A left-out probe is missed by the fit's error and by the probe's own measurement noise; the doubt
    is about the candidate's true figure, so the fitted noise variance is taken out (else 2% noise
    keeps a 2% doubt on every near-tie of the front, and the study never stops).

    The error the fit makes on a left-out probe is mostly knob interactions it has not learnt, and the
    kernel learns them pair by pair: a candidate whose every pair of values some probe has held keeps
    only DOUBT_FLOOR_STD. Kept whole, the doubt of one probe that hit an interaction stays on every
    near-tie of the front (dozens of power-limit and offload variants of one configuration), which then
    get probed before any knob value no probe has had (benchmarks/search_efficiency.py, `interactions`).

    Probes that all sit in one corner could agree with each other and still say nothing of the rest:
    this calibrated doubt is for candidates whose knob values have all been probed; the others keep
    MIN_RESIDUAL_STD (`corrected_log_prediction`). Waiting for every value before calibrating at all
    was measured to keep the doubt at 5% for most of a study: studies ran 10-20 probes longer."""
    from scipy.linalg import cho_solve

    if len(probed) < MIN_PROBES_TO_CALIBRATE_DOUBT:
        return np.full(len(unseen_pair_share), MIN_RESIDUAL_STD)
    leave_one_out = cho_solve((chol, True), y) / np.diag(cho_solve((chol, True), np.eye(len(y))))
    latent_var = max(float(np.mean(leave_one_out**2)) - min(noise_var, MAX_NOISE_STD**2), 0.0)
    calibrated = float(np.clip(math.sqrt(latent_var), DOUBT_FLOOR_STD, MIN_RESIDUAL_STD))
    return np.maximum(calibrated * np.sqrt(unseen_pair_share), DOUBT_FLOOR_STD)


def _unseen_pair_share(features: KnobFeatures, probed: list[int]) -> np.ndarray:
    """(N,) the share of each candidate's pairs of knob values that no probe has held together (1 where
    fewer than two knobs vary: no pair has been learnt)."""
    k = features.varying
    return features.unseen_value_pairs(probed) / (k * (k - 1) / 2) if k > 1 else np.ones(len(features.values))


# Candidates whose kernel parts with the probes are built at once: whole, the parts and the Gram matrix's
# temporaries were a dozen (candidates x probes) matrices, 2 MB per probe over 39,340 candidates (trial70 #7).
_CANDIDATES_AT_ONCE = 4096


def _cross_gram(kernel: Kernel, theta: np.ndarray, at: np.ndarray, gamma: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(N, probes) the Gram matrix of every candidate with the probes `at`, and (N,) each candidate's
    prior Matern correlation with its nearest probe; built in blocks of candidates (views of their
    features, not copies), every element as whole."""
    n = len(kernel.f.values)
    cross, nearest_probe = np.empty((n, len(at))), np.empty(n)
    for start in range(0, n, _CANDIDATES_AT_ONCE):
        rows = slice(start, start + _CANDIDATES_AT_ONCE)
        parts = kernel.weighted(kernel.parts(rows, at), rows, at, gamma)
        cross[rows] = kernel.gram(theta, parts)
        nearest_probe[rows] = matern_of(parts[0] / MAX_LENGTH_SCALE).max(axis=1)  # parts[0]: knob distances
    return cross, nearest_probe


def corrected_log_prediction(
    features: KnobFeatures, log_predicted: np.ndarray, probed: list[int], log_measured: np.ndarray, exact: bool = False
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Mean and standard deviation of log(objective) for every candidate (rows of `features`), the
    probes' measurement noise the fit found (log std, at most MAX_NOISE_STD; 0 before it is fitted),
    and (N, len(probed)) the posterior covariance of each candidate's log figure with each probed
    candidate's: a twin of a probe moves with it, so whether the twin beats the probe is a question
    of their difference, not of each one's spread.

    `log_predicted`: the simulator's log(objective) per candidate; `probed`: indices of the candidates
    measured, with `log_measured` their log(objective) in the same order; `exact`: the probes are the
    simulator's own figures and it reproduces them up to one factor (`outlook`): no doubt is kept."""
    n = len(log_predicted)
    if not probed:
        return log_predicted.copy(), np.full(n, PRIOR_RESIDUAL_STD), 0.0, np.zeros((n, 0))
    residual = log_measured - log_predicted[probed]
    offset = float(residual.mean())
    kernel = Kernel(features)
    at = np.array(probed)
    y = residual - offset
    probe_parts = kernel.parts(at, at)
    gamma = None
    theta = _fit(kernel, probe_parts, y) if len(probed) >= MIN_PROBES_TO_FIT else _PRIOR_THETA
    # The doubt is calibrated on the even fit (five hyper-parameters): a left-out probe's own pairs
    # were fitted to it, so the sparse fit's leave-one-out error would flatter it.
    even_chol = np.linalg.cholesky(kernel.gram(theta, probe_parts) + kernel.noise_diagonal(theta, len(at)))
    chol = even_chol
    if len(probed) >= MIN_PROBES_TO_FIT and not exact:
        theta, gamma = _fit_sparse(kernel, at, probe_parts, y, theta)
        chol = np.linalg.cholesky(kernel.gram(theta, kernel.weighted(probe_parts, at, at, gamma)) + kernel.noise_diagonal(theta, len(at)))
    cross, nearest_probe = _cross_gram(kernel, theta, at, gamma)
    mean = cross @ np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    v = np.linalg.solve(chol, cross.T)
    prior = kernel.prior_variance(theta, gamma)
    # The question is whether a candidate's true figure beats the front, not whether one noisy probe
    # of it would: the spread is the latent function's, without the measurement noise (else every twin
    # of a probed candidate looks uncertain by the noise, and gets probed for it).
    latent = np.sqrt(np.clip(prior - (v**2).sum(axis=0), 0.0, None))
    # Doubt the fit cannot remove: residuals that are alike (or pure noise) fit a small amplitude, which
    # would vouch for candidates no probe resembles. Some doubt stays on each candidate (_doubt_std),
    # less the more it resembles a probe (the prior's Matern correlation with its nearest probe).
    if exact:
        doubt = 0.0
    else:
        calibrated = _doubt_std(at, even_chol, y, math.exp(theta[4]), _unseen_pair_share(features, probed))
        doubt = np.where(features.holds_unseen_value(probed), MIN_RESIDUAL_STD, calibrated)
        doubt = doubt * np.sqrt(1.0 - nearest_probe**2)
    noise_std = min(math.sqrt(math.exp(theta[4])), MAX_NOISE_STD) if len(probed) >= MIN_PROBES_TO_FIT else 0.0
    # The doubt is not the GP's: it is taken as independent of every probe (no covariance).
    with_probes = cross  # in place: one (candidates x probes) matrix less
    with_probes -= v.T @ v[:, at]
    return log_predicted + offset + mean, np.maximum(np.maximum(latent, doubt), 1e-6), noise_std, with_probes
