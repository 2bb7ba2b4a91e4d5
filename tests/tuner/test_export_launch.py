"""The exported launch command of a pick runs: it goes through the real deepspeed launcher's argument
parsing and then, with the `--local_rank` that launcher adds, through the probe's own parsing."""

import json
import os
import shlex
import subprocess
import sys

import pytest

from autotune.backends.launchers import build_plan
from autotune.export import launch_command
from tests.cli import autotune_main, simulated_run




@pytest.fixture(scope="module")
def two_node_run(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=2, trials=6)


def _script_command(launch_sh):
    lines = [line for line in launch_sh.read_text().splitlines() if line and not line.startswith(("#", "cd "))]
    # The training command is the last line; a pick with a power limit applies it (and traps its restore) first.
    assert lines and lines[-1].startswith(("torchrun ", "deepspeed ", "srun ")), lines
    return shlex.split(lines[-1])


def test_exported_multi_node_command_passes_deepspeed_and_probe_parsing(two_node_run, monkeypatch):
    from deepspeed.launcher.runner import parse_args as deepspeed_parse_args

    from trainer.probe import candidate_from_args, parse_args as probe_parse_args

    configs = two_node_run / "configs"
    command = _script_command(configs / "knee.launch.sh")
    assert command[0] == "deepspeed" and "-m" not in command[: command.index("trainer.probe")]
    launcher_args = deepspeed_parse_args(command[1:])
    assert launcher_args.module and launcher_args.user_script == "trainer.probe"
    assert (launcher_args.hostfile, launcher_args.num_nodes, launcher_args.num_gpus) == ("hostfile", 2, 4)
    # deepspeed.launcher.launch runs `python -u -m trainer.probe --local_rank=N <script args>` on each rank.
    monkeypatch.chdir(configs)  # the script cds to its own directory first (the probe checks its files when parsing)
    probe_args = probe_parse_args(["--local_rank=3", *launcher_args.user_args])
    assert probe_args.local_rank == 3
    candidate = candidate_from_args(probe_args, world_size=8)
    assert candidate.knobs.nodes == 2 and os.path.isfile(probe_args.deepspeed_config.path)


