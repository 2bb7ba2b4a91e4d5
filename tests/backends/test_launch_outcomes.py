"""LaunchBackend outcomes with a stand-in probe (fast): the backend starts `PYTHON -m trainer.probe
ARGS` for a one-rank candidate, so a small script given as `python` plays the probe's part."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.backends.conftest import live_processes_mentioning, probe_result

PRELUDE = f"""#!{sys.executable}
import json, subprocess, sys, time
out = sys.argv[sys.argv.index("--out") + 1]
def write(result):
    with open(out, "w") as handle:
        json.dump(result, handle)
"""


@pytest.fixture
def fake_probe(tmp_path):
    """fake_probe(body) -> path of an executable script that acts as the probe."""

    def make(body: str):
        script = tmp_path / "fake-python"
        script.write_text(PRELUDE + textwrap.dedent(body))
        script.chmod(0o755)
        return str(script)

    return make


def test_a_probe_exiting_without_a_result_is_failed_with_its_log(make_launch_backend, make_candidate, fake_probe):
    python = fake_probe('print("rank 0: segfault in the loss", file=sys.stderr)\nsys.exit(3)\n')
    result = make_launch_backend(python=python).evaluate(make_candidate(), trial_number=1)
    assert result.status == "failed" and "exited with status 3 without writing a result" in result.error
    assert "segfault in the loss" in result.details["log_tail"]


def test_a_stale_result_of_an_earlier_attempt_never_counts(make_launch_backend, make_candidate, fake_probe):
    backend = make_launch_backend(python=fake_probe("sys.exit(1)\n"))
    trial = backend.trial_dir(1)
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps(probe_result()))
    assert backend.evaluate(make_candidate(), trial_number=1).status == "failed"


def test_a_refusal_keeps_the_probe_s_error(make_launch_backend, make_candidate, fake_probe):
    python = fake_probe('write({"status": "failed", "error": "UnsupportedCandidate: use zero_stage 3", '
                        '"refused": True, "failed_rank": 0})\nsys.exit(1)\n')
    result = make_launch_backend(python=python).evaluate(make_candidate(), trial_number=1)
    assert result.status == "failed" and result.error == "UnsupportedCandidate: use zero_stage 3"
    assert result.details["refused"] is True and result.details["exit_code"] == 1


def test_a_trainer_failure_on_its_setup_is_the_studys_setup_failure(make_launch_backend, make_candidate, fake_probe):
    """Trial 69 #7: an unwritable ~/.cache failed the trainer before DeepSpeed saw the candidate; its result named
    rank 0, and the study kept the baseline's failure as final. The trainer says `setup_failure`, and the study
    reads it (study/retries.py), so a resume probes the candidate again."""
    from autotune.study.retries import setup_failure

    python = fake_probe('write({"status": "failed", "error": "PermissionError: [Errno 13] Permission denied: '
                        '\'/home/u/.cache\'", "failed_rank": 0, "setup_failure": True})\nsys.exit(1)\n')
    result = make_launch_backend(python=python).evaluate(make_candidate(), trial_number=1)
    assert result.status == "failed" and result.details["setup_failure"] is True and result.details["failed_rank"] == 0
    assert setup_failure(result)


def test_a_hang_kills_the_whole_group_including_grandchildren(make_launch_backend, make_candidate, fake_probe):
    # Like a launcher whose ranks start helpers: the `sleep` is a grandchild, reachable only through the group.
    python = fake_probe('subprocess.Popen(["sleep", "300", out])\nprint("hung", flush=True)\ntime.sleep(300)\n')
    backend = make_launch_backend(python=python, probe_timeout_s=1.0, kill_grace_s=1.0)
    result = backend.evaluate(make_candidate(), trial_number=2)
    assert result.status == "timeout" and "1 s" in result.error and "hung" in result.details["log_tail"]
    assert live_processes_mentioning(str(backend.trial_dir(2))) == []


def test_a_probe_ignoring_sigterm_is_killed_after_the_grace(make_launch_backend, make_candidate, fake_probe):
    python = fake_probe("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)\n")
    backend = make_launch_backend(python=python, probe_timeout_s=1.0, kill_grace_s=0.5)
    assert backend.evaluate(make_candidate(), trial_number=3).status == "timeout"
    assert live_processes_mentioning(str(backend.trial_dir(3))) == []


def test_a_written_result_counts_even_if_the_probe_then_hangs_in_teardown(make_launch_backend, make_candidate, fake_probe):
    python = fake_probe(f"write({probe_result()!r})\ntime.sleep(300)\n")
    backend = make_launch_backend(python=python, probe_timeout_s=1.0, kill_grace_s=0.5)
    result = backend.evaluate(make_candidate(), trial_number=4)
    assert result.ok and result.time_s == pytest.approx(0.5 * 32)
    assert "killed after 1 s, after the result was written" in (backend.trial_dir(4) / "log.txt").read_text()


def test_helpers_left_behind_by_a_finished_probe_are_killed(make_launch_backend, make_candidate, fake_probe):
    python = fake_probe(f'subprocess.Popen(["sleep", "300", out])\nwrite({probe_result()!r})\n')
    backend = make_launch_backend(python=python)
    assert backend.evaluate(make_candidate(), trial_number=5).ok
    assert live_processes_mentioning(str(backend.trial_dir(5))) == []


def test_a_result_missing_figures_is_failed_not_a_crash(make_launch_backend, make_candidate, fake_probe):
    python = fake_probe('write({"status": "ok", "steps": {"measured": 2}})\n')
    result = make_launch_backend(python=python).evaluate(make_candidate(), trial_number=6)
    assert result.status == "failed" and "lacks a figure" in result.error


def test_a_launcher_that_cannot_start_is_failed(make_launch_backend, make_candidate, tmp_path):
    result = make_launch_backend(python=str(tmp_path / "no-such-python")).evaluate(make_candidate(), 7)
    assert result.status == "failed" and "could not start" in result.error


def test_more_nodes_than_torchrun_reaches_is_failed_without_a_launch(make_launch_backend, make_candidate):
    backend = make_launch_backend(launcher="auto")
    result = backend.evaluate(make_candidate(gpus_per_node=1, nodes=2), trial_number=8)
    assert result.status == "failed" and "--hostfile" in result.error
    assert "not launched" in (backend.trial_dir(8) / "log.txt").read_text()
    assert json.loads((backend.trial_dir(8) / "ds_config.json").read_text())["train_batch_size"] == 2


def test_every_probe_carries_its_whole_cost(make_launch_backend, make_candidate, fake_probe):
    """Time: the whole probe on the tuner's clock, every repeat; energy: the measured windows only."""
    block = {"provenance": "measured", "energy_j": 500.0, "window_s": 0.1, "components": {"gpu_j": 500.0}, "mean_power_w": 100.0}
    ok = make_launch_backend(python=fake_probe(f"time.sleep(0.3)\nwrite({probe_result(energy_block=block)!r})\n"), repeats=2)
    result = ok.evaluate(make_candidate(), trial_number=2)
    assert result.ok, result.error
    cost = result.details["probe_cost"]
    assert cost["parts"]["runs"] == 2 and len(cost["parts"]["wall_s"]) == 2
    assert cost["time_s"] >= 0.6 and cost["time_s"] >= cost["parts"]["window_s"]
    windows_j = [json.loads((ok.trial_dir(2) / f"result-{i}.json").read_text())["energy"]["energy_j"] for i in (1, 2)]
    assert cost["energy_scope"] == "window" and cost["energy_kj"] == pytest.approx(sum(windows_j) / 1000.0)
    failed = make_launch_backend(python=fake_probe("time.sleep(0.2)\nsys.exit(3)\n")).evaluate(make_candidate(), trial_number=3)
    assert failed.status == "failed"
    assert failed.details["probe_cost"]["time_s"] >= 0.2 and failed.details["probe_cost"]["energy_kj"] is None


