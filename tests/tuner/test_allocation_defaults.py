"""Inside a SLURM allocation or given a --hostfile, a study's nodes and GPUs per node default to the
allocation's; what the user gives (flags, a space file's nodes, a replayed file) is kept. `autotune run`
(its main() in this process) with a fake SLURM environment (simulate backend: no srun is started)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SLURM = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NUM_NODES": "2", "SLURM_GPUS_ON_NODE": "4"}


def _run(tmp_path, *args, env=None):
    """The command's stderr, folded, run in `tmp_path` with the environment's SLURM variables those of `env` alone
    (in this process: a subprocess each cost the suite a second of start-up)."""
    from unittest import mock

    from tests.cli import autotune_main

    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, **(env or {})}
    with mock.patch.dict(os.environ, environ, clear=True):
        run = autotune_main("run", "--model", "7b", "--trials", "3", *map(str, args), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return " ".join(run.stderr.split())


def _shape(run_dir):
    pareto = json.loads((run_dir / "pareto.json").read_text())
    return pareto["nodes"], pareto["gpus"]


def test_a_study_inside_a_slurm_allocation_is_of_its_nodes_and_gpus_unless_told(tmp_path):
    said = _run(tmp_path, "--hardware", "h100-sxm", "--backend", "simulate", env=SLURM)
    assert "studying 2 nodes, 4 GPUs per node: what SLURM allocation 4242 holds" in said
    assert _shape(tmp_path / "runs" / "7b-2n") == (2, 8)
    # a gh200 node holds 4 GPUs: the gres narrows nothing, and nothing is said of GPUs
    said = _run(tmp_path, "--backend", "simulate", "--out", "gh", env=SLURM)
    assert "studying 2 nodes: what SLURM allocation 4242 holds" in said
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
    assert "studying 2 nodes: what SLURM allocation 4242 holds" in said
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
    assert "studying 2 nodes, 4 GPUs per node: what hostfile hostfile holds" in said
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
    assert fill_from_allocation(launch, environ={}).said == (
        "studying 1 node, 2 GPUs per node: what this machine holds (--nodes, --gpus-per-node choose another shape)")
    assert (launch.nodes, launch.gpus_per_node) == ("1", 2)
    # auto on a GPU workstation still studies the default cluster (a simulation)
    untouched = args("--hardware", "h100-sxm")
    assert fill_from_allocation(untouched, environ={}).said is None
    assert (untouched.nodes, untouched.gpus_per_node) == (None, None)
    # a cpu profile's ranks are not GPUs: this machine is one node of the profile's ranks
    cpu = args("--hardware", "cpu", "--backend", "launch")
    assert fill_from_allocation(cpu, environ={}).said == (
        "studying 1 node: what this machine holds (--nodes, --gpus-per-node choose another shape)")
    assert (cpu.nodes, cpu.gpus_per_node) == ("1", None)
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: None)
    assert fill_from_allocation(args("--backend", "launch"), environ={}).said is None


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
        "autotune run: error: candidates on 2 nodes cannot start here: the candidate needs 2 nodes but torchrun starts "
        "ranks on this machine only: give --hostfile (deepspeed launcher) or run inside a SLURM allocation (srun); "
        "or study what can start (--nodes 1)")
    assert not (tmp_path / "r").exists()


def _space_nodes(tmp_path, *args, env=None) -> tuple[list[int], str]:
    """(the node counts `autotune space --valid --json ARGS` lists, its stderr in one line)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    listed = subprocess.run([sys.executable, "-m", "autotune.cli", "space", "--valid", "--json", *map(str, args)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**environ, **(env or {})})
    assert listed.returncode == 0, listed.stderr
    return sorted({row["params"]["nodes"] for row in json.loads(listed.stdout)}), " ".join(listed.stderr.split())


def _study_args(*flags):
    import argparse

    from autotune.commands.options import add_study_options

    parser = argparse.ArgumentParser()
    add_study_options(parser)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--hostfile", default=None)
    return parser.parse_args(list(flags))


def test_a_space_file_without_nodes_leaves_them_to_the_allocation_as_no_space_does(tmp_path, monkeypatch):
    """Trial 31 #1: `--space search_spaces/default.toml` (no `nodes` list) made a 2-node allocation's
    study 4 nodes, and a launch study on this machine 4 nodes it could not start."""
    from autotune.backends import launchers
    from autotune.commands.options import fill_from_allocation
    from autotune.space.files import DEFAULT_SPACE

    own = tmp_path / "own.toml"
    own.write_text(DEFAULT_SPACE.read_text().replace("micro_batch = [1, 2, 4, 8]", "micro_batch = [1, 2]"))
    for space in (DEFAULT_SPACE, own):
        nodes, said = _space_nodes(tmp_path, "--model", "7b", "--space", space, env=SLURM)
        assert nodes == [2] and "studying 2 nodes: what SLURM allocation 4242 holds" in said
        assert _space_nodes(tmp_path, "--model", "7b", "--space", space)[0] == [4]  # no allocation: 4, as --help says
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: 2)
    launch = _study_args("--hardware", "h100-sxm", "--backend", "launch", "--space", str(DEFAULT_SPACE))
    assert fill_from_allocation(launch, environ={}).said == (
        "studying 1 node, 2 GPUs per node: what this machine holds (--nodes, --gpus-per-node choose another shape)")
    assert launch.nodes == "1"


