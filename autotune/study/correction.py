"""What the probes so far say about the simulator's error: a Gaussian process on log(measured/predicted).

One GP per objective, the knobs as features (ordinal knobs as numbers scaled to [0, 1], categorical
ones one-hot), so a probe corrects its neighbours most and far-away candidates keep the prior's
uncertainty. The residual's mean over the probes is taken out first: a simulator that is uniformly
20% off is corrected everywhere by one probe, and the GP only has to learn how the error varies.

Before three probes the kernel's hyper-parameters cannot be fitted, so a fixed prior is used: a
residual of about 15% (one standard deviation) that varies over about one knob's range. From three
probes on they are fitted by maximum likelihood, with a noise term (repeated probes disagree by a
few percent), so a simulator that keeps being right ends with a small uncertainty, and one that is
wrong in ways the knobs explain keeps a large one where nothing was probed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from autotune.candidate import KNOBS

# Knobs whose order means something (more ZeRO, more SP, bigger micro-batch, more nodes, less power);
# the rest are categories. Sizes grow in powers of two, so their logarithm is the distance.
_LOG2_KNOBS = ("sp_degree", "micro_batch", "nodes")
_ORDINAL_KNOBS = ("zero_stage", *_LOG2_KNOBS, "power_limit")
PRIOR_RESIDUAL_STD = 0.15  # log(measured/predicted), before anything is fitted
PRIOR_LENGTH_SCALE = 1.0
MIN_PROBES_TO_FIT = 3
MIN_RESIDUAL_STD = 0.05
# Features span [0, 1] per knob: a longer length scale would let a few probes vouch for regions of the
# space (another SP degree, another offload) that none of them resembles.
MAX_LENGTH_SCALE = 0.7


def knob_features(params_list: list[dict]) -> np.ndarray:
    """One row per candidate: ordinal knobs in [0, 1] over the candidates given, categorical one-hot."""
    columns = []
    for knob in KNOBS:
        values = [p[knob] for p in params_list]
        numeric = knob in _ORDINAL_KNOBS and all(isinstance(v, (int, float)) for v in values)
        if numeric:
            x = np.array([math.log2(v) if knob in _LOG2_KNOBS else float(v) for v in values])
            span = x.max() - x.min()
            columns.append(((x - x.min()) / span if span else np.zeros_like(x))[:, None])
        else:
            levels = sorted({str(v) for v in values})
            if len(levels) > 1:
                columns.append(np.array([[str(v) == level for level in levels] for v in values], dtype=float))
    return np.hstack(columns) if columns else np.zeros((len(params_list), 1))


def _gaussian_process(fit_hyperparameters: bool, seed: int, min_residual_std: float):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    kernel = ConstantKernel(PRIOR_RESIDUAL_STD**2, (min_residual_std**2, 1.0)) * Matern(MAX_LENGTH_SCALE, (0.1, MAX_LENGTH_SCALE), nu=2.5) + WhiteKernel(
        1e-4, (1e-6, 1e-2)
    )
    return GaussianProcessRegressor(
        kernel=kernel,
        optimizer="fmin_l_bfgs_b" if fit_hyperparameters else None,
        n_restarts_optimizer=1 if fit_hyperparameters else 0,
        random_state=seed,
    )


def corrected_log_prediction(
    features: np.ndarray, log_predicted: np.ndarray, probed: list[int], log_measured: np.ndarray, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of log(objective) for every candidate (rows of `features`).

    `log_predicted`: the simulator's log(objective) per candidate; `probed`: indices of the candidates
    measured, with `log_measured` their log(objective) in the same order."""
    n = len(log_predicted)
    if not probed:
        return log_predicted.copy(), np.full(n, PRIOR_RESIDUAL_STD)
    residual = log_measured - log_predicted[probed]
    offset = float(residual.mean())
    # A simulator that reproduces every probe (up to one factor) is trusted as exact: the simulate
    # backend, or a replay of simulated figures. Any other study keeps MIN_RESIDUAL_STD of doubt where
    # no probe resembles a candidate: a handful of alike residuals must not vouch for the whole space.
    exact = float(np.abs(residual - offset).max()) < 1e-9
    gp = _gaussian_process(len(probed) >= MIN_PROBES_TO_FIT, seed, 1e-6 if exact else MIN_RESIDUAL_STD)
    with warnings.catch_warnings():
        # Residuals that are all alike drive the amplitude to its bound: that is the answer, not a problem.
        warnings.simplefilter("ignore")
        gp.fit(features[probed], residual - offset)
        mean, std = gp.predict(features, return_std=True)
    # The question is whether a candidate's true figure beats the front, not whether one noisy probe
    # of it would: take the measurement noise out of the spread (else every twin of a probed
    # candidate looks uncertain by the noise, and gets probed for it).
    noise = gp.kernel_.k2.noise_level
    latent = np.sqrt(np.clip(std**2 - noise, 0.0, None))
    return log_predicted + offset + mean, np.maximum(latent, 1e-6)
