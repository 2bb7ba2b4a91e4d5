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


def test_a_lock_file_another_user_made_serves_this_one_and_an_unreadable_one_is_one_line(tmp_path, finished):
    """A colleague's run left .workers.lock 0644 (their umask) in a shared run directory: the second user, who may
    write study.db, got a PermissionError traceback, exit 1; flock needs only read permission."""
    run = shutil.copytree(finished, tmp_path / "run")
    for lock in (".workers.lock", ".reports.lock"):
        (run / lock).chmod(0o444)  # not writable by this user, as another user's 0644 file
    done = _autotune(*_RUN, run)
    assert done.returncode == 0, done.stderr
    (run / ".workers.lock").chmod(0)
    done = _autotune("run", "--model", "7b", "--nodes", 1, "--trials", 6, "--backend", "simulate", "--out", run)
    assert (done.returncode, done.stderr) == (2, (
        f"autotune run: error: {run / '.workers.lock'} cannot be opened (Permission denied): it is the lock by which the "
        "run directory's workers see each other; make it readable to every user of the run directory (chmod a+r "
        f"{run / '.workers.lock'}, as its owner), or remove it while no run is under way there\n"))


def test_a_reports_lock_this_user_cannot_open_is_said_and_the_reports_written_without_it(tmp_path, finished):
    """A colleague's .reports.lock of mode 000 in a shared run directory was passed over without a word. It only puts
    the commands writing the reports in turns, so `report` and `run` write them all the same, and say so in one line."""
    run = shutil.copytree(finished, tmp_path / "run")
    lock = run / ".reports.lock"
    lock.chmod(0)
    said = (f"{lock} cannot be opened (Permission denied): this command writes the reports without it, the lock by "
            "which one command at a time writes them (another writing them meanwhile may leave its older ones last); "
            f"make it readable to every user of the run directory (chmod a+r {lock}, as its owner), or remove it while "
            "no run is under way there\n")
    (run / "pareto.json").unlink()
    done = _autotune("report", run)
    assert (done.returncode, done.stderr.startswith(said)) == (0, True), done.stderr
    assert (run / "pareto.json").is_file()
    done = _autotune(*_RUN, run)
    assert done.returncode == 0 and done.stderr.count(said) == 1, done.stderr


def test_a_workers_lock_that_is_a_directory_is_one_line(tmp_path, finished):
    run = shutil.copytree(finished, tmp_path / "run")
    (run / ".workers.lock").unlink()
    (run / ".workers.lock").mkdir()
    done = cli.autotune_main(*_RUN, run)
    assert (done.returncode, done.stderr) == (2, (
        f"autotune run: error: {run / '.workers.lock'} is not a regular file, where the lock by which the run "
        "directory's workers see each other belongs; move it out of the way (autotune makes it again)\n"))