def test_nodes_flag_over_a_space_files_list_is_warned_of(tmp_path):
    """Trial 31 #6: --nodes wins over the file's `nodes` list, which was skipped without a word."""
    from autotune.commands.options import fill_from_allocation
    from autotune.space.files import DEFAULT_SPACE

    listed = tmp_path / "listed.toml"
    listed.write_text(DEFAULT_SPACE.read_text() + "\nnodes = [2, 3]\n")
    warning = (f"--nodes 4 is studied, not the nodes = [2, 3] that space file {listed} lists: the flag wins over the "
               "file's list (leave --nodes out to study the file's)")
    nodes, said = _space_nodes(tmp_path, "--model", "7b", "--space", listed, "--nodes", "4")
    assert nodes == [4] and f"warning: {warning}" in said and "autotune space:" not in said  # warning: alone, as run says it
    assert fill_from_allocation(_study_args("--space", str(listed), "--nodes", "4"), environ={}).warnings == (warning,)
    # ... in an allocation and in a replay too; nothing to say without the flag or without the list
    assert fill_from_allocation(_study_args("--space", str(listed), "--nodes", "4"), environ=SLURM).warnings == (warning,)
    assert fill_from_allocation(_study_args("--space", str(listed), "--nodes", "4", "--backend", "replay"),
                                environ={}).warnings == (warning,)
    assert fill_from_allocation(_study_args("--space", str(listed)), environ={}).warnings == ()
    assert fill_from_allocation(_study_args("--space", str(DEFAULT_SPACE), "--nodes", "4"), environ={}).warnings == ()


def test_an_allocation_of_more_gpus_per_node_than_the_profile_is_warned_of(tmp_path):
    """Trial 31 #7: 8 GPUs per node studied as 4-GPU gh200 nodes without a word (the wrong --hardware)."""
    from autotune.commands.options import fill_from_allocation

    eight = {**SLURM, "SLURM_GPUS_ON_NODE": "8"}
    said = _space_nodes(tmp_path, "--model", "7b", env=eight)[1]
    assert ("warning: SLURM allocation 4242 has 8 GPUs per node, while --hardware gh200 describes "
            "nodes of 4") in said and "autotune space:" not in said
    gh200 = _study_args()
    filled = fill_from_allocation(gh200, environ=eight)
    assert filled.said == "studying 2 nodes: what SLURM allocation 4242 holds (--nodes, --gpus-per-node choose another shape)"
    assert filled.warnings == (
        "SLURM allocation 4242 has 8 GPUs per node, while --hardware gh200 describes nodes of 4: the study is of 4 GPUs "
        "per node; pass the --hardware of these nodes (h100-sxm has 8), or --gpus-per-node 4 to study 4 of them",)
    assert gh200.gpus_per_node is None  # the profile's whole node, as before
    # the fix it names silences it; so does a profile of 8-GPU nodes; a cpu profile's ranks are no GPUs
    for flags in (("--gpus-per-node", "4"), ("--hardware", "h100-sxm"), ("--hardware", "cpu")):
        assert fill_from_allocation(_study_args(*flags), environ=eight).warnings == ()
    # a count no built-in profile has names none
    assert fill_from_allocation(_study_args(), environ={**SLURM, "SLURM_GPUS_ON_NODE": "6"}).warnings[0].endswith(
        "pass the --hardware of these nodes, or --gpus-per-node 4 to study 4 of them")


def test_space_previews_the_launch_or_hostfile_study_run_would_search(tmp_path):
    """Trial 31 #8: `autotune space` refused --hostfile and --backend launch, which its --nodes help names,
    so it listed 4 nodes where `run --backend launch` searches 1."""
    (tmp_path / "hostfile").write_text("node1 slots=4\nnode2 slots=4\n")
    nodes, said = _space_nodes(tmp_path, "--model", "7b", "--hardware", "h100-sxm", "--hostfile", "hostfile")
    assert nodes == [2] and "studying 2 nodes, 4 GPUs per node: what hostfile hostfile holds" in said
    nodes, said = _space_nodes(tmp_path, "--model", "tiny", "--hardware", "cpu", "--backend", "launch")
    assert nodes == [1] and "studying 1 node: what this machine holds" in said
    assert _space_nodes(tmp_path, "--model", "tiny", "--hardware", "cpu")[0] == [4]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    for flags, words in ((("--hostfile", "gone"), "autotune space: error: --hostfile gone is not a file; write a DeepSpeed hostfile"),
                         (("--backend", "replay"), "autotune space: error: argument --backend: invalid choice: 'replay'")):
        refused = subprocess.run([sys.executable, "-m", "autotune.cli", "space", *flags], capture_output=True, text=True,
                                 timeout=120, cwd=tmp_path, env=environ)
        assert refused.returncode == 2 and refused.stderr.startswith(words) and len(refused.stderr.splitlines()) == 1
