"""CPU threads per probe rank: the same rule under every launcher.

torchrun sets OMP_NUM_THREADS=1 on its ranks when it starts several and the variable is unset;
DeepSpeed's launcher, an srun step and a one-rank probe set nothing, so each rank's torch takes every
core. Two ranks on two cores then ran ZeRO-0 ten times slower under the deepspeed launcher than under
torchrun (a newcomer's trial): the measured time said which launcher ran the probe, not how good the
configuration is. So the probe sets its own threads: the cores this rank may run on (its affinity,
which srun and cgroups narrow) shared among the node's ranks, or what `--threads-per-rank` asks (the
tuner passes the OMP_NUM_THREADS a user exported, which pdsh would not forward to remote ranks).
DeepSpeed's CPU Adam (optimizer offload) runs on these OpenMP threads too.
"""

from __future__ import annotations

import os


def threads_per_rank(requested: int | None, local_world_size: int, cores: int | None = None) -> int:
    """`requested`, else this rank's share of the cores it may run on (at least one)."""
    if requested is not None:
        return requested
    cores = len(os.sched_getaffinity(0)) if cores is None else cores
    return max(1, cores // max(1, local_world_size))


def apply_threads(threads: int) -> None:
    """For torch's intra-op pool and OpenMP (set before DeepSpeed builds its CPU ops)."""
    import torch

    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)
