"""A run directory's study database and lock files that this user may not open (trial69 #1, #9): one line naming
the file and the fix, exit 2; no guess at a moved directory, no traceback. Run where file modes apply
(read_only.where_modes_apply: root without the capabilities that override them)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests import cli
from tests.read_only import where_modes_apply


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return cli.simulated_run(tmp_path_factory, nodes=1, trials=3)


def _autotune(*args) -> subprocess.CompletedProcess:
    return subprocess.run(where_modes_apply([sys.executable, "-m", "autotune.cli", *map(str, args)]),
                          capture_output=True, text=True, timeout=120)


_RUN = ("run", "--model", "7b", "--nodes", 1, "--trials", 4, "--backend", "simulate", "--out")


def test_an_unreadable_study_db_is_said_unreadable_with_the_chmod_that_fixes_it(tmp_path, finished):
    """report and export said "cannot be opened any more (its directory moved, deleted or unmounted?) ... put it
    back"; run said it could not be written and that `autotune report` read it as it was, which it did not."""
    run = shutil.copytree(finished, tmp_path / "run")
    database = run / "study.db"
    database.chmod(0)
    said = f"the study database {database} cannot be read (permission denied); make it "
    again = ", as its owner), then run the same command again\n"
    for argv in (("report", run), ("export", run, "--pick", "knee", "-o", tmp_path / "k.json"),
                 ("export", run, "--measurements", tmp_path / "m.jsonl")):
        done = _autotune(*argv)
        assert (done.returncode, done.stderr) == (2, f"autotune {argv[0]}: error: {said}readable (chmod u+r {database}{again}")
    done = _autotune(*_RUN, run)
    assert (done.returncode, done.stderr) == (2, f"autotune run: error: {said}readable and writable (chmod u+rw {database}{again}")
    database.chmod(0o644)
    assert cli.autotune_main("report", run).returncode == 0  # nothing was written to it
