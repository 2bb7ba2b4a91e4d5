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


def test_the_merged_begin_is_the_timeline_nodes_never_a_minimum_across_clocks():
    """Each node's monotonic clock counts from its own boot: the earliest of two is no time at all."""
    model = PowerModel.from_hardware(load_hardware("h100-sxm"))
    late_booted = node_block(estimate_window(model, 10.0, 14.0, 1.0), MARKS, node=0)
    early_booted = node_block(estimate_window(model, 90_000.0, 90_004.0, 1.0), node=1)
    merged = merge_node_blocks([{**late_booted, "clock": "time.monotonic"},
                                {**early_booted, "clock": "time.monotonic"}])
    assert merged["timeline_node"] == 0 and merged["begin_s"] == 10.0
    assert merged["clock"] == "time.monotonic"
