"""The guided sampler's seeds (the ends and the knee of the simulator's predicted front) are found once per
sampler: twice per proposal, the front of 39,340 candidates' predictions took 2 s of each (trial70 #7)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from autotune.study import guided
from autotune.study.guided import GuidedSampler


def test_the_predicted_fronts_seeds_are_found_once(monkeypatch):
    rng = np.random.default_rng(0)
    sampler = GuidedSampler([], {})
    sampler._predictions = SimpleNamespace(log_values=rng.normal(size=(500, 2)))
    calls = []
    find_front = guided.front_indices
    monkeypatch.setattr(guided, "front_indices", lambda values: calls.append(1) or find_front(values))

    first = sampler.seed_indices(2)
    values = np.exp(sampler._predictions.log_values)
    front = sorted(find_front(values), key=lambda i: values[i, 0])
    assert first == list(dict.fromkeys([front[0], front[-1], front[guided.knee_index(values[front])]]))
    first.append(-1)  # a caller's list is its own
    assert sampler.seed_indices(2) == first[:-1]
    assert sampler.seed_indices(1) == find_front(values[:, :1])[:1]
    assert len(calls) == 2  # once per number of objectives
