""""power_limit 1.0" and "sm_clock_mhz max" are the devices' defaults: a GPU found off them before a probe is set to
the default limit where NVML allows it (and put back after), else measured as found; either way the result records
what the GPU held (trial75 #16). In-process, on the fake NVML of tests/measure."""

from __future__ import annotations

import sys

import pytest

from autotune.candidate import Candidate, Knobs
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import make_workload
from tests.trainer.conftest import REPO
from trainer.distributed import LaunchEnv
from trainer.power import DeviceSettingsGuard, device_settings_block

sys.path.insert(0, str(REPO / "tests" / "measure"))
from measure_fakes import FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV, FakeNvml  # noqa: E402

ONE_RANK = LaunchEnv(rank=0, world_size=1, local_rank=0, local_world_size=1)


def _candidate(hardware: str = "h100-sxm", **knobs) -> Candidate:
    spec = load_model("tiny")
    return Candidate(Knobs(**knobs), spec, load_hardware(hardware), make_workload(spec, global_batch=2), gpus_per_node=1)


@pytest.fixture
def capped_gpu(tmp_path, monkeypatch) -> FakeNvml:
    """One H100 left at 450 W of its 700 W default and locked to 1200 MHz (a site's cap, a dead probe's leftover)."""
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",), state_path=tmp_path / "nvml.json")
    fake.set_power_limit_mw(0, 450_000)
    fake.lock_sm_clocks_mhz(0, 345, 1200)
    del fake.changes[:]
    fake._save()
    monkeypatch.setenv("AUTOTUNE_NVML_API", FAKE_NVML_API_SPEC)
    monkeypatch.setenv(FAKE_NVML_STATE_ENV, str(tmp_path / "nvml.json"))
    return fake


def _run(candidate: Candidate) -> tuple[DeviceSettingsGuard, dict | None]:
    guard = DeviceSettingsGuard(candidate, ONE_RANK)
    guard.apply()
    try:
        return guard, device_settings_block(candidate, [guard.summary()])
    finally:
        guard.restore()


def test_a_default_probe_sets_the_default_limit_where_it_may_and_puts_the_found_one_back(capped_gpu):
    guard, block = _run(_candidate())
    assert guard.error is None
    (node,) = block["nodes"]
    (device,) = node["devices"]
    assert device["previous_power_limit_w"] == 450 and device["power_limit_w"] == 700  # what the GPU held: read back
    assert device["sm_clocks_locked"] is True and device["sm_clock_cap_mhz"] is None
    assert "at 450 W of its 700 W default limit" in node["off_default"]
    assert node["off_default"] == ("GPU 0 at 450 W of its 700 W default limit, its SM clock held by a user setting "
                                   "(locked clocks): the default limit set for this probe, the found one put back after; "
                                   "a clock setting kept as found (NVML cannot read a lock's range to put it back)")
    # the limit put back; the lock never touched (its range cannot be read back)
    assert capped_gpu.changes == [["limit", 0, 700_000, False], ["limit", 0, 450_000, False]]
    assert capped_gpu.device(0)["locked_mhz"] == [345, 1200]


def test_without_permission_a_default_probe_runs_as_found_and_records_it(capped_gpu):
    capped_gpu.permission = False
    guard, block = _run(_candidate())
    assert guard.error is None  # not refused: the study's power_limit is pinned to 1.0 here, and this is what 1.0 is
    (node,) = block["nodes"]
    assert node["devices"][0]["power_limit_w"] == 450 and "run at the found limit (changing GPU power limits or clocks " \
        "needs root or CAP_SYS_ADMIN (NVML: no permission))" in node["off_default"]
    assert capped_gpu.changes == []


def test_a_limited_probe_is_of_the_default_and_records_what_the_gpu_held(capped_gpu):
    _, block = _run(_candidate(power_limit=0.7))
    (device,) = block["nodes"][0]["devices"]
    assert device["power_limit_w"] == 490.0  # read back in mW, not 0.7 x 700 = 489.99999999999994
    assert device["previous_power_limit_w"] == 450


def test_devices_at_their_defaults_are_read_and_left_alone(tmp_path, monkeypatch):
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",), state_path=tmp_path / "nvml.json")
    monkeypatch.setenv("AUTOTUNE_NVML_API", FAKE_NVML_API_SPEC)
    monkeypatch.setenv(FAKE_NVML_STATE_ENV, str(tmp_path / "nvml.json"))
    _, block = _run(_candidate())
    assert block is None and fake.changes == []
