"""The study's baseline: what a user would run without tuning, and what picks are compared with.

As in the GH200 study: no optimizer offload, no activation offload, no sequence parallelism, the
GPUs' power limit and clocks as they are, the fewest nodes; among those, the lowest ZeRO stage, no recomputation if it fits, and the largest
micro-batch that the memory estimate lets fit.
"""

from __future__ import annotations

from autotune.space.enumerate import CandidateCheck


def _preference(check: CandidateCheck) -> tuple:
    k = check.candidate.knobs
    return (k.nodes, k.activation_checkpointing != "none", k.zero_stage, -k.micro_batch)


def baseline(checks: list[CandidateCheck]) -> CandidateCheck | None:
    """The baseline candidate among the valid ones, or None when none of that shape fits."""
    eligible = [
        c
        for c in checks
        if c.valid
        and c.candidate.knobs.optimizer_offload == "none"
        and c.candidate.knobs.activation_checkpointing in ("none", "recompute")
        and c.candidate.knobs.sp_degree == 1
        and not c.candidate.knobs.changes_device_settings
    ]
    return min(eligible, key=_preference, default=None)
