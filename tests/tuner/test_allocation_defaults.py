"""Inside a SLURM allocation or given a --hostfile, a study's nodes and GPUs per node default to the
allocation's; what the user gives (flags, a space file's nodes, a replayed file) is kept. Real
`autotune run` subprocesses with a fake SLURM environment (simulate backend: no srun is started)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SLURM = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NUM_NODES": "2", "SLURM_GPUS_ON_NODE": "4"}


def _run(tmp_path, *args, env=None):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    run = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "7b", "--trials", "3", *map(str, args)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**environ, **(env or {})},
    )
    assert run.returncode == 0, run.stderr
    return " ".join(run.stderr.split())


def _shape(run_dir):
    pareto = json.loads((run_dir / "pareto.json").read_text())
    return pareto["nodes"], pareto["gpus"]


def test_a_study_inside_a_slurm_allocation_is_of_its_nodes_and_gpus_unless_told(tmp_path):
    said = _run(tmp_path, "--hardware", "h100-sxm", "--backend", "simulate", env=SLURM)
    assert "studying 2 node(s), 4 GPU(s) per node: what SLURM allocation 4242 holds" in said
    assert _shape(tmp_path / "runs" / "7b-2n") == (2, 8)
    # a gh200 node holds 4 GPUs: the gres narrows nothing, and nothing is said of GPUs
    said = _run(tmp_path, "--backend", "simulate", "--out", "gh", env=SLURM)
    assert "studying 2 node(s): what SLURM allocation 4242 holds" in said
    assert _shape(tmp_path / "gh") == (2, 8)
    # what the user gives is kept, and then nothing is said
    said = _run(tmp_path, "--nodes", "1", "--hardware", "h100-sxm", "--gpus-per-node", "8", "--backend", "simulate",
                "--out", "given", env=SLURM)
    assert "studying" not in said and _shape(tmp_path / "given") == (1, 8)


def test_what_an_allocation_holds_is_never_blamed_on_a_flag(tmp_path):
    """SLURM_GPUS_ON_NODE=0 (a CPU job) says nothing of GPUs per node; a node count beyond reach names
    the allocation, not the --nodes the user never gave."""
    said = _run(tmp_path, "--hardware", "cpu", "--backend", "simulate", "--model", "tiny",
                env={**SLURM, "SLURM_GPUS_ON_NODE": "0"})
    assert "studying 2 node(s): what SLURM allocation 4242 holds" in said
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    huge = subprocess.run([sys.executable, "-m", "autotune.cli", "run", "--model", "7b", "--backend", "simulate"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**environ, **SLURM, "SLURM_JOB_NUM_NODES": "9" * 15})
    assert huge.returncode == 2
    assert huge.stderr.strip() == (f"autotune run: error: SLURM allocation 4242 holds {'9' * 15} nodes, more than "
                                   "1000000000000; pass --nodes with the count to study")


def test_outside_an_allocation_the_default_stays_four_whole_nodes(tmp_path):
    said = _run(tmp_path, "--hardware", "h100-sxm", "--backend", "simulate")
    assert "studying" not in said and _shape(tmp_path / "runs" / "7b-4n") == (4, 32)


def test_a_hostfile_gives_the_nodes_and_its_fewest_slots_the_gpus_per_node(tmp_path):
    (tmp_path / "hostfile").write_text("node1 slots=8\nnode2 slots=4\n")
    said = _run(tmp_path, "--hardware", "h100-sxm", "--hostfile", "hostfile", "--backend", "simulate")
    assert "studying 2 node(s), 4 GPU(s) per node: what hostfile hostfile holds" in said
    assert _shape(tmp_path / "runs" / "7b-2n") == (2, 8)


def test_a_space_files_nodes_and_a_replayed_file_keep_their_own(tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('zero_stage = [2]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["recompute"]\n'
                     'sp_degree = [1]\nmicro_batch = [1, 2]\nnodes = [1]\npower_limit = [1.0]\nsm_clock_mhz = ["max"]\n')
    said = _run(tmp_path, "--space", space, "--backend", "simulate", "--out", "spaced", env=SLURM)
    assert "studying" not in said and _shape(tmp_path / "spaced") == (1, 4)
    listed = subprocess.run([sys.executable, "-m", "autotune.cli", "space", "--model", "7b", "--space", space,
                             "--simulate", "--json"], capture_output=True, text=True, timeout=120, check=True)
    (tmp_path / "m.json").write_text(listed.stdout)
    said = _run(tmp_path, "--space", space, "--backend", "replay", "--measurements", "m.json", "--out", "replayed", env=SLURM)
    assert "studying" not in said and _shape(tmp_path / "replayed") == (1, 4)


def test_with_backend_launch_and_no_allocation_this_machines_gpus_are_the_shape(monkeypatch):
    import argparse

    from autotune.backends import launchers
    from autotune.commands.options import add_study_options, fill_from_allocation

    def args(*flags):
        parser = argparse.ArgumentParser()
        add_study_options(parser)
        parser.add_argument("--backend", default="auto")
        parser.add_argument("--hostfile", default=None)
        return parser.parse_args(list(flags))

    monkeypatch.setattr(launchers, "local_gpu_count", lambda: 2)
    launch = args("--hardware", "h100-sxm", "--backend", "launch")
    assert fill_from_allocation(launch, environ={}) == (
        "studying 1 node(s), 2 GPU(s) per node: what this machine holds (--nodes, --gpus-per-node choose another shape)")
    assert (launch.nodes, launch.gpus_per_node) == ("1", 2)
    # auto on a GPU workstation still studies the default cluster (a simulation)
    untouched = args("--hardware", "h100-sxm")
    assert fill_from_allocation(untouched, environ={}) is None
    assert (untouched.nodes, untouched.gpus_per_node) == (None, None)
    # a cpu profile's ranks are not GPUs: this machine is one node of the profile's ranks
    cpu = args("--hardware", "cpu", "--backend", "launch")
    assert fill_from_allocation(cpu, environ={}) == (
        "studying 1 node(s): what this machine holds (--nodes, --gpus-per-node choose another shape)")
    assert (cpu.nodes, cpu.gpus_per_node) == ("1", None)
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: None)
    assert fill_from_allocation(args("--backend", "launch"), environ={}) is None


def test_a_launch_study_with_node_counts_out_of_reach_is_refused_before_it_opens(tmp_path):
    """torchrun reaches this machine only: a 2-node candidate would be a failed probe from the budget."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    run = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--hardware", "cpu", "--backend", "launch",
         "--nodes", "1-2", "--allow-estimated-energy", "--out", "r"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=environ,
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == (
        "autotune run: error: candidates with 2 node(s) cannot start here: the candidate needs 2 nodes but torchrun starts "
        "ranks on this machine only: give --hostfile (deepspeed launcher) or run inside a SLURM allocation (srun); "
        "or study what can start (--nodes 1)")
    assert not (tmp_path / "r").exists()
