"""Seam between the probe and the measurement library (autotune.measure).

Until the measurement library lands, a probe has no energy block: `end()` returns None and the
probe leaves the energy fields out of result.json (absent, never zero).
"""

from __future__ import annotations


class ProbeEnergy:
    """One per node (local rank 0 reads the node's sensors); the probe gathers blocks on rank 0."""

    def __init__(self, hardware, *, node_rank: int, local_rank: int):
        self.hardware, self.node_rank, self.local_rank = hardware, node_rank, local_rank

    def begin(self) -> None:
        """Called right after the device sync that opens the measured window."""

    def end(self, phases: list[dict], utilisation: float | None = None) -> dict | None:
        """Called after the closing device sync; `phases` = [{"name", "start_s", "end_s", "step"}]."""
        return None


def merge_node_blocks(blocks: list[dict | None]) -> dict | None:
    """Rank 0 combines the per-node energy blocks into the result's `energy` block."""
    return None
