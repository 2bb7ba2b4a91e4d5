"""The probe applies the power limit / SM clock before its warm-up and restores them on every way out.

The GPUs are the fake NVML of tests/measure, whose state lives in a JSON file, so the test sees what the probe did
even after it was killed. A probe on CPU ranks (`--hardware cpu`) sets no GPU (trial75 #8): the guard of a GPU
profile's candidate is run here, in this process or in one the test signals, as probe.main holds it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from tests.trainer.conftest import REPO, cpu_env

pytestmark = pytest.mark.slow
sys.path.insert(0, str(REPO / "tests" / "measure"))
from measure_fakes import FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV, FakeNvml  # noqa: E402

PROBE = ["-m", "trainer.probe", "--model", "tiny", "--hardware", "cpu", "--warmup-steps", "1", "--steps", "2",
         "--global-batch", "1"]
TIMEOUT_S = 180


def _env(tmp_path, state, **extra) -> dict:
    empty = tmp_path / "empty-sys"
    empty.mkdir(exist_ok=True)
    return cpu_env(PYTHONPATH=f"{REPO}:{REPO / 'tests' / 'measure'}", AUTOTUNE_NVML_API=FAKE_NVML_API_SPEC,
                   **{FAKE_NVML_STATE_ENV: str(state)}, AUTOTUNE_SYSFS_ROOT=str(empty),
                   AUTOTUNE_ENERGY_SOURCES="hwmon,rapl", **extra)


def _fake(tmp_path, **kwargs) -> tuple[FakeNvml, object]:
    state = tmp_path / "nvml.json"
    return FakeNvml(names=("NVIDIA GH200 120GB",), state_path=state, **kwargs), state


def _probe(tmp_path, state, flags, **extra):
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, *PROBE, *flags, "--out", str(out)], cwd=tmp_path,
                          env=_env(tmp_path, state, **extra), capture_output=True, text=True, timeout=TIMEOUT_S)
    return done, json.loads(out.read_text())


def _guard_env(monkeypatch, state, **extra) -> None:
    """The fake GPUs for the guard run in this process, as the probe's node leader runs it."""
    monkeypatch.setenv("AUTOTUNE_NVML_API", FAKE_NVML_API_SPEC)
    monkeypatch.setenv(FAKE_NVML_STATE_ENV, str(state))
    for key, value in extra.items():
        monkeypatch.setenv(key, value)


def _candidate(hardware: str = "gh200", gpus_per_node: int = 1, **knobs):
    from autotune.candidate import Candidate, Knobs
    from autotune.hardware import load_hardware
    from autotune.models import load_model
    from autotune.workload import make_workload

    spec = load_model("tiny")
    return Candidate(Knobs(**knobs), spec, load_hardware(hardware), make_workload(spec, global_batch=1),
                     gpus_per_node=gpus_per_node)


def _held(candidate, fail: Exception | None = None) -> dict | None:
    """result.json's device_settings of a one-rank probe that held `candidate`'s settings and ended normally or by
    `fail` (probe.main holds the guard so, the limit restored before teardown)."""
    from trainer.distributed import LaunchEnv
    from trainer.power import applied_device_settings, device_settings_block

    block = None
    try:
        with applied_device_settings(candidate, LaunchEnv(0, 1, 0, 1)) as guard:
            block = device_settings_block(candidate, [guard.summary()])
            if fail is not None:
                raise fail
    except Exception as exc:  # noqa: BLE001 - the way out under test
        assert exc is fail
    return block


