"""`export --launcher` takes the launchers `run --launcher` takes: torchrun and deepspeed too, not only auto and srun
(a newcomer's trial). auto keeps its rule (torchrun on one node, deepspeed for several); torchrun, which starts ranks
on one node, is refused for a pick of several; a one-node deepspeed script starts its ranks as the tuner's probes
did: on this machine without ssh where the hostfile names it, else on the hostfile's host through pdsh."""

import os
import shlex
import subprocess
import sys

import pytest

from tests.cli import autotune, autotune_main, simulated_run


@pytest.fixture(scope="module")
def one_node(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=1, trials=3)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=2, trials=5)


def _command(launch_sh):
    """The training command, the script's last line, as words (its arrays' expansions left as written)."""
    return shlex.split(launch_sh.read_text().splitlines()[-1])


@pytest.mark.parametrize("launcher, starts", [("torchrun", "torchrun"), ("deepspeed", "deepspeed"), ("srun", "srun"),
                                              ("auto", "torchrun")])
def test_a_one_node_pick_starts_with_the_launcher_asked_for(one_node, tmp_path, launcher, starts):
    result = autotune("export", one_node, "--launcher", launcher, "-o", tmp_path / "knee.json")
    assert result.returncode == 0, result.stderr
    command = _command(tmp_path / "knee.launch.sh")
    assert command[0] == starts and command[command.index("trainer.probe") + 1:][:4] == [
        "--candidate", "knee.candidate.json", "--deepspeed-config", "knee.json"]
    said_hostfile = "It needs a DeepSpeed hostfile named 'hostfile' beside it: one line, 'HOST slots=4'" in result.stderr
    assert said_hostfile == (launcher == "deepspeed")


@pytest.mark.parametrize("launcher, starts", [("deepspeed", "deepspeed"), ("srun", "srun"), ("auto", "deepspeed")])
def test_a_two_node_pick_starts_with_the_launcher_asked_for(two_nodes, tmp_path, launcher, starts):
    assert autotune_main("export", two_nodes, "--launcher", launcher, "-o", tmp_path / "knee.json").returncode == 0
    assert _command(tmp_path / "knee.launch.sh")[0] == starts


def test_deepspeed_asked_for_writes_what_auto_writes_for_several_nodes(two_nodes, tmp_path):
    for launcher in ("auto", "deepspeed"):
        assert autotune_main("export", two_nodes, "--launcher", launcher, "-o", tmp_path / f"as-{launcher}.json").returncode == 0
    auto = (tmp_path / "as-auto.launch.sh").read_text().replace("as-auto", "X")
    assert (tmp_path / "as-deepspeed.launch.sh").read_text().replace("as-deepspeed", "X") == auto


def test_torchrun_for_a_pick_of_several_nodes_is_one_line_and_writes_nothing(two_nodes, tmp_path):
    refused = autotune("export", two_nodes, "--launcher", "torchrun", "-o", tmp_path / "knee.json")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--launcher torchrun starts every rank on the node launch.sh runs on, and trial " in refused.stderr
    assert "runs on 2 nodes: pass --launcher deepspeed (the hosts of a hostfile) or srun" in refused.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("wrong", ["TorchRun", "mpirun", "", "auto ", "deepspeed,srun", "torch"])
def test_a_wrong_launcher_is_one_line(one_node, tmp_path, wrong):
    refused = autotune_main("export", one_node, "--launcher", wrong, "-o", tmp_path / "knee.json")
    assert refused.returncode == 2 and "invalid choice" in refused.stderr and list(tmp_path.iterdir()) == []


def _fake(folder, name, body="echo \"$0 $*\"\n"):
    path = folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


@pytest.fixture
def deepspeed_script(one_node, tmp_path):
    """A one-node deepspeed export, and a PATH whose `deepspeed` prints the arguments it was given."""
    assert autotune_main("export", one_node, "--launcher", "deepspeed", "-o", tmp_path / "knee.json").returncode == 0
    tools = tmp_path / "tools"
    tools.mkdir()
    _fake(tools, "deepspeed")
    path = f"{tools}:/usr/bin:/bin"
    return tmp_path / "knee.launch.sh", tools, path


def _run_script(script, path):
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": path})


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", os.uname().nodename, os.uname().nodename.upper()])
def test_a_one_node_deepspeed_script_trains_here_without_ssh_where_its_hostfile_names_this_machine(deepspeed_script, host):
    script, _, path = deepspeed_script
    (script.parent / "hostfile").write_text(f"# one node\n{host} slots=4\n")
    ran = _run_script(script, path)  # no pdsh on PATH: not needed here
    assert ran.returncode == 0, ran.stderr
    assert " --hostfile hostfile --num_nodes=1 --num_gpus=4 --no_ssh_check --master_addr=127.0.0.1 --module trainer.probe " \
        in ran.stdout


def test_a_script_whose_launcher_is_not_on_path_says_so_in_one_line_before_it_runs_anything(deepspeed_script, one_node,
                                                                                             tmp_path):
    # On a GPU node, DeepSpeed installed with `pip --target DIR` left `deepspeed` off PATH: the script ended
    # "deepspeed: command not found", exit 127.
    script, tools, _ = deepspeed_script
    (script.parent / "hostfile").write_text("localhost slots=4\n")
    (tools / "deepspeed").unlink()
    missing = _run_script(script, f"{tools}:/usr/bin:/bin")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == ("knee.launch.sh: no deepspeed command on PATH; activate the environment DeepSpeed "
                                      "is installed in (its bin/ holds deepspeed), or export with --launcher torchrun "
                                      "(one node)")
    out = tmp_path / "torchrun"
    assert autotune_main("export", one_node, "--launcher", "torchrun", "-o", out / "knee.json").returncode == 0
    missing = _run_script(out / "knee.launch.sh", "/usr/bin:/bin")
    assert missing.returncode == 2 and missing.stdout == ""
    assert "knee.launch.sh: no torchrun command on PATH; activate the environment PyTorch is installed in" in missing.stderr


