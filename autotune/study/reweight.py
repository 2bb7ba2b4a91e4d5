"""The simulator's mechanisms re-weighted by the probes: the prior mean of the correction (correction.py).

The simulator builds a step's time from phases (compute, communication, ZeRO-3 block overhead,
activation offload, GPU and host optimizer, step overhead) and its energy from components (GPU, CPU,
memory and interconnect, power delivery). Much of what it gets wrong on a new cluster is how much
each mechanism costs there (communication 30% slower than modelled, the host optimizer twice as fast),
an error every candidate shares in proportion to how much of its step the mechanism takes. So
before the Gaussian process learns what is left, each mechanism gets a weight fitted to the probes
so far:

    time(c)   = sum over phases p of w_p x phase_p(c)
    energy(c) = sum over components q of v_q x component_q(c) x time(c) / simulated time(c)

(a component's energy follows the time it is drawn for). The weights are fitted in log space
(log(predicted / measured) per probe, like every residual here) with a prior pulling each log-weight
towards 0 (PRIOR_LOG_WEIGHT_STD): a mechanism no probe exercises keeps its simulated cost, and a few
probes move the weights only as far as they agree. A distance kernel would need probes near every
candidate to learn the same; this carries one mechanism's error to all candidates at once.
"""

from __future__ import annotations

import numpy as np

# log-weight prior: a mechanism's cost on a new cluster within about x/÷ 1.3 of the simulator's (1 sd).
PRIOR_LOG_WEIGHT_STD = 0.25
# How closely a probe's figure is expected to follow the re-weighted mechanisms (log std): what is left
# is the Gaussian process's to learn. With the prior above, a weight moves about halfway to what one
# probe dominated by its mechanism says, and all the way with a few.
RESIDUAL_LOG_STD = 0.05


def _fit_log_weights(parts: np.ndarray, log_measured: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """MAP log-weights u: min sum_i (log(parts_i . e^u) - y_i)^2 / s^2 + sum_p u_p^2 / prior^2."""
    from scipy.optimize import least_squares

    used = parts.sum(axis=0) > 0  # a mechanism no probe exercises keeps weight 1 (the prior's mean)
    u = np.zeros(parts.shape[1])
    if not used.any():
        return u
    p = parts[:, used]

    def residuals(x):
        fitted = np.log(np.clip(p @ np.exp(x), 1e-300, None))
        return np.concatenate([(fitted - log_measured) / RESIDUAL_LOG_STD, x / PRIOR_LOG_WEIGHT_STD])

    def jacobian(x):
        share = p * np.exp(x) / np.clip(p @ np.exp(x), 1e-300, None)[:, None]  # d log(p.e^x) / dx
        return np.vstack([share / RESIDUAL_LOG_STD, np.eye(len(x)) / PRIOR_LOG_WEIGHT_STD])

    x0 = np.zeros(used.sum()) if start is None else start[used]
    u[used] = least_squares(residuals, x0, jac=jacobian, method="lm").x
    return u


def _reweighted(time_parts: np.ndarray, energy_parts: np.ndarray, fit_on: list[int], log_measured: np.ndarray,
                start: tuple | None = None) -> tuple[np.ndarray, tuple]:
    """(N, M) log figures of every candidate with weights fitted on the candidates `fit_on` (their log
    figures `log_measured`), and the log-weights (a start for a nearby fit)."""
    simulated_time = time_parts.sum(axis=1)
    u = _fit_log_weights(time_parts[fit_on], log_measured[:, 0], None if start is None else start[0])
    time = time_parts @ np.exp(u)
    if log_measured.shape[1] == 1:
        return np.log(time)[:, None], (u,)
    drawn = energy_parts * (time / simulated_time)[:, None]
    v = _fit_log_weights(drawn[fit_on], log_measured[:, 1], None if start is None else start[1])
    return np.log(np.stack([time, drawn @ np.exp(v)], axis=1)), (u, v)


def reweighted_log_prediction(time_parts: np.ndarray, energy_parts: np.ndarray, probed: list[int],
                              log_measured: np.ndarray) -> np.ndarray:
    """(N, M) log(time, energy) of every candidate with the mechanisms re-weighted by the probes.

    `time_parts` (N, phases) and `energy_parts` (N, components): the simulator's figures per mechanism,
    summing to its time and energy; `probed`: indices of the ok probes, `log_measured` (len(probed), M)
    their log figures (M = 1: time only)."""
    if not probed:
        simulated = np.stack([time_parts.sum(axis=1), energy_parts.sum(axis=1)], axis=1)
        return np.log(simulated)[:, :log_measured.shape[1]]
    return _reweighted(time_parts, energy_parts, probed, log_measured)[0]


def leave_one_out_log_residual(time_parts: np.ndarray, energy_parts: np.ndarray, probed: list[int],
                               log_measured: np.ndarray) -> np.ndarray:
    """(len(probed), M) how far the re-weighted simulator misses each probe when fitted without it: the
    error it may make on a candidate no probe holds (the in-sample residual is smaller, as the weights
    were fitted to it)."""
    if len(probed) < 2:
        return log_measured - reweighted_log_prediction(time_parts, energy_parts, [], log_measured)[probed]
    _, full = _reweighted(time_parts, energy_parts, probed, log_measured)
    out = np.empty_like(log_measured)
    for j, i in enumerate(probed):
        rest = [n for n in range(len(probed)) if n != j]
        log_values, _ = _reweighted(time_parts, energy_parts, [probed[n] for n in rest], log_measured[rest], full)
        out[j] = log_measured[j] - log_values[i]
    return out
