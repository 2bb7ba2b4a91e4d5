"""Seam between the probe and the measurement library (autotune.measure).

One ProbeEnergy per rank; only local rank 0 reads the node's sensors (every sensor is per node, so
reading it on every rank would count it once per rank). The probe syncs the device right before
`begin()` and right before `end()`; warm-up steps run before `begin()`. The probe gathers every
rank's block (None from ranks other than local rank 0) and calls `merge_node_blocks` on rank 0.

With no sensor on the node, the block is `estimated` from the hardware profile's power model
(labelled so everywhere); a sensor, where one exists, is always used instead.
This module imports neither torch nor pynvml at import time.
"""

from __future__ import annotations

import time

from autotune.measure import NodeMeter
from autotune.measure import merge_node_blocks as _merge_node_blocks

# The clock of every `*_s` in a probe's block, named in the block (its `clock` key): seconds since the
# node booted, not since the epoch, so a reader must not convert them to dates.
PROBE_CLOCK = "time.monotonic"


class ProbeEnergy:
    """One per node (local rank 0 reads the node's sensors); the probe gathers blocks on rank 0."""

    def __init__(self, hardware, *, node_rank: int, local_rank: int, local_world_size: int,
                 allow_estimate: bool = True, power_limit: float = 1.0, sysfs_root=None):
        self.hardware, self.node_rank, self.local_rank = hardware, node_rank, local_rank
        self._meter = None
        if local_rank == 0:
            # The node's ranks are the accelerators its probe uses (trainer/distributed.launch_env: every
            # launcher's variable, one rank for a plain run), not the profile's gpus_per_node.
            accelerators = local_world_size
            # The trainer stamps its phases with time.monotonic() (trainer/phases.py): the samples must
            # share that clock, or no sample would fall inside any phase.
            self._meter = NodeMeter(hardware, node=node_rank, root=sysfs_root, accelerators=accelerators,
                                    allow_estimate=allow_estimate, power_limit=power_limit, clock=time.monotonic)

    @property
    def mode(self) -> str:
        """measured | estimated | unavailable (or "none" on ranks that read nothing)."""
        return self._meter.mode if self._meter else "none"

    def begin(self) -> None:
        """Called right after the device sync that opens the measured window."""
        if self._meter:
            self._meter.begin()

    def end(self, phases: list[dict], utilisation: float | None = None) -> dict | None:
        """Called after the closing device sync; `phases` = [{"name", "start_s", "end_s", "step"}].

        `utilisation` (busy fraction of the window) feeds the estimate only; None means "assume 1.0",
        and the block says so. Returns this node's block on local rank 0, None elsewhere.
        """
        if not self._meter:
            return None
        return {**self._meter.end(phases, utilisation), "clock": PROBE_CLOCK}


def merge_node_blocks(blocks: list[dict | None]) -> dict | None:
    """Rank 0 combines the per-node energy blocks into the result's `energy` block."""
    return _merge_node_blocks(blocks)
