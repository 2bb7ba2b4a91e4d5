"""Opening a study's storage: workers that start together on a new SQLite file both get the study."""

from __future__ import annotations

import multiprocessing

import pytest

from autotune.errors import UserError
from autotune.study.storage import open_study

ROUNDS = 8


def _open_when_both_ready(run_dir, barrier, results) -> None:
    barrier.wait(timeout=60)
    try:
        open_study(run_dir, None, None)
        results.put("ok")
    except UserError as exc:
        results.put(str(exc))


def test_workers_starting_together_on_a_new_sqlite_file_both_open_the_study(tmp_path):
    """Both create Optuna's tables at once (without the retry, a round fails about half the time:
    'table studies already exists', 'UNIQUE constraint failed: alembic_version.version_num')."""
    context = multiprocessing.get_context("fork")
    for round_ in range(ROUNDS):
        run_dir = tmp_path / f"run{round_}"
        barrier, results = context.Barrier(2), context.Queue()
        workers = [context.Process(target=_open_when_both_ready, args=(run_dir, barrier, results)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert [worker.exitcode for worker in workers] == [0, 0]
        assert sorted(results.get(timeout=5) for _ in workers) == ["ok", "ok"], f"round {round_}"


def test_a_storage_that_cannot_be_opened_is_one_line_naming_the_url(tmp_path):
    with pytest.raises(UserError, match=r"cannot open study storage 'sqlite:////nonexistent-dir/x.db'"):
        open_study(tmp_path, "sqlite:////nonexistent-dir/x.db", None)
