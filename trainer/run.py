"""One probe run on an initialised process group: build, wrap, measure, gather, summarise."""

from __future__ import annotations

import argparse

import torch.distributed as dist

from autotune.candidate import Candidate
from trainer import result as results
from trainer.distributed import LaunchEnv
from trainer.energy import merge_node_blocks
from trainer.engine import apply_deepspeed
from trainer.model import build_model
from trainer.power import device_settings_block
from trainer.window import WindowSettings, measure_window


def run_probe(
    candidate: Candidate, ds_config: dict, args: argparse.Namespace, env: LaunchEnv, cuda: bool, base: dict,
    device_settings: dict | None = None,
) -> dict | None:
    """Returns the finished result on rank 0, None elsewhere. `device_settings`: this node leader's applied
    power limit and clock (trainer.power), gathered into the result."""
    training = apply_deepspeed(build_model(candidate.model), candidate, ds_config)
    settings = WindowSettings(
        warmup_steps=args.warmup_steps,
        steps=args.steps,
        min_seconds=args.probe_seconds,
        data=args.data,
        video_root=args.video_root,
    )
    window = measure_window(training, candidate, settings, env, cuda)

    stats = results.throughput(candidate, window.steps, window.window_s, env.world_size)
    energy_block = None
    if window.energy is not None:
        # No measured busy fraction of the window exists (HFU is a share of peak FLOP/s, not of time):
        # the estimate assumes the devices were busy throughout, and its block says so.
        energy_block = window.energy.end(window.phases, None)
    memory_gib, memory_kind = results.peak_memory()
    mine = {
        "rank": env.rank,
        "node_rank": env.node_rank,
        "peak_memory_gib": memory_gib,
        "losses": window.losses,
        "warmup_losses": window.warmup_losses,
        "energy": energy_block,
        "is_node_leader": env.is_node_leader,
        "device_settings": device_settings,
    }
    ranks: list[dict] = [None] * env.world_size  # type: ignore[list-item]
    dist.all_gather_object(ranks, mine)
    if env.rank != 0:
        return None
    return _summarise(base, candidate, training, window, stats, ranks, memory_kind)


def _summarise(base, candidate, training, window, stats, ranks, memory_kind) -> dict:
    result = dict(base)
    result.update(
        status="ok",
        ds_config=training.ds_config,
        precision=candidate.precision,
        layout={"dp_degree": training.dp_degree, "sp_degree": training.sp_degree, "grad_accum": candidate.grad_accum},
        steps={"warmup": len(ranks[0]["warmup_losses"]), "measured": window.steps},
        window_s=window.window_s,
        step_time_s={**results.step_statistics(window.step_times_s), "all": window.step_times_s},
        **stats,
        peak_memory_gib=max(r["peak_memory_gib"] for r in ranks),
        peak_memory_gib_per_rank=[r["peak_memory_gib"] for r in ranks],
        peak_memory_kind=memory_kind,
        loss=_dp_mean_losses(ranks, training.sp_degree),
        phases=window.phases,
        phase_clock="time.monotonic",
    )
    energy = merge_node_blocks([r["energy"] for r in ranks if r["is_node_leader"]])
    if energy is not None:  # absent, never zero, when nothing was measured
        result["energy"] = energy
    settings = device_settings_block(candidate, [r["device_settings"] for r in ranks if r["is_node_leader"]])
    if settings is not None:
        result["device_settings"] = settings
    return result


def _dp_mean_losses(ranks: list[dict], sp_degree: int) -> dict:
    """Per-step loss averaged over data-parallel ranks (one rank per SP group: they agree)."""
    leaders = [r for r in ranks if r["rank"] % sp_degree == 0]

    def mean_curve(key: str) -> list[float]:
        curves = [r[key] for r in leaders]
        return [sum(values) / len(values) for values in zip(*curves)]

    return {"warmup": mean_curve("warmup_losses"), "measured": mean_curve("losses")}
