"""The simulator's mechanisms re-weighted by a few probes: one mechanism's error carried to every candidate."""

from __future__ import annotations

import numpy as np
import pytest

from autotune.study.outlook import Predictions
from autotune.study.reweight import reweighted_log_prediction


@pytest.fixture
def pred(predictions_32b_4) -> Predictions:
    return predictions_32b_4


def _truth(pred: Predictions, time_weights: np.ndarray, energy_weights: np.ndarray) -> np.ndarray:
    time = pred.time_parts @ time_weights
    stretch = time / pred.time_parts.sum(axis=1)
    return np.log(np.stack([time, (pred.energy_parts * stretch[:, None]) @ energy_weights], axis=1))


def test_without_probes_it_is_the_simulator(pred):
    log_values = reweighted_log_prediction(pred.time_parts, pred.energy_parts, [], np.zeros((0, 2)))
    assert np.allclose(log_values, pred.log_values)


def test_mis_weighted_mechanisms_are_learnt_from_a_few_probes(pred):
    rng = np.random.default_rng(0)
    time_weights = np.exp(rng.normal(0, 0.25, pred.time_parts.shape[1]))
    energy_weights = np.exp(rng.normal(0, 0.15, pred.energy_parts.shape[1]))
    truth = _truth(pred, time_weights, energy_weights)
    probed = sorted(rng.choice(len(pred), size=15, replace=False).tolist())
    fitted = reweighted_log_prediction(pred.time_parts, pred.energy_parts, probed, truth[probed])
    others = np.setdiff1d(np.arange(len(pred)), probed)
    simulator_error = np.abs(pred.log_values[others] - truth[others]).mean(axis=0)
    fitted_error = np.abs(fitted[others] - truth[others]).mean(axis=0)
    print(f"mean |log error| on unprobed candidates: simulator {simulator_error}, re-weighted {fitted_error}")
    assert (fitted_error < 0.25 * simulator_error).all()


def test_a_mechanism_no_probe_exercises_keeps_its_simulated_cost(pred):
    offload = int(np.argmax(pred.time_parts.max(axis=0) * (pred.time_parts.min(axis=0) == 0)))
    without = [i for i in range(len(pred)) if pred.time_parts[i, offload] == 0][:12]
    doubled = np.ones(pred.time_parts.shape[1])
    doubled[offload] = 2.0  # true only where some probe could have seen it: none did
    truth = _truth(pred, doubled, np.ones(pred.energy_parts.shape[1]))
    fitted = reweighted_log_prediction(pred.time_parts, pred.energy_parts, without, truth[without])
    assert np.allclose(fitted[without], truth[without], atol=1e-6)  # nothing else was wrong
    assert np.allclose(fitted[:, 0], pred.log_values[:, 0], atol=1e-6)  # the unseen mechanism keeps weight 1
