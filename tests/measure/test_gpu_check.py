"""benchmarks/gpu_check.sh: valid shell, and without a GPU it stops at once, saying so (exit 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.measure import nvml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_check.sh"


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], timeout=30).returncode == 0


def test_without_a_gpu_it_fails_fast_and_clearly(tmp_path):
    if nvml.is_available():
        pytest.skip("a GPU is here: run the script itself")
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and "Nothing was checked" in done.stderr
    assert not (tmp_path / "out").exists()


def test_each_check_s_subprocess_keeps_the_caller_s_pythonpath_after_this_repo(monkeypatch):
    # On a GPU node with optuna and DeepSpeed installed by `pip --target DIR` and PYTHONPATH=DIR, the
    # checks replaced PYTHONPATH with the repo alone: every probe and `autotune sensors` failed to import.
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "benchmarks" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    monkeypatch.setenv("PYTHONPATH", "/tmp/site")
    env = gpu_check.child_environ(CUDA_VISIBLE_DEVICES="0")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO), "/tmp/site"] and env["CUDA_VISIBLE_DEVICES"] == "0"
    monkeypatch.delenv("PYTHONPATH")
    assert gpu_check.child_environ()["PYTHONPATH"] == str(REPO)


RESUME_SCRIPT = REPO / "benchmarks" / "gpu_resume_check.sh"
HANDOVER_SCRIPT = REPO / "benchmarks" / "gpu_handover_check.sh"


@pytest.mark.parametrize("script", [RESUME_SCRIPT, HANDOVER_SCRIPT], ids=lambda path: path.stem)
def test_a_gpu_script_parses_and_without_a_gpu_stops_at_once(tmp_path, script):
    assert subprocess.run(["bash", "-n", str(script)], timeout=30).returncode == 0
    if nvml.is_available():
        pytest.skip("a GPU is here: run the script itself")
    # No nvidia-smi on PATH: only the directories bash needs.
    done = subprocess.run(["bash", str(script), str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "no nvidia-smi on PATH" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_handover_check_s_steps_hold_on_cpu(tmp_path):
    # Its GPU run is a few minutes of a lent machine: the logic of every step (two workers, the time limit's
    # stop, measurements and their replay, both launch scripts) runs here first, on the tiny model, without
    # the power-limit figures a CPU has not.
    env = {**os.environ, "HARDWARE": "cpu", "PYTHON": sys.executable}  # the header's dry run
    done = subprocess.run(["bash", str(HANDOVER_SCRIPT), str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=400, env=env)
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    checks = ["two_workers", "time_limit", "export_measurements", "replay", "launch_sh_torchrun", "launch_sh_deepspeed"]
    assert [line.split(":")[0] for line in summary.splitlines()] == [f"check {name}" for name in checks]
    assert all(": ok" in line for line in summary.splitlines())
    # 75 after one more probe; 2 where none could start, as a run as long stops there again (trial 67 #3)
    assert re.search(r"exit (75|2): stopped:", summary) and summary.count("no GPU: no") == 4  # watts, replay, two launch scripts
