"""The command line as a user runs it: real subprocesses, exit codes, files written (main() in this process where
only its messages, status and files are checked: bad input, exports)."""

import hashlib
import io
import json
import subprocess
import sys

import pytest

from autotune import cli
from tests.cli import autotune, autotune_main


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "32b-4n"
    result = autotune("run", "--model", "32b", "--nodes", "4", "--trials", "30", "--out", out)
    assert result.returncode == 0, result.stderr
    return out, result


def test_help_and_simulate_never_import_torch(tmp_path):
    code = (
        "import sys; from autotune.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "main(['space', '--model', '7b', '--nodes', '1', '--simulate', '--json'])\n"
        f"main(['run', '--model', '7b', '--nodes', '1', '--trials', '3', '--backend', 'simulate', '--out', {str(tmp_path)!r}])\n"
        "bad = [m for m in ('torch', 'deepspeed') if m in sys.modules]\n"
        "sys.stderr.write('IMPORTED:' + ','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "IMPORTED:" in result.stderr and result.stderr.rsplit("IMPORTED:", 1)[1] == ""


def test_run_writes_run_directory(finished_run):
    out, result = finished_run
    pareto = json.loads((out / "pareto.json").read_text())
    for key in ("model", "nodes", "gpus", "hardware", "backend", "source", "trials", "front", "recommendations"):
        assert key in pareto
    assert pareto["source"] == "simulated" and pareto["backend"] == "simulate"
    assert (pareto["model"], pareto["nodes"], pareto["gpus"], pareto["hardware"]) == ("32b", 4, 16, "gh200")
    assert {"fastest", "min_energy", "knee"} <= set(pareto["recommendations"])
    assert len(pareto["feasible"]) >= 3
    front_trials = {p["trial"] for p in pareto["front"]}
    assert set(pareto["recommendations"].values()) <= front_trials
    for point in pareto["front"]:
        assert {"trial", "params", "time_s", "energy_kj", "tflops", "tflop_per_kj", "peak_mem_gib"} <= set(point)
    for pick in ("fastest", "min-energy", "knee"):
        assert (out / "configs" / f"{pick}.json").is_file()
    assert (out / "study.db").is_file()
    assert "simulate" in result.stderr and "Pareto front" in result.stdout
    # No energy was measured: no list of parts left out ([] read as "the sensors saw every part", trial 38 #6).
    assert pareto["energy_not_measured"] is None
    assert json.loads((out / "configs" / "knee.json").read_text())["autotune"]["energy_not_measured"] is None


def test_report_prints_the_table_again(finished_run):
    out, _ = finished_run
    result = autotune("report", out)
    assert result.returncode == 0, result.stderr
    assert "Pareto front" in result.stdout and "simulated" in result.stdout


def test_exported_config_is_accepted_by_deepspeed(finished_run, tmp_path):
    out, _ = finished_run
    target = tmp_path / "knee.json"
    result = autotune("export", out, "--pick", "knee", "-o", target)
    assert result.returncode == 0, result.stderr
    config = json.loads(target.read_text())
    assert config["autotune"]["time_source"] == "simulated" and config["autotune"]["energy_source"] == "simulated"
    launch = target.with_name("knee.launch.sh").read_text()
    assert "trainer.probe" in launch and "knee.json" in launch
    gpus = 16
    check = (
        "import json, sys; from unittest import mock; import deepspeed.runtime.config as c\n"
        f"cfg = json.load(open({str(target)!r}))\n"
        f"with mock.patch.object(c.dist, 'get_rank', return_value=0), mock.patch.object(c.dist, 'get_world_size', return_value={gpus}):\n"
        "    d = c.DeepSpeedConfig(cfg)\n"
        "print(d.train_batch_size, d.zero_optimization_stage)\n"
    )
    parsed = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert parsed.returncode == 0, parsed.stderr
    assert parsed.stdout.split()[-2:] == [str(config["train_batch_size"]), str(config["zero_optimization"]["stage"])]


def test_export_by_trial_number(finished_run, tmp_path):
    out, _ = finished_run
    trial = json.loads((out / "pareto.json").read_text())["feasible"][0]["trial"]
    result = autotune("export", out, "--trial", trial, "-o", tmp_path / "t.json")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "t.json").read_text())["autotune"]["trial"] == trial


