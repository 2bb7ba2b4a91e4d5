"""`--backend auto|simulate|launch|replay`: which backend evaluates the study's candidates, and why."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from autotune.backends.base import Backend
from autotune.backends.simulate import SimulateBackend
from autotune.errors import UserError


def check_device_matches_profile(hardware, first_node=None, environ: dict[str, str] | None = None) -> None:
    """Refuse, before the first probe, a hardware profile the probes' GPUs do not match: CPU ranks under a
    GPU profile would be reported as that GPU's measured figures, and a profile with more GPU memory than
    the GPUs would pass candidates that run out of memory. Judged where the probes' first rank runs:
    `first_node` (backends/first_node.py, asked there) where that is another machine, else this one. The
    probe checks each rank again (`trainer.engine.check_supported`)."""
    from autotune.backends.launchers import local_gpu_count, local_gpu_models, slurm_nodes

    if hardware is None or not hardware.cuda:
        return
    if first_node is not None:
        if first_node.gpu_models:
            check_gpu_memory_matches_profile(hardware, first_node.gpu_models, first_node.where)
        elif first_node.gpu_models is not None and first_node.how == "ssh":  # an srun step may see GPUs its question did not
            raise UserError(
                f"--hardware {hardware.name} describes CUDA GPUs, but {first_node.where} has none (nvidia-smi there "
                f"lists no GPU): its probes would fail there; check the hostfile, use --hardware cpu, or "
                "--backend simulate")
        return
    environ = dict(os.environ if environ is None else environ)
    # In an allocation each probe is an srun step with the job's GPUs, which this shell may not see: no GPU
    # here is no claim there.
    if slurm_nodes(environ) is not None or local_gpu_count():
        check_gpu_memory_matches_profile(hardware, local_gpu_models(), "this machine")
        return
    raise UserError(
        f"--hardware {hardware.name} describes CUDA GPUs, but this machine has none (nvidia-smi lists no GPU) and "
        f"no --hostfile or SLURM allocation reaches other nodes: its probes would run on CPU and be reported as "
        f"{hardware.name} figures; use --hardware cpu, --backend simulate, or run where the GPUs are"
    )


# How far below the profile's GPU memory a probe GPU's may be before the profile is refused for it
# (nvidia-smi reports an 80 GB H100 as 79.6 GiB against the h100-sxm profile's 80).
GPU_MEMORY_SHORTFALL = 0.10


def check_gpu_memory_matches_profile(hardware, models, where: str) -> None:
    """Refuse a profile whose GPU memory the probes' GPUs (`models`: name, GiB; on `where`) fall
    more than GPU_MEMORY_SHORTFALL short of: its memory estimates would pass candidates that run out of
    memory there, and the probes' figures would carry another GPU's name (an H100 80 GB box under the
    default gh200 profile, 96 GB). A larger GPU only makes the estimates cautious: said, not refused."""
    from rich.console import Console

    if not models:
        return
    name, memory_gib = min(models, key=lambda model: model[1])
    profile_gib = hardware.gpu.memory_gib
    if memory_gib < profile_gib * (1 - GPU_MEMORY_SHORTFALL):
        raise UserError(
            f"the GPU {name} on {where} has {memory_gib:.1f} GiB, but --hardware {hardware.name} describes "
            f"{hardware.gpu.name} with {profile_gib:g} GiB: its memory estimates would pass candidates that run out of "
            "memory there and its figures would be labelled as that GPU's; pass the profile of this GPU (--hardware "
            "h100-sxm for an 80 GB H100, or a copy of autotune/hardware/h100-sxm.toml with its [gpu] figures)"
        )
    if memory_gib > profile_gib / (1 - GPU_MEMORY_SHORTFALL):
        Console(stderr=True).print(
            f"[yellow]warning: the GPU {name} on {where} has {memory_gib:.1f} GiB, more than the {profile_gib:g} GiB "
            f"--hardware {hardware.name} describes: candidates that would fit there may be left out as too big[/]"
        )


def _launch_backend(args: argparse.Namespace, run_dir: Path, reason: str, hardware=None) -> Backend:
    from autotune.backends.launch import LaunchBackend

    backend = LaunchBackend(
        run_dir=run_dir,
        launcher=args.launcher,
        probe_timeout_s=args.probe_timeout,
        warmup_steps=args.warmup_steps,
        probe_steps=args.probe_steps,
        probe_seconds=args.probe_seconds,
        repeats=args.repeats,
        hostfile=args.hostfile,
        allow_estimated_energy=args.allow_estimated_energy,
    )
    check_device_matches_profile(hardware, backend.first_node())
    backend.reason = reason
    backend.energy_ranked = "energy" in getattr(args, "objectives", "time,energy")
    return backend


def _replay_backend(backend: str, measurements: Path | None) -> Backend:
    if measurements is None:
        raise UserError("--backend replay needs --measurements FILE (JSON lines, or `autotune space --simulate --json` output)")
    if backend not in ("replay", "auto"):
        raise UserError(f"--measurements is read only by --backend replay (got --backend {backend}); drop --backend "
                        f"{backend} or --measurements")
    from autotune.backends.replay import ReplayBackend

    # Recorded results can only mean a replay: `auto` refused them and asked for the flag (trial 48).
    return ReplayBackend(measurements, "chosen with --backend replay" if backend == "replay"
                         else "chosen by --measurements (--backend auto)")


def choose_backend(
    args: argparse.Namespace, run_dir: Path, nodes: int = 1, gpus_per_node: int | None = None, hardware=None
) -> Backend:
    """`nodes`/`gpus_per_node`: the largest candidate's, so `auto` launches only where it all fits;
    `hardware`: the study's profile, which a launch backend's probes must match (see above)."""
    measurements = getattr(args, "measurements", None)
    if args.backend == "replay" or measurements is not None:
        return _replay_backend(args.backend, measurements)
    if args.backend == "simulate":
        return SimulateBackend("chosen with --backend simulate")
    if args.backend == "launch":
        return _launch_backend(args, run_dir, "chosen with --backend launch", hardware)
    from autotune.backends.launch import detect_launch_target

    present, why = detect_launch_target(args.hostfile, nodes=nodes, gpus_per_node=gpus_per_node)
    if present:
        return _launch_backend(args, run_dir, why, hardware)
    return SimulateBackend(why)


def backend_line(backend: Backend, node_counts) -> str:
    """The run's `backend:` line: the backend's own description, with the launcher `--launcher auto` chose
    for the study's node counts named ("via torchrun (auto)"), not the word auto."""
    line = backend.describe()
    if backend.name != "launch" or backend.launcher != "auto":
        return line
    from autotune.backends.launchers import auto_launcher_words

    chosen = auto_launcher_words(node_counts, backend.hostfile, {**os.environ, **backend.env})
    if "via auto" in line:
        return line.replace("via auto", f"via {chosen} (auto)", 1)
    return f"{line}; --launcher auto starts the probes with {chosen}"


def check_energy_objective(backend: Backend, objectives: str, allow_estimated: bool) -> None:
    """Refuse to rank by energy that no sensor measures, unless the user accepts estimates: probes on a
    machine without a sensor, or a replayed file whose every energy was estimated where it was measured
    (each of its probes would fail on the label)."""
    if "energy" not in objectives:
        return
    # Before estimates are allowed: no estimate is there to allow, and each probe would fail on its missing energy,
    # the run stopping after its first probes as if the set-up were wrong.
    unrecorded = backend.energy_unrecorded()
    if unrecorded:
        raise UserError(f"{unrecorded}: pass --objectives time to rank by time alone (with a new --out where this one "
                        "already holds a study ranked by energy too)")
    if allow_estimated:
        return
    why = backend.estimated_energy_only()
    if why:
        raise UserError(f"{why}: pass --allow-estimated-energy to rank by estimated energy, or --objectives time")
