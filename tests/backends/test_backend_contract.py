"""The shared test case every Backend implementation must pass (parametrised over backends).

A new backend joins by adding a builder to BUILDERS. Cases a backend cannot meet by design (the
simulator models SuperOffload instead of refusing it) are skipped by name in `REFUSES`.
"""

from __future__ import annotations

import json

import pytest

from autotune.backends.base import Backend, ProbeResult
from autotune.backends.simulate import SimulateBackend

# Backends that run the candidate for real and therefore refuse what the machine cannot run.
REFUSES = {"launch"}


def _simulate(make_launch_backend):
    return SimulateBackend("contract test")


def _launch(make_launch_backend):
    return make_launch_backend()


BUILDERS = [
    pytest.param(_simulate, id="simulate"),
    pytest.param(_launch, id="launch", marks=pytest.mark.slow),  # real probe subprocesses
]


@pytest.fixture(params=BUILDERS)
def backend(request, make_launch_backend) -> Backend:
    return request.param(make_launch_backend)


def test_a_tiny_valid_candidate_is_evaluated(backend, make_candidate):
    result = backend.evaluate(make_candidate(gpus_per_node=1, zero_stage=1), trial_number=3)
    assert isinstance(result, ProbeResult)
    assert result.status == "ok", f"{result.error}\n{result.details.get('log_tail', '')}"
    assert result.source == backend.source and result.source in ("measured", "simulated")
    assert result.time_s > 0 and result.step_time_s > 0 and result.tflops > 0 and 0 < result.mfu < 1
    assert result.energy_kj is not None and result.energy_kj > 0
    # CPU has no sensor in these tests: the energy is the profile's estimate, and says so.
    assert result.energy_source == ("estimated" if backend.source == "measured" else "simulated")
    assert sum(result.energy_components_kj.values()) == pytest.approx(result.energy_kj, rel=1e-6)
    json.dumps(result.to_dict())  # the study stores it as a JSON user attribute


def test_a_refused_candidate_is_a_failed_result_not_an_exception(backend, make_candidate):
    if backend.name not in REFUSES:
        pytest.skip(f"{backend.name} models every candidate; the space rules exclude this one for it")
    # SuperOffload needs CUDA; the space rules normally keep it off CPU hardware, the probe refuses it.
    result = backend.evaluate(make_candidate(gpus_per_node=1, zero_stage=3, optimizer_offload="async"), trial_number=4)
    assert result.status == "failed"
    assert "SuperOffload" in result.error and "CUDA" in result.error
    assert result.time_s is None and result.energy_kj is None and result.energy_source == "unavailable"
    assert result.details.get("refused") is True


def test_every_backend_names_itself(backend):
    assert backend.name and backend.source and backend.describe().startswith(backend.name)