def test_a_timeout_spent_on_an_older_build_lock_is_the_setups_failure(make_launch_backend, make_candidate, fake_probe,
                                                                       tmp_path):
    """A probe that waits on a torch extension build lock older than itself (another process's build, or one
    on a shared file system) timed out on the set-up, not on the candidate: a resume probes it again. A
    timeout whose only lock is its own build's (made during the probe) stays the candidate's."""
    import os
    import time

    from autotune.study.retries import setup_failure

    extensions = tmp_path / "torch_extensions"  # the probes' own, given in the backend's env (not the tuner's)
    own_build = extensions / "py311_cpu" / "cpu_adam" / "lock"
    python = fake_probe(f'import pathlib\nlock = pathlib.Path({str(own_build)!r})\nlock.parent.mkdir(parents=True, '
                        'exist_ok=True)\nlock.write_text("")\ntime.sleep(300)\n')
    backend = make_launch_backend(python=python, probe_timeout_s=1.0, kill_grace_s=0.5,
                                  env_extra={"TORCH_EXTENSIONS_DIR": str(extensions)})
    own = backend.evaluate(make_candidate(), trial_number=1)
    assert own.status == "timeout" and "build lock" not in own.error and "timeout_cause" not in own.details
    assert setup_failure(own) is False

    own_build.unlink()
    older = extensions / "py311_cpu" / "deepspeed_shm_comm" / "lock"
    older.parent.mkdir(parents=True)
    older.write_text("")
    os.utime(older, (time.time() - 600, time.time() - 600))
    waited = backend.evaluate(make_candidate(), trial_number=2)
    assert waited.status == "timeout" and f"a torch extension build lock older than the probe is held ({older})" in waited.error
    assert waited.details["timeout_cause"] == "build_lock" and waited.details["build_locks"] == [str(older)]
    assert setup_failure(waited) is True
    assert f"build lock older than the probe is held ({older})" in (backend.trial_dir(2) / "log.txt").read_text()


