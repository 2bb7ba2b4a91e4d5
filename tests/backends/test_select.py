"""Choosing the backend refuses a launch whose local probes would not run on the profile's device."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from autotune.backends import launchers
from autotune.backends.select import check_device_matches_profile, choose_backend
from autotune.errors import UserError
from autotune.hardware import load_hardware

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _launch_args(hostfile=None, backend="launch"):
    return argparse.Namespace(backend=backend, launcher="auto", probe_timeout=60.0, warmup_steps=1, probe_steps=2,
                              probe_seconds=0.0, repeats=1, hostfile=hostfile, allow_estimated_energy=True)


def test_a_gpu_profile_on_a_machine_without_gpus_is_refused_before_any_probe(monkeypatch, tmp_path):
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: None)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(UserError, match="gh200 describes CUDA GPUs, but this machine has none"):
        choose_backend(_launch_args(), tmp_path / "run", hardware=load_hardware("gh200"))
    assert not (tmp_path / "run").exists()


def _node(how="ssh", gpu_models=None):
    from autotune.backends.first_node import NodeAnswer

    return NodeAnswer("nid001", how, ("nvml",), True, "", gpu_models)


def test_a_cpu_profile_on_cpu_and_a_gpu_profile_with_gpus_or_remote_nodes_are_fine(monkeypatch, tmp_path):
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: None)
    monkeypatch.setattr(launchers, "local_gpu_models", lambda: [])
    backend = choose_backend(_launch_args(), tmp_path / "run", hardware=load_hardware("cpu"))
    assert backend.name == "launch"
    gh200 = load_hardware("gh200")
    check_device_matches_profile(gh200, _node())  # the probes' first node did not say: no claim
    check_device_matches_profile(gh200, _node("srun", ()))  # an srun step sees the GPUs its question may not have
    with pytest.raises(UserError, match=r"describes CUDA GPUs, but nid001 \(the probes' first node, asked over ssh\) has none"):
        check_device_matches_profile(gh200, _node("ssh", ()))
    with pytest.raises(UserError, match="describes CUDA GPUs, but this machine has none"):
        check_device_matches_profile(gh200, None, environ={})  # the probes run here
    check_device_matches_profile(gh200, None, environ={"SLURM_JOB_ID": "7", "SLURM_NNODES": "1"})  # srun steps
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: 4)
    check_device_matches_profile(gh200, None, environ={})


def test_the_cli_refuses_gh200_on_a_cpu_box_with_one_line_and_exit_2(tmp_path):
    # No nvidia-smi on PATH and no SLURM: this is a CPU-only machine wherever the test runs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=os.path.dirname(sys.executable), PYTHONPATH=REPO, DS_ACCELERATOR="cpu")
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--nodes", "1", "--hardware", "gh200",
         "--backend", "launch", "--objectives", "time", "--trials", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert result.returncode == 2, result.stderr
    assert "gh200 describes CUDA GPUs" in result.stderr and "Traceback" not in result.stderr
    assert not (out / "study.db").exists() and not (out / "trials").exists()


def _fake_nvidia_smi(tmp_path, monkeypatch, name: str, memory_mib: str, gpus: int = 4) -> str:
    """A real `nvidia-smi` on PATH that answers `-L` and the name/memory query as a driver would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    listing = "\\n".join(f"GPU {i}: {name} (UUID: GPU-{i})" for i in range(gpus))
    query = "\\n".join(f"{name}, {memory_mib}" for _ in range(gpus))
    smi.write_text(f'#!/bin/sh\nif [ "$1" = "-L" ]; then printf "{listing}\\n"; else printf "{query}\\n"; fi\n')
    smi.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)
    return path