@pytest.mark.parametrize("flag", ["-o", "--measurements"])
def test_export_never_writes_over_the_study_it_exports(finished_run, flag):
    out, _ = finished_run
    before = (out / "study.db").read_bytes()
    result = autotune("export", out, flag, out / "study.db")
    assert result.returncode == 2 and "is an SQLite database (a study's storage?) and would be replaced" in result.stderr
    assert (out / "study.db").read_bytes() == before
    assert autotune("report", out, "--format", "json").returncode == 0


def test_space_json_lists_every_candidate():
    result = autotune("space", "--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--json", "--simulate")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 4 * 3 * 4 * 4 * 4 * 4  # zero, opt offload, ckpt, sp, micro-batch, power limit
    for row in rows:
        assert {"params", "valid", "reason", "peak_mem_gib"} <= set(row)
        assert (row["reason"] is None) == row["valid"]
        if row["valid"]:
            assert row["time_s"] > 0 and row["energy_kj"] > 0 and row["tflops"] > 0
    assert any("CUDA" in (r["reason"] or "") for r in rows)
    valid = autotune("space", "--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--json", "--valid")
    assert valid.returncode == 0, valid.stderr
    assert [r["params"] for r in json.loads(valid.stdout)] == [r["params"] for r in rows if r["valid"]]