@pytest.mark.parametrize("body", [
    "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(30)\n",  # the launcher ended by the signal
    # torchrun's agent, its own SIGTERM turned into an exception (exit status 1)
    'print("torch.distributed.elastic.multiprocessing.api.SignalException: Process 7 got signal: 15", file=sys.stderr)\n'
    "sys.exit(1)\n",
    # a rank ended by SIGTERM first: torchrun's failure table, and torchrun exits 1
    'print("  exitcode  : -15 (pid: 8)\\n  traceback : Signal 15 (SIGTERM) received by PID 8", file=sys.stderr)\n'
    "sys.exit(1)\n",
    'print("slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***")\nsys.exit(1)\n',
])
def test_a_probe_stopped_by_a_signal_from_outside_interrupts_the_trial(make_launch_backend, make_candidate, fake_probe,
                                                                      body):
    """Trial 51 #1: SLURM signals every process of a job (scancel, preemption, a time limit); a probe that died of
    that SIGTERM before the tuner got its own was a failed candidate, never probed again, and the next probe
    started. It is an interruption: the study stops as on SIGTERM (143) and retries the trial on resume."""
    from autotune.backends.launch import ProbeStoppedOutside

    backend = make_launch_backend(python=fake_probe(body))
    with pytest.raises(ProbeStoppedOutside) as stopped:
        backend.evaluate(make_candidate(), trial_number=2)
    assert stopped.value.status == 143 and isinstance(stopped.value, KeyboardInterrupt)
    assert stopped.value.reason.startswith("the probe was stopped by SIGTERM from outside the tuner (a SLURM stop?): ")
    log = (backend.trial_dir(2) / "log.txt").read_text().splitlines()
    assert "the probe was stopped by SIGTERM from outside the tuner" in log[-1] and log[-1].startswith("== autotune: ")


