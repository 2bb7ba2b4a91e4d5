"""Launcher choice, reachability, commands (argument lists) and detect_launch_target; no probe runs."""

from __future__ import annotations

import os
import re

import pytest

from autotune.backends import launchers
from autotune.backends.launchers import (
    allocation_shape,
    build_plan,
    check_hostfile,
    check_launcher_settings,
    detect_launch_target,
    read_hostfile,
    resolve_launcher,
    unreachable_reason,
)
from autotune.errors import UserError

SLURM_2_NODES = {"SLURM_JOB_ID": "42", "SLURM_JOB_NUM_NODES": "2", "SLURM_GPUS_ON_NODE": "4", "PATH": "/usr/bin"}
PROBE_ARGS = ["--candidate", "/r/candidate.json", "--out", "/r/result.json"]


@pytest.fixture
def hostfile(tmp_path):
    path = tmp_path / "hostfile"
    path.write_text("# two GH200 nodes\nnid001 slots=4\nnid002\tslots=4  # spare\n\n")
    return path


@pytest.fixture
def no_local_gpus(monkeypatch):
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: None)
    monkeypatch.setattr(launchers, "local_gpu_listing", lambda: (None, "no nvidia-smi on PATH"))


@pytest.fixture
def pdsh_path(tmp_path) -> str:
    """A PATH with a stand-in pdsh: DeepSpeed's runner reaches other hosts through it."""
    bin_dir = tmp_path / "pdsh-bin"
    bin_dir.mkdir()
    (bin_dir / "pdsh").write_text("#!/bin/sh\n")
    (bin_dir / "pdsh").chmod(0o755)
    return str(bin_dir)


def test_hostfile_lists_hosts_and_slots_in_order(hostfile):
    assert read_hostfile(hostfile) == {"nid001": 4, "nid002": 4}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("nid001 slots=four\n", "line 1: write `HOST slots=N`"),
        ("nid001\n", "line 1: write `HOST slots=N`"),  # DeepSpeed has no default of one slot
        ("# spare\nnid001 # slots=4\n", "line 2: write `HOST slots=N`"),
        ("root:x:0:0:root:/root:/bin/bash\n", "write `HOST slots=N`"),
        ("nid001 slots=-1\n", "write `HOST slots=N`"),
        ("nid001 slots=2.5\n", "write `HOST slots=N`"),  # DeepSpeed would read 2
        ("nid001 slots=4 slots=8\n", "write `HOST slots=N`"),
        ("nid001 slots=4\nnid001 slots=2\n", "line 2: host 'nid001' is listed twice"),
        ("nid001 slots=0\n", "give the GPUs it lends (1 to 1024)"),
        ("-oProxyCommand=id slots=4\n", "line 1: '-oProxyCommand=id' is not a host name"),
        ("nid001 slots=99999999999999999999\n", "give the GPUs it lends (1 to 1024)"),  # the launchers overflow
        ("", "lists no host"),
        ("# nothing yet\n\n", "lists no host"),
        (b"\xff\xfe\x00binary", "cannot be read"),
    ],
)
def test_a_hostfile_deepspeed_would_refuse_is_refused_with_the_format(tmp_path, text, words):
    bad = tmp_path / "hostfile"
    bad.write_bytes(text) if isinstance(text, bytes) else bad.write_text(text)
    with pytest.raises(UserError, match=re.escape(words)):
        read_hostfile(bad)


def test_a_hostfile_that_is_a_directory_is_refused(tmp_path):
    with pytest.raises(UserError, match="is not a file"):
        check_hostfile(tmp_path)
    with pytest.raises(UserError, match="cannot be read"):
        read_hostfile(tmp_path)


