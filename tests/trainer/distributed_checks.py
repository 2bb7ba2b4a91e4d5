"""Correctness checks that need real ranks, run by torchrun in ONE process group (cheap on 2 cores).

    DS_ACCELERATOR=cpu torchrun --nproc_per_node=2 tests/trainer/distributed_checks.py --out checks.json

Rank 0 writes {check: [loss per step, ...]}; tests/trainer/test_distributed.py asserts on it. Every
engine here sees the same fixed batches on every rank, so data-parallel averaging leaves the
update of one batch and runs with different layouts must follow the same trajectory.
"""

from __future__ import annotations

import argparse
import datetime
import json

import deepspeed
import torch
import torch.distributed as dist

from autotune.build_locks import use_install_extensions_dir
from autotune.candidate import Candidate, Knobs
from autotune.ds_config import deepspeed_config
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import make_workload
from trainer.data import SyntheticVideoSamples
from trainer.distributed import teardown
from trainer.engine import apply_deepspeed
from trainer.loop import train_step
from trainer.phases import PhaseClock
from trainer.probe import exit_now

SPEC = load_model("tiny")


def _candidate(world: int, **knobs) -> Candidate:
    sp = knobs.get("sp_degree", 1)
    workload = make_workload(SPEC, global_batch=world // sp * knobs.get("micro_batch", 1))
    return Candidate(Knobs(**knobs), SPEC, load_hardware("cpu"), workload, gpus_per_node=world)


def _fixed_batches(steps: int, distinct: int) -> list[list[dict]]:
    """One micro-batch per step, cycling over `distinct` samples, the same on every rank."""
    samples = SyntheticVideoSamples(SPEC, make_workload(SPEC), length=distinct)
    return [[torch.utils.data.default_collate([samples[s % distinct]])] for s in range(steps)]


def _plain_sgd(config: dict) -> dict:
    """Plain SGD, no clipping: unlike Adam's normalised step, the update is proportional to the
    gradient, so a gradient scaled wrongly by some layout (say, x2 over SP ranks) changes the curve."""
    sgd = {"type": "SGD", "params": {"lr": 0.5}}
    return {**config, "optimizer": sgd, "gradient_clipping": 0.0, "zero_allow_untested_optimizer": True}


def trajectory(world: int, steps: int, optimizer: str = "sgd", **knobs) -> list[float]:
    from trainer.model import build_model

    candidate = _candidate(world, **knobs)
    config = deepspeed_config(candidate, learning_rate=1e-3)
    if optimizer == "sgd":
        config = _plain_sgd(config)
    training = apply_deepspeed(build_model(SPEC), candidate, config)
    clock = PhaseClock(cuda=False)
    losses = [float(train_step(training, batches, clock)) for batches in _fixed_batches(steps, distinct=2)]
    training.engine.destroy()
    return losses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    use_install_extensions_dir()  # the ops scripts/test built, as a probe finds them
    deepspeed.init_distributed("gloo", timeout=datetime.timedelta(seconds=120), verbose=False)
    world = dist.get_world_size()
    results = {f"zero{stage}": trajectory(world, 4, zero_stage=stage) for stage in (0, 1, 2, 3)}
    results["zero3_recompute"] = trajectory(world, 4, zero_stage=3, activation_checkpointing="recompute")
    results["sp1"] = trajectory(world, 4, zero_stage=1)
    # Built last: DeepSpeed keeps the SP groups for the rest of the process.
    results["loss_20_steps"] = trajectory(world, 20, optimizer="adamw", zero_stage=2)
    results["sp2"] = trajectory(world, 4, zero_stage=1, sp_degree=world)
    results["sp2_zero2"] = trajectory(world, 4, zero_stage=2, sp_degree=world)
    results["sp2_zero3"] = trajectory(world, 4, zero_stage=3, sp_degree=world)
    results["sp2_zero3_offload"] = trajectory(
        world, 4, zero_stage=3, sp_degree=world, activation_checkpointing="offload_sync"
    )
    if dist.get_rank() == 0:
        with open(args.out, "w") as handle:
            json.dump({"world_size": world, "losses": results}, handle, indent=1)
    # The probe's own way out (trainer/probe.py): leave the gloo group together, then skip the
    # interpreter's finalization, which under DeepSpeed's live gloo threads aborts a good run now and
    # then ("terminate called without an active exception", seen failing the whole module in a clean clone).
    teardown()


if __name__ == "__main__":
    main()
    exit_now(0)
