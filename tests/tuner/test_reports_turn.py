"""Two workers of one run directory that end together: the reports written last are of the study as it
stands then (trial 47 #3: the last pareto.json held 5 trials of a study of 6, the snapshot of a worker
that read the study before the other's last probe ended and wrote after it)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time

import optuna
from rich.console import Console

from autotune.commands import finish
from autotune.study import load_finished_study
from tests.cli import autotune_main

RUN = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--sampler", "random")


def _trials(run_dir) -> int:
    return json.loads((run_dir / "pareto.json").read_text(encoding="utf-8"))["trials"]


def test_a_worker_that_read_the_study_first_does_not_write_its_older_reports_last(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    before = len(load_finished_study(out).trials)
    built, go = threading.Event(), threading.Event()
    real_build = finish.build_report

    def build_then_wait(*args, **kwargs):  # this worker has read the study; its write comes later
        made = real_build(*args, **kwargs)
        built.set()
        assert go.wait(60)
        return made

    monkeypatch.setattr(finish, "build_report", build_then_wait)
    slow = threading.Thread(target=finish.finish_run, args=(load_finished_study(out), out, Console(file=io.StringIO())))
    slow.start()
    assert built.wait(60)
    # The other worker probes one more candidate and writes its reports, in its own process.
    other = subprocess.Popen([sys.executable, "-m", "autotune.cli", *RUN, "--trials", "4", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    storage = f"sqlite:///{out / 'study.db'}"
    deadline = time.monotonic() + 60
    while len(optuna.load_study(study_name=None, storage=storage).trials) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)  # time enough for it to write, were the reports not taken in turns
    go.set()
    slow.join(60)
    _, stderr = other.communicate(timeout=60)
    assert other.returncode == 0, stderr
    after = len(load_finished_study(out).trials)
    assert after > before and _trials(out) == after


def test_a_report_writing_the_run_directory_waits_for_the_turn(tmp_path):
    """`autotune report` rewrites the same files a finishing worker writes: it takes its turn too, and what it
    writes is of the study when it has the turn."""
    import fcntl

    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    (out / "pareto.json").unlink()
    with open(out / ".reports.lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        report = subprocess.Popen([sys.executable, "-m", "autotune.cli", "report", str(out)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        assert report.poll() is None and not (out / "pareto.json").exists()  # waiting for the turn
    _, stderr = report.communicate(timeout=60)
    assert report.returncode == 0, stderr
    assert _trials(out) == len(load_finished_study(out).trials)