@pytest.mark.parametrize(
    ("nodes", "environ", "with_hostfile", "expected"),
    [
        (1, {}, False, "torchrun"),
        (1, {}, True, "deepspeed"),
        (2, {"SLURM_JOB_ID": "42", "SLURM_NNODES": "1"}, True, "srun"),  # the candidate spans nodes
        (1, {"SLURM_JOB_ID": "42", "SLURM_NNODES": "2"}, False, "srun"),  # the allocation does
        (1, {"SLURM_JOB_ID": "42", "SLURM_NNODES": "1"}, False, "torchrun"),  # one node: no srun needed
    ],
)
def test_auto_picks_the_launcher(make_candidate, hostfile, nodes, environ, with_hostfile, expected):
    candidate = make_candidate(gpus_per_node=1, nodes=nodes)
    assert resolve_launcher("auto", candidate, hostfile if with_hostfile else None, environ) == expected


def test_a_launcher_that_cannot_work_is_a_user_error(hostfile, tmp_path):
    with pytest.raises(UserError, match="--hostfile"):
        check_launcher_settings("deepspeed", None, {})
    with pytest.raises(UserError, match="SLURM allocation"):
        check_launcher_settings("srun", None, {})
    with pytest.raises(UserError, match="is not a file"):
        check_launcher_settings("auto", tmp_path / "missing", {})
    with pytest.raises(UserError, match="unknown launcher"):
        check_launcher_settings("mpirun", None, {})
    for launcher, where in (("torchrun", "on this machine only"), ("srun", "on the SLURM allocation's nodes")):
        with pytest.raises(UserError, match=f"--launcher {launcher} starts ranks {where}: drop --hostfile"):
            check_launcher_settings(launcher, hostfile, {"SLURM_JOB_ID": "1"})  # it would be ignored
    check_launcher_settings("deepspeed", hostfile, {})  # fine


