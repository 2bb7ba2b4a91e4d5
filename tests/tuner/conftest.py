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


@pytest.fixture(scope="session")
def predictions_32b_4():
    """The guided sampler's predictions of every valid candidate of 32b on 4 gh200 nodes (built once)."""
    from autotune.commands.options import settings_for
    from autotune.study.valid import valid_checks
    from autotune.study.outlook import Predictions

    return Predictions(valid_checks(settings_for("--model", "32b", "--nodes", "4")))
