import pytest

from autotune.candidate import Candidate, Knobs
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import make_workload


@pytest.fixture
def make_candidate():
    """make_candidate(model="32b", hardware="gh200", gpus_per_node=0, workload={}, **knobs)."""

    def make(model="32b", hardware="gh200", gpus_per_node=0, workload=None, **knobs):
        spec = load_model(model)
        defaults = {"zero_stage": 3, "micro_batch": 1, "nodes": 4}
        return Candidate(
            Knobs(**{**defaults, **knobs}),
            spec,
            load_hardware(hardware),
            make_workload(spec, **(workload or {})),
            gpus_per_node,
        )

    return make
