"""The `simulate` backend: the analytic simulator behind the backend interface."""

from __future__ import annotations

from autotune.backends.base import Backend, ProbeResult
from autotune.candidate import Candidate
from autotune.simulator import simulate


class SimulateBackend(Backend):
    name = "simulate"
    source = "simulated"

    def __init__(self, reason: str = "chosen with --backend simulate"):
        self.reason = reason

    def evaluate(self, candidate: Candidate, trial_number: int = 0) -> ProbeResult:
        step = simulate(candidate)
        return ProbeResult(
            status="ok",
            source="simulated",
            energy_source="simulated",
            time_s=step.time_s,
            energy_kj=step.energy_kj,
            tflops=step.tflops,
            mfu=step.mfu,
            step_time_s=step.step_time_s,
            peak_mem_gib=step.peak_mem_gib,
            energy_components_kj=step.energy_components_kj,
            mean_power_w=step.mean_power_w,
            details={"phases_s": {p.name: p.time_s for p in step.phases}},
        )

    def describe(self) -> str:
        return f"simulate (analytic model; every figure is simulated): {self.reason}"