def _stopped_by_sigterm_after_1_s(backend, candidate, trial_number: int) -> None:
    """`backend.evaluate`, stopped 1 s in as the tuner's SIGTERM handler stops it: Terminated raised in the main
    thread (by SIGALRM here), which evaluate lets through once it has stopped the probe."""
    import signal

    from autotune.errors import Terminated

    def terminated(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGALRM, terminated)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(Terminated):
            backend.evaluate(candidate, trial_number=trial_number)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_stopped_probe_whose_processes_outlive_sigkill_is_said_so(make_launch_backend, make_candidate, fake_probe,
                                                                     monkeypatch, capfd):
    """Trial 61 #12: the tuner waits for its stopped probe's processes (SIGTERM, SIGKILL after the grace), but not
    for ever, and one stuck in the kernel outlives SIGKILL. It exited as if the probe were gone; it now says which
    of its processes were still there, on the console and as the log's last line."""
    import os
    import re
    import signal

    from autotune.backends import probe_process

    backend = make_launch_backend(python=fake_probe('print("training", flush=True)\ntime.sleep(60)\n'), kill_grace_s=0.3)
    monkeypatch.setattr(probe_process, "_SIGKILL_WAIT_S", 0.3)
    monkeypatch.setattr(probe_process.os, "killpg", lambda pgid, signum: None)  # no signal ends it, as in the D state
    monkeypatch.setattr(probe_process.os, "kill", lambda pid, signum: None)
    try:
        _stopped_by_sigterm_after_1_s(backend, make_candidate(), trial_number=6)
    finally:
        monkeypatch.undo()
    last = (backend.trial_dir(6) / "log.txt").read_text().splitlines()[-1]
    stuck = re.search(r"; its process (\d+) was still there 0.3 s after SIGKILL \(stuck in the kernel: a hung file system "
                      r"or device driver\?\); the tuner exits without waiting longer: `ps -p (\d+)` shows whether they are "
                      r"gone before the next probe on these devices$", last)
    assert stuck and "the tuner stopped this probe (SIGTERM)" in last, last
    os.kill(int(stuck[1]), signal.SIGKILL)
    err = capfd.readouterr().err
    assert f"autotune: the probe in {backend.trial_dir(6)} was stopped; its process {stuck[1]} was still there" in err, err


@pytest.mark.parametrize("body, said", [
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "was killed by signal 9"),  # the OOM killer
    # a rank the OOM killer ended, the other stopped by torchrun's SIGTERM: the root cause (last) decides
    ('print("traceback : Signal 15 (SIGTERM) received by PID 9\\nRoot Cause (first observed failure):\\n'
     'traceback : Signal 9 (SIGKILL) received by PID 8", file=sys.stderr)\nsys.exit(1)\n', "exited with status 1"),
])
def test_a_probe_killed_by_sigkill_stays_a_failure(make_launch_backend, make_candidate, fake_probe, body, said):
    result = make_launch_backend(python=fake_probe(body)).evaluate(make_candidate(), trial_number=3)
    assert result.status == "failed" and said in result.error


def test_a_crash_whose_sibling_torchrun_stopped_is_a_failure_not_a_stop(make_launch_backend, make_candidate, fake_probe):
    """Trial79 #1: rank 0 raised, and torchrun SIGTERMed rank 1 itself: the candidate's failure, and the study goes on
    (it stopped with 143 on "SIGTERM from outside the tuner", and every resume stopped on it again)."""
    from tests.backends.test_probe_outcome import TORCHRUN_SIBLING_STOPPED

    from autotune.backends.launch import ProbeInterrupted

    python = fake_probe(f"print({TORCHRUN_SIBLING_STOPPED!r}, file=sys.stderr)\nsys.exit(1)\n")
    try:
        result = make_launch_backend(python=python).evaluate(make_candidate(), trial_number=3)
    except ProbeInterrupted as stop:  # a KeyboardInterrupt: it would end the test session
        pytest.fail(f"a crash taken for a stop: {stop}")
    assert result.status == "failed" and result.error == ("the probe exited with status 1 without writing a result: "
                                                          "KeyError: 'missing_key'")