def test_auto_without_srun_on_path_is_refused_wherever_it_would_start_every_probe_with_srun(tmp_path):
    """Whether the allocation names its nodes or not: each probe would fail "could not start srun"."""
    no_srun = {"PATH": str(tmp_path)}  # an empty directory
    two_nodes = {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", "SLURM_GPUS_PER_NODE": "2", **no_srun}
    with pytest.raises(UserError) as refused:
        check_launcher_settings("auto", None, two_nodes)
    assert str(refused.value) == ("srun is not on PATH, and --launcher auto starts every probe with srun in SLURM "
                                  "allocation 7 (2 nodes): load the SLURM module, or use --launcher torchrun|deepspeed")
    login = {**two_nodes, "SLURM_NNODES": "1", "SLURM_JOB_NODELIST": "gpu[003-004]"}  # salloc on a login node
    with pytest.raises(UserError, match=r"^srun is not on PATH, and --launcher auto starts every probe with srun in "
                                        r"SLURM allocation 7 \(whose first node gpu003 is not this machine\): load the "
                                        r"SLURM module, or run autotune on gpu003$"):
        check_launcher_settings("auto", None, login)
    with pytest.raises(UserError, match=r"^srun is not on PATH: load the SLURM module"):
        check_launcher_settings("srun", None, two_nodes)
    # auto starts torchrun here: a one-node allocation of this machine, or none at all
    check_launcher_settings("auto", None, {**two_nodes, "SLURM_NNODES": "1"})
    check_launcher_settings("auto", None, no_srun)
    (tmp_path / "srun").write_text("#!/bin/sh\n")
    (tmp_path / "srun").chmod(0o755)
    check_launcher_settings("auto", None, two_nodes)
    check_launcher_settings("auto", None, login)


def test_more_nodes_than_reachable_is_a_reason_not_an_exception(make_candidate, hostfile, no_local_gpus, pdsh_path):
    two_nodes = make_candidate(gpus_per_node=4, nodes=2)
    with_pdsh = {"PATH": pdsh_path}
    assert "--hostfile" in unreachable_reason("torchrun", two_nodes, None, {})
    assert "run inside a SLURM allocation" in unreachable_reason("torchrun", two_nodes, None, {})
    # Inside one already (a newcomer's trial was told to run inside the allocation it ran in): the launcher is the fix.
    inside = unreachable_reason("torchrun", two_nodes, None, SLURM_2_NODES)
    assert "pass --launcher srun (or leave --launcher out) to start them across SLURM allocation 42" in inside
    assert "run inside" not in inside
    assert unreachable_reason("deepspeed", two_nodes, hostfile, with_pdsh) is None
    assert "lists 2" in unreachable_reason("deepspeed", make_candidate(gpus_per_node=4, nodes=3), hostfile, with_pdsh)
    assert "fewer on nid001" in unreachable_reason("deepspeed", make_candidate(gpus_per_node=8), hostfile, with_pdsh)
    assert unreachable_reason("srun", two_nodes, None, SLURM_2_NODES) is None
    assert "has 2" in unreachable_reason("srun", make_candidate(gpus_per_node=4, nodes=4), None, SLURM_2_NODES)
    # srun would fail the step on GPUs the allocation's gres does not hold: a reason before it starts
    assert "needs 8 GPUs per node; SLURM allocation 42 has 4" in unreachable_reason(
        "srun", make_candidate(gpus_per_node=8, nodes=2), None, SLURM_2_NODES)
    assert unreachable_reason("srun", make_candidate(gpus_per_node=8), None, {**SLURM_2_NODES, "SLURM_GPUS_ON_NODE": ""}) is None


def test_a_reason_s_gpu_count_agrees_with_its_noun(make_candidate, monkeypatch):
    # "needs 1 GPUs per node" (trial77 #3: a count and its noun agree, as counted() writes them)
    monkeypatch.setattr(launchers, "local_gpu_count", lambda: 0)
    said = unreachable_reason("torchrun", make_candidate(gpus_per_node=1, hardware="h100-sxm"), None, {})
    assert said.startswith("the candidate needs 1 GPU per node; this machine has 0"), said


def test_the_allocation_shape_is_the_hostfiles_else_the_slurm_jobs(hostfile, tmp_path):
    assert allocation_shape(hostfile, SLURM_2_NODES) == (2, 4, f"hostfile {hostfile}")
    uneven = tmp_path / "uneven"
    uneven.write_text("a slots=8\nb slots=2\nc slots=8\n")
    assert allocation_shape(uneven, {}) == (3, 2, f"hostfile {uneven}")  # every node must hold the ranks
    assert allocation_shape(None, SLURM_2_NODES) == (2, 4, "SLURM allocation 42")
    assert allocation_shape(None, {"SLURM_JOB_ID": "7", "SLURM_NNODES": "3"}) == (3, None, "SLURM allocation 7")
    assert allocation_shape(None, {"PATH": "/usr/bin"}) is None


@pytest.mark.parametrize("count", ["x", "0", "-2", "2.5", " 2", "two"])
def test_a_slurm_node_count_that_is_not_one_is_a_user_error(count):
    with pytest.raises(UserError, match=f"SLURM_JOB_NUM_NODES={count!r} in the environment is not a node count"):
        allocation_shape(None, {"SLURM_JOB_ID": "42", "SLURM_JOB_NUM_NODES": count})


@pytest.mark.parametrize("count", ["abc", "-2", "2(x4)", "gpu:a100:2", "2.0", " 2", "4,4"])
def test_a_slurm_gpu_count_that_is_not_one_is_a_user_error(count):
    """A newcomer's trial: such a value was ignored, and the study took the profile's whole node silently."""
    with pytest.raises(UserError, match=f"SLURM_GPUS_ON_NODE={re.escape(repr(count))} in the environment is not a GPU count"):
        allocation_shape(None, {"SLURM_JOB_ID": "42", "SLURM_JOB_NUM_NODES": "2", "SLURM_GPUS_ON_NODE": count})


def test_a_one_rank_candidate_runs_the_probe_directly_with_its_own_layout(make_candidate):
    plan = build_plan("torchrun", make_candidate(gpus_per_node=1), PROBE_ARGS, python="py", hostfile=None, environ={})
    assert plan.command == ["py", "-m", "trainer.probe", *PROBE_ARGS]
    assert plan.env["RANK"] == "0" and plan.env["WORLD_SIZE"] == "1" and plan.env["LOCAL_WORLD_SIZE"] == "1"


def test_torchrun_starts_one_rank_per_gpu_on_this_node(make_candidate):
    plan = build_plan("torchrun", make_candidate(gpus_per_node=2), PROBE_ARGS, python="py", hostfile=None, environ={})
    assert plan.command[:3] == ["py", "-m", "torch.distributed.run"]
    assert "--standalone" in plan.command and "--nproc_per_node=2" in plan.command
    assert plan.command[-len(PROBE_ARGS) - 2:] == ["-m", "trainer.probe", *PROBE_ARGS]


def test_deepspeed_gets_the_hostfile_and_the_module_without_dash_m(make_candidate, hostfile):
    plan = build_plan("deepspeed", make_candidate(gpus_per_node=4, nodes=2), PROBE_ARGS, python="py",
                      hostfile=hostfile, environ={})
    command = plan.command
    assert command[:3] == ["py", "-m", "deepspeed.launcher.runner"]
    assert command[command.index("--hostfile") + 1] == str(hostfile)
    assert {"--num_nodes=2", "--num_gpus=4"} <= set(command)  # the probe accepts the --local_rank DeepSpeed passes
    assert "--no_ssh_check" not in command and "--force_multi" not in command  # DeepSpeed checks ssh and uses pdsh itself
    assert command[command.index("--module") + 1:] == ["trainer.probe", *PROBE_ARGS]


def test_one_node_of_a_hostfile_runs_on_its_first_host_not_on_this_machine(make_candidate, hostfile, tmp_path):
    """DeepSpeed's runner starts a lone host's ranks here, whatever host it names, unless --force_multi."""
    one_node = make_candidate(gpus_per_node=4, nodes=1)
    command = build_plan("deepspeed", one_node, PROBE_ARGS, python="py", hostfile=hostfile, environ={}).command
    assert "--force_multi" in command and "--no_ssh_check" not in command
    local = tmp_path / "local"
    local.write_text("localhost slots=4\nnid002 slots=4\n")
    command = build_plan("deepspeed", one_node, PROBE_ARGS, python="py", hostfile=local, environ={}).command
    assert {"--no_ssh_check", "--master_addr=127.0.0.1"} <= set(command) and "--force_multi" not in command


def test_srun_runs_every_task_through_the_rank_shim(make_candidate):
    plan = build_plan("srun", make_candidate(gpus_per_node=4, nodes=2, hardware="gh200"), PROBE_ARGS, python="py",
                      hostfile=None, environ=SLURM_2_NODES)
    command = plan.command
    assert command[0] == "srun"
    assert {"--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--gpus-per-node=4", "--kill-on-bad-exit=1"} <= set(command)
    assert command[command.index("py"):] == ["py", "-m", "autotune.backends.srun_rank", "-m", "trainer.probe", *PROBE_ARGS]
    assert plan.env["WORLD_SIZE"] == "8" and plan.env["LOCAL_WORLD_SIZE"] == "4" and plan.env["MASTER_PORT"]


def test_an_srun_step_of_cpu_ranks_asks_for_no_gpus_in_a_job_with_gpu_gres(make_candidate):
    """A CPU profile's probe trains on CPU ranks: its step must not hold the job's GPUs (the exported
    launch.sh already asked for none; the tuner's own step asked for --gpus-per-node)."""
    plan = build_plan("srun", make_candidate(gpus_per_node=4, nodes=2, hardware="cpu"), PROBE_ARGS, python="py",
                      hostfile=None, environ=SLURM_2_NODES)
    assert launchers.slurm_gpus_per_node(SLURM_2_NODES) == 4  # the job has GPU gres
    assert not [word for word in plan.command if word.startswith("--gpus")]
    assert {"--nodes=2", "--ntasks=8", "--ntasks-per-node=4"} <= set(plan.command)


def test_detect_launch_target_reads_hostfile_slurm_then_local_gpus(hostfile, monkeypatch):
    monkeypatch.setattr(launchers, "local_gpu_listing", lambda: (None, "no nvidia-smi on PATH"))
    assert detect_launch_target(hostfile, nodes=2)[0] is True
    ok, reason = detect_launch_target(hostfile, nodes=3)
    assert not ok and "lists 2 hosts" in reason
    assert detect_launch_target(None, nodes=2, environ=SLURM_2_NODES) == (
        True, "SLURM allocation 42: 2 nodes, 4 GPUs per node (srun)")
    ok, reason = detect_launch_target(None, nodes=2, gpus_per_node=8, environ=SLURM_2_NODES)
    assert not ok and reason == "SLURM allocation 42 has 4 GPUs per node; 8 requested"
    ok, reason = detect_launch_target(None, environ={"SLURM_JOB_ID": "42"})
    assert not ok and "no GPUs" in reason
    ok, reason = detect_launch_target(None, environ={})
    assert not ok and reason.startswith("no CUDA devices here (no nvidia-smi on PATH)")

    monkeypatch.setattr(launchers, "local_gpu_listing", lambda: (4, "nvidia-smi -L lists none"))
    assert detect_launch_target(None, gpus_per_node=4, environ={})[0] is True
    ok, reason = detect_launch_target(None, nodes=2, environ={})
    assert not ok and "--hostfile or a SLURM allocation" in reason
    assert detect_launch_target(None, gpus_per_node=8, environ={})[0] is False


def test_a_study_with_candidates_the_launcher_cannot_start_is_refused_before_it_opens(tmp_path, hostfile, no_local_gpus,
                                                                                    pdsh_path):
    """Each such candidate would be a failed probe spent from the budget, and three of them would end the
    study as a set-up fault: the run refuses them in one line and says which node counts can start."""
    from autotune.backends.launch import LaunchBackend
    from autotune.commands.options import settings_for
    from autotune.study.valid import valid_checks

    def checks(*flags):
        return valid_checks(settings_for("--model", "7b", *flags))

    on_hostfile = LaunchBackend(run_dir=tmp_path, hostfile=hostfile, env={"PATH": pdsh_path})
    with pytest.raises(UserError) as raised:
        on_hostfile.check_candidates(checks("--nodes", "1-4"))  # 3 nodes of 4 GPUs divide no global batch 64
    assert str(raised.value) == (f"candidates on 4 nodes cannot start here: the candidate needs 4 nodes; hostfile "
                                 f"{hostfile} lists 2; or study what can start (--nodes 1-2)")
    on_hostfile.check_candidates(checks("--nodes", "1-2"))  # every one can start
    with pytest.raises(UserError, match=r"^candidates on 2 nodes cannot start here: .*torchrun starts ranks on "
                                        r"this machine only.*--nodes 1\)$"):
        LaunchBackend(run_dir=tmp_path).check_candidates(checks("--nodes", "1-2"))
    (tmp_path / "srun").write_text("#!/bin/sh\n")  # before the backend: auto refuses an allocation without srun
    (tmp_path / "srun").chmod(0o755)
    in_allocation = LaunchBackend(run_dir=tmp_path, env={**SLURM_2_NODES, "PATH": str(tmp_path)})
    with pytest.raises(UserError, match=r"needs 8 GPUs per node; SLURM allocation 42 has 4 .*$"):
        in_allocation.check_candidates(checks("--nodes", "1-2", "--hardware", "h100-sxm"))
    in_allocation.check_candidates(checks("--nodes", "1-2", "--hardware", "h100-sxm", "--gpus-per-node", "4"))


@pytest.mark.parametrize("environ, gpus", [
    ({"SLURM_GPUS_ON_NODE": "4", "SLURM_GPUS_PER_NODE": "8"}, 4),  # what this node holds first
    ({"SLURM_GPUS_PER_NODE": "4"}, 4),  # sbatch/salloc --gpus-per-node=4
    ({"SLURM_GPUS_PER_NODE": "a100:2"}, 2),  # --gpus-per-node=a100:2
    ({"SLURM_JOB_GPUS": "0,1,2"}, 3),
    ({"SLURM_GPUS_PER_NODE": "a100"}, None),
    ({}, None),
])
def test_the_gpus_per_node_of_an_allocation(environ, gpus):
    from autotune.backends.launchers import slurm_gpus_per_node

    assert slurm_gpus_per_node(environ) == gpus


@pytest.mark.parametrize("value", ["h100:abc", "gpu:h100:", "a100:2.5"])
def test_a_gpu_count_that_is_none_is_refused_not_read_as_no_gpus(value):
    """Trial 37 F18: SLURM_GPUS_PER_NODE=h100:abc fell back to the simulator without a word."""
    from autotune.backends.launchers import slurm_gpus_per_node

    with pytest.raises(UserError, match=rf"^SLURM_GPUS_PER_NODE='{re.escape(value)}' in the environment is not a GPU count"):
        slurm_gpus_per_node({"SLURM_GPUS_PER_NODE": value})


def test_the_words_for_what_auto_launches_name_the_launcher_chosen(hostfile):
    assert launchers.auto_launcher_words([1], None, {}) == "torchrun"
    assert launchers.auto_launcher_words([1, 2], hostfile, {}) == "deepspeed"
    assert launchers.auto_launcher_words([2, 4], None, {"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "4"}) == "srun"
    mixed = launchers.auto_launcher_words([1, 2, 4], None, {"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "1"})
    assert mixed == "torchrun for 1 node, srun for 2 and 4 nodes"


def test_without_pdsh_the_deepspeed_launcher_reaches_no_other_host(make_candidate, hostfile, tmp_path, pdsh_path):
    """DeepSpeed's runner starts other hosts' ranks through pdsh: without it every multi-node probe failed after its
    start-up, pdsh's absence deep in each log. Said before the study opens (check_candidates asks this)."""
    without = {"PATH": str(tmp_path / "empty-bin")}
    two_nodes = make_candidate(gpus_per_node=4, nodes=2)
    assert unreachable_reason("deepspeed", two_nodes, hostfile, without) == (
        "the deepspeed launcher starts ranks on other hosts with pdsh, which is not on PATH here: install pdsh on this "
        "machine (DeepSpeed's multi-node runner needs it), or run inside a SLURM allocation (--launcher srun)")
    # One node of a remote host goes through pdsh too (--force_multi); one node of this machine does not.
    assert "pdsh" in unreachable_reason("deepspeed", make_candidate(gpus_per_node=4), hostfile, without)
    here = tmp_path / "here"
    here.write_text("localhost slots=4\nnid002 slots=4\n")
    assert unreachable_reason("deepspeed", make_candidate(gpus_per_node=4), here, without) is None
    assert "pdsh" in unreachable_reason("deepspeed", two_nodes, here, without)
    assert unreachable_reason("deepspeed", two_nodes, here, {"PATH": pdsh_path}) is None


@pytest.mark.parametrize("script, said", [
    ('echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."; exit 9',
     "nvidia-smi -L failed (exit 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.)"),
    ("exec sleep 30", "nvidia-smi -L did not answer in 0.5 s"),
    ("exit 0", "nvidia-smi -L lists none"),
])
def test_a_failing_or_hung_nvidia_smi_is_named_not_taken_for_a_machine_without_gpus(tmp_path, monkeypatch, script, said):
    """Trial 45 #13: on a GPU node with a wedged driver the study fell back to the simulator saying "nvidia-smi -L
    lists none", hiding the cause."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(launchers, "_NVIDIA_SMI_TIMEOUT_S", 0.5)
    ok, reason = detect_launch_target(None, environ={})
    assert not ok and reason == f"no CUDA devices here ({said}), no SLURM allocation, no --hostfile"
