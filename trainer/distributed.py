"""Process-group set-up and teardown for probe ranks, with timeouts so a dead peer never hangs us.

Rank layout comes from the launcher's environment (torchrun and srun wrappers export RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; the deepspeed launcher says LOCAL_SIZE for the last). A
plain `python -m trainer.probe` has none of them: one rank.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LaunchEnv:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int

    @property
    def node_rank(self) -> int:
        return self.rank // self.local_world_size

    @property
    def is_node_leader(self) -> bool:
        """Local rank 0: the rank that reads this node's energy sensors."""
        return self.local_rank == 0


def launch_env() -> LaunchEnv:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return LaunchEnv(
        rank=int(os.environ.get("RANK", "0")),
        world_size=world,
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("LOCAL_SIZE") or world),
    )


def init_process_group(env: LaunchEnv, timeout_s: float) -> None:
    """DeepSpeed's init (gloo on CPU, NCCL on CUDA) with a collective timeout.

    A single-process run without a launcher gets a local rendezvous of its own, so
    `python -m trainer.probe ...` works without torchrun.
    """
    import deepspeed
    from deepspeed.accelerator import get_accelerator

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    os.environ.setdefault("RANK", str(env.rank))
    os.environ.setdefault("WORLD_SIZE", str(env.world_size))
    os.environ.setdefault("LOCAL_RANK", str(env.local_rank))
    if get_accelerator().device_name() == "cuda":
        get_accelerator().set_device(env.local_rank)
    timeout = datetime.timedelta(seconds=timeout_s)
    groups_take_timeout(timeout)
    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name(), timeout=timeout,
                               verbose=False)


def groups_take_timeout(timeout: datetime.timedelta) -> None:
    """Every process group created after this waits for a peer at most `timeout`, not only the default one.

    DeepSpeed creates groups of its own (its clone of the world group in deepspeed.initialize, its ZeRO and
    sequence-parallel groups) with torch's new_group and no timeout, and torch then gives them its default: 30
    minutes under gloo, 10 under NCCL. A rank that hung left its peers waiting there, in the clone's set-up, far
    past --collective-timeout-s and past the tuner's --probe-timeout, so the probe never reported the stuck rank
    itself (trial79 #8). torch reads these defaults when it creates a group, so they are set here, in this
    process only."""
    from torch.distributed import distributed_c10d

    for name in ("default_pg_timeout", "default_pg_nccl_timeout"):
        if isinstance(getattr(distributed_c10d, name, None), datetime.timedelta):
            setattr(distributed_c10d, name, timeout)


def collective_timeout_words(exc: BaseException, timeout_s: float) -> str:
    """What a failure's error adds where the collective timeout ran out ("" where it did not): torch's own words
    ("DistStoreError: wait timeout after 48000ms, keys: ...", gloo's "Timed out waiting 48000ms for recv") say
    neither that another rank is the likely cause nor which setting decided the wait."""
    text = str(exc).lower()
    timed_out = "timeout" in text or "timed out" in text
    from_c10d = isinstance(exc, getattr(torch.distributed, "DistError", ())) or any(
        word in text for word in ("gloo", "nccl", "c10d", "watchdog"))
    if not (timed_out and from_c10d):
        return ""
    return (f" (the collective timeout, --collective-timeout-s {timeout_s:g}, ran out: another rank did not join, "
            "hung or far slower; its own lines in the log say where it was)")


def collective_device() -> torch.device:
    """Where a collective's tensors must live: NCCL (CUDA) only reduces GPU tensors, gloo CPU ones."""
    from deepspeed.accelerator import get_accelerator

    return torch.device(get_accelerator().current_device_name())


def device_sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def teardown(failed: bool = False) -> None:
    """Destroy the process group if there is one; never raises (it runs on failure paths).

    After a failure NCCL may still hold collectives that peers will never join, and destroying the
    group would wait for them; aborting drops them (gloo's destroy is local and never waits).
    """
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    try:
        if not (dist.is_available() and dist.is_initialized()):
            return
        if failed and dist.get_backend() == "nccl" and hasattr(distributed_c10d, "_abort_process_group"):
            distributed_c10d._abort_process_group()
        else:
            if not failed:
                # Leave together: a rank that tears gloo down while its peer is still sending makes
                # the peer's transport thread abort the process (seen as SIGABRT after a good run).
                dist.barrier()
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - a broken group must not mask the probe's own error
        pass