def test_a_one_node_deepspeed_script_trains_on_another_host_through_pdsh(deepspeed_script):
    script, tools, path = deepspeed_script
    (script.parent / "hostfile").write_text("nid001 slots=4\n")
    without = _run_script(script, path)
    assert without.returncode == 2 and "pdsh not found" in without.stderr and without.stdout == ""
    _fake(tools, "pdsh")
    ran = _run_script(script, path)
    assert ran.returncode == 0, ran.stderr
    assert " --num_nodes=1 --num_gpus=4 --force_multi --module trainer.probe " in ran.stdout


def test_a_one_node_deepspeed_command_passes_the_launchers_and_the_probes_parsing(deepspeed_script, monkeypatch):
    from deepspeed.launcher.runner import parse_args as deepspeed_parse_args

    from trainer.probe import parse_args as probe_parse_args

    script, _, _ = deepspeed_script
    for where in (["--no_ssh_check", "--master_addr=127.0.0.1"], ["--force_multi"]):
        command = [part for word in _command(script) for part in (where if word == "${where[@]}" else [word])]
        parsed = deepspeed_parse_args(command[1:])
        assert (parsed.hostfile, parsed.num_nodes, parsed.num_gpus, parsed.module) == ("hostfile", 1, 4, True)
        monkeypatch.chdir(script.parent)
        assert probe_parse_args(["--local_rank=0", *parsed.user_args]).local_rank == 0


@pytest.mark.slow
def test_a_one_node_deepspeed_export_trains_on_this_machine(tmp_path):
    """The script end to end: two CPU ranks started by the deepspeed launcher, a result written."""
    run = tmp_path / "run"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--gpus-per-node", "2", "--hardware", "cpu",
                         "--backend", "simulate", "--trials", "3", "--out", run)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert autotune_main("export", run, "--pick", "fastest", "--launcher", "deepspeed", "-o", out / "t.json").returncode == 0
    (out / "hostfile").write_text("localhost slots=2\n")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}", "DS_ACCELERATOR": "cpu"}
    trained = subprocess.run(["bash", str(out / "t.launch.sh")], capture_output=True, text=True, timeout=600, env=env)
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
    assert (out / "t.result.json").is_file()


def test_a_one_node_deepspeed_script_leaves_a_power_limit_to_the_probe():
    """Its host may be another machine than the script's: the script applies nothing here, as a multi-node one;
    a one-node torchrun script, on the probe's own node, applies it and traps its restore."""
    from autotune.candidate import Knobs
    from autotune.export_device import device_script

    limited = Knobs(power_limit=0.8)
    here = "\n".join(device_script(limited, 1, "torchrun"))
    assert "device_cli apply" in here and "trap restore_device_settings EXIT" in here
    there = "\n".join(device_script(limited, 1, "deepspeed"))
    assert "device_cli apply" not in there and "trap" not in there
    assert "The probe sets the settings on every node" in there


@pytest.mark.parametrize("nodes, whose", [(2, "the other nodes' ranks"),
                                          (1, "the ranks of a hostfile host that is another machine")])
def test_a_deepspeed_script_says_its_folder_must_be_shared_where_it_names_the_hostfile(one_node, two_nodes, tmp_path,
                                                                                       nodes, whose):
    """Trial64 #17: a 4-node deepspeed launch.sh named the hostfile and pdsh, not that pdsh starts the other nodes' ranks
    in this folder's path with this machine's python, which passes the files by relative names."""
    run = two_nodes if nodes == 2 else one_node
    done = autotune_main("export", run, "--launcher", "deepspeed", "-o", tmp_path / "k.json")
    assert done.returncode == 0, done.stderr
    shared = (f"pdsh starts {whose} in this folder's path with this machine's python: the folder must be at the same path "
              "on every node (a shared file system), with autotune installed in that python there.")
    header = (tmp_path / "k.launch.sh").read_text().split('cd "$(dirname "$0")"')[0].splitlines()
    assert header[header.index(f"# {shared}") - 1].startswith("# It needs a DeepSpeed hostfile named 'hostfile' beside it")
    assert f"\n  {shared}\n" in done.stderr  # under the hostfile's line


def test_a_multi_node_srun_script_says_its_folder_must_be_shared_as_a_deepspeed_one_does(one_node, two_nodes, tmp_path):
    """srun starts the other nodes' tasks in its own working directory with the `python` of the PATH it exports: a
    2-node srun launch.sh said nothing of the shared folder the deepspeed scripts name."""
    done = autotune_main("export", two_nodes, "--launcher", "srun", "-o", tmp_path / "k.json")
    assert done.returncode == 0, done.stderr
    shared = ("srun starts the other nodes' ranks in this folder's path, each running the python this script's PATH "
              "names: the folder must be at the same path on every node (a shared file system), with autotune "
              "installed in that python there.")
    header = (tmp_path / "k.launch.sh").read_text().split('cd "$(dirname "$0")"')[0].splitlines()
    assert header[header.index(f"# {shared}") - 1].startswith("# Run inside the SLURM allocation")
    assert f"\n  {shared}\n" in done.stderr  # under "train it: bash ..."
    one = autotune_main("export", one_node, "--launcher", "srun", "-o", tmp_path / "one.json")
    assert one.returncode == 0, one.stderr
    assert "srun starts" not in one.stderr + (tmp_path / "one.launch.sh").read_text()  # one node: no other nodes
