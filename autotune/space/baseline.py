"""The study's baseline: what a user would run without tuning, and what picks are compared with.

As in the GH200 study: no optimizer offload, no activation offload, no sequence parallelism, the
GPUs' power limit and clocks as they are, the fewest nodes; among those, the lowest ZeRO stage, no recomputation if it fits, and the largest
micro-batch that the memory estimate lets fit.
"""

from __future__ import annotations

import json

from autotune.candidate import UNTOUCHED_DEVICE_SETTINGS
from autotune.space.enumerate import CandidateCheck
from autotune.space.files import SearchSpace

# The values a baseline candidate has, knob by knob: what `baseline` looks for, and what a space without one lacks.
BASELINE_VALUES = {
    "optimizer_offload": ("none",),
    "activation_checkpointing": ("none", "recompute"),
    "sp_degree": (1,),
    **{knob: (untouched,) for knob, untouched in UNTOUCHED_DEVICE_SETTINGS.items()},
}


def _preference(check: CandidateCheck) -> tuple:
    k = check.candidate.knobs
    return (k.nodes, k.activation_checkpointing != "none", k.zero_stage, -k.micro_batch)


def _of_baseline_shape(check: CandidateCheck) -> bool:
    return all(getattr(check.candidate.knobs, knob) in values for knob, values in BASELINE_VALUES.items())


def baseline(checks: list[CandidateCheck]) -> CandidateCheck | None:
    """The baseline candidate among the valid ones, or None when none of that shape fits."""
    return min((c for c in checks if c.valid and _of_baseline_shape(c)), key=_preference, default=None)


def baseline_lacks(space: SearchSpace) -> list[str]:
    """The baseline values a space lists none of, as a space file writes them (`power_limit = 1.0`): what to add for
    a study to have a baseline (trial75 #18: a space of power limits 0.9 and 0.8 only had none, said nowhere)."""
    return [f"{knob} = {' or '.join(map(json.dumps, values))}" for knob, values in BASELINE_VALUES.items()
            if not set(space.values(knob)) & set(values)]
