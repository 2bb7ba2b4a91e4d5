"""benchmarks/chance_calibration.py: whether a proposal's chance came true, judged on noise-free figures,
and the table of stated chances against the share that came true."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from chance_calibration import calibration_rows, proposal_record  # noqa: E402


def _view(mean, log_std, chance):
    return SimpleNamespace(mean=np.array(mean, dtype=float), log_std=np.array(log_std, dtype=float),
                           chance_to_enter=np.array(chance, dtype=float))


def test_a_proposal_comes_true_only_by_beating_the_true_probed_front_by_more_than_one_percent():
    # Probes 0 and 1 make the true front; 2 is 2% faster than probe 0 at its energy, 3 only 0.5%.
    true_values = np.array([[100.0, 50.0], [120.0, 40.0], [98.0, 50.0], [99.5, 50.0], [np.nan, np.nan]])
    view = _view([[100, 50], [120, 40], [100, 50], [98, 50], [90, 40]], [[0.1, 0.1]] * 5, [0, 0, 0.7, 0.9, 0.5])
    beats = proposal_record(view, 2, [0, 1], true_values)
    ties = proposal_record(view, 3, [0, 1], true_values)
    assert beats["came_true"] and beats["chance"] == pytest.approx(0.7)
    assert not ties["came_true"] and ties["chance"] == pytest.approx(0.9)
    # Its miss in standard deviations: log(98 / 100) / 0.1 in time, none in energy.
    assert beats["miss_in_std"] == pytest.approx([np.log(0.98) / 0.1, 0.0])
    # A proposal that ran out of memory in truth, or a front with no figure, says nothing.
    assert proposal_record(view, 4, [0, 1], true_values) is None
    assert proposal_record(view, 2, [4], true_values) is None


def test_rows_bin_the_stated_chances_and_count_what_came_true():
    records = [{"chance": 0.0, "came_true": False, "miss_in_std": [1.0, 1.0]},
               {"chance": 0.5, "came_true": True, "miss_in_std": [2.0, 0.0]},
               {"chance": 0.45, "came_true": False, "miss_in_std": [0.0, 2.0]},
               {"chance": 1.0, "came_true": True, "miss_in_std": [3.0, 4.0]}]
    rows = {(r["low"], r["high"]): r for r in calibration_rows(records)}
    assert sorted(rows) == [(0.0, 0.05), (0.4, 0.6), (0.95, 1.0)]  # empty bins are left out; 1.0 is in the last
    middle = rows[(0.4, 0.6)]
    assert middle["proposals"] == 2 and middle["came_true"] == 0.5 and middle["stated"] == pytest.approx(0.475)
    assert middle["miss_rms_std"] == pytest.approx([np.sqrt(2.0), np.sqrt(2.0)])
    assert rows[(0.95, 1.0)]["came_true"] == 1.0 and rows[(0.0, 0.05)]["came_true"] == 0.0
