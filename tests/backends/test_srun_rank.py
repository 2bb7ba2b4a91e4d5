"""The srun shim: SLURM task variables -> RANK/LOCAL_RANK/MASTER_ADDR for the trainer."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from autotune.backends.srun_rank import first_host, rank_env
from tests.backends.conftest import REPO

TASK_3 = {
    "SLURM_JOB_ID": "42", "SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NTASKS": "4",
    "SLURM_NTASKS_PER_NODE": "2", "SLURM_STEP_NODELIST": "gpu[007-008]",
}


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [("nid001", "nid001"), ("gpu[003-010,12]", "gpu003"), ("a-b[3,5]-ib,login1", "a-b3-ib"), ("x1,x2", "x1"),
     ("rack[1-2]-node[01-04]", "rack1-node01"), ("rack[2,4]-n[7-8],login1", "rack2-n7")],
)
def test_first_host_of_a_slurm_hostlist(nodelist, first):
    assert first_host(nodelist) == first


def test_a_task_gets_its_rank_and_the_first_node_as_master():
    env = rank_env({**TASK_3, "MASTER_PORT": "29611"})
    assert env == {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                   "MASTER_ADDR": "gpu007", "MASTER_PORT": "29611"}


def test_the_backend_s_sizes_win_over_slurm_s():
    env = rank_env({**TASK_3, "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "SLURM_NTASKS_PER_NODE": "4(x2)"})
    assert env["WORLD_SIZE"] == "8" and env["LOCAL_WORLD_SIZE"] == "4" and env["MASTER_PORT"]


def test_the_shim_execs_python_with_the_layout_in_its_environment():
    show = "import os; print(os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['MASTER_ADDR'])"
    stale = {"RANK": "0", "MASTER_ADDR": "127.0.0.1"}  # an outer launcher's values must not survive
    done = subprocess.run([sys.executable, "-m", "autotune.backends.srun_rank", "-c", show], capture_output=True,
                          text=True, timeout=60, check=True, env={**os.environ, **stale, **TASK_3, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["3", "1", "gpu007"]


def test_the_shim_outside_an_srun_step_says_so_in_one_line():
    """A newcomer's trial pasted an exported launch.sh's srun line's tail into a shell: KeyError traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    done = subprocess.run([sys.executable, "-m", "autotune.backends.srun_rank", "-m", "trainer.probe", "--help"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("autotune.backends.srun_rank: SLURM_NTASKS is not set: this shim runs as a task of an srun step")
