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


def test_a_cpu_profile_on_cpu_and_a_gpu_profile_with_gpus_or_remote_nodes_are_fine(monkeypatch, tmp_path):
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: None)
    backend = choose_backend(_launch_args(), tmp_path / "run", hardware=load_hardware("cpu"))
    assert backend.name == "launch"
    gh200 = load_hardware("gh200")
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("nid001 slots=4\n")
    check_device_matches_profile(gh200, hostfile, environ={})  # the probes run on the hostfile's nodes
    check_device_matches_profile(gh200, None, environ={"SLURM_JOB_ID": "7", "SLURM_NNODES": "1"})
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
