"""LaunchBackend with real probe subprocesses: the trial directory, every outcome, and cleanup.

Kept cheap: the tiny model on CPU ranks, one warm-up and two measured steps (see conftest.py).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from autotune.backends.launch import ProbeInterrupted
from autotune.ds_config import deepspeed_config
from tests.backends.conftest import PROBE_TIMEOUT_S, live_processes_mentioning

pytestmark = pytest.mark.slow
HANG = {"AUTOTUNE_PROBE_TEST_HOOK": "hang"}


def _explain(result) -> str:
    return f"{result.status}: {result.error}\n{result.details.get('log_tail', '')}"


def _wait_for_hang(log_path, timeout_s: float = 60.0) -> None:
    """Until the probe reports it reached the hook (past process-group set-up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log_path.exists() and "sleeps until killed" in log_path.read_text():
            return
        time.sleep(0.2)
    raise AssertionError(f"the probe never reached the hang hook:\n{log_path.read_text()[-3000:]}")


def test_two_ranks_under_torchrun_write_the_trial_directory(make_launch_backend, make_candidate):
    backend = make_launch_backend()
    candidate = make_candidate(gpus_per_node=2, zero_stage=2)
    result = backend.evaluate(candidate, trial_number=7)
    assert result.ok, _explain(result)

    trial = backend.run_dir / "trials" / "0007"
    assert {"candidate.json", "ds_config.json", "log.txt", "result.json"} <= {p.name for p in trial.iterdir()}
    assert json.loads((trial / "candidate.json").read_text()) == candidate.to_file()
    ds_config = json.loads((trial / "ds_config.json").read_text())
    probe_result = json.loads((trial / "result.json").read_text())
    assert ds_config == deepspeed_config(candidate) == probe_result["ds_config"]  # exported == ran
    assert "torch.distributed.run" in (trial / "log.txt").read_text().splitlines()[0]

    assert probe_result["world_size"] == 2
    assert result.source == "measured" and result.energy_source == "estimated"
    workload_steps = candidate.workload.samples / candidate.workload.global_batch
    assert result.time_s == pytest.approx(probe_result["step_time_s"]["mean"] * workload_steps)
    measured = probe_result["steps"]["measured"]
    assert result.energy_kj == pytest.approx(probe_result["energy"]["energy_j"] / measured * workload_steps / 1000)
    assert result.tflops == pytest.approx(probe_result["tflops"]["model_per_device"])
    assert result.details["energy"]["provenance"] == "estimated" and result.details["energy"]["timeline"]
    assert result.details["trial_dir"] == str(trial) and "cv" not in result.details


def test_a_hung_probe_times_out_and_leaves_no_process(make_launch_backend, make_candidate):
    # 12 s: both ranks reach the hang hook in ~3-5 s on 2 cores (before the DeepSpeed engine), so the
    # timeout still finds them hung rather than starting up.
    backend = make_launch_backend(env_extra=HANG, probe_timeout_s=12.0)
    started_s = time.monotonic()
    result = backend.evaluate(make_candidate(gpus_per_node=2), trial_number=1)
    assert result.status == "timeout", _explain(result)
    assert time.monotonic() - started_s < 12.0 + backend.kill_grace_s + 10.0
    assert "12 s" in result.error and "sleeps until killed" in result.details["log_tail"]
    trial = backend.run_dir / "trials" / "0001"
    assert live_processes_mentioning(str(trial)) == []  # agent and both ranks are gone


def test_a_real_timeout_stays_the_candidates_beside_another_installs_build_lock(make_launch_backend, make_candidate,
                                                                                 tmp_path, monkeypatch):
    """Another install's old build lock (its own folder under torch's) is nothing this probe waited on: the
    timeout stays final, and the lock is left to its install (trial 67 §14: it was blamed, to be deleted)."""
    from autotune.study.retries import setup_failure

    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)  # the probes build in this install's folder
    cache = tmp_path / "xdg"
    others = cache / "torch_extensions" / "autotune-py311-0therinst" / "cpu_adam" / "lock"
    others.parent.mkdir(parents=True)
    others.write_text("")
    os.utime(others, (time.time() - 3600, time.time() - 3600))
    backend = make_launch_backend(env_extra={**HANG, "XDG_CACHE_HOME": str(cache)}, probe_timeout_s=12.0)
    result = backend.evaluate(make_candidate(gpus_per_node=1), trial_number=1)
    assert result.status == "timeout", _explain(result)
    assert "build lock" not in result.error and "timeout_cause" not in result.details
    assert setup_failure(result) is False and others.exists()


def test_a_crashing_probe_is_failed_with_its_error_and_log(make_launch_backend, make_candidate):
    backend = make_launch_backend(env_extra={"AUTOTUNE_PROBE_TEST_HOOK": "crash"})
    result = backend.evaluate(make_candidate(gpus_per_node=1), trial_number=2)
    assert result.status == "failed"
    assert "simulated probe failure" in result.error
    assert "simulated probe failure" in result.details["log_tail"]
    assert result.details["exit_code"] != 0 and result.energy_kj is None


def _own_trainer_probe(tmp_path, body: str) -> str:
    """A PYTHONPATH whose `trainer.probe` is `body` (a user's own training script, run by torchrun's ranks as the
    probe), every other trainer module the real one: ranks that fail as `body` says, without importing torch."""
    from tests.backends.conftest import REPO

    package = tmp_path / "own" / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"__path__.append({str(REPO / 'trainer')!r})\n")
    (package / "probe.py").write_text("import os, signal, sys, time\nrank = int(os.environ['RANK'])\n" + body)
    return f"{package.parent}:{REPO}"