@pytest.mark.parametrize("fail", [None, RuntimeError("crash"), MemoryError("CUDA out of memory")])
def test_limit_applied_then_restored_on_normal_end_exception_and_oom(tmp_path, monkeypatch, fail):
    fake, state = _fake(tmp_path)
    _guard_env(monkeypatch, state)
    block = _held(_candidate(power_limit=0.8, sm_clock_mhz=1500), fail=fail)
    (node,) = block["nodes"]
    (device,) = node["devices"]
    assert device["power_limit_w"] == pytest.approx(544.0) and device["previous_power_limit_w"] == 680
    assert device["scope"] == "module" and device["sm_clock_cap_mhz"] == 1500 and node["error"] is None
    assert block["power_limit"] == 0.8
    assert fake.changes == [["limit", 0, 544_000, True], ["lock", 0, 345, 1500], ["limit", 0, 680_000, True], ["reset", 0]]
    assert fake.device(0)["limit_mw"] == 680_000 and fake.device(0)["locked_mhz"] is None


def test_a_one_rank_probe_sets_the_limit_of_its_own_gpu_alone(tmp_path, monkeypatch):
    # A newcomer's trial: on an eight-GPU node a one-GPU probe capped all eight (others' jobs' GPUs too).
    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",) * 2, state_path=state)
    _guard_env(monkeypatch, state)
    (node,) = _held(_candidate("h100-sxm", power_limit=0.5))["nodes"]
    assert [device["index"] for device in node["devices"]] == [0]
    assert fake.changes == [["limit", 0, 350_000, False], ["limit", 0, 700_000, False]]


def test_a_cpu_probe_of_a_power_limit_is_refused_and_touches_no_gpu(tmp_path):
    # trial75 #8: `--hardware cpu --power-limit 0.7` capped GPU 0, trained on CPU, and was recorded ok at the limit.
    fake, state = _fake(tmp_path)
    done, result = _probe(tmp_path, state, ["--power-limit", "0.7", "--sm-clock-mhz", "1500"])
    assert done.returncode == 1 and result["status"] == "failed" and result.get("refused") is True, done.stderr[-3000:]
    assert ("a power limit (0.7 of the default) and an SM clock cap (1500 MHz) needs NVIDIA GPUs; hardware 'cpu' has "
            "none") in result["error"]
    assert fake.changes == []


# The guard as probe.main holds it, in a process of its own that the test signals: a GH200 candidate (the probe itself
# refuses power limits on CPU ranks), holding its limit and clock until a signal ends it.
_HOLDER = """
import sys, time
from autotune.candidate import Candidate, Knobs
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import make_workload
from trainer.distributed import LaunchEnv
from trainer.power import applied_device_settings

spec = load_model("tiny")
candidate = Candidate(Knobs(power_limit=0.7, sm_clock_mhz=1500), spec, load_hardware("gh200"),
                      make_workload(spec, global_batch=1), gpus_per_node=1)
with applied_device_settings(candidate, LaunchEnv(0, 1, 0, 1)):
    print("applied", flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2"])
def test_every_stop_signal_restores_before_the_probe_dies(tmp_path, signame):
    # trial75 #15: SIGHUP (an ssh session lost) and SIGUSR1 (#SBATCH --signal=USR1@...) left the GPU capped and locked.
    fake, state = _fake(tmp_path)
    process = subprocess.Popen([sys.executable, "-c", _HOLDER], cwd=tmp_path, env=_env(tmp_path, state),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "applied\n", process.stderr.read()[-2000:]
        assert fake.device(0)["limit_mw"] == 476_000 and fake.device(0)["locked_mhz"] == [345, 1500]
        process.send_signal(getattr(signal, signame))
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == -getattr(signal, signame)  # it still dies of the signal
    assert fake.device(0)["limit_mw"] == 680_000 and fake.device(0)["locked_mhz"] is None, stderr[-2000:]
    assert "power limit 476 W -> 680 W restored" in stderr and "locked SM clocks reset" in stderr


def test_without_permission_the_probe_is_refused_with_the_reason(tmp_path, monkeypatch):
    from trainer.distributed import LaunchEnv
    from trainer.engine import UnsupportedCandidate
    from trainer.power import agree_or_refuse, applied_device_settings

    fake, state = _fake(tmp_path, permission=False)
    _guard_env(monkeypatch, state)
    with applied_device_settings(_candidate(power_limit=0.8), LaunchEnv(0, 1, 0, 1)) as guard:
        with pytest.raises(UnsupportedCandidate, match="root or CAP_SYS_ADMIN"):
            agree_or_refuse(guard, LaunchEnv(0, 1, 0, 1))
    assert fake.changes == [] and fake.device(0)["limit_mw"] == 680_000


def test_untouched_knobs_touch_nothing(tmp_path):
    fake, state = _fake(tmp_path)
    done, result = _probe(tmp_path, state, [])
    assert result["status"] == "ok", done.stderr[-3000:]
    assert "device_settings" not in result and fake.changes == []


def _srun_set(fake: FakeNvml, applications_mhz: int) -> None:
    """What slurmd's GPU plugin left on the fake GPU for the step: its application clock (no lock)."""
    state = fake._load()
    state["devices"][0]["applications_mhz"] = applications_mhz
    fake._save()