def test_the_space_table_tells_power_limit_variants_apart():
    # Without a power-limit column, the four variants of each configuration read as one row repeated.
    result = autotune("space", "--model", "32b", "--nodes", "4", "--valid", "--simulate")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "32b on gh200: 528 of 3072 valid (listed: the valid ones)" in lines[0]
    assert "power limit" in result.stdout and "valid / reason" in result.stdout
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == 528 and len(set(rows)) == 528 and not any("needs" in row for row in rows)
    assert "time h (sim +-" in result.stdout and "3.4%)" in result.stdout  # the unit chosen from the figures


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--model", "13b"], "unknown model '13b': use one of tiny, 7b, 32b, 72b, the path of a JSON model file"),
        (["run", "--model", "13b"], "or a Hugging Face checkpoint's directory or its config.json"),
        (["run", "--hardware", "tpu"], "unknown hardware 'tpu'"),
        (["run", "--nodes", "0"], "--nodes '0' must be at least 1"),
        (["space", "--space", "missing.toml"], "does not exist"),
        (["report", "."], "is not a run directory"),
        (["export", "nowhere"], "does not exist"),
        (["run", "--storage", "postgresql://nobody@127.0.0.1:1/none", "--trials", "1"], "cannot open study storage"),
        (["run", "--model", "72b", "--nodes", "1", "--space", "{space}"], "nothing in the space fits in memory"),
        # 12 GPUs and a global batch of 64: the batch is the cause and the fix, not the commonest rule
        (["run", "--model", "7b", "--nodes", "3"],
         "no micro-batch (1, 2, 4, 8) x data-parallel size (3, 6, 12 on these GPUs) divides the global batch 64: pass --global-batch 60 or 72"),
        (["run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "3", "--global-batch", "2"],
         "divides the global batch 2: pass --global-batch 3, other micro_batch values in a --space file, or another"),
        # Trial 46: a wide range listed every size (5,039 characters) and offered a batch only its largest count takes.
        (["run", "--model", "7b", "--nodes", "5-7"],
         "data-parallel size (10 sizes from 3 to 28 on these GPUs) divides the global batch 64: pass a --global-batch "
         "that the data-parallel sizes of the node counts you want divide (56 or 84 suits only the largest)"),
        # trial70 #3: the batch these sizes divide, 4000000000000, was advised, and --global-batch refused it.
        (["run", "--model", "7b", "--nodes", "1000000000000"],
         "divides the global batch 64: pass fewer --nodes or --gpus-per-node (the global batch every data-parallel size "
         "here divides, 4000000000000, is more than the 1000000000000 --global-batch takes)"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, args, message):
    space = tmp_path / "space.toml"
    space.write_text(
        'zero_stage = [0]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["none"]\n'
        "sp_degree = [1]\nmicro_batch = [8]\n"
    )
    args = [a.replace("{space}", str(space)) for a in args]
    result = autotune_main(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [l for l in result.stderr.strip().splitlines() if l.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["space.toml"]  # no empty run directory left behind


def test_malformed_space_file_leaves_existing_study_intact(finished_run, tmp_path):
    out, _ = finished_run
    before = (out / "pareto.json").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text("zero_stage = ")
    result = autotune_main("run", "--model", "32b", "--nodes", "4", "--space", bad, "--out", out)
    assert result.returncode == 2 and "not valid TOML" in result.stderr
    assert (out / "pareto.json").read_text() == before


@pytest.mark.parametrize("pick", ["fastest", "min-energy", "max-slowdown", "cost-weighted"])
def test_export_every_pick(finished_run, tmp_path, pick):
    out, _ = finished_run
    pareto = json.loads((out / "pareto.json").read_text())
    result = autotune_main("export", out, "--pick", pick, "-o", tmp_path / f"{pick}.json")
    assert result.returncode == 0, result.stderr
    key = pick.replace("-", "_")
    assert json.loads((tmp_path / f"{pick}.json").read_text())["autotune"]["trial"] == pareto["recommendations"][key]


def test_time_only_study_reports_and_ranks_knobs_for_time(tmp_path):
    out = tmp_path / "run"
    result = autotune_main("run", "--model", "32b", "--nodes", "2-8", "--trials", "10", "--objectives", "time", "--out", out)
    assert result.returncode == 0, result.stderr
    pareto = json.loads((out / "pareto.json").read_text())
    assert list(pareto["importance"]) == ["time_to_solution_s"]
    assert pareto["recommendations"]["fastest"] in {p["trial"] for p in pareto["front"]}
    again = autotune_main("run", "--model", "32b", "--nodes", "2-8", "--trials", "10", "--out", out)
    assert again.returncode == 2 and "objective" in again.stderr  # resuming with other objectives is refused


def test_an_interrupt_in_process_reaches_the_caller_with_its_signals_left_alone(monkeypatch):
    import signal

    from autotune import cli
    from autotune.commands import space

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(space, "_run", interrupted)
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(KeyboardInterrupt):
        cli.main(["space", "--model", "7b", "--nodes", "1"])
    # Only the console script (cli.console_main) turns it into status 130 and ignores a second Ctrl-C.
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_a_second_ctrl_c_while_exiting_is_ignored():
    """`timeout -s INT` (and some launchers) signal the tuner and then its whole process group: the
    second SIGINT can land while the tuner prints its last line. It must not interrupt the exit (a
    traceback and no status 130). Here it is sent by the write of that line itself."""
    import signal

    code = (
        "import os, signal, sys, time\n"
        "from autotune import cli\n"
        "from autotune.commands import space\n"
        "class SecondCtrlC:\n"
        "    def __init__(self, stream):\n"
        "        self.stream = stream\n"
        "    def write(self, text):\n"
        "        if 'interrupted' in text:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "            time.sleep(0.2)  # the handler of a second KeyboardInterrupt would run here\n"
        "        return self.stream.write(text)\n"
        "    def flush(self):\n"
        "        self.stream.flush()\n"
        "def interrupted(args):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(60)\n"
        "space._run = interrupted\n"
        "sys.stderr = SecondCtrlC(sys.stderr)\n"
        "sys.argv = ['autotune', 'space', '--model', '7b', '--nodes', '1']\n"
        "cli.console_main()\n"
    )
    # SIGINT at its default, as a terminal gives it (a suite started in the background ignores it).
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines() == ["autotune: interrupted; nothing was written"], result.stderr


def test_run_help_names_the_objectives_choices_as_written():
    """argparse joins choices with commas, so "time,energy" and "time" read as three choices
    ("{time,energy,time}"); the help names the two a user can pass and what each minimises."""
    result = autotune("run", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "{time,energy,time}" not in text
    assert "--objectives OBJECTIVES" in text and "time,energy (the front of both, default; energy,time is the same) or time" in text


@pytest.mark.parametrize("output", [["--json"], []], ids=["json", "rich table"])
def test_a_reader_that_stops_early_ends_the_output_quietly(output):
    """`autotune space --json | head`: the pipe closes after the reader's lines; no traceback, and the
    status of a tool that SIGPIPE ended (141), as the shell reports for `yes | head`. The same for a
    table rich prints (rich's own handling ended with status 1). The reader is gone before the command
    writes; test_a_reader_gone_mid_write_ends_the_table_as_a_broken_pipe has one that leaves mid-write."""
    with subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE) as head:
        head.wait(timeout=60)
        run = subprocess.run([sys.executable, "-m", "autotune.cli", "space", "--model", "7b", "--nodes", "1", *output],
                             stdout=head.stdin, stderr=subprocess.PIPE, text=True, timeout=120)
        head.stdin.close()
    assert run.returncode == 141, run.stderr
    assert run.stderr == ""


def test_a_reader_gone_mid_write_ends_the_table_as_a_broken_pipe():
    """Trial71 #3: `autotune space | head -3` printed its table (hundreds of kB) in one write; CPython's stdout took
    the pipe's short write, when the reader left, as the whole table: the rest was lost and the status was 0. The
    reader here takes 100 bytes of a table far larger than a pipe holds and leaves."""
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read(100)"], stdin=subprocess.PIPE) as head:
        run = subprocess.run([sys.executable, "-m", "autotune.cli", "space", "--model", "7b", "--nodes", "1-8"],
                             stdout=head.stdin, stderr=subprocess.PIPE, text=True, timeout=300)
        head.stdin.close()
    assert run.returncode == 141, run.stderr
    assert "Traceback" not in run.stderr


def test_a_stdout_that_cannot_encode_the_reports_characters_prints_them_as_question_marks(monkeypatch):
    """`LC_ALL=C PYTHONUTF8=0`: an ASCII stdout ended `autotune report` in UnicodeEncodeError on its "±"."""
    ascii_stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_stdout)
    cli._replace_what_stdout_cannot_encode()
    print("time 13.4 min ± 3.4% …")
    ascii_stdout.flush()
    assert ascii_stdout.buffer.getvalue() == b"time 13.4 min ? 3.4% ?\n"


def test_a_node_count_of_a_range_with_no_valid_candidate_is_named_and_the_rest_is_studied(tmp_path):
    result = autotune("run", "--model", "7b", "--nodes", "2-3", "--trials", "2", "--out", tmp_path / "run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stderr.split())
    assert said.count("warning: no candidate on") == 1
    assert ("warning: no candidate on 3 nodes is valid: no micro-batch (1, 2, 4, 8) x data-parallel size (3, 6, 12 on "
            "these GPUs) divides the global batch 64: pass --global-batch 60 or 72") in said
    assert json.loads((tmp_path / "run" / "pareto.json").read_text())["nodes"] == [2, 3]


def test_a_run_stopped_by_sigterm_exits_143():
    """scancel and a job's time limit send SIGTERM: the run stops as after Ctrl-C (trials kept), and
    its status says which signal (128 + 15), as a shell reports a command SIGTERM ended."""
    code = (
        "import os, signal, time\n"
        "from autotune import cli\n"
        "from autotune.commands import run\n"
        "from autotune.errors import Terminated\n"
        "from autotune.study.loop import Interrupts\n"
        "def terminated(args):\n"
        "    with Interrupts().install({signal.SIGTERM: Terminated}):  # as `autotune run` does around its study\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(60)\n"
        "run._run = terminated\n"
        "import sys\n"
        "sys.argv = ['autotune', 'run', '--model', '7b', '--nodes', '1']\n"
        "cli.console_main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 143, result.stderr
    assert "completed trials are kept" in result.stderr


def _interrupted_after_a_trial(run_dir, cwd, signum=None, status=130) -> str:
    import signal

    signum = signum or signal.SIGINT

    process = subprocess.Popen([sys.executable, "-m", "autotune.cli", "run", "--model", "7b", "--nodes", "1-2",
                                "--sampler", "random", "--trials", "1000", "--out", str(run_dir)],
                               stderr=subprocess.PIPE, text=True, cwd=cwd)
    said = []
    try:
        for line in process.stderr:  # not a terminal: one line per finished trial
            said.append(line)
            if line.startswith("trial "):
                process.send_signal(signum)
                break
        said += process.stderr.readlines()
        assert process.wait(timeout=60) == status, "".join(said)
    finally:
        process.kill()
    return " ".join("".join(said).split())


def test_a_run_stopped_by_ctrl_c_says_how_to_bring_its_reports_up_to_date(tmp_path):
    """The reports are written when a run ends: after Ctrl-C those in the run directory are an earlier run's,
    or there are none yet."""
    run_dir = tmp_path / "run"
    text = _interrupted_after_a_trial(run_dir, tmp_path)
    assert (f"{run_dir} holds no report yet: `autotune report {run_dir} --html` writes them for every finished trial") in text
    assert "completed trials are kept" in text and "not this run's" not in text
    assert subprocess.run([sys.executable, "-m", "autotune.cli", "report", str(run_dir)], capture_output=True,
                          timeout=120).returncode == 0
    text = _interrupted_after_a_trial(run_dir, tmp_path)
    assert (f"the reports in {run_dir} are not this run's: `autotune report {run_dir} --html` writes them for "
            "every finished trial") in text


def test_a_run_whose_ssh_session_closed_stops_as_after_sigterm(tmp_path):
    """Trial 43 F8: SIGHUP (a run started over ssh without nohup, its session dropped) ended the run by its default
    action: no word, and the trial it was in left RUNNING. It stops as SIGTERM does, with SIGHUP's status."""
    import signal

    import optuna

    run_dir = tmp_path / "run"
    text = _interrupted_after_a_trial(run_dir, tmp_path, signal.SIGHUP, 128 + signal.SIGHUP)
    assert "autotune: interrupted; completed trials are kept, run the same command again to resume" in text
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
    assert study.trials and not [t.number for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]


@pytest.mark.parametrize("name", ["SIGHUP", "SIGINT"])
def test_a_signal_ignored_from_the_start_stays_ignored_by_the_study(tmp_path, name):
    """Trial71 #4: `nohup autotune run ... &` (SIGHUP ignored) and `autotune run ... &` in a script (SIGINT ignored)
    were stopped by that signal once the study started (exit 129 on logout): the study's handlers replaced the
    ignored disposition. The run now finishes as if the signal never came."""
    import signal

    signum = getattr(signal, name)
    process = subprocess.Popen([sys.executable, "-m", "autotune.cli", "run", "--model", "7b", "--nodes", "1-2",
                                "--sampler", "random", "--trials", "12", "--backend", "simulate", "--out",
                                str(tmp_path / "run")],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path, preexec_fn=lambda: signal.signal(signum, signal.SIG_IGN))
    said = []
    try:
        for line in process.stderr:
            said.append(line)
            if line.startswith("trial "):  # the study is under way: its handlers are set
                process.send_signal(signum)
                break
        said += process.stderr.readlines()
        assert process.wait(timeout=120) == 0, "".join(said)
    finally:
        process.kill()
    text = " ".join("".join(said).split())
    assert "interrupted" not in text and "run directory:" in text


def test_a_run_sent_sigusr1_stops_as_after_sigterm(tmp_path):
    """Trial 51 #3: `#SBATCH --signal=B:USR1@120`, a common site template's, killed the tuner by the default action
    (status 138, no word, no report, its trial left RUNNING). USR1 and USR2 stop a run as SIGTERM does."""
    import signal

    import optuna

    run_dir = tmp_path / "run"
    text = _interrupted_after_a_trial(run_dir, tmp_path, signal.SIGUSR1, 128 + signal.SIGUSR1)
    assert "autotune: interrupted; completed trials are kept, run the same command again to resume" in text
    assert f"{run_dir} holds no report yet" in text
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
    assert study.trials and not [t.number for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]


def test_launch_options_given_to_a_backend_that_starts_no_probe_are_said(tmp_path):
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--backend", "simulate", "--repeats", "3",
                         "--probe-steps", "5", "--out", tmp_path / "r")  # 5 is the default: not said
    assert done.returncode == 0, done.stderr
    assert ("warning: --repeats is read only by --backend launch: the simulate backend starts no probe"
            in " ".join(done.stderr.split()))
    plain = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--backend", "simulate", "--out", tmp_path / "p")
    assert plain.returncode == 0 and "read only by --backend launch" not in plain.stderr


def test_nsga2_within_its_first_generation_is_said_to_be_random_sampling(tmp_path):
    import inspect

    import optuna

    from autotune.commands.run import NSGA2_POPULATION

    assert inspect.signature(optuna.samplers.NSGAIISampler).parameters["population_size"].default == NSGA2_POPULATION
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--sampler", "nsga2", "--trials", "3", "--out", tmp_path / "a")
    assert done.returncode == 0, done.stderr
    assert ("warning: NSGA-II draws its first generation (50 trials) at random: with --trials 3 it is --sampler random"
            in " ".join(done.stderr.split()))
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--sampler", "tpe", "--trials", "3", "--out", tmp_path / "b")
    assert "NSGA-II" not in done.stderr


def test_the_default_run_directory_is_the_models_own_name_under_runs(tmp_path):
    """Trial 31 #2: the directory was built from --model as written: `/ckpt/-4n` inside a checkpoint,
    `runs/../hf/gelu-4n` outside runs/, and `runs/config-4n` for every Hugging Face config.json."""
    import argparse
    from pathlib import Path

    from autotune.commands.run import default_run_dir
    from autotune.models import load_model
    from tests.tuner.test_models_hf import QWEN25_7B

    checkpoint = tmp_path / "ckpt" / "Qwen2.5-7B-Instruct"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text(json.dumps(QWEN25_7B))
    (tmp_path / "w").mkdir()
    done = autotune("run", "--model", f"../ckpt/{checkpoint.name}/config.json", "--nodes", "1", "--trials", "2",
                    cwd=tmp_path / "w")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "w" / "runs" / "Qwen2.5-7B-Instruct-1n" / "pareto.json").is_file()
    assert "run directory: runs/Qwen2.5-7B-Instruct-1n" in " ".join(done.stdout.split() + done.stderr.split())
    unnamed = tmp_path / "my ckpt"
    unnamed.mkdir()
    (unnamed / "config.json").write_text(json.dumps({k: v for k, v in QWEN25_7B.items() if k != "_name_or_path"}))
    (tmp_path / "custom.json").write_text(json.dumps({"name": "../../etc/ my model!", **_tiny_json()}))
    (tmp_path / "nameless.json").write_text(json.dumps(_tiny_json()))
    (tmp_path / "dots.json").write_text(json.dumps({"name": "..", **_tiny_json()}))
    for model, directory in (("32b", "32b-4n"),
                             (f"{checkpoint}/", "Qwen2.5-7B-Instruct-4n"),
                             (str(checkpoint / "config.json"), "Qwen2.5-7B-Instruct-4n"),
                             # a name that cleaning changed: a digest of it follows (test_storage)
                             (str(unnamed), f"my_ckpt{_digest('my ckpt')}-4n"),
                             (str(tmp_path / "custom.json"), f"_.._etc_my_model_{_digest('../../etc/ my model!')}-4n"),
                             (str(tmp_path / "nameless.json"), "nameless-4n"),
                             (str(tmp_path / "dots.json"), f"model{_digest('..')}-4n")):
        args = argparse.Namespace(model=model, study_name="autotune")
        assert default_run_dir(args, load_model(model), (4,)) == Path("runs") / directory, model


def _digest(name: str) -> str:
    return "+" + hashlib.sha256(name.encode()).hexdigest()[:10]


def _tiny_json() -> dict:
    """The tiny preset as a model file's JSON, without its name."""
    from autotune.models import PRESETS

    return {key: value for key, value in PRESETS["tiny"].to_json().items() if key != "name"}


def test_allow_estimated_energy_is_said_where_the_backend_never_reads_it(tmp_path):
    """Trial 31 #12: the simulate backend's figures are simulated, never estimated: the flag did nothing
    there, without a word. A replay reads it (a recorded estimate is ranked only with it): nothing said."""
    import argparse

    from autotune.commands.run import LAUNCH_ONLY, ignored_launch_options

    def args(**given):
        return argparse.Namespace(**{**LAUNCH_ONLY, "allow_estimated_energy": False, **given})

    flag = ("--allow-estimated-energy is read only by --backend launch and replay: the simulate backend's energy is "
            "simulated, never estimated from a probe")
    done = autotune("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--backend", "simulate",
                    "--allow-estimated-energy", "--out", tmp_path / "r")
    assert done.returncode == 0, done.stderr
    assert f"warning: {flag}" in " ".join(done.stderr.split())
    assert ignored_launch_options(args(allow_estimated_energy=True), "simulate") == flag
    assert ignored_launch_options(args(allow_estimated_energy=True), "replay") is None
    assert ignored_launch_options(args(allow_estimated_energy=True), "launch") is None
    assert ignored_launch_options(args(), "simulate") is None
    assert ignored_launch_options(args(allow_estimated_energy=True, repeats=3), "simulate") == (
        f"--repeats is read only by --backend launch: the simulate backend starts no probe; {flag}")


@pytest.mark.parametrize("command", ["run", "space", "report", "export", "sensors", "calibrate", "compare"])
def test_an_unknown_option_is_the_subcommands_usage_error(command, capsys, tmp_path):
    """Its fix is in the subcommand's --help, which lists its options, not in `autotune --help`."""
    from autotune.cli import main

    run_dir = [str(tmp_path)] if command in ("report", "export", "compare") else []
    with pytest.raises(SystemExit) as stopped:
        main([command, *run_dir, "--bogus-flag=1"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err == f"autotune {command}: error: unrecognized arguments: --bogus-flag=1 (see `autotune {command} --help`)\n"


def test_the_space_table_says_once_why_its_simulated_figures_carry_an_unknown_error():
    """A newcomer's trial: `space --simulate` on an uncalibrated profile showed '(sim +- ?%)' and nothing else."""
    done = autotune_main("space", "--model", "7b", "--nodes", "1", "--valid", "--simulate", "--hardware", "h100-sxm")
    assert done.returncode == 0, done.stderr
    assert "?%)" in done.stdout  # the column headers (rich may break "(sim +- ?%)" across header lines)
    said = [line for line in done.stderr.splitlines() if "unknown error" in line]
    assert said == ["autotune space: Simulated figures carry an unknown error (+- ?%): this hardware profile was not "
                    "calibrated (`autotune calibrate` measures the simulator's error and writes it to the profile)."]
    stated = autotune_main("space", "--model", "7b", "--nodes", "1", "--valid", "--simulate")  # gh200: +- 3% in the headers
    assert stated.returncode == 0 and "unknown error" not in stated.stderr and "Simulated figures" not in stated.stderr


@pytest.mark.parametrize(("arguments", "line"), [
    (["run", "--model", "7b"], "autotune: interrupted; completed trials are kept, run the same command again to resume"),
    (["space", "--model", "72b"], "autotune: interrupted; nothing was written"),
    (["sensors"], "autotune: interrupted; nothing was written"),
    (["calibrate", "--reference", "gh200-study"],
     "autotune: interrupted; no file is left half-written: each is as before, or written whole"),
    (["report", "runs/a"], "autotune: interrupted; no file is left half-written: each is as before, or written whole"),
    (["export", "runs/a"], "autotune: interrupted; no file is left half-written: each is as before, or written whole"),
    ([], "autotune: interrupted"),
])
def test_only_an_interrupted_run_says_its_trials_are_kept(arguments, line):
    """Trial 48 #10: Ctrl-C in `space` or `calibrate` said "completed trials are kept, run the same command again to
    resume", of commands that have no trials."""
    assert cli._interrupted_line(arguments) == line


def test_objectives_in_either_order_are_the_front_of_both(tmp_path):
    """Trial 48 §16: `--objectives energy,time` was an invalid choice; it is the same study as time,energy."""
    import json

    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "3",
                         "--objectives", "energy, time", "--out", tmp_path / "r")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "r" / "pareto.json").read_text())["objectives"] == ["time", "energy"]
    again = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "3",
                          "--objectives", "time,energy", "--out", tmp_path / "r")
    assert again.returncode == 0, again.stderr  # the same study: resumed, not refused as other objectives
    wrong = autotune_main("run", "--model", "7b", "--nodes", "1", "--objectives", "energy", "--out", tmp_path / "w")
    assert wrong.returncode == 2 and "invalid choice: 'energy'" in wrong.stderr


