"""The knobs of a candidate as the correction's Gaussian process sees them (correction.py), and its kernel.

Two views of each candidate: its ordinal knobs scaled to [0, 1] with categorical ones one-hot (a
distance: the same configuration at another power limit is near), and the one-hot of every knob's
value with the value pairs each candidate holds (what candidates share however far apart they are).
The kernel (`Kernel`) adds a Matern part on the distance and the main effects of knob values and of
pairs of knob values (an order-2 additive kernel on shared values); see its docstring for why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autotune.candidate import KNOBS

# Knobs whose order means something (more ZeRO, more SP, bigger micro-batch, more nodes, less power);
# the rest are categories. Sizes grow in powers of two, so their logarithm is the distance.
_LOG2_KNOBS = ("sp_degree", "micro_batch", "nodes")
_ORDINAL_KNOBS = ("zero_stage", *_LOG2_KNOBS, "power_limit")


@dataclass(frozen=True)
class KnobFeatures:
    """The two views of a candidate's knobs the correction's kernel compares."""

    scaled: np.ndarray  # (N, D) ordinal knobs in [0, 1], categorical one-hot: distances for the Matern part
    values: np.ndarray  # (N, L) one-hot of every varying knob's value: shared values and value pairs
    varying: int  # how many knobs take more than one value
    pairs: np.ndarray  # (N, P) 1 where the candidate holds the value pair (every pair some candidate holds)

    def shared_values(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(len(a), len(b)): how many knob values candidates a[i] and b[j] have in common."""
        return self.values[a] @ self.values[b].T

    def holds_unseen_value(self, seen: list[int]) -> np.ndarray:
        """(N,) whether the candidate holds a knob value none of the candidates `seen` holds."""
        return self.values[:, self.values[seen].max(axis=0, initial=0) == 0].any(axis=1)

    def shares_every_value(self, rows: list[int]) -> np.ndarray:
        """(len(rows),) whether every knob value candidate rows[i] holds is held by another of `rows` too."""
        held = self.values[rows] > 0
        return (~held | (held.sum(axis=0) >= 2)[None, :]).all(axis=1)

    def unseen_pairs(self, seen: list[int]) -> np.ndarray:
        """(P,) whether no candidate in `seen` holds the value pair (a column of `pairs`)."""
        return ~self.pairs[seen].any(axis=0)

    def unseen_value_pairs(self, seen: list[int]) -> np.ndarray:
        """(N,) how many pairs of the candidate's knob values no candidate in `seen` holds together."""
        return (self.pairs @ self.unseen_pairs(seen)).astype(int)


def knob_features(params_list: list[dict]) -> KnobFeatures:
    """Per candidate: ordinal knobs in [0, 1] over the candidates given plus categorical one-hot, and
    the one-hot of every knob's value (ordinal or not)."""
    columns, values, varying = [], [], 0
    for knob in KNOBS:
        raw = [p[knob] for p in params_list]
        levels = sorted({str(v) for v in raw})
        if len(levels) > 1:
            varying += 1
            values.append(np.array([[str(v) == level for level in levels] for v in raw], dtype=float))
        numeric = knob in _ORDINAL_KNOBS and all(isinstance(v, (int, float)) for v in raw)
        if numeric:
            x = np.array([math.log2(v) if knob in _LOG2_KNOBS else float(v) for v in raw])
            span = x.max() - x.min()
            columns.append(((x - x.min()) / span if span else np.zeros_like(x))[:, None])
        elif len(levels) > 1:
            columns.append(values[-1])
    n = len(params_list)
    onehot = np.hstack(values) if values else np.zeros((n, 1))
    a, b = np.triu_indices(onehot.shape[1], k=1)
    pairs = onehot[:, a] * onehot[:, b]
    return KnobFeatures(np.hstack(columns) if columns else np.zeros((n, 1)), onehot, varying, pairs[:, pairs.any(axis=0)])


# Elements of the (rows of a, b, features) differences held at once: whole, they took gigabytes in a long study's report
# (39,340 candidates x 800 probes x 20 features: 5 GB; trial70 #1). In blocks of rows each element is computed as before.
_DIFFERENCES_AT_ONCE = 1 << 22