def test_a_clock_set_by_srun_is_left_to_slurm_and_read_back(tmp_path, monkeypatch):
    fake, state = _fake(tmp_path)
    _srun_set(fake, 1500)
    _guard_env(monkeypatch, state, AUTOTUNE_SM_CLOCK_SET_BY="srun")
    block = _held(_candidate(power_limit=0.9, sm_clock_mhz=1500))
    assert block["sm_clock_set_by"] == "srun --gpu-freq=1500"
    (node,) = block["nodes"]
    assert node["devices"][0]["sm_clock_cap_mhz"] is None and node["error"] is None
    assert node["sm_clock_set_by_launcher"] == "read back: at or below the cap"
    assert fake.changes == [["limit", 0, 612_000, True], ["limit", 0, 680_000, True]]  # no lock, no reset


@pytest.mark.parametrize("power_limit", [1.0, 0.9])
def test_a_clock_srun_did_not_set_refuses_the_candidate(tmp_path, monkeypatch, power_limit):
    # trial75 #13: slurmd had not applied --gpu-freq (GPU at 1980 MHz), and the probe was recorded ok at 1500 MHz.
    from trainer.distributed import LaunchEnv
    from trainer.engine import UnsupportedCandidate
    from trainer.power import agree_or_refuse, applied_device_settings

    fake, state = _fake(tmp_path, permission=power_limit != 1.0)  # a clock study under srun needs no root
    _guard_env(monkeypatch, state, AUTOTUNE_SM_CLOCK_SET_BY="srun")
    with applied_device_settings(_candidate(power_limit=power_limit, sm_clock_mhz=1500), LaunchEnv(0, 1, 0, 1)) as guard:
        with pytest.raises(UnsupportedCandidate, match=r"srun --gpu-freq=1500 did not cap the SM clock on node 0: GPU "
                                                       r"0's application SM clock is 1980 MHz"):
            agree_or_refuse(guard, LaunchEnv(0, 1, 0, 1))
    assert fake.device(0)["limit_mw"] == 680_000 and fake.device(0)["locked_mhz"] is None
    _srun_set(fake, 1515)  # SLURM rounds to the nearest supported clock: one 15 MHz step above is the cap
    with applied_device_settings(_candidate(power_limit=power_limit, sm_clock_mhz=1500), LaunchEnv(0, 1, 0, 1)) as guard:
        agree_or_refuse(guard, LaunchEnv(0, 1, 0, 1))


def test_a_clock_srun_set_that_nvml_cannot_read_back_is_flagged(tmp_path, monkeypatch):
    from autotune.measure.errors import SourceUnavailable

    def unreadable(self, index):
        raise SourceUnavailable("not supported", "this GPU does not report it")

    fake, state = _fake(tmp_path)
    _guard_env(monkeypatch, state, AUTOTUNE_SM_CLOCK_SET_BY="srun")
    monkeypatch.setattr(FakeNvml, "applications_sm_clock_mhz", unreadable)
    (node,) = _held(_candidate(sm_clock_mhz=1500))["nodes"]
    assert node["error"] is None and node["sm_clock_set_by_launcher"].startswith("not read back (")