def test_a_rank_killed_by_sigkill_is_named_and_stays_the_candidates_failure(make_launch_backend, make_candidate,
                                                                           fake_probe):
    """Trial79 #6: torchrun exits 1 when the OOM killer ends a rank: that read as a set-up failure (probed again on
    every resume) with no word of the signal, though a SIGKILL stays the candidate's failure (docs/launch.md)."""
    from autotune.study.retries import setup_failure
    from tests.backends.test_probe_outcome import TORCHRUN_SIBLING_STOPPED

    table = TORCHRUN_SIBLING_STOPPED.replace("  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 30200)",
                                             "  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 30200)  (SIGKILL)")
    result = make_launch_backend(python=fake_probe(f"print({table!r}, file=sys.stderr)\nsys.exit(1)\n")).evaluate(
        make_candidate(), trial_number=3)
    assert result.status == "failed" and result.error == (
        "the probe exited with status 1 without writing a result: rank 1 was killed by signal 9 (SIGKILL: the kernel's "
        "OOM killer, or a kill -9)")  # not the other rank's KeyError
    assert result.details["failed_rank"] == 1 and setup_failure(result) is False
    segfault = table.replace("-9 (pid: 30200)  (SIGKILL)", "-11 (pid: 30200)  (SIGSEGV)")
    result = make_launch_backend(python=fake_probe(f"print({segfault!r}, file=sys.stderr)\nsys.exit(1)\n")).evaluate(
        make_candidate(), trial_number=4)
    assert result.error.endswith("rank 1 was killed by signal 11 (SIGSEGV)") and setup_failure(result) is True


def test_a_torn_result_is_said_unreadable_not_unwritten(make_launch_backend, make_candidate, fake_probe):
    """Trial79 #4: a result.json that does not parse was told as "exited with status 0 without writing a result"."""
    python = fake_probe('open(out, "w").write(\'{"status": "ok", "step_time_s": \')\n')
    backend = make_launch_backend(python=python)
    result = backend.evaluate(make_candidate(), trial_number=3)
    out = backend.trial_dir(3).resolve() / "result.json"
    assert result.status == "failed" and result.error == (
        f"the probe exited with status 0 and left an unreadable result ({out}: JSONDecodeError: Expecting value: "
        "line 1 column 33 (char 32))")


def test_a_probe_killed_by_sigkill_names_no_exception_from_the_tuners_notes(make_launch_backend, make_candidate,
                                                                           fake_probe):
    """Trial79 #3: the tuner's note that an earlier trial's result.json was "unreadable or partial (JSONDecodeError)"
    was given as the exception of a resumed probe the kernel killed."""
    backend = make_launch_backend(python=fake_probe("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"))
    earlier = backend.trial_dir(1)
    earlier.mkdir(parents=True)
    (earlier / "result.json").write_text('{"status": "ok", "step_')
    candidate = make_candidate()
    backend.resumes(2, [1], candidate)
    result = backend.evaluate(candidate, trial_number=2)
    assert "JSONDecodeError" in result.details["log_tail"]  # the tuner's note is there
    assert result.error == ("the probe was killed by signal 9 (SIGKILL: the kernel's OOM killer, or a kill -9) without "
                            "writing a result")