def _distance(scaled_a: np.ndarray, scaled_b: np.ndarray) -> np.ndarray:
    rows = max(1, _DIFFERENCES_AT_ONCE // max(1, scaled_b.shape[0] * scaled_b.shape[1]))
    distance = np.empty((scaled_a.shape[0], scaled_b.shape[0]))
    for start in range(0, scaled_a.shape[0], rows):
        block = scaled_a[start:start + rows]
        distance[start:start + rows] = np.sqrt(np.clip(((block[:, None, :] - scaled_b[None, :, :]) ** 2).sum(-1), 0, None))
    return distance


def matern_of(r: np.ndarray) -> np.ndarray:
    """Matern 5/2 correlation at distance r (in length scales)."""
    return (1.0 + math.sqrt(5) * r + 5.0 / 3.0 * r**2) * np.exp(-math.sqrt(5) * r)


class Kernel:
    """k(x, x') = a_m Matern(|x - x'| / l) + a_1 (shared values / K) + a_2 (shared value pairs / K(K-1)/2).

    The Matern part lets a probe correct the candidates that resemble it; the two additive parts are
    the main effects of knob values and of pairs of knob values (an order-2 additive kernel): a probe
    with "SP 4" and "offload async" informs every candidate with either, and more the ones with both,
    however different the rest of their knobs is. Knob interactions the simulator lacks are of that
    kind (this SP degree with that offload), and a distance kernel cannot carry them across the space.

    theta = log(a_m, l, a_1, a_2, noise). What a Gram matrix depends on besides theta (`parts`: knob
    distances and shared values) is computed once per pair of candidate sets, not per likelihood call.
    With a variance per value pair (`gamma`, see `_fit_sparse`) the pair part is weighted pair by pair
    (`weighted`) and a_2 is 1."""

    def __init__(self, features: KnobFeatures):
        self.f = features

    def parts(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Knob distance, shared values / K and shared value pairs / K(K-1)/2, each (len(a), len(b))."""
        k = self.f.varying
        s = self.f.shared_values(a, b)
        pairs = s * (s - 1) / (k * (k - 1)) if k > 1 else np.zeros_like(s)
        return _distance(self.f.scaled[a], self.f.scaled[b]), s / max(k, 1), pairs

    def weighted(self, parts: tuple, a: np.ndarray, b: np.ndarray, gamma: np.ndarray | None) -> tuple:
        """`parts` of candidates a and b with the pair part weighted by a variance per value pair
        (sum over the pairs both hold of gamma); `parts` as they are when gamma is None.

        The variances go on b's side (the probes): on a's, every candidate's (candidates x pairs) matrix
        was copied, 160 MB and half a second per objective and proposal over 39,340 candidates (trial70
        #7). `pairs` is 0 or 1, so each product, and the sum, is the same either way."""
        if gamma is None:
            return parts
        return parts[0], parts[1], self.f.pairs[a] @ (gamma[:, None] * self.f.pairs[b].T)

    def gram(self, theta: np.ndarray, parts: tuple) -> np.ndarray:
        """The Gram matrix alone: the cross one is (candidates x probes), where the slopes, unused, took
        half the time and memory (trial70 #7)."""
        amp_m, length, amp_1, amp_2 = np.exp(theta[:4])
        distance, shared, pairs = parts
        return amp_m * matern_of(distance / length) + amp_1 * shared + amp_2 * pairs

    def gram_and_slopes(self, theta: np.ndarray, parts: tuple) -> tuple[np.ndarray, list[np.ndarray]]:
        """The Gram matrix and its derivatives by theta[0..3] (the likelihood's analytic gradient)."""
        amp_m, length, amp_1, amp_2 = np.exp(theta[:4])
        distance, shared, pairs = parts
        r = distance / length
        by_log_length = amp_m * 5.0 / 3.0 * r**2 * (1.0 + math.sqrt(5) * r) * np.exp(-math.sqrt(5) * r)
        return self.gram(theta, parts), [amp_m * matern_of(r), by_log_length, amp_1 * shared, amp_2 * pairs]

    @staticmethod
    def noise_diagonal(theta: np.ndarray, n: int) -> np.ndarray:
        """The probes' measurement noise (and a jitter that keeps the Gram matrix invertible)."""
        return (math.exp(theta[4]) + 1e-10) * np.eye(n)

    def prior_variance(self, theta: np.ndarray, gamma: np.ndarray | None = None) -> float | np.ndarray:
        """The latent function's variance before any probe: one figure, or per candidate with gamma."""
        amp_m, _, amp_1, amp_2 = np.exp(theta[:4])
        if gamma is not None:
            return amp_m + amp_1 + amp_2 * (self.f.pairs @ gamma)
        return float(amp_m + amp_1 + (amp_2 if self.f.varying > 1 else 0.0))
