"""A stderr that stops taking output mid-run (its reader gone, `2>&1 | head -1`; a full disk under a job's `-e`
file, here /dev/full): the status lines are dropped and the study finishes. rich's stderr console ended the
process with status 1 from inside a trial, which stayed RUNNING ("still probing on other workers"), and no
report, pareto.json or configs/ were written. Real subprocesses: the handling is the process's (cli.console_main)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

RUN = ("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "3")


def _run(out, stdout, stderr) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autotune.cli", *RUN, "--out", str(out)],
                          stdout=stdout, stderr=stderr, text=True, timeout=300)


def _a_reader_gone():
    """A pipe whose reader has closed its end: every write to it fails with EPIPE."""
    head = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    head.wait(timeout=60)
    return head


def _trial_states(out) -> list[str]:
    with sqlite3.connect(out / "study.db") as db:
        return [state for (state,) in db.execute("SELECT state FROM trials")]


def _assert_finished(out) -> None:
    assert (out / "pareto.json").is_file() and (out / "report.html").is_file() and (out / "configs").is_dir()
    states = _trial_states(out)
    assert states and "RUNNING" not in states, states


def test_a_full_stderr_drops_the_status_lines_and_the_study_finishes(tmp_path):
    with open("/dev/full", "w") as full:
        run = _run(tmp_path / "run", subprocess.PIPE, full)
    # Status 0: what the command is for (the study, its files, the report on stdout) is all there; the lines lost
    # only said how it went, and the report repeats what matters of them.
    assert run.returncode == 0
    assert "Pareto front" in run.stdout
    _assert_finished(tmp_path / "run")


def test_a_stderr_whose_reader_went_away_drops_the_status_lines_and_the_study_finishes(tmp_path):
    head = _a_reader_gone()
    with head:
        run = _run(tmp_path / "run", subprocess.PIPE, head.stdin)
        head.stdin.close()
    assert run.returncode == 0
    assert "Pareto front" in run.stdout
    _assert_finished(tmp_path / "run")


def test_stdout_and_stderr_into_one_pipe_whose_reader_went_away_still_finish_the_study(tmp_path):
    """`autotune run ... 2>&1 | head -1`: the study and its files are finished; the report's stdout then ends as a
    tool SIGPIPE ended (141), as `autotune run ... | head` does."""
    head = _a_reader_gone()
    with head:
        run = _run(tmp_path / "run", head.stdin, subprocess.STDOUT)
        head.stdin.close()
    assert run.returncode == 141
    _assert_finished(tmp_path / "run")


def test_an_error_said_to_a_full_stderr_keeps_its_status():
    """A bad input's one line, written to a full stderr, raised ENOSPC; the handler of a full stdout took it for
    its own, and its line raised again: status 1, a traceback's. It stays bad input's 2."""
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "autotune.cli", "run", "--model", "no-such-model"],
                             stdout=subprocess.PIPE, stderr=full, text=True, timeout=120)
    assert run.returncode == 2


def _closed_stderr(argv, tmp_path) -> subprocess.CompletedProcess:
    """A command started with standard error closed (`2>&-`, a daemon's wrapper)."""
    import os

    return subprocess.run([sys.executable, "-m", "autotune.cli", *argv], stdout=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(2), timeout=300, cwd=tmp_path)


def test_a_stderr_closed_at_start_keeps_json_on_stdout_parseable(tmp_path):
    """Trial71 #1: Python makes sys.stderr None, and `print(..., file=None)` prints on stdout: the warning of a node
    count with no valid candidate went into `space --json`, which then did not parse (exit 0)."""
    import json

    done = _closed_stderr(["space", "--model", "7b", "--nodes", "1-3", "--json"], tmp_path)
    assert done.returncode == 0
    assert isinstance(json.loads(done.stdout), list)  # the warning for 3 nodes is not in it


def test_a_stderr_closed_at_start_puts_no_error_on_stdout(tmp_path):
    done = _closed_stderr(["run", "--model", "nosuch"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""


def test_a_study_with_stderr_closed_at_start_finishes_its_files(tmp_path):
    """The status lines go nowhere; study.db is not opened on the free descriptor 2 (where a probe's or a library's
    write to stderr would land in it)."""
    done = _closed_stderr([*RUN, "--out", str(tmp_path / "run")], tmp_path)
    assert done.returncode == 0 and "Pareto front" in done.stdout
    assert "backend: simulate" not in done.stdout and "(1/3)" not in done.stdout  # status lines, stderr's
    _assert_finished(tmp_path / "run")