@pytest.mark.parametrize("change, said", [
    # trial79 #11: shown as "-4,000 ms (measured), -400 J", and the sampler proposed the candidate 276 times
    ({"step_time_s": {"mean": -0.5, "all": [-0.5]}, "energy": {"provenance": "estimated", "energy_j": -100.0}},
     "has step_time_s.mean = -0.5, which is out of range; it must be a number > 0"),
    ({"energy": {"provenance": "estimated", "energy_j": -100.0}},
     "has energy.energy_j = -100.0, which is out of range; it must be a number > 0"),
    ({"tflops": "fast"}, 'has tflops = "fast", not an object with model_per_device'),  # was a TypeError, no field
    ({"mfu": float("nan")}, "has mfu = NaN, which is not finite; it must be a number >= 0"),
    ({"step_time_s": {"mean": 1e-30}}, "has step_time_s.mean = 1e-30, a damaged figure (scaled to the workload: "),
])
def test_a_result_with_a_figure_out_of_range_is_refused_where_it_is_read(make_launch_backend, make_candidate, fake_probe,
                                                                        change, said):
    """Trial79 #11: a result.json's figures were taken unchecked; one out of range is the candidate's failed trial,
    naming the file, the field and its value, and is never probed again (not the set-up's)."""
    from autotune.study.retries import setup_failure

    doctored = {**probe_result(), **change}
    backend = make_launch_backend(python=fake_probe(f"write(json.loads({json.dumps(doctored)!r}))\n"))
    result = backend.evaluate(make_candidate(), trial_number=3)
    out = backend.trial_dir(3).resolve() / "result.json"
    assert result.status == "failed" and result.time_s is None and result.energy_kj is None
    assert result.error.startswith(f"refused the probe's result: {out} {said}"), result.error
    assert setup_failure(result) is False


def test_the_log_of_a_probe_the_tuner_stopped_ends_saying_so(make_launch_backend, make_candidate, fake_probe):
    """Trial 51 #7: after a preemption, the log of the probe the tuner stopped ended with the launcher's command
    line alone, which reads as a hang. It ends with the tuner's line: which signal, and when."""
    import threading

    from autotune.backends.launch import ProbeInterrupted

    backend = make_launch_backend(python=fake_probe('print("training", flush=True)\ntime.sleep(60)\n'), kill_grace_s=1.0)
    _stopped_by_sigterm_after_1_s(backend, make_candidate(), trial_number=4)
    last = (backend.trial_dir(4) / "log.txt").read_text().splitlines()[-1]
    assert last.startswith("== autotune: ") and "the tuner stopped this probe (SIGTERM)" in last

    backend = make_launch_backend(python=fake_probe('print("training", flush=True)\ntime.sleep(60)\n'), kill_grace_s=1.0)
    threading.Timer(1.0, backend.abort).start()
    with pytest.raises(ProbeInterrupted):
        backend.evaluate(make_candidate(), trial_number=5)
    assert "the tuner stopped this probe (abort())" in (backend.trial_dir(5) / "log.txt").read_text().splitlines()[-1]


def test_a_repeat_that_times_out_says_which_and_keeps_what_the_finished_ones_measured(make_launch_backend, make_candidate,
                                                                                       fake_probe):
    """trial79 #9: repeat 2 of 2 timed out, and the trial said only "no result within 40 s": repeat 1's ok result was
    said nowhere. The status stays the last repeat's (docs/launch.md); the error and the details say the rest."""
    python = fake_probe(f'if out.endswith("result-1.json"):\n    write({probe_result(step_time_s=0.984)!r})\n'
                        'else:\n    time.sleep(60)\n')
    backend = make_launch_backend(python=python, repeats=2, probe_timeout_s=3.0, kill_grace_s=1.0)
    result = backend.evaluate(make_candidate(), trial_number=7)
    assert result.status == "timeout"
    assert result.error == ("repeat 2 of 2: no result within 3 s: killed the probe's process group; repeat 1 finished ok "
                            "(0.984 s per step, kept in result-1.json)")
    assert result.details["ended_at_repeat"] == 2
    [finished] = result.details["finished_repeats"]
    assert finished["step_time_s"] == 0.984 and finished["result_file"] == str(backend.trial_dir(7) / "result-1.json")
