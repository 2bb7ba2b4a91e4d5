"""A study whose trial numbers have a gap: Optuna has no API to delete one trial, so its users delete a bad one
from the database in SQL. Optuna reads such a study fine (numbers 0, 2, 3, ...), and so must autotune: a trial
is looked up by its number, never by its place in the list (trial 66 #4: report and run ended in IndexError)."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

import optuna

from autotune.study.retries import retry_lineage, retry_words, trials_by_number
from tests.cli import autotune_main

RUN = ("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2", "--backend", "simulate")


def _delete_trial(db, number: int) -> None:
    """What the user did: the trial's rows removed from every table that holds them."""
    with sqlite3.connect(db) as connection:
        (trial_id,) = connection.execute("select trial_id from trials where number = ?", (number,)).fetchone()
        for table in ("trial_params", "trial_values", "trial_intermediate_values", "trial_user_attributes",
                      "trial_system_attributes", "trial_heartbeats", "trials"):
            connection.execute(f"delete from {table} where trial_id = ?", (trial_id,))


def test_report_and_run_take_a_study_with_a_deleted_trial(tmp_path):
    out = tmp_path / "run"
    assert autotune_main(*RUN, "--trials", "4", "--out", out).returncode == 0
    _delete_trial(out / "study.db", 1)
    numbers = [t.number for t in optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}").trials]
    assert 1 not in numbers and max(numbers) >= len(numbers)

    report = autotune_main("report", out)
    assert report.returncode == 0, report.stderr
    assert f"{len(numbers)} trials" in report.stdout

    resumed = autotune_main(*RUN, "--trials", "5", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr


def _trial(number: int, retry_of: int | None = None):
    return SimpleNamespace(number=number, user_attrs={} if retry_of is None else {"retry_of": retry_of}, system_attrs={})


def test_a_retry_is_traced_by_number_and_a_deleted_original_ends_its_lineage():
    # Trial 1 was deleted; 3 retries 2, which retried 0; 4 retries the deleted 1.
    trials = trials_by_number([_trial(0), _trial(2, retry_of=0), _trial(3, retry_of=2), _trial(4, retry_of=1)])
    assert retry_lineage(trials, 3) == [2, 0]
    assert retry_words(trials, [2, 0]) == "retry of interrupted trial 2"
    assert retry_lineage(trials, 4) == []
