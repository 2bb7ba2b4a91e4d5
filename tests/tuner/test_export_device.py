"""Export of a pick with a power limit or SM clock: the launch.sh applies it for the run and restores it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from autotune.candidate import Knobs
from autotune.export import export_trial
from autotune.export_device import device_script
from autotune.report.front import Point

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "measure"))
from measure_fakes import FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV, FakeNvml  # noqa: E402


def _view(gpus_per_node=None, **knobs):
    from autotune.commands.options import settings_for

    per_node = ("--gpus-per-node", str(gpus_per_node)) if gpus_per_node else ()
    settings = settings_for("--model", "7b", "--hardware", "h100-sxm", "--nodes", "1", *per_node)
    params = {**Knobs(zero_stage=3, **knobs).to_dict()}
    point = Point(trial=7, params=params, time_s=100.0, energy_kj=50.0, source="measured", energy_source="measured")
    return SimpleNamespace(point=lambda trial: point if trial == 7 else None, settings=settings, model_caveats=None,
                           front=[point], time_only=False)  # the config says whether it is on the front


def _export(tmp_path, launcher="auto", gpus_per_node=None, **knobs) -> tuple[dict, Path]:
    paths = export_trial(_view(gpus_per_node, **knobs), 7, tmp_path / "configs" / "knee.json", "launch", launcher=launcher)
    config, _, script = paths
    return json.loads(config.read_text()), script


def test_untouched_knobs_add_nothing_to_the_script(tmp_path):
    assert device_script(Knobs(), 1, "auto") == []
    config, script = _export(tmp_path)
    assert "device_cli" not in script.read_text()
    assert config["autotune"]["power_limit"] == 1.0 and config["autotune"]["sm_clock_mhz"] == "max"


def test_launch_sh_applies_the_limit_for_the_run_and_restores_it_on_exit(tmp_path):
    config, script = _export(tmp_path, gpus_per_node=2, power_limit=0.8, sm_clock_mhz=1500)  # the fake node's two
    assert config["autotune"]["power_limit"] == 0.8 and config["autotune"]["sm_clock_mhz"] == 1500
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",) * 2, state_path=state)
    # A stand-in torchrun that reports what the GPUs were set to while "training" ran.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "seen.json"
    (bin_dir / "torchrun").write_text(f"#!/bin/sh\ncp {state} {seen}\n")
    (bin_dir / "torchrun").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}",
           "AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state)}
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    during = json.loads(seen.read_text())["devices"]
    assert [d["limit_mw"] for d in during] == [560_000, 560_000] and during[0]["locked_mhz"] == [345, 1500]
    assert [fake.device(i)["limit_mw"] for i in (0, 1)] == [700_000, 700_000]
    assert fake.device(1)["locked_mhz"] is None
    assert not list(script.parent.glob(".autotune-device-settings.*"))  # the record is gone with the restore

    fake.permission = False
    seen.unlink()
    refused = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "CAP_SYS_ADMIN" in refused.stderr
    assert not seen.exists(), "training must not start at another limit than the pick's"


def _fake_gpus_and_torchrun(tmp_path, torchrun_body: str, count: int = 2):
    """`count` fake H100s (file-backed NVML) and a PATH whose torchrun runs `torchrun_body`."""
    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",) * count, state_path=state)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text(f"#!/bin/sh\n{torchrun_body}\n")
    (bin_dir / "torchrun").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}",
           "AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state)}
    return fake, state, env


def test_a_one_gpu_pick_limits_the_gpu_it_trains_on_not_every_gpu_of_the_node(tmp_path):
    # A newcomer's trial: a one-GPU pick's launch.sh capped all eight GPUs of an eight-GPU node, others' jobs' too.
    _, script = _export(tmp_path, gpus_per_node=1, power_limit=0.8)
    seen = tmp_path / "seen.json"
    fake, state, env = _fake_gpus_and_torchrun(tmp_path, f"cp {tmp_path / 'nvml.json'} {seen}")
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [d["limit_mw"] for d in json.loads(seen.read_text())["devices"]] == [560_000, 700_000]
    assert fake.changes == [["limit", 0, 560_000, False], ["limit", 0, 700_000, False]]


def test_ctrl_c_ends_the_launch_script_with_130_and_the_limit_restored(tmp_path):
    import signal
    import time

    _, script = _export(tmp_path, gpus_per_node=2, power_limit=0.8)
    started = tmp_path / "started"
    # `exec`: no sleep forked after the signal outlives its shell (it held the script's pipes open: a flaky timeout).
    fake, state, env = _fake_gpus_and_torchrun(tmp_path, f"touch {started}; exec sleep 60")
    running = subprocess.Popen([str(script)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and running.poll() is None:
        time.sleep(0.1)
    assert started.exists(), running.poll()
    os.killpg(running.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
    running.wait(timeout=60)
    assert running.returncode == 130  # the shell's status for SIGINT, as the README's table gives it; 143 is SIGTERM
    assert [fake.device(i)["limit_mw"] for i in (0, 1)] == [700_000, 700_000]


def _commands(script_text: str) -> str:
    """A launch script's lines without its comments."""
    return "\n".join(line for line in script_text.splitlines() if not line.lstrip().startswith("#"))


