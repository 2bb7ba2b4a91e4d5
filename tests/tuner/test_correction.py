"""The guided sampler's correction (autotune/study/correction.py) on synthetic residuals: what a probe
teaches about the candidates it does not resemble, and the doubt that stays."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from autotune.study.correction import (
    DOUBT_FLOOR_STD,
    MIN_PROBES_TO_CALIBRATE_DOUBT,
    MIN_RESIDUAL_STD,
    corrected_log_prediction,
)
from autotune.study.knob_kernel import knob_features

# A small space of four categorical-ish knobs (names from the real space, so the feature code treats
# them as it does in a study): 3 x 3 x 4 x 4 = 144 candidates.
_VALUES = {
    "zero_stage": [1, 2, 3],
    "optimizer_offload": ["none", "sync", "async"],
    "activation_checkpointing": ["none", "recompute", "offload_sync", "offload_async"],
    "micro_batch": [1, 2, 4, 8],
}
_FIXED = {"sp_degree": 1, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}
PARAMS = [dict(zip(_VALUES, combo), **_FIXED) for combo in itertools.product(*_VALUES.values())]


def _index(**knobs) -> list[int]:
    return [i for i, p in enumerate(PARAMS) if all(p[k] == v for k, v in knobs.items())]


def _fit(true_log_residual: np.ndarray, probed: list[int], noise: np.ndarray | None = None, exact: bool = False):
    features = knob_features(PARAMS)
    log_predicted = np.zeros(len(PARAMS))  # the simulator says 1 for everyone
    measured = true_log_residual[probed] + (0.0 if noise is None else noise)
    mean, std, _, _ = corrected_log_prediction(features, log_predicted, probed, measured, exact)
    return mean, std


def test_a_pair_interaction_carries_to_candidates_that_differ_in_every_other_knob():
    # The truth: ZeRO-2 with optimizer offload "sync" is 30% slower; the simulator knows nothing of it.
    truth = np.zeros(len(PARAMS))
    truth[_index(zero_stage=2, optimizer_offload="sync")] = np.log(1.3)
    rng = np.random.default_rng(0)
    probed = sorted(rng.choice(len(PARAMS), size=24, replace=False).tolist())
    hit = [i for i in probed if PARAMS[i]["zero_stage"] == 2 and PARAMS[i]["optimizer_offload"] == "sync"]
    assert hit  # the seed's probes include the interaction at least once
    mean, _ = _fit(truth, probed)
    unprobed = [i for i in range(len(PARAMS)) if i not in probed]
    with_pair = [i for i in unprobed if truth[i] > 0]
    # Candidates with only one of the two values: the pair, not either value alone, is slow.
    one_value = [i for i in unprobed if truth[i] == 0 and (PARAMS[i]["zero_stage"] == 2) != (PARAMS[i]["optimizer_offload"] == "sync")]
    assert with_pair and one_value
    assert np.mean(mean[with_pair]) > np.mean(mean[one_value]) + 0.1
    assert np.mean(mean[with_pair]) > 0.15  # most of log(1.3) = 0.26, on candidates no probe resembles closely


def test_candidates_no_probe_resembles_keep_doubt_unless_the_figures_are_the_simulators():
    truth = np.zeros(len(PARAMS))
    probed = _index(zero_stage=1, optimizer_offload="none")  # 16 probes, all alike, all right
    one_factor = np.full(len(probed), 0.05)  # off by one factor: exact otherwise
    _, std = _fit(truth, probed, one_factor, exact=True)
    far = _index(zero_stage=3, optimizer_offload="async")
    assert np.all(std[far] <= 1e-3)  # the simulator's own figures (up to one factor) vouch for everyone
    _, std = _fit(truth, probed, one_factor)
    assert np.all(std[far] >= 0.9 * MIN_RESIDUAL_STD)  # figures that match it, not known to be its own, do not
    noise = np.random.default_rng(2).normal(0.0, 0.01, size=len(probed))
    _, std = _fit(truth, probed, noise)
    assert np.all(std[far] >= 0.9 * MIN_RESIDUAL_STD)  # measured figures that agree prove nothing there
    assert np.all(std[probed] < std[far])


def _spanning_probes(count: int, seed: int) -> list[int]:
    """`count` random candidates that hold every value of every knob at least once."""
    rng = np.random.default_rng(seed)
    while True:
        probed = sorted(rng.choice(len(PARAMS), size=count, replace=False).tolist())
        if all({PARAMS[i][k] for i in probed} == set(values) for k, values in _VALUES.items()):
            return probed


def _far_from(probed: list[int]) -> list[int]:
    """Candidates that differ from every probe in at least two knobs."""
    return [i for i in range(len(PARAMS)) if min(sum(PARAMS[i][k] != PARAMS[j][k] for k in _VALUES) for j in probed) >= 2]


def test_doubt_follows_how_well_the_fit_predicts_probes_it_was_not_given():
    probed = _spanning_probes(12, seed=3)
    far = _far_from(probed)
    assert far
    rng = np.random.default_rng(4)
    # The simulator right within 0.5% (noise): the doubt falls from 5% to its floor's neighbourhood.
    _, std = _fit(np.zeros(len(PARAMS)), probed, noise=rng.normal(0.0, 0.005, size=len(probed)))
    assert np.all(std[far] < 0.6 * MIN_RESIDUAL_STD)
    assert np.all(std[far] > 0.5 * DOUBT_FLOOR_STD)  # never none: the floor, less near a probe
    # Residuals with no structure (each candidate off by its own 10%): nothing predicts a probe from
    # the others, and the full doubt stays.
    truth = np.random.default_rng(5).normal(0.0, 0.10, size=len(PARAMS))
    _, std = _fit(truth, probed)
    assert np.all(std[far] >= 0.9 * MIN_RESIDUAL_STD)
    # Too few probes to judge the fit by: the full doubt, however well they agree.
    few = _spanning_probes(MIN_PROBES_TO_CALIBRATE_DOUBT - 1, seed=6)
    _, std = _fit(np.zeros(len(PARAMS)), few, noise=rng.normal(0.0, 0.005, size=len(few)))
    far_few = _far_from(few)
    assert np.median(std[far_few]) >= 0.9 * MIN_RESIDUAL_STD


def test_measurement_noise_is_not_taken_for_doubt():
    # The simulator right, the probes 2% noisy: a left-out probe is missed by about 2%, but that is the
    # probe's noise, not the fit's error on a candidate's true figure. Were it kept as doubt, every
    # near-tie of the front would keep a chance to beat it by 1% and a noisy study would never stop.
    medians = []
    for draw in range(6):
        probed = _spanning_probes(16, seed=3 + draw)
        far = _far_from(probed)
        noise = np.random.default_rng(10 + draw).normal(0.0, 0.02, size=len(probed))
        _, std = _fit(np.zeros(len(PARAMS)), probed, noise)
        medians.append(np.median(std[far]))
    assert np.median(medians) < 0.65 * 0.02  # taken with the noise: about 0.02 (measured: 0.0198)
    assert min(medians) > 0.5 * DOUBT_FLOOR_STD


def test_measurement_noise_is_not_passed_on_to_the_candidates_no_probe_measured():
    # The simulator right, 25 probes 2.5% noisy: the corrected predictions of the other candidates
    # should stay near the simulator's, not follow each probe's noise to the candidates that share its
    # knob values, and the spread they are given should cover what error is left. Before the Matern
    # length's floor and the pairs' noise margin, the fit took the noise for error: 2.5% rms off (0.6
    # noise deviations' worth would be 1.5%), a quarter of the candidates more than 2 sd off.
    errors, beyond_two_sd = [], []
    for draw in range(6):
        probed = _spanning_probes(25, seed=3 + draw)
        noise = np.random.default_rng(10 + draw).normal(0.0, 0.025, size=len(probed))
        mean, std = _fit(np.zeros(len(PARAMS)), probed, noise)
        unprobed = [i for i in range(len(PARAMS)) if i not in probed]
        errors.append(np.sqrt(np.mean(mean[unprobed] ** 2)))
        beyond_two_sd.append(np.mean(np.abs(mean[unprobed]) > 2 * std[unprobed]))
    assert np.median(errors) < 0.6 * 0.025  # measured: 0.010 (before: 0.025)
    assert np.median(beyond_two_sd) < 0.1  # measured: 0.0 (before: 0.24)


def test_doubt_stays_on_value_pairs_no_probe_has_held():
    # A fit that misses a left-out probe by 5%: doubt about knob interactions, which the kernel learns
    # pair by pair. A candidate whose every pair of values some probe has held keeps only the floor; one
    # with half its pairs never held together keeps sqrt(1/2) of the doubt. (Kept whole, it stayed on
    # dozens of near-ties of the front, probed before any knob value no probe had had.)
    from autotune.study.correction import _doubt_std

    probes = MIN_PROBES_TO_CALIBRATE_DOUBT + 4
    y = np.zeros(probes)
    y[0] = 0.05 * math.sqrt(probes)  # leave-one-out misses with a root mean square of 5%
    chol = np.eye(probes)  # a kernel that carries nothing between probes: each is missed by its own residual
    share = np.array([0.0, 0.5, 1.0])
    doubt = _doubt_std(np.arange(probes), chol, y, 0.0, share)
    assert doubt == pytest.approx([DOUBT_FLOOR_STD, 0.05 * math.sqrt(0.5), 0.05], rel=1e-6)
    # Before the doubt is calibrated, every candidate keeps the whole prior doubt.
    few = MIN_PROBES_TO_CALIBRATE_DOUBT - 1
    assert np.all(_doubt_std(np.arange(few), np.eye(few), np.zeros(few), 0.0, share) == MIN_RESIDUAL_STD)


def test_probes_the_simulator_got_right_clear_their_value_pairs():
    # An interaction is one pair of values among dozens (here ZeRO-2 with offload "sync", 30% slower):
    # a probe the simulator got right says that none of its pairs holds one. Candidates whose every pair
    # such probes have held are then about as certain as the probes, however large the residual of the
    # probe that hit the interaction; the candidates with the slow pair inherit its residual. (With one
    # variance shared by every pair, the probe that hit the interaction left a few percent of doubt on
    # every candidate, and a study probed dozens of near-ties of its front before anything else.)
    truth = np.zeros(len(PARAMS))
    truth[_index(zero_stage=2, optimizer_offload="sync")] = np.log(1.3)
    probed = _spanning_probes(20, seed=7)
    assert any(truth[i] > 0 for i in probed)
    mean, std = _fit(truth, probed)
    features = knob_features(PARAMS)
    clean = [i for i in probed if truth[i] == 0]
    held_by_clean = features.pairs[clean].any(axis=0)
    cleared = [i for i in range(len(PARAMS)) if i not in probed and held_by_clean[features.pairs[i] > 0].all()]
    slow = [i for i in range(len(PARAMS)) if i not in probed and truth[i] > 0]
    assert cleared and slow
    assert np.max(std[cleared]) < 1.5 * DOUBT_FLOOR_STD
    assert np.max(np.abs(mean[cleared])) < 0.02
    assert np.mean(mean[slow]) > 0.2  # most of log(1.3) = 0.26


def test_knob_distances_in_blocks_are_the_distances_whole(monkeypatch):
    """Trial70 #1: the (candidates x probes x features) differences, whole, took 5 GB in the report of an 800-probe
    study of 39,340 candidates; computed in blocks of rows, every distance is the same to the last bit."""
    import numpy as np

    from autotune.study import knob_kernel

    rng = np.random.default_rng(0)
    a, b = rng.random((1000, 7)), rng.random((37, 7))
    whole = np.sqrt(np.clip(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1), 0, None))
    monkeypatch.setattr(knob_kernel, "_DIFFERENCES_AT_ONCE", 37 * 7 * 64)  # blocks of 64 rows, the last one short
    assert np.array_equal(knob_kernel._distance(a, b), whole)
    monkeypatch.setattr(knob_kernel, "_DIFFERENCES_AT_ONCE", 1)  # at least one row at a time
    assert np.array_equal(knob_kernel._distance(a, b), whole)



def _weighted_pairs_as_they_were(features, a, b, gamma):
    """Kernel.weighted's pair part before trial70 #7: every candidate's pairs, copied and weighted."""
    return (features.pairs[a] * gamma) @ features.pairs[b].T


def test_the_pair_part_weighted_on_the_probes_side_is_the_same(monkeypatch):
    """Trial70 #7: the variances went on every candidate's (candidates x pairs) matrix, a copy of it per objective
    and proposal; on the probes' side the products are the same (pairs are 0 or 1), and so is the fit."""
    from autotune.study.knob_kernel import Kernel

    features = knob_features(PARAMS)
    rng = np.random.default_rng(0)
    gamma = rng.random(features.pairs.shape[1]) * 0.01
    probes = [0, 5, 17, 40, 41, 70, 99, 101, 120, 143]
    weighted = Kernel(features).weighted((None, None, None), slice(None), np.array(probes), gamma)[2]
    assert np.allclose(weighted, _weighted_pairs_as_they_were(features, np.arange(len(PARAMS)), probes, gamma), rtol=1e-12, atol=0)

    truth = np.where([p["micro_batch"] == 8 and p["optimizer_offload"] == "async" for p in PARAMS], 0.3, 0.0)
    measured = truth[probes] + rng.normal(0, 0.01, len(probes))
    new = corrected_log_prediction(features, np.zeros(len(PARAMS)), probes, measured)
    monkeypatch.setattr(Kernel, "weighted", lambda self, parts, a, b, g: parts if g is None else
                        (parts[0], parts[1], _weighted_pairs_as_they_were(self.f, np.arange(len(self.f.values))[a], b, g)))
    old = corrected_log_prediction(features, np.zeros(len(PARAMS)), probes, measured)
    for got, expected in zip(new, old):
        assert np.allclose(got, expected, rtol=1e-12, atol=1e-15)