def test_a_rank_that_crashes_while_the_other_works_fails_the_candidate_under_torchrun(make_launch_backend,
                                                                                    make_candidate, tmp_path):
    """Trial79 #1: rank 0 raises while rank 1 still works (as ranks are when one fails); torchrun stops rank 1 with
    SIGTERM itself. A failed trial, and the study goes on: it was "stopped by SIGTERM from outside the tuner" (exit 143),
    on every resume."""
    path = _own_trainer_probe(tmp_path, "if rank == 0:\n    raise RuntimeError('rank 0 lost its GPU (simulated)')\n"
                                        "time.sleep(60)\n")
    backend = make_launch_backend(env_extra={"PYTHONPATH": path})
    try:
        result = backend.evaluate(make_candidate(gpus_per_node=2), trial_number=1)
    except ProbeInterrupted as stop:  # a KeyboardInterrupt: it would end the test session
        pytest.fail(f"a crash taken for a stop: {stop}")
    assert result.status == "failed", _explain(result)
    assert result.error.startswith("the probe exited with status 1 without writing a result"), _explain(result)
    assert "closing signal SIGTERM" in (backend.trial_dir(1) / "log.txt").read_text()  # the race was lost: rank 1 ran


def test_a_rank_killed_by_sigkill_under_torchrun_is_named_and_final(make_launch_backend, make_candidate, tmp_path):
    """Trial79 #6: the OOM killer's SIGKILL of one rank read as a set-up failure, the signal said nowhere."""
    from autotune.study.retries import setup_failure

    path = _own_trainer_probe(tmp_path, "if rank == 1:\n    os.kill(os.getpid(), signal.SIGKILL)\ntime.sleep(60)\n")
    backend = make_launch_backend(env_extra={"PYTHONPATH": path})
    result = backend.evaluate(make_candidate(gpus_per_node=2), trial_number=1)
    assert result.status == "failed" and "rank 1 was killed by signal 9 (SIGKILL" in result.error, _explain(result)
    assert result.details["failed_rank"] == 1 and setup_failure(result) is False


def test_an_out_of_memory_probe_is_oom(make_launch_backend, make_candidate):
    backend = make_launch_backend(env_extra={"AUTOTUNE_PROBE_TEST_HOOK": "oom"})
    result = backend.evaluate(make_candidate(gpus_per_node=1), trial_number=3)
    assert result.status == "oom", _explain(result)
    assert "simulated out-of-memory" in result.error


def test_repeats_keep_every_result_and_report_the_mean_and_spread(make_launch_backend, make_candidate):
    backend = make_launch_backend(repeats=2)
    result = backend.evaluate(make_candidate(gpus_per_node=1), trial_number=4)
    assert result.ok, _explain(result)
    trial = backend.run_dir / "trials" / "0004"
    assert (trial / "result-1.json").exists() and (trial / "result-2.json").exists()
    assert not (trial / "result.json").exists()
    repeats = result.details["repeats"]
    assert len(repeats) == 2
    assert result.time_s == pytest.approx(sum(r["time_s"] for r in repeats) / 2)
    assert result.energy_kj == pytest.approx(sum(r["energy_kj"] for r in repeats) / 2)
    assert result.details["cv"]["time"] >= 0 and result.details["cv"]["energy"] >= 0


def test_abort_from_another_thread_kills_the_running_probe(make_launch_backend, make_candidate):
    backend = make_launch_backend(env_extra=HANG, probe_timeout_s=PROBE_TIMEOUT_S)
    raised: list[BaseException] = []

    def study_loop():
        try:
            backend.evaluate(make_candidate(gpus_per_node=2), trial_number=5)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what reached the loop
            raised.append(exc)

    loop = threading.Thread(target=study_loop)
    loop.start()
    trial = backend.run_dir / "trials" / "0005"
    _wait_for_hang(trial / "log.txt")
    backend.abort()
    loop.join(timeout=backend.kill_grace_s + 15.0)
    assert not loop.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], ProbeInterrupted)
    assert live_processes_mentioning(str(trial)) == []
    with pytest.raises(ProbeInterrupted):  # abort is final: no new probe starts during shutdown
        backend.evaluate(make_candidate(gpus_per_node=1), trial_number=6)


def test_ctrl_c_during_a_probe_kills_it_and_propagates(make_launch_backend, make_candidate):
    backend = make_launch_backend(env_extra=HANG, probe_timeout_s=PROBE_TIMEOUT_S)
    trial = backend.run_dir / "trials" / "0008"

    def interrupt(signum, frame):
        if "sleeps until killed" not in (trial / "log.txt").read_text():
            signal.alarm(1)  # not hung yet: Ctrl-C a little later
            return
        raise KeyboardInterrupt  # what Python's SIGINT handler does in the study's main thread

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(3)
    try:
        with pytest.raises(KeyboardInterrupt):
            backend.evaluate(make_candidate(gpus_per_node=1), trial_number=8)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert live_processes_mentioning(str(trial)) == []


def test_the_deepspeed_launcher_runs_a_probe_from_a_local_hostfile(tmp_path, make_launch_backend, make_candidate, monkeypatch):
    (tmp_path / "hostfile").write_text("localhost slots=2\n")
    monkeypatch.chdir(tmp_path)
    backend = make_launch_backend(launcher="auto", hostfile=Path("hostfile"))  # relative, as `--hostfile hostfile`
    result = backend.evaluate(make_candidate(gpus_per_node=2), trial_number=9)
    assert result.ok, _explain(result)
    assert result.details["launcher"] == "deepspeed"
    log = (backend.run_dir / "trials" / "0009" / "log.txt").read_text()
    assert "deepspeed.launcher.runner" in log and f"--hostfile {tmp_path / 'hostfile'} " in log
    assert "Unable to find hostfile" not in log  # DeepSpeed's runner read it (a probe starts in its trial directory)