def test_export_and_the_tuner_build_the_same_deepspeed_command(make_candidate, tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("nid001 slots=4\nnid002 slots=4\n")
    candidate = make_candidate(model="7b", nodes=2)
    exported = launch_command(candidate, "knee.json", "knee.candidate.json")
    probe_args = ["--candidate", "knee.candidate.json", "--deepspeed-config", "knee.json", "--out", "knee.result.json"]
    tuner = build_plan("deepspeed", candidate, probe_args, python="py", hostfile=hostfile, environ={}).command
    # Same flags and probe arguments; the tuner runs the launcher module with its own interpreter on a
    # free master port and names the hostfile by its path.
    tuner_flags = [part for part in tuner[3:] if not part.startswith("--master_port=")]
    assert tuner[:3] == ["py", "-m", "deepspeed.launcher.runner"]
    assert [p if p != str(hostfile) else "hostfile" for p in tuner_flags] == exported[1:]


def test_a_one_node_export_uses_torchrun_like_the_tuner(make_candidate):
    command = launch_command(make_candidate(model="7b", nodes=1), "knee.json", "knee.candidate.json")
    assert command[:4] == ["torchrun", "--standalone", "--nnodes=1", "--nproc_per_node=4"]
    assert command[4:] == ["-m", "trainer.probe", "--candidate", "knee.candidate.json", "--deepspeed-config", "knee.json",
                           "--out", "knee.result.json"]  # beside the config: picks share configs/
    from torch.distributed.run import get_args_parser

    parsed = get_args_parser().parse_args(command[1:])  # torchrun's own parsing
    assert parsed.module and parsed.training_script == "trainer.probe" and parsed.nproc_per_node == "4"


@pytest.mark.parametrize("run_name, output, printed", [
    ("run", "my dir/x y.json", "bash 'my dir/x y.launch.sh'"),
    ("-dash", None, "bash ./-dash/configs/knee.launch.sh"),
])
def test_the_printed_launch_command_runs_as_copied(two_node_run, tmp_path, run_name, output, printed):
    """Trial 45 §11: `train it as probed: bash w/my dir/x y.launch.sh` ran `w/my`, and `bash -dash/...` read options."""
    import shutil

    shutil.copytree(two_node_run, tmp_path / run_name)
    result = autotune_main("export", "--pick", "knee", *(["-o", output] if output else []), "--", run_name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"train it: {printed}\n" in result.stderr  # a simulated pick: nothing was probed
    script = shlex.split(printed)[1]
    assert (tmp_path / script).is_file()


@pytest.mark.parametrize("path, word", [("runs/7b-1n", "runs/7b-1n"), ("my runs/a'b", "'my runs/a'\"'\"'b'"),
                                        ("-dash", "./-dash"), ("/abs/-x", "/abs/-x")])
def test_a_path_in_a_printed_command_is_one_shell_word(path, word):
    import argparse
    from pathlib import Path

    from autotune.commands.run import _report_command
    from autotune.study.storage import STUDY_NAME

    args = argparse.Namespace(storage=None, study_name=STUDY_NAME)
    assert _report_command(Path(path), args) == f"autotune report {word}"
    assert shlex.split(word) == [path if not path.startswith("-") else f"./{path}"]


def test_an_exported_candidate_names_a_built_in_profile(two_node_run):
    candidate = json.loads((two_node_run / "configs" / "knee.candidate.json").read_text())
    assert candidate["hardware"] == "gh200"


def test_a_study_on_a_custom_profile_is_reported_and_exported_without_its_file(tmp_path, monkeypatch):
    """The study and the exported candidate file hold the profile: the run directory copied to another
    machine, or the profile file deleted or edited since, still reports and exports the study's own."""
    import shutil

    from autotune.candidate import candidate_from_dict
    from autotune.hardware import PROFILE_DIR

    profile = tmp_path / "profiles" / "mynode.toml"
    profile.parent.mkdir()
    shutil.copy(PROFILE_DIR / "cpu.toml", profile)
    out = tmp_path / "run"
    result = autotune_main("run", "--model", "tiny", "--nodes", "1", "--hardware", profile, "--trials", "3",
                      "--backend", "simulate", "--out", out)
    assert result.returncode == 0, result.stderr
    before = json.loads((out / "pareto.json").read_text())
    profile.unlink()
    shutil.rmtree(out / "configs")
    result = autotune_main("report", out, "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "pareto.json").read_text())["front"] == before["front"]
    result = autotune_main("export", out, "--pick", "knee")
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "configs" / "knee.candidate.json").read_text())
    assert data["hardware"] == "mynode.toml" and not (out / "configs" / "mynode.toml").exists()
    monkeypatch.chdir(out / "configs")  # where the launch script runs
    assert candidate_from_dict(data).hardware.name == "cpu"


def test_an_srun_export_trains_in_one_step_of_the_allocation_as_the_tuner_would(two_node_run, tmp_path, monkeypatch):
    """`export --launcher srun`: launch.sh runs the tuner's own srun step (build_plan), asking for the
    GPUs only where the job has GPU gres; a stand-in srun records each call, and the probe's own
    parsing reads the task command."""
    from trainer.probe import candidate_from_args, parse_args as probe_parse_args

    result = autotune_main("export", two_node_run, "--pick", "fastest", "--launcher", "srun", "-o", tmp_path / "fastest.json")
    assert result.returncode == 0, result.stderr
    script = tmp_path / "fastest.launch.sh"
    assert "hostfile" not in script.read_text()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.jsonl"
    (bin_dir / "srun").write_text(
        f"#!{sys.executable}\nimport json, sys\nopen({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    (bin_dir / "srun").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    for gres in ({}, {"SLURM_GPUS_ON_NODE": "4"}):
        done = subprocess.run(["bash", str(script)], env={**env, **gres}, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    training = [json.loads(line) for line in calls.read_text().splitlines() if "trainer.probe" in line]
    without, with_gres = training
    assert "--gpus-per-node=4" in with_gres and without == [w for w in with_gres if w != "--gpus-per-node=4"]
    monkeypatch.chdir(tmp_path)  # the script cds to its own directory first (the probe checks its files when parsing)
    probe_argv = with_gres[with_gres.index("trainer.probe") + 1:]
    assert probe_argv[probe_argv.index("--candidate") + 1] == "fastest.candidate.json"
    probe_args = probe_parse_args(probe_argv)
    assert probe_args.deepspeed_config.path == "fastest.json"
    candidate = candidate_from_args(probe_args, world_size=8)  # 2 nodes of 4 GPUs
    tuner = build_plan("srun", candidate, with_gres[with_gres.index("trainer.probe") + 1:], python="python",
                       hostfile=None, environ={"SLURM_JOB_ID": "1", "SLURM_GPUS_ON_NODE": "4"}).command
    assert tuner == ["srun", *with_gres]


def test_what_a_deepspeed_config_cannot_carry_is_said_where_it_is_handed_over(tmp_path):
    """DeepSpeed's engine never applies `activation_checkpointing`, `sequence_parallel_size` alone only
    divides its data-parallel size, and a power limit is no DeepSpeed key: a user who loads only the JSON
    gets none of them, so the export names each in the config, in launch.sh and on the terminal."""
    space = tmp_path / "one.toml"
    space.write_text('zero_stage = [3]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["offload_sync"]\n'
                     'sp_degree = [2]\nmicro_batch = [1]\npower_limit = [0.8]\nsm_clock_mhz = ["max"]\n')
    out = tmp_path / "run"
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--space", space, "--trials", "2", "--backend", "simulate",
                    "--out", out).returncode == 0
    exported = autotune_main("export", out, "--trial", "0", "-o", tmp_path / "mine.json")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.split() == [str(tmp_path / name) for name in ("mine.json", "mine.candidate.json", "mine.launch.sh")]
    notes = json.loads((tmp_path / "mine.json").read_text())["autotune"]["not_in_this_config"]
    assert [note.split(" (")[0] for note in notes] == ["run it on 4 ranks", "activation checkpointing", "Ulysses sequence parallelism",
                                                      "the power limit 0.8 x default"]
    # In watts too, and on the module a GH200's limit caps (trial57 #12: "set on the GPUs" while launch.sh said module);
    # on the pick's 4 GPUs of each node, as launch.sh's apply (trial 65 #4: without --gpus it capped all of the node's).
    assert notes[3].startswith("the power limit 0.8 x default (544 W per module on the gh200 profile) is set on the modules, "
                               "not by DeepSpeed: the launch script does it; for your own job run `python -m "
                               "autotune.measure.device_cli apply --power-limit 0.8 --sm-clock-mhz max --gpus 4 --record "
                               "'.autotune-device-settings.{host}.json'` on its node before training, and `python -m "
                               "autotune.measure.device_cli restore --record '.autotune-device-settings.{host}.json'` after")
    assert notes[3].endswith("` after (NVML: root or CAP_SYS_ADMIN, and autotune installed there)")
    assert "the real global batch would be 2x" in notes[2] and "DistributedAttention" in notes[2]
    # A newcomer's trial took each rank's loss as its slice's mean: twice the gradient, no message.
    assert notes[2].endswith("each rank's loss must be its slice's summed loss divided by the whole sequence's token "
                             "count (DeepSpeed sums the gradients over the SP ranks: a per-slice mean makes them 2x too large)")
    why = json.loads((tmp_path / "mine.json").read_text())["autotune"]["why"]
    assert list(why) == ["zero_optimization.reduce_scatter", "zero_optimization.reduce_bucket_size",
                         "activation_checkpointing.cpu_checkpointing"]
    # Trial57 #7: the offload's cpu_checkpointing: true stood beside a note saying the probe never ran it, unexplained.
    assert json.loads((tmp_path / "mine.json").read_text())["activation_checkpointing"]["cpu_checkpointing"] is True
    assert why["activation_checkpointing.cpu_checkpointing"].startswith(
        "true: DeepSpeed's own setting for activation offload, which it applies to a model that checkpoints through "
        "deepspeed.checkpointing.checkpoint")
    assert "The probe offloads through saved_tensors_hooks" in why["activation_checkpointing.cpu_checkpointing"]
    assert "averages the gradients over the sequence-parallel" in why["zero_optimization.reduce_scatter"]
    # A newcomer's trial: a bucket smaller than its own model's largest tensor gave wrong gradients, silently; the
    # number is the tuned model's (the 7b's embedding, 152064 x 3584), and its rule is said.
    bucket = json.loads((tmp_path / "mine.json").read_text())["zero_optimization"]["reduce_bucket_size"]
    assert bucket == 152064 * 3584 and why["zero_optimization.reduce_bucket_size"].startswith(
        f"{bucket}: max(4e8, the largest of the tuned model (7b)'s embedding (vocab x hidden)")
    assert why["zero_optimization.reduce_bucket_size"].endswith(
        "For your own model set it to at least max(4e8, the element count of its largest parameter)")
    said = " ".join(exported.stderr.split())
    assert f"train it: bash {tmp_path / 'mine.launch.sh'}" in said
    assert "mine.json is the DeepSpeed config; your own training needs beyond it: - run it on 4 ranks" in said
    assert "- activation checkpointing" in said
    script = (tmp_path / "mine.launch.sh").read_text()
    assert "# Your own training takes mine.json as its DeepSpeed config, and needs beyond it:" in script
    assert all(f"#   - {note}" in script for note in notes)


def test_knobs_a_deepspeed_config_holds_need_no_word_and_a_clock_cap_does():
    from autotune.candidate import Knobs
    from autotune.export import beyond_the_config

    assert beyond_the_config(Knobs(zero_stage=2, optimizer_offload="sync", micro_batch=4)) == []
    assert beyond_the_config(Knobs(sm_clock_mhz=1500)) == [
        "the SM clock cap 1500 MHz is set on the GPUs, not by DeepSpeed: the launch script does it; for your own job run "
        "`python -m autotune.measure.device_cli apply --power-limit 1 --sm-clock-mhz 1500 --record "
        "'.autotune-device-settings.{host}.json'` on its node before training, and `python -m autotune.measure.device_cli "
        "restore --record '.autotune-device-settings.{host}.json'` after (NVML: root or CAP_SYS_ADMIN, and autotune "
        "installed there)"]


def test_superoffloads_own_settings_are_explained_beside_the_config(make_candidate):
    from autotune.ds_config import config_reasons, deepspeed_config

    candidate = make_candidate(model="32b", zero_stage=3, optimizer_offload="async", nodes=4)
    config, why = deepspeed_config(candidate), config_reasons(candidate)
    offload = config["zero_optimization"]["offload_optimizer"]
    assert why["zero_optimization.offload_optimizer.ratio"].startswith(f"{offload['ratio']:g}: SuperOffload steps this share")
    assert why["zero_optimization.offload_optimizer.cpuadam_cores_perc"].startswith(f"{offload['cpuadam_cores_perc']:g}:")
    assert config["zero_optimization"]["overlap_comm"] is False and "zero_optimization.overlap_comm" in why
    assert config_reasons(make_candidate(model="32b", zero_stage=3, optimizer_offload="sync", nodes=4)) == {}


def test_a_multi_node_launch_script_says_in_one_line_what_it_lacks(two_node_run, tmp_path):
    """Without a hostfile (or with too few hosts, or without pdsh) the deepspeed launcher ends in a
    traceback (ValueError: Num nodes is >1 but no extra nodes available via hostfile): the script checks
    first, before it touches the GPUs, and `export` says a multi-node pick needs one."""
    result = autotune_main("export", two_node_run, "--pick", "knee", "-o", tmp_path / "knee.json")
    assert result.returncode == 0, result.stderr
    assert "needs a DeepSpeed hostfile named 'hostfile' beside it: 2 lines, one per node, 'HOST slots=4'" in result.stderr
    bin_dir = tmp_path / "bin"  # what the checks use, and no pdsh, deepspeed or python to reach
    bin_dir.mkdir()
    for tool in ("dirname", "grep"):
        (bin_dir / tool).symlink_to(subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True,
                                                   text=True, check=True).stdout.strip())
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}

    def run_script():
        done = subprocess.run(["/bin/bash", str(tmp_path / "knee.launch.sh")], env=env, capture_output=True, text=True, timeout=60)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, (done.returncode, done.stderr)
        return lines[0]

    assert run_script() == (f"knee.launch.sh: no file named hostfile in {tmp_path}; write it first, 2 lines, one per node: "
                            "HOST slots=4")
    (tmp_path / "hostfile").write_text("# the nodes\nnid001 slots=4\n\n")
    assert run_script().startswith(f"knee.launch.sh: {tmp_path}/hostfile lists 1 of the 2 hosts this configuration runs on")
    (tmp_path / "hostfile").write_text("nid001 slots=4\n  nid002 slots=4\n")
    assert run_script().startswith("knee.launch.sh: pdsh not found")
    one_node = autotune_main("export", two_node_run, "--pick", "knee", "--launcher", "srun", "-o", tmp_path / "srun.json")
    assert one_node.returncode == 0 and "hostfile" not in one_node.stderr