def _wide_space() -> list[dict]:
    """5,760 candidates, some 300 value pairs."""
    values = {"zero_stage": [1, 2, 3], "optimizer_offload": ["none", "sync", "async"],
              "activation_checkpointing": ["none", "recompute", "offload_sync", "offload_async"],
              "micro_batch": [1, 2, 3, 4, 5, 6, 7, 8], "sp_degree": [1, 2, 4, 8], "nodes": [1, 2, 4, 8, 16]}
    return [dict(zip(values, combo), power_limit=1.0, sm_clock_mhz="max") for combo in itertools.product(*values.values())]


def _peak_bytes(features, probe_count: int) -> int:
    import tracemalloc

    import scipy.linalg  # noqa: F401  (imported by the fit: its modules are not the fit's memory)
    import scipy.optimize  # noqa: F401

    n = len(features.values)
    probes = list(range(0, n, n // probe_count))[:probe_count]
    measured = np.random.default_rng(1).normal(0, 0.05, len(probes))
    tracemalloc.start()
    corrected_log_prediction(features, np.zeros(n), probes, measured)
    peak_bytes = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak_bytes


def test_the_correction_holds_no_copy_of_every_candidates_value_pairs():
    """Trial70 #7: two (candidates x pairs) arrays per objective and proposal, 320 MB over 39,340 candidates."""
    features = knob_features(_wide_space())
    assert _peak_bytes(features, 12) < features.pairs.nbytes  # 3.6 times it before


def test_the_correction_holds_few_candidates_x_probes_matrices(monkeypatch):
    """Trial70 #7: the kernel parts of every candidate with the probes and the Gram matrix's temporaries were
    built whole, nine (candidates x probes) matrices at once (2 MB per probe over 39,340 candidates); in blocks
    of candidates, three."""
    from autotune.study import correction, knob_kernel

    monkeypatch.setattr(knob_kernel, "_DIFFERENCES_AT_ONCE", 1 << 14)  # the distances' own blocks aside
    monkeypatch.setattr(correction, "_CANDIDATES_AT_ONCE", 256, raising=False)
    features = knob_features(_wide_space())
    column_bytes = len(features.values) * 8
    per_probe = (_peak_bytes(features, 40) - _peak_bytes(features, 10)) / 30
    assert per_probe < 4 * column_bytes


def test_the_gram_matrix_alone_is_the_one_with_its_slopes():
    """The cross Gram matrix (candidates x probes) is built without the likelihood's slopes (trial70 #7): the same
    matrix to the last bit as the slopes' sum it was."""
    from autotune.study.knob_kernel import Kernel

    features = knob_features(PARAMS)
    kernel = Kernel(features)
    parts = kernel.parts(np.arange(len(PARAMS)), np.array([0, 5, 17, 40, 99]))
    theta = np.log([0.02, 0.6, 0.01, 0.003, 1e-4])
    amp_m, length, amp_1, amp_2 = np.exp(theta[:4])
    from autotune.study.knob_kernel import matern_of

    as_it_was = amp_m * matern_of(parts[0] / length) + amp_1 * parts[1] + amp_2 * parts[2]
    assert np.array_equal(kernel.gram(theta, parts), as_it_was)
    assert np.array_equal(kernel.gram_and_slopes(theta, parts)[0], as_it_was)


def test_the_candidates_in_blocks_are_the_candidates_whole(monkeypatch):
    """The blocks of candidates give every figure as one block (the computation as it was) did, to the last bit."""
    from autotune.study import correction

    features = knob_features(PARAMS)
    rng = np.random.default_rng(2)
    probes = [0, 3, 17, 40, 41, 70, 99, 101, 120, 143]
    measured = rng.normal(0, 0.05, len(probes))
    monkeypatch.setattr(correction, "_CANDIDATES_AT_ONCE", len(PARAMS))
    whole = corrected_log_prediction(features, np.zeros(len(PARAMS)), probes, measured)
    monkeypatch.setattr(correction, "_CANDIDATES_AT_ONCE", 7)  # the last block short
    for got, expected in zip(corrected_log_prediction(features, np.zeros(len(PARAMS)), probes, measured), whole):
        assert np.array_equal(got, expected)
