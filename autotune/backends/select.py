"""`--backend auto|simulate`: which backend evaluates the study's candidates, and why."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from autotune.backends.base import Backend
from autotune.backends.simulate import SimulateBackend
from autotune.errors import UserError

BACKENDS = ("auto", "simulate")


def _gpu_cluster_present() -> str | None:
    """A sentence naming the GPUs found (without importing torch), or None."""
    if os.environ.get("SLURM_JOB_ID") and os.environ.get("SLURM_JOB_GPUS", os.environ.get("SLURM_GPUS_ON_NODE")):
        return f"SLURM allocation {os.environ['SLURM_JOB_ID']} with GPUs"
    if Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi"):
        return "NVIDIA GPUs on this machine"
    return None


def choose_backend(name: str) -> Backend:
    if name == "simulate":
        return SimulateBackend("chosen with --backend simulate")
    if name != "auto":
        raise UserError(f"unknown backend {name!r}; use one of {', '.join(BACKENDS)}")
    found = _gpu_cluster_present()
    if found is None:
        return SimulateBackend("no GPU cluster here (no CUDA devices, no SLURM GPU allocation)")
    return SimulateBackend(f"{found}, but probe launching is not part of this version yet")
