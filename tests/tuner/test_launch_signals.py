"""`autotune run --backend launch` under SLURM-style stops: real probes, real signals (trial 51)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

pytestmark = pytest.mark.slow
RUN = [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--nodes", "1", "--hardware", "cpu",
       "--backend", "launch", "--warmup-steps", "1", "--probe-steps", "1", "--allow-estimated-energy",
       "--sampler", "random"]


def _env(**extra: str) -> dict:
    return {**os.environ, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", **extra}


def _study(out: Path) -> optuna.Study:
    return optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")


def _probe_processes(out: Path) -> list[int]:
    """The live processes of the probes of run `out` (the launcher and its ranks: they carry the probe's mark)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and b"AUTOTUNE_PROBE_ID=" in (entry / "environ").read_bytes()
                    and str(out).encode() in (entry / "cmdline").read_bytes()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_for(predicate, process, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline and process.poll() is None and not predicate():
        time.sleep(0.2)
    assert process.poll() is None, "the tuner ended before the test could signal it"
    assert predicate(), "timed out waiting"


def test_a_probe_sigterm_stopped_before_the_tuner_is_retried_and_starts_no_other(tmp_path):
    """Trial 51 #1: SLURM's SIGTERM reached the probe (torchrun and its ranks) before the tuner: the trial was a
    failed candidate, never probed again, and the tuner started the next probe. Now the run stops as on SIGTERM."""
    out = tmp_path / "run"
    log = open(tmp_path / "tuner.log", "w+")  # noqa: SIM115 - closed below
    tuner = subprocess.Popen([*RUN, "--gpus-per-node", "2", "--trials", "3", "--probe-timeout", "120", "--out", str(out)],
                             env=_env(AUTOTUNE_PROBE_TEST_HOOK="hang"), stdout=log, stderr=subprocess.STDOUT)
    try:
        probe_log = out / "trials" / "0000" / "log.txt"
        # Both ranks hang in the trainer: torchrun and its ranks are up, as in a job mid-probe.
        _wait_for(lambda: probe_log.is_file() and probe_log.read_text().count("sleeps until killed") == 2, tuner, 120)
        for pid in _probe_processes(out):  # every process of the probe at once, as SLURM signals a job's; not the tuner
            os.kill(pid, signal.SIGTERM)
        status = tuner.wait(timeout=60)
    finally:
        tuner.kill()
        tuner.wait()
    log.seek(0)
    said = " ".join(log.read().split())
    log.close()
    assert status == 143, said[-3000:]
    assert "the probe was stopped by SIGTERM from outside the tuner (a SLURM stop?): " in said
    assert "trial 1: probing" not in said and "autotune: interrupted; completed trials are kept" in said
    trial = _study(out).trials[0]
    assert trial.state == optuna.trial.TrialState.FAIL and trial.user_attrs.get("interrupted")
    assert "result" not in trial.user_attrs  # not a failed candidate: probed again on resume
    assert "stopped by SIGTERM from outside the tuner" in probe_log.read_text().splitlines()[-1]
    assert not _probe_processes(out)
