"""Every candidate of a space, each checked against the rules and the memory estimate."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator

from autotune.candidate import KNOBS, Candidate, Knobs
from autotune.hardware import HardwareProfile
from autotune.memory import MemoryEstimate, estimate_memory
from autotune.models import ModelSpec
from autotune.space.files import SearchSpace
from autotune.space.rules import rule_violation
from autotune.workload import Workload, with_precision


@dataclass(frozen=True, slots=True)  # slots: a --nodes 1-256 space holds 786,432 of them
class CandidateCheck:
    candidate: Candidate
    reason: str | None  # None: valid and fits
    memory: MemoryEstimate | None  # None when a rule already excludes the candidate

    @property
    def valid(self) -> bool:
        return self.reason is None


def check_candidate(candidate: Candidate) -> CandidateCheck:
    reason = rule_violation(candidate)
    if reason:
        return CandidateCheck(candidate, reason, None)
    memory = estimate_memory(candidate)
    return CandidateCheck(candidate, memory.reason(), memory)


def enumerate_space(
    space: SearchSpace,
    model: ModelSpec,
    hardware: HardwareProfile,
    workload: Workload,
    gpus_per_node: int = 0,
) -> Iterator[CandidateCheck]:
    # The precision settled once: each Candidate settles it again, and copying the workload for each of a
    # --nodes 1-256 space's 786,432 candidates was 9 of its 22 s (trial 46).
    workload = with_precision(workload, hardware.cuda)
    for values in itertools.product(*(space.values(knob) for knob in KNOBS)):
        knobs = Knobs(**dict(zip(KNOBS, values)))
        yield check_candidate(Candidate(knobs, model, hardware, workload, gpus_per_node))
