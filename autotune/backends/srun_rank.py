"""Per-task shim under srun: SLURM's task variables -> the rank layout the trainer reads, then exec.

    srun --nodes=2 --ntasks-per-node=4 python -m autotune.backends.srun_rank -m trainer.probe ...

srun sets SLURM_PROCID / SLURM_LOCALID / SLURM_STEP_NODELIST per task, while the trainer
(`trainer.distributed.launch_env`) reads RANK / LOCAL_RANK / WORLD_SIZE / LOCAL_WORLD_SIZE and
MASTER_ADDR, as torchrun exports them. One environment for all tasks cannot hold per-task ranks,
so each task sets its own here and replaces itself with `python ARGS...` (no extra process, so
signals srun forwards reach the probe itself). WORLD_SIZE, LOCAL_WORLD_SIZE and MASTER_PORT come
from the launch backend; SLURM_NTASKS and friends fill them in when absent (a hand-written sbatch).
"""

from __future__ import annotations

import os
import re
import sys

_BRACKET = re.compile(r"\[([^\]]*)\]")


def first_host(nodelist: str) -> str:
    """First host of a SLURM hostlist: 'gpu[003-010,12],login1' -> 'gpu003' (zero padding kept),
    'rack[1-2]-node[01-04]' -> 'rack1-node01' (each bracket at its first value)."""
    nodelist = nodelist.strip()
    depth = 0
    for at, char in enumerate(nodelist):  # the first host expression ends at a comma outside brackets
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            nodelist = nodelist[:at]
            break
    return _BRACKET.sub(lambda group: group[1].split(",", 1)[0].split("-", 1)[0], nodelist)


def rank_env(environ: dict[str, str]) -> dict[str, str]:
    """The variables this task needs, from srun's (raises KeyError outside an srun step)."""
    ntasks = environ.get("SLURM_STEP_NUM_TASKS") or environ["SLURM_NTASKS"]
    per_node = environ.get("SLURM_NTASKS_PER_NODE", "").split("(")[0] or ntasks
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ["SLURM_JOB_NODELIST"]
    return {
        "RANK": environ["SLURM_PROCID"],
        "LOCAL_RANK": environ["SLURM_LOCALID"],
        "WORLD_SIZE": environ.get("WORLD_SIZE") or ntasks,
        "LOCAL_WORLD_SIZE": environ.get("LOCAL_WORLD_SIZE") or per_node,
        # Task 0 runs on the step's first node (srun's default block distribution).
        "MASTER_ADDR": first_host(nodelist),
        "MASTER_PORT": environ.get("MASTER_PORT") or str(29500 + int(environ.get("SLURM_JOB_ID", "0")) % 1000),
    }


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: srun ... python -m autotune.backends.srun_rank -m trainer.probe ARGS")
    try:
        layout = rank_env(dict(os.environ))
    except KeyError as missing:
        # Run by hand (an exported launch.sh's srun line pasted into a shell): one line, not a traceback.
        print(f"autotune.backends.srun_rank: {missing.args[0]} is not set: this shim runs as a task of an srun step "
              "(srun ... python -m autotune.backends.srun_rank ...); run the whole srun line inside an allocation "
              "(sbatch, salloc)", file=sys.stderr)
        sys.exit(2)
    os.environ.update(layout)
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
