"""Phase timestamps (vit_fwd, llm_fwd, backward, optimizer) without stalling the device.

Phases are contiguous: `mark(name)` ends the running phase and starts the next. On CUDA a mark
records an event on the current stream (no sync); after the window's closing sync each event is
turned into wall time as t0 + elapsed since a reference event recorded right after the opening
sync. On CPU a mark is simply the clock. Timestamps are `time.monotonic()` seconds, the clock the
energy samplers are expected to share (see docs/result-schema.md).
"""

from __future__ import annotations

import time

import torch

class PhaseClock:
    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.step = 0
        self.micro_step = 0
        self._marks: list[tuple[str, int, int, object]] = []  # (name, step, micro_step, time or event)
        self._t0_s = 0.0
        self._reference = None
        self.enabled = False

    def open(self) -> None:
        """Call right after the device sync that opens the measured window."""
        self._marks.clear()
        self._t0_s = time.monotonic()
        if self.cuda:
            self._reference = torch.cuda.Event(enable_timing=True)
            self._reference.record()
        self.enabled = True

    def _now(self):
        if not self.cuda:
            return time.monotonic()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def mark(self, name: str) -> None:
        if self.enabled:
            self._marks.append((name, self.step, self.micro_step, self._now()))

    def end_step(self) -> None:
        self.mark("_end")
        self.step += 1
        self.micro_step = 0

    def close(self) -> list[dict]:
        """Call after the closing device sync; returns [{"name", "step", "micro_step", "start_s", "end_s"}]."""
        self.enabled = False
        times = [self._to_seconds(mark[3]) for mark in self._marks]
        phases = []
        for index, (name, step, micro, _) in enumerate(self._marks[:-1]):
            if name != "_end":
                phases.append(
                    {"name": name, "step": step, "micro_step": micro, "start_s": times[index], "end_s": times[index + 1]}
                )
        return phases

    def _to_seconds(self, stamp) -> float:
        if not self.cuda:
            return stamp
        return self._t0_s + self._reference.elapsed_time(stamp) / 1000.0


def step_times_s(phases: list[dict]) -> list[float]:
    """Wall time of each optimizer step: first phase start to last phase end of that step."""
    bounds: dict[int, list[float]] = {}
    for phase in phases:
        start_end = bounds.setdefault(phase["step"], [phase["start_s"], phase["end_s"]])
        start_end[0] = min(start_end[0], phase["start_s"])
        start_end[1] = max(start_end[1], phase["end_s"])
    return [end - start for _, (start, end) in sorted(bounds.items())]
