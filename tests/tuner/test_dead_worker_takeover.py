"""A worker that outlives another on one study probes the dead worker's trial again before it ends (trial 51 #4)."""

from __future__ import annotations

import subprocess
import sys
import time

import optuna
import pytest

from autotune.study.retries import is_evaluated

pytestmark = pytest.mark.slow

RUN = ["run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--sampler", "random", "--trials", "3"]
# Worker A: its second probe never ends (the process is killed in it, as by SIGKILL or a node lost).
STUCK = ("import sys, time; from autotune.backends.simulate import SimulateBackend as B; fast = B.evaluate\n"
         "def evaluate(self, candidate, trial_number=0):\n"
         "    if trial_number >= 1:\n"
         "        print('stuck in trial', trial_number, file=sys.stderr, flush=True); time.sleep(600)\n"
         "    return fast(self, candidate, trial_number)\n"
         "B.evaluate = evaluate\n"
         "from autotune.cli import console_main; console_main()\n")
# Worker B: after its first pass of the study, it waits until the test has killed A.
SURVIVOR = ("import os, time; from pathlib import Path; from autotune.study import loop; first = loop.run_study\n"
            "def run_study(*args, **kwargs):\n"
            "    ran = first(*args, **kwargs)\n"
            "    loop.run_study = first\n"
            "    Path(os.environ['PASSED']).touch()\n"
            "    while not Path(os.environ['A_DEAD']).exists(): time.sleep(0.1)\n"
            "    time.sleep(float(os.environ['SETTLE_S']))  # a --storage worker's heartbeat goes stale\n"
            "    return ran\n"
            "loop.run_study = run_study\n"
            "from autotune.cli import console_main; console_main()\n")


def _wait_for(predicate, timeout_s: float = 60) -> None:
    deadline = time.time() + timeout_s
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.parametrize("shared", [False, True], ids=["run-directory", "storage"])
def test_the_surviving_worker_probes_a_dead_workers_trial_before_it_ends(tmp_path, monkeypatch, shared):
    """Trial 51 #4: the survivor finished with "1 still probing on other workers" for a worker dead long since, and
    the study stayed short of its budget and held a RUNNING trial until a later run. A dead worker: none holds the
    run directory's lock but this one, or (--storage) its heartbeat is older than the grace."""
    out = tmp_path / "run"
    run = [*RUN, "--out", str(out)]
    if shared:
        run += ["--storage", f"sqlite:///{tmp_path / 'shared.db'}"]
        monkeypatch.setenv("AUTOTUNE_HEARTBEAT_INTERVAL_S", "1")
        monkeypatch.setenv("AUTOTUNE_HEARTBEAT_GRACE_S", "2")
    a_err = tmp_path / "a.err"
    with open(a_err, "w") as err:
        worker_a = subprocess.Popen([sys.executable, "-c", STUCK, *run], stderr=err,
                                    stdout=subprocess.DEVNULL)
    try:
        _wait_for(lambda: "stuck in trial" in a_err.read_text())
        env = {**__import__("os").environ, "PASSED": str(tmp_path / "passed"), "A_DEAD": str(tmp_path / "a_dead"),
               "SETTLE_S": "3" if shared else "0"}
        worker_b = subprocess.Popen([sys.executable, "-c", SURVIVOR, *run], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: (tmp_path / "passed").exists() or worker_b.poll() is not None)
    finally:
        worker_a.kill()  # SIGKILL: its trial stays RUNNING in the study, its lock on the run directory is gone
        worker_a.wait()
    (tmp_path / "a_dead").touch()
    stdout, stderr = worker_b.communicate(timeout=120)
    said = " ".join(stderr.split())
    assert worker_b.returncode == 0, said[-3000:]
    stuck = int(a_err.read_text().split("stuck in trial")[1].split()[0])
    how = "their heartbeat is older than the grace" if shared else f"no other worker holds {out} any more"
    assert f"trial {stuck} of a worker that is gone ({how})" in said, said
    assert "still probing on other workers" not in said
    storage = f"sqlite:///{tmp_path / 'shared.db'}" if shared else f"sqlite:///{out / 'study.db'}"
    study = optuna.load_study(study_name="autotune", storage=storage)
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
    assert sum(is_evaluated(t) for t in study.trials) == 3
    retried = [t for t in study.trials if is_evaluated(t)
               and stuck in (t.user_attrs.get("retry_of"), t.system_attrs.get("failed_trial"))]
    assert retried