def test_an_srun_export_on_a_cpu_profile_asks_for_no_gpus_and_names_cpu_ranks(tmp_path):
    # CPU ranks use no GPU: in a job with GPU gres the step asked for --gpus-per-node=2 it never used.
    out = tmp_path / "run"
    result = autotune_main("run", "--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--gpus-per-node", "2",
                           "--trials", "3", "--backend", "simulate", "--out", out)
    assert result.returncode == 0, result.stderr
    result = autotune_main("export", out, "--pick", "knee", "--launcher", "srun", "-o", tmp_path / "knee.json")
    assert result.returncode == 0, result.stderr
    script = (tmp_path / "knee.launch.sh").read_text()
    assert "gpus-per-node" not in script and "gres" not in script and "@GRES@" not in script
    assert "one srun step starts a task per CPU rank" in script and "per GPU" not in script
    assert "srun --nodes=1 --ntasks=2 --ntasks-per-node=2" in script


@pytest.mark.parametrize("mode, says, not_says", [
    ("recompute", "torch.utils.checkpoint.checkpoint (use_reentrant=False)", "offload"),
    ("offload_sync", "saved_tensors_hooks that copy the kept inputs to host memory", "side stream; torch"),
    ("offload_async", "DeepSpeed's activation offload engine (pinned buffers, a side stream; torch.utils.checkpoint "
                      "alone recomputes without offloading)", "copy the kept inputs"),
])
def test_each_checkpointing_mode_names_the_code_that_gives_it(mode, says, not_says, make_candidate):
    """A newcomer's trial: the offload_async pick's note named torch.utils.checkpoint or
    deepspeed.checkpointing.checkpoint, neither of which gives the asynchronous offload the probe measured."""
    from autotune.candidate import Knobs
    from autotune.export import beyond_the_config

    knobs = Knobs(zero_stage=3, optimizer_offload="none", activation_checkpointing=mode, sp_degree=1, micro_batch=1,
                  nodes=1)
    (note,) = beyond_the_config(knobs)
    assert note.startswith(f"activation checkpointing ({mode}: ") and says in note and not_says not in note, note
    section = ("(the probe's: trainer/checkpointing.py; the config's activation_checkpointing section applies "
               "only to deepspeed.checkpointing.checkpoint calls, which the probe does not make")
    # A newcomer's trial: the offload picks' cpu_checkpointing: true crashed those calls on CPU ranks.
    crash = ("; its cpu_checkpointing: true was never run by the probe, and makes deepspeed.checkpointing.checkpoint "
             "fail on a machine without CUDA (DeepSpeed 0.19.8): set it false there")
    from autotune.ds_config import _checkpointing_section
    assert note.endswith(section + (crash if _checkpointing_section(mode)["cpu_checkpointing"] else "") + ")")
    assert (mode != "recompute") == _checkpointing_section(mode)["cpu_checkpointing"]
    # Trial57 #7: where the section says true, the config's `why` says why it is there.
    from autotune.ds_config import config_reasons

    why = config_reasons(make_candidate(zero_stage=3, activation_checkpointing=mode, nodes=1))
    assert ("activation_checkpointing.cpu_checkpointing" in why) == _checkpointing_section(mode)["cpu_checkpointing"]