def test_the_local_gpus_name_and_memory_are_read_from_nvidia_smi(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 80GB HBM3", "81559", gpus=2)
    assert launchers.local_gpu_count() == 2
    assert launchers.local_gpu_models() == [("NVIDIA H100 80GB HBM3", pytest.approx(79.65, abs=0.01))] * 2
    _fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 80GB HBM3", "[N/A]")
    assert launchers.local_gpu_models() == []  # no claim about a device whose memory it does not print


def test_a_profile_whose_gpu_has_more_memory_than_this_machines_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    _fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 80GB HBM3", "81559")
    with pytest.raises(UserError) as refused:
        check_device_matches_profile(load_hardware("gh200"), None, environ={})  # the default profile: 96 GB
    message = str(refused.value)
    assert "GPU NVIDIA H100 80GB HBM3 on this machine has 79.6 GiB, but --hardware gh200 describes" in message
    assert "96 GiB" in message and "--hardware h100-sxm for an 80 GB H100" in message
    check_device_matches_profile(load_hardware("h100-sxm"), None, environ={})  # 79.6 of 80 GiB: this GPU
    # In an allocation the probes are srun steps: judged by the GPUs this shell sees, where it sees them.
    with pytest.raises(UserError, match="on this machine has 79.6 GiB"):
        check_device_matches_profile(load_hardware("gh200"), None, environ={"SLURM_JOB_ID": "7", "SLURM_NNODES": "2"})
    # Probes on another node are judged by that node's GPUs, never this machine's.
    check_device_matches_profile(load_hardware("gh200"), _node(gpu_models=(("NVIDIA GH200 96GB HBM3", 95.0),)))
    with pytest.raises(UserError, match=r"GPU NVIDIA H100 on nid001 \(the probes' first node, asked over ssh\) has 79.6 GiB"):
        check_device_matches_profile(load_hardware("gh200"), _node(gpu_models=(("NVIDIA H100", 79.6),)))
    # A bigger GPU than the profile's: the estimates are cautious, which is said and not refused.
    _fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H200", "143771")
    check_device_matches_profile(load_hardware("h100-sxm"), None, environ={})
    said = " ".join(capsys.readouterr().err.split())  # rich wraps at 80 columns
    assert "NVIDIA H200 on this machine has 140.4 GiB, more than the 80 GiB --hardware h100-sxm describes" in said


def test_the_cli_refuses_the_default_profile_on_an_80_gb_h100_with_one_line(tmp_path, monkeypatch):
    path = _fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 80GB HBM3", "81559", gpus=8)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=path, PYTHONPATH=REPO, DS_ACCELERATOR="cpu")
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "7b", "--nodes", "1", "--backend", "auto",
         "--objectives", "time", "--trials", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "has 79.6 GiB, but --hardware gh200 describes" in lines[0], result.stderr
    assert not out.exists()


def test_the_backend_line_names_the_launcher_auto_chose(monkeypatch, tmp_path):
    from autotune.backends.launch import LaunchBackend
    from autotune.backends.select import backend_line

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    auto = LaunchBackend(run_dir=tmp_path, launcher="auto")
    assert "(real probe runs via torchrun (auto), " in backend_line(auto, (1,))
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    assert "(real probe runs via srun (auto), " in backend_line(auto, (1, 2))
    monkeypatch.delenv("SLURM_JOB_ID")
    chosen = LaunchBackend(run_dir=tmp_path, launcher="torchrun")
    assert backend_line(chosen, (1,)) == chosen.describe() and "via torchrun, " in chosen.describe()


@pytest.mark.parametrize("nodelist", [None, "gpu[003-004]"])
def test_the_cli_refuses_auto_in_an_allocation_without_srun_before_writing_anything(tmp_path, nodelist):
    """The same one-line refusal whether or not the allocation names its nodes (SLURM_JOB_NODELIST): without
    it the run used to open a study whose every probe failed "could not start srun"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=os.path.dirname(sys.executable), PYTHONPATH=REPO, DS_ACCELERATOR="cpu",  # no srun on PATH
               SLURM_JOB_ID="7", SLURM_NNODES="2", SLURM_GPUS_PER_NODE="2")
    if nodelist:
        env["SLURM_JOB_NODELIST"] = nodelist
    out = tmp_path / "sl1"
    result = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--hardware", "cpu", "--backend", "launch",
         "--trials", "2", "--allow-estimated-energy", "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("autotune run: error: srun is not on PATH, and --launcher auto "
                                                     "starts every probe with srun in SLURM allocation 7"), result.stderr
    assert result.stderr.strip().endswith(errors[0]) and "Traceback" not in result.stderr
    assert not out.exists()


def test_measurements_under_the_default_auto_backend_mean_a_replay(tmp_path):
    """Trial 48 §21: `run --measurements FILE` without `--backend replay` was refused, though recorded
    results can only mean a replay; any other named backend still is, naming both ways out."""
    import json

    record = {"params": {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute",
                         "sp_degree": 1, "micro_batch": 1, "nodes": 4}, "status": "ok", "time_s": 1.0, "energy_kj": 2.0}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(record) + "\n")
    auto = choose_backend(argparse.Namespace(backend="auto", measurements=path), tmp_path / "run")
    assert auto.name == "replay" and auto.reason == "chosen by --measurements (--backend auto)"
    named = choose_backend(argparse.Namespace(backend="replay", measurements=path), tmp_path / "run")
    assert named.name == "replay" and named.reason == "chosen with --backend replay"
    for other in ("simulate", "launch"):
        with pytest.raises(UserError, match=f"^--measurements is read only by --backend replay \\(got --backend {other}\\); "
                                            f"drop --backend {other} or --measurements$"):
            choose_backend(argparse.Namespace(backend=other, measurements=path), tmp_path / "run")
    assert not (tmp_path / "run").exists()
