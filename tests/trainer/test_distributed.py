"""The rank layout a probe reads from its launcher (or a plain run's: one rank), and training
correctness across real ranks: one torchrun launch runs every layout (distributed_checks.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainer.conftest import REPO, cpu_env, torchrun
from trainer.distributed import LaunchEnv, init_process_group, launch_env

slow = pytest.mark.slow
DRIVER = Path(__file__).with_name("distributed_checks.py")
LAYOUT_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "LOCAL_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def no_launcher(monkeypatch):
    """`python -m trainer.probe` by hand: no launcher variable; whatever the code sets is undone after."""
    for name in LAYOUT_VARIABLES:
        monkeypatch.setenv(name, "")  # recorded, so a variable the code under test sets is removed again
        monkeypatch.delenv(name)


def test_groups_made_after_the_process_group_take_the_collective_timeout(monkeypatch):
    """DeepSpeed makes groups of its own without a timeout, which torch then gave its default (30 minutes under gloo):
    a rank waiting on a hung peer there outwaited --collective-timeout-s and the tuner's --probe-timeout (trial79 #8)."""
    import datetime

    from torch.distributed import Backend, distributed_c10d

    from trainer.distributed import groups_take_timeout

    for name in ("default_pg_timeout", "default_pg_nccl_timeout"):  # put back after the test
        monkeypatch.setattr(distributed_c10d, name, getattr(distributed_c10d, name))
    groups_take_timeout(datetime.timedelta(seconds=48))
    assert distributed_c10d._get_default_timeout(Backend.GLOO) == datetime.timedelta(seconds=48)


def test_a_plain_run_is_one_rank(no_launcher):
    assert launch_env() == LaunchEnv(rank=0, world_size=1, local_rank=0, local_world_size=1)


def test_the_deepspeed_launchers_local_size_gives_the_ranks_per_node(no_launcher, monkeypatch):
    """The deepspeed launcher exports LOCAL_SIZE, not LOCAL_WORLD_SIZE: 2 nodes x 4 ranks are not 8 on one node."""
    for name, value in {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_SIZE": "4"}.items():
        monkeypatch.setenv(name, value)
    env = launch_env()
    assert env.local_world_size == 4 and env.node_rank == 1 and not env.is_node_leader


def test_a_plain_run_models_the_energy_of_one_accelerator(no_launcher, monkeypatch, tmp_path):
    """Seen by hand: a plain run on the cpu profile (gpus_per_node = 2) estimated 2 ranks' power, 56 W
    for one rank's 28 W: the energy model read LOCAL_WORLD_SIZE, which only launchers set, and fell back
    to the profile. It now counts the node's ranks as launch_env() finds them."""
    from autotune.hardware import load_hardware
    from trainer.energy import ProbeEnergy

    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(tmp_path))  # an empty sysfs: no sensor, the model estimates
    monkeypatch.setenv("AUTOTUNE_ENERGY_SOURCES", "hwmon,rapl")
    env = launch_env()
    energy = ProbeEnergy(load_hardware("cpu"), node_rank=0, local_rank=0, local_world_size=env.local_world_size)
    assert energy.mode == "estimated"
    assert energy._meter.model.accelerators == 1


@slow
def test_a_plain_probe_run_and_a_one_rank_torchrun_report_the_same_layout_and_power(tmp_path):
    results = {}
    for how, launcher in (("plain", []), ("torchrun", ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1"])):
        out = tmp_path / how / "result.json"
        out.parent.mkdir()
        command = [sys.executable, *launcher, "-m", "trainer.probe", "--model", "tiny", "--hardware", "cpu",
                   "--warmup-steps", "1", "--steps", "2", "--out", str(out)]
        env = {k: v for k, v in cpu_env().items() if k not in LAYOUT_VARIABLES}
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-4000:]
        results[how] = json.loads(out.read_text())
    for result in results.values():
        assert result["world_size"] == 1 and result["layout"]["dp_degree"] == 1 and result["candidate"]["gpus_per_node"] == 1
        energy = result["energy"]
        assert energy["model"]["accelerators"] == 1 and len(energy["per_gpu"]) == 1
    assert results["plain"]["energy"]["mean_power_w"] == results["torchrun"]["energy"]["mean_power_w"] == 28.0


@pytest.fixture(scope="module")
def losses(tmp_path_factory) -> dict[str, list[float]]:
    out = tmp_path_factory.mktemp("checks") / "checks.json"
    done = torchrun([str(DRIVER), "--out", str(out)], nproc=2, cwd=out.parent, timeout_s=240)
    assert done.returncode == 0, done.stderr[-4000:]
    data = json.loads(out.read_text())
    assert data["world_size"] == 2
    return data["losses"]


def _assert_same(curve: list[float], reference: list[float]) -> None:
    assert curve == pytest.approx(reference, rel=1e-5, abs=1e-6)


@slow
def test_updates_are_large_enough_for_a_wrong_gradient_to_show(losses):
    # Same sample at steps 0 and 2 (two samples cycled), plain SGD: the loss must have moved a lot.
    assert losses["zero0"][2] < losses["zero0"][0] - 0.5


@slow
@pytest.mark.parametrize("layout", ["zero1", "zero2", "zero3", "zero3_recompute"])
def test_zero_stages_follow_the_same_trajectory(losses, layout):
    _assert_same(losses[layout], losses["zero0"])


@slow
@pytest.mark.parametrize("layout", ["sp2", "sp2_zero2", "sp2_zero3", "sp2_zero3_offload"])
def test_sequence_parallel_2_gives_the_losses_of_sp_1(losses, layout):
    _assert_same(losses[layout], losses["sp1"])


@slow
def test_loss_decreases_over_20_steps(losses):
    curve = losses["loss_20_steps"]
    assert len(curve) == 20
    first, last = sum(curve[:4]) / 4, sum(curve[-4:]) / 4
    assert last < 0.8 * first
