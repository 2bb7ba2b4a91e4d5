"""Ground truths for benchmarks/search_efficiency.py that are NOT the simulator the guided sampler uses.

Each family turns the valid candidates of a study into a table {params_key: ProbeResult}, seeded:

- `perturbed`: the simulator with its mechanisms mis-weighted: every phase's time x a factor
  (log-normal, sigma 0.25) and every energy component x a factor (sigma 0.15), so the simulator's
  ranking of ZeRO stages, offloads and micro-batches is wrong in a consistent way;
- `interactions`: knob interactions the simulator does not model: six random pairs of knob values
  (e.g. "SP 4 with optimizer offload async") each multiply time and energy by their own factor;
- `memory_wall`: the simulator's figures, but the real memory wall lower than the estimate's: the
  candidates above a seeded quantile (60-85%) of the memory estimate run out of memory, and the peak
  memory a probe measures is its estimate times the one factor that puts that quantile at the device's
  memory (in the other families the estimate is right);
- `noise`: the simulator x 1-3% multiplicative measurement noise: the study sees noisy figures, the
  targets are judged on the noise-free ones (a lucky draw is not a better configuration);
- `combined`: perturbed + interactions + memory wall + 2% noise;
- `one_pair`: the simulator but for one random pair of knob values 25% faster (energy as simulated),
  and 1% noise: no probe shows an error until one holds the pair, so only a search that covers pairs
  the probes give no reason to doubt finds it.
"""

from __future__ import annotations

import numpy as np

from autotune.backends.base import Backend, ProbeResult
from autotune.candidate import KNOBS
from autotune.simulator import simulate
from autotune.candidate import params_key

FAMILIES = ("perturbed", "interactions", "memory_wall", "noise", "combined", "one_pair")


def _perturbed(step, rng, factors: dict) -> tuple[float, float]:
    scale = step.time_s / step.step_time_s  # optimizer steps of the workload
    time_s = sum(p.time_s * factors.setdefault(("t", p.name), float(rng.lognormal(0, 0.25))) for p in step.phases) * scale
    stretch = time_s / step.time_s  # energy of a component follows the time it is drawn for
    energy = sum(v * factors.setdefault(("e", name), float(rng.lognormal(0, 0.15))) for name, v in step.energy_components_kj.items())
    return time_s, energy * stretch


def _interaction_terms(checks, rng, count: int = 6) -> list[tuple]:
    values = {k: sorted({str(c.candidate.knobs.to_dict()[k]) for c in checks}) for k in KNOBS}
    varying = [k for k in KNOBS if len(values[k]) > 1]
    terms = []
    for _ in range(count):
        a, b = rng.choice(varying, size=2, replace=False)
        terms.append((a, str(rng.choice(values[a])), b, str(rng.choice(values[b])), rng.normal(0, 0.15), rng.normal(0, 0.10)))
    return terms


def _family_terms(valid: list, family: str, rng) -> list[tuple]:
    """The family's interactions (knob a, its value, knob b, its value, log time factor, log energy
    factor): the first draws of the truth's generator."""
    if family in ("interactions", "combined"):
        return _interaction_terms(valid, rng)
    if family == "one_pair":
        return [(*term[:4], np.log(0.75), 0.0) for term in _interaction_terms(valid, rng, count=1)]
    return []


def holds_term(knobs: dict, term: tuple) -> bool:
    """Whether a candidate with these knobs holds the interaction `term`'s pair of knob values."""
    return str(knobs[term[0]]) == term[1] and str(knobs[term[2]]) == term[3]


def truth_table(
    checks: list, family: str, seed: int
) -> tuple[dict[str, ProbeResult], dict[str, tuple | None], list[tuple]]:
    """(what a probe of each valid candidate reports, ok or oom; its noise-free (time_s, energy_kj) or None;
    the interactions the truth holds (`_family_terms`: none outside `interactions`, `combined`, `one_pair`))."""
    rng = np.random.default_rng(seed)
    valid = [c for c in checks if c.valid]
    use = {"perturbed", "combined"} if family == "combined" else {family}
    factors: dict = {}
    terms = _family_terms(valid, family, rng)
    memory = np.array([c.memory.peak_mem_gib for c in valid])
    wall = np.quantile(memory, rng.uniform(0.60, 0.85)) if family in ("memory_wall", "combined") else np.inf
    noise = {"noise": rng.uniform(0.01, 0.03), "combined": 0.02, "one_pair": 0.01}.get(family, 0.0)
    table, clean = {}, {}
    for check, mem in zip(valid, memory):
        step = simulate(check.candidate)
        time_s, energy_kj = _perturbed(step, rng, factors) if "perturbed" in use else (step.time_s, step.energy_kj)
        knobs = check.candidate.knobs.to_dict()
        for term in terms:
            if holds_term(knobs, term):
                time_s, energy_kj = time_s * np.exp(term[4]), energy_kj * np.exp(term[5])
        key = params_key(knobs)
        clean[key] = None if mem >= wall else (float(time_s), float(energy_kj))
        if noise:
            time_s, energy_kj = time_s * rng.lognormal(0, noise), energy_kj * rng.lognormal(0, noise)
        if mem >= wall:
            table[key] = ProbeResult(status="oom", source="measured", energy_source="unavailable", error="benchmark wall")
        else:
            # The peak device memory the probe measures: the estimate, scaled so that a candidate at the
            # wall fills the whole device.
            table[key] = ProbeResult(status="ok", source="measured", energy_source="measured",
                                     time_s=float(time_s), energy_kj=float(energy_kj),
                                     peak_mem_gib=float(mem * check.memory.device_gib / wall if np.isfinite(wall) else mem))
    return table, clean, terms


class TableBackend(Backend):
    """Evaluates a candidate by looking it up in a ground-truth table (in process, no file)."""

    name, source = "table", "measured"

    def __init__(self, table: dict[str, ProbeResult]):
        self.table = table

    def evaluate(self, candidate, trial_number: int = 0) -> ProbeResult:
        found = self.table.get(params_key(candidate.knobs.to_dict()))
        return found or ProbeResult(status="failed", source="measured", energy_source="unavailable", error="not in the table")
