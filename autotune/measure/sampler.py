"""A background thread that records the power (and counter) of every source at a fixed period.

All sources are read in one tick and share its timestamp (`time.time()` by default, the clock the
trainer's phase marks use), so their powers can be added tick by tick. A read that fails mid-window
is recorded as missing and reported, never turned into 0 W. A reading out of its range (a negative power) is a
failed read: the source raises it (base.checked_power_w).

An energy counter comes with its wraps undone (base.PowerSource.read_energy_j: RAPL adds its range at each decrease,
rapl.WrapCounter; NVML's 64-bit millijoule counter never wraps), so one that still goes backwards was reset (a driver
reloaded) or misread: none of its readings in the window is a measurement. Were only those after the decrease
dropped, the difference of those before would pass part of the window for the whole, and a reading back past the old
value would add a jump; so all are, and the window takes the source's integrated power where it has one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

DEFAULT_PERIOD_S = 0.1  # what the GH200 study sampled at


@dataclass
class SourceSeries:
    """One source's readings over the window: tick times, power (W) and cumulative energy (J)."""

    times_s: list[float] = field(default_factory=list)
    power_w: list[float | None] = field(default_factory=list)
    energy_j: list[float | None] = field(default_factory=list)

    def derived_power_w(self) -> list[float | None]:
        """Power where the sensor gives it, else from counter differences (assigned to the later tick;
        the first tick borrows the second's)."""
        if any(p is not None for p in self.power_w):
            return list(self.power_w)
        derived: list[float | None] = [None] * len(self.times_s)
        for i in range(1, len(self.times_s)):
            e0, e1, dt = self.energy_j[i - 1], self.energy_j[i], self.times_s[i] - self.times_s[i - 1]
            if e0 is not None and e1 is not None and dt > 0:
                derived[i] = (e1 - e0) / dt
        if len(derived) > 1:
            derived[0] = derived[1]
        return derived


class PowerSampler:
    def __init__(self, sources, period_s: float = DEFAULT_PERIOD_S, clock=time.time):
        if period_s <= 0:
            raise ValueError(f"sampling period must be positive, got {period_s} s")
        self.sources, self.period_s, self.clock = list(sources), period_s, clock
        self.series = [SourceSeries() for _ in self.sources]
        self.read_errors: dict[str, str] = {}  # label -> first error seen
        self._counters_dropped: set[int] = set()  # sources whose counter went backwards: its readings are no figure
        self._lock = threading.Lock()
        # Held while the thread runs; stop() releases it. Waiting on a raw lock with a timeout is the
        # cheapest wake-up CPython has (Event.wait costs about twice as much CPU per tick).
        self._running = threading.Lock()
        self._thread: threading.Thread | None = None

    def tick(self) -> float:
        """Read every source once, now; returns the tick's timestamp. Kept lean: it runs every period."""
        with self._lock:
            now = self.clock()
            for number, (source, series) in enumerate(zip(self.sources, self.series)):
                try:
                    power_w = source.read_power_w()
                except Exception as exc:  # a sensor failing mid-window must not kill the probe
                    power_w = self._failed(source, exc)
                try:
                    energy_j = source.read_energy_j()
                except Exception as exc:
                    energy_j = self._failed(source, exc)
                if energy_j is not None and (number in self._counters_dropped or self._went_backwards(series, energy_j)):
                    energy_j = self._drop_counter(number, source, series, energy_j)
                series.times_s.append(now)
                series.power_w.append(power_w)
                series.energy_j.append(energy_j)
            return now

    def _failed(self, source, exc: Exception) -> None:
        self.read_errors.setdefault(source.label, f"{type(exc).__name__}: {exc}")
        return None

    @staticmethod
    def _went_backwards(series: SourceSeries, energy_j: float) -> bool:
        last_j = next((e for e in reversed(series.energy_j) if e is not None), None)
        return last_j is not None and energy_j < last_j

    def _drop_counter(self, number: int, source, series: SourceSeries, energy_j: float) -> None:
        if number not in self._counters_dropped:
            self._counters_dropped.add(number)
            last_j = next(e for e in reversed(series.energy_j) if e is not None)
            self.read_errors.setdefault(source.label, f"its energy counter went backwards ({last_j:.3f} J, then "
                                                      f"{energy_j:.3f} J): none of its counter readings is used")
            series.energy_j[:] = [None] * len(series.energy_j)
        return None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("sampler already running")
        self._running.acquire()
        self._thread = threading.Thread(target=self._loop, name="autotune-power-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._running.release()
        self._thread.join()
        self._thread = None

    def _loop(self) -> None:
        # Deadlines advance by whole periods so the rate does not drift with read time.
        deadline = time.monotonic() + self.period_s
        while not self._running.acquire(timeout=max(0.0, deadline - time.monotonic())):
            self.tick()
            deadline += self.period_s
            if deadline < time.monotonic():  # fell behind (a slow read): skip, do not burst
                deadline = time.monotonic() + self.period_s
        self._running.release()  # acquired by the wait that ended the loop: leave it free for start()

    @property
    def tick_count(self) -> int:
        return len(self.series[0].times_s) if self.series else 0
