"""One node's meter: discover the sensors, open a window, return the node's energy block.

This is what a probe uses (through trainer/energy.py). With sensors it measures; without any and
with `allow_estimate`, it falls back to the hardware profile's power model and says `estimated`;
without either it reports `unavailable`. The model is never used where a sensor exists.
"""

from __future__ import annotations

import time

from autotune.measure.block import node_block
from autotune.measure.discover import Discovery, discover
from autotune.measure.errors import WindowError
from autotune.measure.estimate import PowerModel, estimate_window
from autotune.measure.sampler import DEFAULT_PERIOD_S
from autotune.measure.window import EnergyWindow, WindowResult


class NodeMeter:
    def __init__(self, hardware=None, *, node: int = 0, root=None, accelerators: int | None = None,
                 allow_estimate: bool = True, power_limit: float = 1.0, period_s: float = DEFAULT_PERIOD_S,
                 short_window: str = "flag", discovery: Discovery | None = None, clock=time.time):
        self.hardware, self.node, self.clock = hardware, node, clock
        # The GPUs the node's ranks train on (`accelerators`, where the caller knows them), not every GPU it has.
        self.discovery = discovery if discovery is not None else discover(root, nvml_ranks=accelerators)
        self.model = None
        if not self.discovery.available and allow_estimate and hardware is not None:
            # At the run's limit: a limited GPU is clocked down to fit it, so it draws less than the default.
            self.model = PowerModel.from_hardware(hardware, accelerators, power_limit)
        self.window = (EnergyWindow(self.discovery.sources, period_s=period_s, short_window=short_window,
                                    sysfs_root=root, clock=clock)
                       if self.discovery.available else None)
        self.begin_s: float | None = None

    @property
    def mode(self) -> str:
        return "measured" if self.window else "estimated" if self.model else "unavailable"

    def begin(self) -> None:
        """Right after the device sync that opens the measured window (the caller syncs)."""
        if self.begin_s is not None:
            raise WindowError("NodeMeter.begin() called twice: one meter per window")
        if self.window:
            self.window.begin()
            self.begin_s = self.window.begin_s
        else:
            self.begin_s = self.clock()

    def end(self, phases: list[dict] | None = None, utilisation: float | None = None) -> dict:
        """Right after the closing device sync: this node's energy block."""
        if self.begin_s is None:
            raise WindowError("NodeMeter.end() without begin()")
        try:
            if self.window:
                result = self.window.end()
                result.flags += self.discovery.notes  # what the sources counted that discovery could not tell apart
            elif self.model:
                result = estimate_window(self.model, self.begin_s, self.clock(), utilisation)
            else:
                end_s = self.clock()
                result = WindowResult("unavailable", self.begin_s, end_s, [], [self.begin_s, end_s],
                                      flags=[_why_unavailable(self.discovery)])
            return node_block(result, phases, node=self.node)
        finally:
            self.discovery.close()


def _why_unavailable(discovery: Discovery) -> str:
    reasons = "; ".join(f"{s.kind} {s.label}: {s.reason}" for s in discovery.statuses if not s.available)
    return f"no energy sensor and no estimate ({reasons or 'no source probed'})"