@pytest.mark.parametrize("mode", ["offload_sync", "offload_async"])
def test_an_offload_pick_of_a_profile_without_cuda_exports_cpu_checkpointing_false(mode, make_candidate):
    """Trial76 #7: a cpu study's offload pick said cpu_checkpointing: true, which its own `why` said DeepSpeed 0.19.8
    fails on without CUDA, and which did fail a user's deepspeed.checkpointing.checkpoint on CPU ranks."""
    from autotune.ds_config import config_reasons, deepspeed_config
    from autotune.export import beyond_the_config

    candidate = make_candidate(hardware="cpu", zero_stage=3, activation_checkpointing=mode, nodes=1, gpus_per_node=2)
    assert deepspeed_config(candidate)["activation_checkpointing"]["cpu_checkpointing"] is False
    why = config_reasons(candidate)["activation_checkpointing.cpu_checkpointing"]
    assert why.startswith("false, though this pick offloads activations: its profile (cpu) has no CUDA, where "
                          "DeepSpeed 0.19.8's deepspeed.checkpointing.checkpoint fails with cpu_checkpointing true"), why
    (note,) = beyond_the_config(candidate.knobs, candidate.hardware)
    assert note.endswith("; its cpu_checkpointing is false, as this profile has no CUDA, where DeepSpeed 0.19.8 fails "
                         "on true: set it true on a CUDA machine)"), note
    assert "true was never run" not in note
    # A CUDA profile keeps DeepSpeed's own offload setting.
    gpu = make_candidate(zero_stage=3, activation_checkpointing=mode, nodes=1)
    assert deepspeed_config(gpu)["activation_checkpointing"]["cpu_checkpointing"] is True


