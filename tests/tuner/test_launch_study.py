"""`autotune run --backend launch` as a user runs it: real 2-rank DeepSpeed probes on CPU."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from autotune.study.retries import is_evaluated

pytestmark = pytest.mark.slow
RUN = [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--nodes", "1", "--gpus-per-node", "2",
       "--hardware", "cpu", "--backend", "launch", "--warmup-steps", "1", "--probe-steps", "2"]


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "AUTOTUNE_PROBE_TEST_HOOK"}
    return {**env, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", **extra}


def _study(out: Path) -> optuna.Study:
    return optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")


def test_interrupted_launch_study_resumes_to_a_measured_front(tmp_path):
    """The issue's command; Ctrl-C after a probe; the same command finishes with it kept. A budget of 2: the
    first probe's result is the signal to interrupt, so the second is the one cut short and the resume has it
    left to probe (each probe here is two ranks' start-up, ~6 s of the suite: three of them)."""
    out = tmp_path / "run"
    cmd = [*RUN, "--trials", "2", "--allow-estimated-energy", "--out", str(out)]
    # Output to a file, not a pipe: nothing reads a pipe while the test polls, and a full one would
    # block the tuner's writes.
    log = open(tmp_path / "first.log", "w+")  # noqa: SIM115 - closed below
    # SIGINT at its default in the tuner, as in a terminal: a test run started in the background (nohup,
    # `cmd &` in a script) ignores SIGINT, the tuner would inherit that, and Python then installs no
    # KeyboardInterrupt handler: Ctrl-C would never reach it.
    first = subprocess.Popen(cmd, env=_env(), stdout=log, stderr=subprocess.STDOUT, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Waits for the second trial's directory: the first is in the study by then (trials run one after another),
    # and the second probe has begun, which the signal then cuts short.
    deadline = time.time() + 240
    while time.time() < deadline and first.poll() is None and not (out / "trials" / "0001").is_dir():
        time.sleep(0.5)
    assert first.poll() is None, "the tuner finished before the test could interrupt it"
    first.send_signal(signal.SIGINT)
    first.wait(timeout=120)
    log.seek(0)
    output = log.read()
    log.close()
    assert first.returncode == 130, output[-2000:]
    kept = {t.number: t.values for t in _study(out).trials if is_evaluated(t)}
    assert len(kept) >= 1
    running = [t for t in _study(out).trials if t.state == optuna.trial.TrialState.RUNNING]
    assert not running  # the interrupted trial is closed (and queued again), not left running

    # Resumed with longer probes: the study goes on, and says its earlier probes measured otherwise.
    second = subprocess.run([*cmd, "--probe-steps", "3"], env=_env(), capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    said = " ".join(second.stderr.split())
    assert "the probes now measure otherwise than this study's earlier ones (--probe-steps 2 then, 3 now)" in said
    study = _study(out)
    evaluated = [t for t in study.trials if is_evaluated(t)]
    assert len(evaluated) == 2
    assert {t.number: t.values for t in evaluated if t.number in kept} == kept
    pareto = json.loads((out / "pareto.json").read_text())
    assert pareto["backend"] == "launch" and pareto["front"]
    for point in pareto["front"]:
        assert point["source"] == "measured" and point["energy_source"] == "estimated"
    for number in kept:
        assert (out / "trials" / f"{number:04d}" / "result.json").is_file()


def test_failing_probes_are_results_and_the_study_goes_on(tmp_path):
    """Real probes that run out of memory or crash are the study's results, and it goes on. (A hanging one is a
    timeout result: a real hang killed in tests/backends/test_launch_runs.py, a timed-out probe in a study in
    tests/tuner/test_timeout_retry.py and test_failing_start.py; here it cost the suite a 25 s wait.)"""
    space = tmp_path / "space.toml"
    space.write_text(
        'zero_stage = [0, 1, 2]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["none"]\n'
        "sp_degree = [1]\nmicro_batch = [1]\n"
    )
    out = tmp_path / "run"
    hooks = "oom@zero_stage=1;crash@zero_stage=2"
    # One rank a probe: what is under test is the study's, and a crash on one of two ranks has its own test
    # (tests/trainer/test_probe_runs.py); two ranks' start-up cost the suite seconds a probe.
    one_rank = [*RUN[:RUN.index("--gpus-per-node") + 1], "1", *RUN[RUN.index("--gpus-per-node") + 2:]]
    cmd = [*one_rank, "--trials", "3", "--objectives", "time", "--space", str(space), "--out", str(out)]
    done = subprocess.run(cmd, env=_env(AUTOTUNE_PROBE_TEST_HOOK=hooks), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    by_stage = {t.user_attrs["candidate"]["knobs"]["zero_stage"]: t for t in _study(out).trials if is_evaluated(t)}
    assert set(by_stage) == {0, 1, 2}
    assert by_stage[0].state == optuna.trial.TrialState.COMPLETE
    oom = by_stage[1]
    assert oom.state == optuna.trial.TrialState.PRUNED and oom.constraints["probe_oom"] > 0  # infeasible evidence
    crash = by_stage[2]
    assert crash.state == optuna.trial.TrialState.FAIL
    assert "simulated probe failure" in crash.user_attrs["result"]["error"]
    pareto = json.loads((out / "pareto.json").read_text())
    statuses = pareto["trials_by_status"]
    assert statuses.get("oom") == 1 and statuses.get("failed") == 1
    assert [p["trial"] for p in pareto["front"]] == [by_stage[0].number]
    # What set the probes, every flag the run took (trial 50 #10: the timeout and estimated energy were left out).
    assert pareto["inputs"]["probe_settings"] == {"--warmup-steps": 1, "--probe-steps": 2, "--probe-seconds": 0.0,
                                                  "--repeats": 1, "--probe-timeout": 900.0, "--allow-estimated-energy": False}


def test_energy_objective_without_a_sensor_is_refused(tmp_path):
    done = subprocess.run([*RUN, "--trials", "1", "--out", str(tmp_path / "run")], env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "--allow-estimated-energy" in done.stderr and "--objectives time" in done.stderr
    assert not (tmp_path / "run" / "study.db").exists()


def test_a_custom_hardware_profile_given_relative_reaches_the_probes(tmp_path):
    """`--hardware my-cluster.toml` (what `autotune calibrate -o` writes, as the README says to use it):
    every probe reads the profile again from its candidate.json, in its own trial directory."""
    from autotune.hardware import PROFILE_DIR

    (tmp_path / "my-cpu.toml").write_text((PROFILE_DIR / "cpu.toml").read_text())
    cmd = [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--nodes", "1", "--gpus-per-node", "1",
           "--hardware", "my-cpu.toml", "--backend", "launch", "--warmup-steps", "1", "--probe-steps", "2",
           "--trials", "1", "--allow-estimated-energy", "--out", "run"]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    candidate = json.loads((tmp_path / "run" / "trials" / "0000" / "candidate.json").read_text())
    assert candidate["hardware"] == str(tmp_path / "my-cpu.toml")
    assert json.loads((tmp_path / "run" / "trials" / "0000" / "result.json").read_text())["status"] == "ok"
