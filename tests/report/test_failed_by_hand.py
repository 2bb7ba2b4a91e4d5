"""A trial marked FAIL by hand (or whose run was killed after its probe) keeps its probe's result until a run queues it
again: the report counts it, and says why it is off the front (trial 66 #3: it vanished from every count)."""

from __future__ import annotations

import json
import sqlite3

from autotune.report.study_points import UNRECORDED_PROBE_REASON, study_view
from autotune.study.storage import load_finished_study
from tests.cli import autotune_main


def test_a_trial_marked_fail_by_hand_is_counted_and_said_until_a_run_takes_it_over(tmp_path):
    out = tmp_path / "run"
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2", "--backend", "simulate",
                         "--trials", "3", "--out", out).returncode == 0
    with sqlite3.connect(out / "study.db") as connection:  # what an Optuna user does: no API marks a finished trial
        (trial_id,) = connection.execute("select trial_id from trials where number = 1").fetchone()
        connection.execute("update trials set state = 'FAIL' where trial_id = ?", (trial_id,))
        connection.execute("delete from trial_values where trial_id = ?", (trial_id,))
    report = autotune_main("report", out, "--format", "json")
    assert report.returncode == 0, report.stderr
    document = json.loads(report.stdout)
    assert document["trials"] == 3 and document["trials_by_status"].get("interrupted") == 1
    assert 1 not in [point["trial"] for point in document["front"]]
    row = next(r for r in study_view(load_finished_study(out)).trials if r["trial"] == 1)
    assert (row["status"], row["reason"]) == ("interrupted", UNRECORDED_PROBE_REASON)  # report.html's reason column