def test_the_export_names_the_ranks_its_batch_sizes_hold_for_and_deepspeed_agrees(tmp_path, monkeypatch):
    """A newcomer's trial: a 16-rank pick's config on one rank stopped at DeepSpeed's batch check
    (train_batch_size 64 != 2 * 2 * 1) with nothing in the export naming 16. The note's arithmetic is
    DeepSpeed's own: its config object accepts the file at the named data-parallel size, and refuses it
    at another until gradient_accumulation_steps is set as the note says."""
    from deepspeed.runtime.config import DeepSpeedConfig

    space = tmp_path / "one.toml"
    space.write_text('zero_stage = [3]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["recompute"]\n'
                     'sp_degree = [2]\nmicro_batch = [2]\n')
    out = tmp_path / "run"
    assert autotune_main("run", "--model", "32b", "--nodes", "4", "--space", space, "--trials", "2",
                         "--out", out).returncode == 0
    exported = autotune_main("export", out, "--trial", "0", "-o", tmp_path / "mine.json")
    assert exported.returncode == 0, exported.stderr
    config = json.loads((tmp_path / "mine.json").read_text())
    note = config["autotune"]["not_in_this_config"][0]
    assert note == ("run it on 16 ranks (4 nodes x 4 GPUs, sequence-parallel degree 2: data-parallel size 8): "
                    "train_batch_size 64 = micro-batch 2 x gradient_accumulation_steps 4 x 8, which DeepSpeed checks at "
                    "start-up; on another number of ranks keep train_batch_size and set gradient_accumulation_steps to "
                    "64 / (2 x the data-parallel size), a whole number only at data-parallel sizes 1, 2, 4, 8, 16, 32; "
                    "at another (3 ranks, say) the micro-batch must change too: `autotune run` with that number of ranks finds one")
    assert config["autotune"]["ranks"] == 16
    assert f"- {note}" in " ".join(exported.stderr.split())
    assert f"#   - {note}" in (tmp_path / "mine.launch.sh").read_text()
    import deepspeed.runtime.config as ds_config

    def at_ranks(ranks: int, settings: dict) -> None:
        """DeepSpeed's config check at `ranks` processes (its data-parallel size: ranks / sequence_parallel_size)."""
        monkeypatch.setattr(ds_config.dist, "get_rank", lambda *a: 0)
        monkeypatch.setattr(ds_config.dist, "get_world_size", lambda *a: ranks)
        DeepSpeedConfig(settings)

    settings = {k: v for k, v in config.items() if k != "autotune"}
    at_ranks(16, settings)
    with pytest.raises(AssertionError, match="Check batch related parameters"):
        at_ranks(4, settings)
    at_ranks(4, {**settings, "gradient_accumulation_steps": 64 // (2 * 2)})  # as the note says, at data-parallel size 2
    with pytest.raises(AssertionError, match="Check batch related parameters"):  # 3 is not among the sizes it names
        at_ranks(6, {**settings, "gradient_accumulation_steps": 64 // (2 * 3)})


def test_a_multi_node_power_limit_is_said_to_be_set_on_every_node():
    """A newcomer's trial: the terminal said "the launch script does it" of a 4-node pick; the probe the script
    runs does it on each node, the user's own training does not: it gets the commands for every node."""
    from autotune.candidate import Knobs
    from autotune.export import beyond_the_config

    (note,) = beyond_the_config(Knobs(power_limit=0.8, nodes=4))
    record = "'.autotune-device-settings.{host}.json'"  # device_cli requires its record, and restore reads it back
    assert note == ("the power limit 0.8 x default is set on the GPUs of every node, not by DeepSpeed: the probe "
                    "the launch script runs does it on each node; "
                    "for your own job run `python -m autotune.measure.device_cli apply --power-limit 0.8 --sm-clock-mhz "
                    f"max --record {record}` on each of its 4 nodes before training, and `python -m "
                    f"autotune.measure.device_cli restore --record {record}` after (NVML: root or CAP_SYS_ADMIN, and "
                    "autotune installed there)")


def test_exporting_an_interrupted_trial_names_the_trial_that_probed_it_again():
    """A newcomer's trial: `export --trial 2` of an interrupted trial only listed the feasible ones."""
    from types import SimpleNamespace

    from autotune.errors import UserError
    from autotune.export import choose_trial

    points = [SimpleNamespace(trial=n) for n in (0, 1, 3)]
    view = SimpleNamespace(points=points, point=lambda n: next((p for p in points if p.trial == n), None), trials=[
        {"trial": 2, "status": "interrupted",
         "reason": "its probe was stopped (Ctrl-C, SIGTERM, or the tuner killed): probed again as trial 3"},
        {"trial": 4, "status": "timeout", "reason": "timeout: no result within 25 s"}])
    with pytest.raises(UserError) as refused:
        choose_trial(view, None, 2)
    assert str(refused.value) == ("trial 2 is not a feasible evaluated trial of this study (interrupted: its probe was "
                                  "stopped (Ctrl-C, SIGTERM, or the tuner killed): probed again as trial 3); choose one "
                                  "of: 0, 1, 3")
    with pytest.raises(UserError, match=r"^trial 4 is not a feasible evaluated trial of this study \(timeout: no result "
                                        r"within 25 s\); choose one of"):  # its status said once
        choose_trial(view, None, 4)
    with pytest.raises(UserError, match=r"^trial 9 is not a feasible evaluated trial of this study; choose one of"):
        choose_trial(view, None, 9)


def test_exporting_an_infeasible_trial_of_a_big_study_names_the_front_not_every_trial():
    """trial70 #4: on a study of 1,000 feasible trials the refusal was one line of 5,689 characters naming each."""
    from types import SimpleNamespace

    from autotune.errors import UserError
    from autotune.export import LISTED_TRIALS, choose_trial

    def view(feasible: int, front: list[int]):
        points = [SimpleNamespace(trial=n) for n in range(0, 2 * feasible, 2)]
        return SimpleNamespace(points=points, front=[p for p in points if p.trial in front], trials=[],
                               point=lambda n: next((p for p in points if p.trial == n), None))

    with pytest.raises(UserError) as refused:
        choose_trial(view(1000, [40, 6, 1998]), None, 5, None, "autotune report runs/big --json")
    assert str(refused.value) == ("trial 5 is not a feasible evaluated trial of this study; choose one of its 1000 "
                                  "feasible trials, such as the front's 6, 40, 1998 (`autotune report runs/big --json` "
                                  "lists them all under \"feasible\")")
    with pytest.raises(UserError) as refused:  # a long front: a few of it, and how many more
        choose_trial(view(1000, list(range(0, 60, 2))), None, 5)
    assert f"the front's {', '.join(str(n) for n in range(0, 2 * LISTED_TRIALS, 2))} and {30 - LISTED_TRIALS} more " in str(refused.value)
    assert len(str(refused.value)) < 300
    with pytest.raises(UserError, match=r"; choose one of: 0, 2, 4$"):  # a few: each named, as before
        choose_trial(view(3, [0]), None, 5)


def test_the_settings_no_study_searched_are_said_to_be_the_probes_own(tmp_path):
    """A newcomer's trial took the optimizer's lr 1e-4 and weight_decay 0.0, the clipping and a steps_per_print that
    silenced DeepSpeed's step log for tuned values: the export names each as the probe's, to be replaced."""
    out = tmp_path / "run"
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--backend", "simulate",
                         "--out", out).returncode == 0
    assert autotune_main("export", out, "--pick", "knee", "-o", tmp_path / "knee.json").returncode == 0
    config = json.loads((tmp_path / "knee.json").read_text())
    said = config["autotune"]["not_tuned"]
    assert list(said) == ["optimizer", "gradient_clipping", "steps_per_print", "wall_clock_breakdown"]
    assert all(key in config for key in said) and all("set your own" in text for text in said.values())
    assert said["optimizer"].startswith("the probe's AdamW (lr 0.0001, betas [0.9, 0.95], eps 1e-08, weight_decay 0.0): "
                                        "not searched")
    assert said["steps_per_print"].startswith(f"{config['steps_per_print']}: silences DeepSpeed's step log")


def test_one_rank_is_counted_as_one_in_the_export_and_the_html_pick(tmp_path):
    """A newcomer's trial (trial60 #7) on one CPU rank read "run it on 1 ranks", "data-parallel sizes 1" and,
    in report.html, "1 CPU ranks."."""
    space = tmp_path / "one.toml"
    space.write_text('zero_stage = [0]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["none"]\n'
                     'sp_degree = [1]\nmicro_batch = [8]\npower_limit = [1.0]\nsm_clock_mhz = ["max"]\n')
    out = tmp_path / "run"
    done = autotune_main("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--gpus-per-node", "1",
                         "--space", space, "--trials", "2", "--allow-estimated-energy", "--out", out)
    assert done.returncode == 0, done.stderr
    assert autotune_main("export", out, "--trial", "0", "-o", tmp_path / "mine.json").returncode == 0
    note = json.loads((tmp_path / "mine.json").read_text())["autotune"]["not_in_this_config"][0]
    assert note.startswith("run it on 1 rank (1 node x 1 CPU rank: data-parallel size 1): ")
    assert "a whole number only at data-parallel size 1; " in note
    html = (out / "report.html").read_text()
    assert "; 1 CPU rank.</p>" in html and "1 CPU ranks" not in html


def test_the_ranks_note_of_the_largest_global_batch_is_written_at_once(make_candidate):
    """A newcomer's trial (trial78 #10): --global-batch 1000000000000, inside its allowed range, hung the run while
    it wrote its reports: the note tried every number up to 1.25e11 as a data-parallel size. Its sizes are the
    divisors, found up to the square root, and the same as trying them all for the sizes a study has."""
    import time

    from autotune.export import divisors, ranks_note

    assert all(divisors(n) == [d for d in range(1, n + 1) if n % d == 0] for n in range(1, 400))
    started = time.monotonic()
    candidate = make_candidate(model="tiny", hardware="cpu", nodes=1, micro_batch=8,
                               workload={"global_batch": 10**12, "samples": 10**12})
    note = ranks_note(candidate)
    assert time.monotonic() - started < 10
    # 10^12 / 8 = 2^9 x 5^12: 10 x 13 divisors, from 1 to the number itself.
    assert "a whole number only at data-parallel sizes 1, 2, 4, 5, 8, 10, " in note
    assert ", 62500000000, 125000000000; " in note
    assert len(divisors(125_000_000_000)) == 130
