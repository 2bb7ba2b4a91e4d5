"""merge_node_blocks: per-GPU, per-node and total figures on rank 0, provenance kept honest."""

from __future__ import annotations

import pytest

from autotune.hardware import load_hardware
from autotune.measure import PowerModel, WindowResult, estimate_window, merge_node_blocks, node_block

MARKS = [{"name": "backward", "start_s": 10.0, "end_s": 12.0, "step": 0}]


def _estimated(node: int, utilisation: float) -> dict:
    model = PowerModel.from_hardware(load_hardware("h100-sxm"))
    return node_block(estimate_window(model, 10.0, 14.0, utilisation), MARKS, node=node)


def test_two_nodes_add_up():
    a, b = _estimated(0, 1.0), _estimated(1, 0.5)
    merged = merge_node_blocks([a, None, None, b])  # ranks other than local rank 0 give None
    assert merged["energy_j"] == pytest.approx(a["energy_j"] + b["energy_j"])
    assert [n["node"] for n in merged["per_node"]] == [0, 1]
    assert len(merged["per_gpu"]) == 16
    assert merged["components"]["gpu_j"] == pytest.approx(a["components"]["gpu_j"] + b["components"]["gpu_j"])
    assert merged["phases"]["backward"]["energy_j"] == pytest.approx(
        a["phases"]["backward"]["energy_j"] + b["phases"]["backward"]["energy_j"])
    assert merged["phases"]["backward"]["time_s"] == pytest.approx(2.0)
    assert merged["provenance"] == "estimated" and merged["timeline_node"] == 0


def test_an_unavailable_node_makes_the_total_unavailable():
    unavailable = node_block(WindowResult("unavailable", 10.0, 14.0, []), node=1)
    merged = merge_node_blocks([_estimated(0, 1.0), unavailable])
    assert merged["provenance"] == "unavailable" and merged["energy_j"] is None
    assert any("no cluster total" in flag for flag in merged["flags"])


def test_nothing_to_merge_is_none():
    assert merge_node_blocks([None, None]) is None
