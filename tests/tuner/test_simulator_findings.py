"""The GH200 study's qualitative findings follow from the simulator (shared/reference/gh200-study.md).

The study compared each offload configuration at DOUBLED local batch (offloading frees HBM) against a
baseline of ZeRO-3 + recompute, SP 1, on the same GPUs and the same samples: 7B on 4 GPUs at local
batch 4, 32B on 16 at 2, 72B on 32 at 1. The tests below use that setup; the saving comes from the
batch the freed memory allows, while offload at the same batch only adds work."""

import pytest

from autotune.candidate import Candidate, Knobs
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.simulator import simulate
from autotune.space.enumerate import check_candidate
from autotune.workload import make_workload

STUDY = {"7b": (1, 4), "32b": (4, 2), "72b": (8, 1)}  # nodes of 4 GH200, local batch at baseline
SAMPLES = 2048


def study_candidate(model: str, doubled: bool, **knobs) -> Candidate:
    nodes, local_batch = STUDY[model]
    batch = local_batch * (2 if doubled else 1)
    spec = load_model(model)
    workload = make_workload(spec, global_batch=batch * nodes * 4, samples=SAMPLES)  # one micro-step per step
    settings = {"zero_stage": 3, "activation_checkpointing": "recompute", "nodes": nodes, "micro_batch": batch}
    return Candidate(Knobs(**{**settings, **knobs}), spec, load_hardware("gh200"), workload)


def baseline(model):
    return simulate(study_candidate(model, doubled=False))


@pytest.mark.parametrize("model", list(STUDY))
def test_the_doubled_batch_fits_only_with_offload(model):
    assert check_candidate(study_candidate(model, doubled=False)).valid
    assert not check_candidate(study_candidate(model, doubled=True)).valid  # out of HBM without offload
    for knobs in ({"optimizer_offload": "sync"}, {"optimizer_offload": "async"},
                  {"activation_checkpointing": "offload_async"}):
        assert check_candidate(study_candidate(model, doubled=True, **knobs)).valid


@pytest.mark.parametrize("model, knobs", [
    (m, k) for m in STUDY for k in ({"optimizer_offload": "async"}, {"activation_checkpointing": "offload_async"},
                                    {"activation_checkpointing": "offload_sync"})
] + [(m, {"optimizer_offload": "sync"}) for m in ("32b", "72b")])
def test_offload_raises_power_but_lowers_energy(model, knobs):
    base, offload = baseline(model), simulate(study_candidate(model, doubled=True, **knobs))
    assert offload.mean_power_w > base.mean_power_w and offload.mean_gpu_power_w > base.mean_gpu_power_w
    assert offload.energy_kj < base.energy_kj and offload.time_s < base.time_s


@pytest.mark.parametrize("model", list(STUDY))
def test_offload_at_the_same_batch_only_adds_work(model):
    base = baseline(model)
    for knobs in ({"optimizer_offload": "sync"}, {"activation_checkpointing": "offload_sync"}):
        assert simulate(study_candidate(model, doubled=False, **knobs)).energy_kj > base.energy_kj


@pytest.mark.parametrize("model", list(STUDY))
def test_activation_offload_energy_async_below_sync_below_none(model):
    sync = simulate(study_candidate(model, doubled=True, activation_checkpointing="offload_sync"))
    asyn = simulate(study_candidate(model, doubled=True, activation_checkpointing="offload_async"))
    assert asyn.energy_kj < sync.energy_kj < baseline(model).energy_kj


def test_activation_offload_matters_more_as_models_grow():
    saved = []
    for model in ("7b", "32b", "72b"):
        offload = simulate(study_candidate(model, doubled=True, activation_checkpointing="offload_async"))
        saved.append(1 - offload.energy_kj / baseline(model).energy_kj)
    assert saved[0] < saved[1] < saved[2]


def test_async_optimizer_offload_beats_sync():
    for model in STUDY:
        sync = simulate(study_candidate(model, doubled=True, optimizer_offload="sync"))
        asyn = simulate(study_candidate(model, doubled=True, optimizer_offload="async"))
        assert asyn.energy_kj < sync.energy_kj and asyn.time_s < sync.time_s


def test_more_gpus_and_sp_shorten_time_but_not_always_energy(make_candidate):
    one, two = (simulate(make_candidate(model="7b", nodes=n, activation_checkpointing="recompute")) for n in (1, 2))
    assert two.time_s < one.time_s and two.energy_kj > one.energy_kj
    # Ulysses SP over twice the GPUs (same data-parallel degree): faster, but its all-to-alls cost energy.
    sp1 = simulate(make_candidate(nodes=4, sp_degree=1, activation_checkpointing="recompute"))
    sp2 = simulate(make_candidate(nodes=8, sp_degree=2, activation_checkpointing="recompute"))
    assert sp2.time_s < sp1.time_s and sp2.energy_kj > sp1.energy_kj


def test_zero_stage_matters_less_for_energy_as_gpus_grow(make_candidate):
    """Across nodes (the study's multi-node counts); within one node NVLink hides most of the difference."""
    spreads = []
    for nodes in (2, 4, 8, 16):
        energies = [simulate(make_candidate(model="7b", nodes=nodes, zero_stage=z,
                                            activation_checkpointing="recompute")).energy_kj for z in (1, 2, 3)]
        spreads.append((max(energies) - min(energies)) / min(energies))
    assert all(b < a for a, b in zip(spreads, spreads[1:]))