def test_quiet_prints_no_line_per_trial_and_keeps_the_rest(tmp_path):
    """Trial 48 §8: a 300-trial job's output file held a line per trial, with no way to leave them out but
    2>/dev/null, which hid the warnings too."""
    loud = autotune_main("run", "--model", "32b", "--nodes", "2-4", "--out", tmp_path / "loud")
    quiet = autotune_main("run", "--model", "32b", "--nodes", "2-4", "-q", "--out", tmp_path / "quiet")
    assert loud.returncode == quiet.returncode == 0
    assert "trial 0 (1/" in loud.stderr and "trial 0" not in quiet.stderr
    for kept in ("warning: no candidate on 3 nodes is valid", "converged after", "run directory:"):
        assert kept in quiet.stderr
    assert quiet.stdout == loud.stdout.replace(str(tmp_path / "loud"), str(tmp_path / "quiet"))  # the report itself


def _run_with_patch(tmp_path, patch: str) -> subprocess.CompletedProcess:
    """`autotune run` (simulate, 2 trials) as a process, with `patch` (Python) applied first."""
    code = (
        "import gc, os, signal, sys, weakref\n"
        "from autotune import cli\n"
        f"{patch}\n"
        f"sys.argv = ['autotune', 'run', '--model', '7b', '--nodes', '1', '--trials', '2', '--out', {str(tmp_path / 'run')!r}]\n"
        "cli.console_main()\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_a_sigterm_whose_raise_a_garbage_collector_callback_drops_still_stops_the_run(tmp_path):
    """Trial 51 #2: SIGTERM while the reports were built was raised inside a weakref callback of the collector;
    Python drops what is raised there ("Exception ignored ... Terminated"), and the run went on to exit 0."""
    patch = (
        "from autotune.commands import finish\n"
        "real = finish.finish_run\n"
        "class Thing: pass\n"
        "def dropped(ref):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    for _ in range(100000): pass  # the handler runs here, inside the callback\n"
        "def finish_run(*args, **kwargs):\n"
        "    thing = Thing(); ref = weakref.ref(thing, dropped); del thing\n"
        "    return real(*args, **kwargs)\n"
        "finish.finish_run = finish_run\n"
    )
    done = _run_with_patch(tmp_path, patch)
    assert done.returncode == 143, done.stderr[-2000:]
    said = " ".join(done.stderr.split())
    assert "Exception ignored" not in said and "Traceback" not in said
    assert f"SIGTERM came while the reports of {tmp_path / 'run'} were written; they are written whole" in said
    assert "autotune: interrupted; completed trials are kept" in said
    assert (tmp_path / "run" / "pareto.json").is_file()


def test_a_sigterm_between_the_study_and_its_reports_is_said(tmp_path):
    """Trial 51 #2: between the study's handler and the reports' one SIGTERM had its default action: status 143,
    no word and no report."""
    patch = (
        "from autotune.study import loop\n"
        "real = loop.probes_running_elsewhere\n"
        "def elsewhere(study):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real(study)\n"
        "loop.probes_running_elsewhere = elsewhere\n"
    )
    done = _run_with_patch(tmp_path, patch)
    assert done.returncode == 143, done.stderr[-2000:]
    said = " ".join(done.stderr.split())
    assert f"stopped while writing the reports of {tmp_path / 'run'}" in said and "Traceback" not in said


def test_a_sigterm_during_the_start_up_of_a_run_says_it_was_interrupted(tmp_path):
    """Trial 51 #7: SIGTERM before the first trial (imports, the space, the storage) ended the run with 143 and no
    line at all."""
    patch = (
        "real = cli.build_parser\n"
        "def build_parser():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real()\n"
        "cli.build_parser = build_parser\n"
    )
    done = _run_with_patch(tmp_path, patch)
    assert done.returncode == 143, done.stderr[-2000:]
    assert "autotune: interrupted; completed trials are kept" in done.stderr and "Traceback" not in done.stderr


_WRITES_WHOLE = "autotune: interrupted; no file is left half-written: each is as before, or written whole"


@pytest.mark.parametrize(("arguments", "line"), [
    (["report", "runs/a"], _WRITES_WHOLE),
    (["export", "runs/a"], _WRITES_WHOLE),
    (["calibrate", "--reference", "gh200-study"], _WRITES_WHOLE),
    (["space", "--model", "7b", "--nodes", "1"], "autotune: interrupted; nothing was written"),
    (["compare", "runs/a", "runs/b"], "autotune: interrupted; nothing was written"),
])
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2"])
def test_a_signal_that_stops_a_run_stops_every_command_with_its_line(arguments, line, name):
    """report and export ended by SIGTERM silent (143, an empty log) where Ctrl-C said what was kept: each command
    stops on run's stop signals as on Ctrl-C, with its interrupted line and 128 + the signal."""
    import signal

    code = (
        "import os, signal, sys, time\n"
        "from autotune import cli\n"
        f"from autotune.commands import {arguments[0]} as command\n"
        "def stopped(args):\n"
        f"    os.kill(os.getpid(), signal.{name})\n"
        "    time.sleep(60)\n"
        "command._run = stopped\n"
        f"sys.argv = ['autotune', *{arguments!r}]\n"
        "cli.console_main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 128 + getattr(signal, name), result.stderr
    assert result.stderr.strip().splitlines() == [line]


def test_a_stop_signal_after_the_command_finished_its_work_does_not_turn_it_into_a_silent_stop(tmp_path):
    """Trial 56 #2: a SIGTERM that came after a command had printed everything (a job's signal a moment late) ended
    it with 143 and no line, so a job script read a finished export as stopped. Once main() returned, the stop
    signals are ignored: the status is what the command did. The signal here comes as its output is flushed."""
    code = (
        "import os, signal, sys\n"
        "from autotune import cli\n"
        "class LateSignal:\n"
        "    def __init__(self, stream): self.stream = stream\n"
        "    def write(self, text): return self.stream.write(text)\n"
        "    def flush(self):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        for _ in range(100000): pass  # a handler would run here\n"
        "        return self.stream.flush()\n"
        "    def __getattr__(self, name): return getattr(self.stream, name)\n"
        "real = cli.main\n"
        "def main():\n"
        "    status = real()\n"
        "    sys.stdout = LateSignal(sys.stdout)\n"
        "    return status\n"
        "cli.main = main\n"
        "sys.argv = ['autotune', 'space', '--model', '7b', '--nodes', '1', '--valid']\n"
        "cli.console_main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "interrupted" not in done.stderr and "valid" in done.stdout
