"""Shared fixtures for the backend tests: a tiny CPU candidate and probe-friendly launch backends.

Probes are real subprocesses kept cheap as in tests/trainer: the tiny model, one warm-up and two
measured steps, a global batch of 2, one thread per rank, and no energy sensor (so energy is the
hardware profile's estimate on every machine, not only on this one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.candidate import Candidate, Knobs
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import make_workload

REPO = Path(__file__).resolve().parents[2]
PROBE_TIMEOUT_S = 120.0  # a healthy tiny probe takes ~10 s on 2 cores; this only catches a stuck one


@pytest.fixture
def make_candidate():
    """make_candidate(gpus_per_node=1, hardware="cpu", **knobs): the tiny model, global batch 2."""

    def make(gpus_per_node: int = 1, hardware: str = "cpu", **knobs) -> Candidate:
        spec = load_model("tiny")
        workload = make_workload(spec, global_batch=2)
        return Candidate(Knobs(**knobs), spec, load_hardware(hardware), workload, gpus_per_node=gpus_per_node)

    return make


@pytest.fixture
def probe_env(tmp_path) -> dict[str, str]:
    empty_sysfs = tmp_path / "empty-sys"
    empty_sysfs.mkdir()
    return {
        "DS_ACCELERATOR": "cpu",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(REPO),
        "AUTOTUNE_SYSFS_ROOT": str(empty_sysfs),  # no hwmon/RAPL: the probe estimates energy
        "AUTOTUNE_ENERGY_SOURCES": "hwmon,rapl",  # and does not look for NVML
    }


@pytest.fixture
def make_launch_backend(tmp_path, probe_env):
    """make_launch_backend(env_extra={}, **constructor overrides) -> LaunchBackend under tmp_path/run."""
    from autotune.backends.launch import LaunchBackend

    def make(env_extra: dict | None = None, **overrides):
        settings = {
            "run_dir": tmp_path / "run",
            "launcher": "torchrun",
            "probe_timeout_s": PROBE_TIMEOUT_S,
            "warmup_steps": 1,
            "probe_steps": 2,
            "probe_seconds": 0.0,
            "repeats": 1,
            "hostfile": None,
            "allow_estimated_energy": True,
            "env": {**probe_env, **(env_extra or {})},
            "kill_grace_s": 5.0,
        }
        return LaunchBackend(**{**settings, **overrides})

    return make


def live_processes_mentioning(text: str) -> list[str]:
    """Command lines of live (not zombie) processes whose arguments contain `text` (a /proc scan)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(f"{entry.name}: {cmdline}")
    return found


def probe_result(step_time_s: float = 0.5, energy_block: dict | None = None, measured_steps: int = 4) -> dict:
    """A result.json of status ok with just the keys the backend reads (docs/result-schema.md)."""
    result = {
        "schema_version": 1, "source": "measured", "status": "ok", "world_size": 8,
        "steps": {"warmup": 2, "measured": measured_steps},
        "step_time_s": {"mean": step_time_s, "std": 0.0, "min": step_time_s, "max": step_time_s},
        "tflops": {"model_total": 800.0, "model_per_device": 100.0}, "mfu": 0.1, "peak_memory_gib": 60.0,
        "phases": [{"name": "backward", "step": s, "micro_step": 0, "start_s": s, "end_s": s + 0.25} for s in (1, 2)],
    }
    if energy_block is not None:
        result["energy"] = energy_block
    return result