def test_srun_sets_the_clock_itself_and_says_it_has_no_power_limit(tmp_path):
    _, script = _export(tmp_path, launcher="srun", sm_clock_mhz=1500)
    text = script.read_text()
    training = text.strip().splitlines()[-1]
    assert training.startswith("srun --nodes=1 --ntasks=8 ") and '"${gpu_freq[@]}" python -m autotune.backends.srun_rank' in training
    assert "gpu_freq=(--gpu-freq=1500)" in text
    # The header's notes give the commands for the user's own job; the script runs none.
    assert "device_cli" not in _commands(text)
    _, script = _export(tmp_path, launcher="srun", power_limit=0.7, sm_clock_mhz=1500)
    text = script.read_text()
    assert "The probe sets the power limit on every node" in text
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_the_srun_script_trains_in_one_step_that_sets_the_clock_and_leaves_the_limit_to_the_probe(tmp_path):
    """Run under a stand-in srun inside a GPU job: one step, with the node's GPUs, whose probe knows that srun set
    the clock (else it would try NVML itself, which needs root, and refuse the pick) and sets the limit itself.
    A newcomer's trial: a separate srun step applied the limit first, so the probe's own restore (SIGTERM from
    scancel or a time limit) put back the capped value, and the trap's restore step is one SLURM does not start
    once the job ends: every node stayed capped."""
    _, script = _export(tmp_path, launcher="srun", power_limit=0.7, sm_clock_mhz=1500)
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(f'#!/bin/sh\necho "clock set by: $AUTOTUNE_SM_CLOCK_SET_BY; srun $*" >> {calls}\n')
    (bin_dir / "srun").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_GPUS_ON_NODE": "8"}
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (training,) = calls.read_text().splitlines()
    assert training.startswith("clock set by: srun; srun --nodes=1 --ntasks=8 ") and "--gpus-per-node=8 --gpu-freq=1500 " in training
    assert "device_cli" not in _commands(script.read_text())
    # A job without GPU gres: SLURM sets no clock there, so the step asks for none and the probe is not told it did.
    calls.unlink()
    done = subprocess.run([str(script)], env={k: v for k, v in env.items() if k != "SLURM_GPUS_ON_NODE"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (training,) = calls.read_text().splitlines()
    assert training.startswith("clock set by: ; srun --nodes=1 --ntasks=8 ") and "--gpu-freq" not in training


def test_a_multi_node_script_leaves_the_settings_to_the_probe_on_every_node():
    """A newcomer's trial: the deepspeed launcher's script applied the limit on the host it runs on (a login node
    without NVML: it stopped there) and told the user to cap the other nodes by hand, with no restore for them;
    the probe it starts sets and restores them on every node."""
    lines = device_script(Knobs(power_limit=0.9, nodes=2), 2, "auto")
    assert not any("apply" in line or "trap" in line for line in lines), lines
    assert any("The probe sets the settings on every node" in line for line in lines)
