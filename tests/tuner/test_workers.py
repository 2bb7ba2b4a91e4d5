"""Several `autotune run` workers sharing one study on a real PostgreSQL server."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest

from autotune.report.study_points import study_view
from autotune.study.retries import is_evaluated

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    """A throwaway PostgreSQL server on 127.0.0.1 (Debian's package; .ci/run installs it)."""
    pytest.importorskip("psycopg", reason="the PostgreSQL driver comes with `pip install -e .[dev]`")
    bindirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bindirs:
        pytest.skip("PostgreSQL server not installed (apt-get install postgresql)")
    bindir = Path(bindirs[-1])
    # Not under pytest's tmp_path: that is private to root, and the server runs as another user.
    data = Path(tempfile.mkdtemp(prefix="autotune-pg-")) / "data"
    run_as = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the package's postgres user
        run_as = ["runuser", "-u", "postgres", "--"]
        data.parent.chmod(0o777)
    subprocess.run([*run_as, bindir / "initdb", "-D", data, "-A", "trust", "-U", "autotune"], check=True,
                   capture_output=True, timeout=120)
    port = _free_port()
    options = f"-p {port} -h 127.0.0.1 -k {data}"
    subprocess.run([*run_as, bindir / "pg_ctl", "-D", data, "-o", options, "-l", data / "log", "-w", "start"],
                   check=True, capture_output=True, timeout=120)
    yield f"postgresql://autotune@127.0.0.1:{port}/postgres"
    subprocess.run([*run_as, bindir / "pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True, timeout=60)
    shutil.rmtree(data.parent, ignore_errors=True)


def _worker(url: str, out: Path, trials: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "2-8", "--trials", str(trials),
           "--backend", "simulate", "--sampler", "tpe", "--storage", url, "--out", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_workers_share_one_study(postgres_url, tmp_path):
    trials = 30
    workers = [_worker(postgres_url, tmp_path / f"worker{i}", trials) for i in range(2)]
    for w in workers:
        _, stderr = w.communicate(timeout=300)
        assert w.returncode == 0, stderr[-2000:]
    study = optuna.load_study(study_name="autotune", storage=postgres_url)
    evaluated = [t for t in study.trials if is_evaluated(t)]
    # A worker starts no probe the budget has no room for (counting the other's running one), so the
    # study never holds more than `trials`; two that reserve the last probe at once may both stop.
    assert trials - 1 <= len(evaluated) <= trials
    knobs = Counter(json.dumps(t.user_attrs["candidate"]["knobs"], sort_keys=True) for t in evaluated)
    assert max(knobs.values()) == 1  # no candidate evaluated twice
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
    # Both wrote a report of the shared study; the one that finished last, of all of it.
    fronts = [json.loads((tmp_path / f"worker{i}" / "pareto.json").read_text()) for i in range(2)]
    assert max(f["trials"] for f in fronts) == len(study_view(study).trials)


@pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")  # the test plays the dead worker with ask()
def test_a_dead_workers_trial_is_retried_by_another(postgres_url, tmp_path, monkeypatch):
    """A worker that died mid-trial leaves it RUNNING; once its heartbeat is stale, the next worker
    fails it and probes the same candidate again (Optuna heartbeats)."""
    from autotune.commands.options import settings_for
    from autotune.study import open_study
    from autotune.study.loop import make_sampler
    from autotune.study.queued import suggest_knobs
    from autotune.study.valid import usable_values, valid_checks

    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as connection:  # a database of its own
        connection.execute("CREATE DATABASE dead_worker")
    url = postgres_url.rsplit("/", 1)[0] + "/dead_worker"
    monkeypatch.setenv("AUTOTUNE_HEARTBEAT_INTERVAL_S", "1")
    monkeypatch.setenv("AUTOTUNE_HEARTBEAT_GRACE_S", "2")

    settings = settings_for("--model", "32b", "--nodes", "2-8")
    study = open_study(tmp_path, url, make_sampler(0, 5))
    study.set_user_attr("settings", settings.to_dict())
    study.set_user_attr("objectives", "time,energy")
    checks = valid_checks(settings)
    valid = next(c for c in checks if c.valid)
    study.enqueue_trial(valid.candidate.knobs.to_dict())
    dead = study.ask()
    params = suggest_knobs(dead, usable_values(checks))
    dead.set_user_attr("candidate", settings.candidate(params).to_dict())
    study._storage.record_heartbeat(dead._trial_id)  # the worker was alive once, then vanished
    time.sleep(3)
    worker = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "2-8", "--trials", "3",
         "--backend", "simulate", "--storage", url, "--out", str(tmp_path / "w")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "AUTOTUNE_HEARTBEAT_INTERVAL_S": "1",
                                                          "AUTOTUNE_HEARTBEAT_GRACE_S": "2"},
    )
    assert worker.returncode == 0, worker.stderr[-2000:]
    trials = optuna.load_study(study_name="autotune", storage=url).trials
    assert trials[dead.number].state == optuna.trial.TrialState.FAIL
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == dead.number]
    assert len(retried) == 1 and retried[0].params == params and is_evaluated(retried[0])


def test_two_workers_on_a_small_space_evaluate_every_valid_candidate_once(postgres_url, tmp_path):
    """The same race as on SQLite (tests/tuner/test_sqlite_workers.py), on PostgreSQL."""
    import psycopg

    from tests.tuner.test_sqlite_workers import run_two_workers_and_check

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE DATABASE small_space")
    run_two_workers_and_check(tmp_path, postgres_url.rsplit("/", 1)[0] + "/small_space")
