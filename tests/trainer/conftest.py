"""Shared helpers for the trainer tests: the tiny model, a batch, and torchrun subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tiny_spec():
    from autotune.models import load_model

    return load_model("tiny")


@pytest.fixture(scope="session")
def tiny_workload(tiny_spec):
    from autotune.workload import make_workload

    return make_workload(tiny_spec)


@pytest.fixture
def tiny_batch(tiny_spec, tiny_workload):
    import torch

    from trainer.data import SyntheticVideoSamples

    samples = SyntheticVideoSamples(tiny_spec, tiny_workload, length=2)
    return torch.utils.data.default_collate([samples[0], samples[1]])


def cpu_env(**extra: str) -> dict:
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    env.update(extra)
    return env


def torchrun(args: list[str], nproc: int, cwd: Path, timeout_s: float, **env: str) -> subprocess.CompletedProcess:
    """`python -m torch.distributed.run` as a real subprocess with a hard timeout."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *args]
    if nproc == 1:
        command = [sys.executable, *args]
    return subprocess.run(
        command, cwd=cwd, env=cpu_env(**env), capture_output=True, text=True, timeout=timeout_s, check=False
    )
