"""Two workers of one run directory on one machine's devices, the second under a --time-limit: its probe waits for the
first worker's probe (backends/device_turns.py), and the time limit is asked again after the wait. A probe the time
left no longer holds is not started (a SLURM job's end would have killed it half-way): the run stops as the time
limit stops a study (its stop line, its reports, exit 75), and the candidate that waited is probed on resume."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from autotune.study.retries import is_evaluated
from autotune.study.time_limit import REPORT_MARGIN_S, TIME_LIMIT_EXIT_STATUS

pytestmark = pytest.mark.slow
# One rank a probe, as few steps as a probe takes: what is under test is the wait, not the probe.
RUN = [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--nodes", "1", "--gpus-per-node", "1",
       "--hardware", "cpu", "--backend", "launch", "--warmup-steps", "1", "--probe-steps", "2",
       "--allow-estimated-energy"]
# The first worker's probe measures this long (--probe-seconds): it holds the devices for as long, and more.
FIRST_PROBE_S = 45
# The second worker's --probe-timeout: its probe may take this and the 10 s a timed-out probe is given to stop.
SECOND_TIMEOUT_S = 30
# Its --time-limit holds that probe and the reports with SLACK_S to spare as it starts (its start-up on a loaded
# machine is under it), and not once it has waited for the first worker's probe (FIRST_PROBE_S and its start-up).
SLACK_S = 30


def _env(**extra: str) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if k != "AUTOTUNE_PROBE_TEST_HOOK"}
    return {**env, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", **extra}


def _study(out: Path) -> optuna.Study:
    return optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")


def _wait_for(path: Path, text: str, process: subprocess.Popen, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        if path.is_file() and text in path.read_text(encoding="utf-8", errors="replace"):
            return
        time.sleep(0.2)
    pytest.fail(f"{path} never said {text!r} (the worker ended with {process.poll()})")


def test_a_probe_the_time_left_no_longer_holds_after_its_wait_is_not_started_and_is_probed_on_resume(tmp_path):
    out = tmp_path / "run"
    first_log = open(tmp_path / "first.log", "w+")  # noqa: SIM115 - closed below; a file, as no one reads a pipe
    first = subprocess.Popen([*RUN, "--trials", "1", "--probe-seconds", str(FIRST_PROBE_S), "--out", str(out)],
                             env=_env(), stdout=first_log, stderr=subprocess.STDOUT, text=True)
    try:
        # Its probe launched: it holds the devices from here on, for FIRST_PROBE_S and more.
        _wait_for(out / "trials" / "0000" / "log.txt", "== autotune: repeat 1/1", first)
        limit_s = SECOND_TIMEOUT_S + 10 + REPORT_MARGIN_S + SLACK_S
        second = subprocess.run([*RUN, "--trials", "2", "--probe-timeout", str(SECOND_TIMEOUT_S), "--time-limit",
                                 f"{int(limit_s) // 60}:{int(limit_s) % 60:02d}", "--out", str(out)],
                                env=_env(), capture_output=True, text=True, timeout=400)
        first.wait(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
        first_log.seek(0)
        first_said = first_log.read()
        first_log.close()
    said = second.stdout + second.stderr
    assert second.returncode == TIME_LIMIT_EXIT_STATUS, said[-3000:]
    assert first.returncode == 0, first_said[-3000:]
    waiting = r"trial 1: another worker's probe runs on the devices of .*: this one starts when it ends"
    assert re.search(waiting, said), said
    held = ("trial 1: not probed: too little time is left before the time limit for a probe and the reports, after the "
            "wait for the other probe on the same devices; its candidate is probed when the study resumes")
    assert held in said, said
    # The line docs/launch.md quotes is the one the run prints.
    docs = (Path(__file__).parents[2] / "docs" / "launch.md").read_text(encoding="utf-8")
    quoted = re.search(r"^trial 7: not probed: .*$", docs, re.MULTILINE)
    assert quoted and quoted[0].replace("trial 7:", "trial 1:") in said
    # The stop line of a study the time limit stopped, as where it is asked before a trial.
    stop = r"stopped: .* left of --time-limit \(ends \d\d:\d\d\), and a probe may take up to 40\.0 s"
    assert re.search(stop, said), said
    # Nothing of the waiting trial ran: no launcher started, no result, not a failed probe of its candidate.
    log = (out / "trials" / "0001" / "log.txt").read_text(encoding="utf-8")
    assert "== autotune: repeat" not in log and "not probed: too little time is left" in log, log
    study = _study(out)
    waited = study.trials[1]
    assert waited.state == TrialState.FAIL and "result" not in waited.user_attrs and not is_evaluated(waited)
    assert waited.user_attrs.get("interrupted") and "probe_wall_s" not in waited.user_attrs
    # What was measured is kept: the first worker's probe.
    assert study.trials[0].state == TrialState.COMPLETE and is_evaluated(study.trials[0])

    # Resumed with time enough: the candidate that waited is probed, as a retry of its trial.
    again = subprocess.run([*RUN, "--trials", "2", "--out", str(out)], env=_env(), capture_output=True, text=True,
                           timeout=400)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    study = _study(out)
    retries = [t for t in study.trials if t.user_attrs.get("retry_of") == 1]
    assert len(retries) == 1 and is_evaluated(retries[0]) and retries[0].state == TrialState.COMPLETE
    assert retries[0].params == waited.params
    assert sum(is_evaluated(t) for t in study.trials) == 2
