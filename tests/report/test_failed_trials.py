"""trial67 #6: why probes failed, in the terminal and report.md (report.html's trial table alone said it), with
where each probe's whole log is."""

import io

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.failed_trials import MOST_REASONS, failure_lines
from autotune.report.markdown import markdown_report, md_text
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.report.conftest import HOSTILE_ERROR

CRASH = "RuntimeError: AUTOTUNE_PROBE_TEST_HOOK=crash: simulated probe failure on rank 1"


def _row(trial: int, status: str, reason: str | None, trial_dir: str | None = None) -> dict:
    return {"trial": trial, "status": status, "reason": reason, "details": {"trial_dir": trial_dir} if trial_dir else {}}


def test_failed_trials_are_grouped_by_reason_with_the_status_said_once():
    rows = [_row(0, "ok", None, "/r/trials/0000"), _row(1, "failed", f"failed: {CRASH}", "/r/trials/0001"),
            _row(2, "failed", f"failed: {CRASH}", "/r/trials/0002"), _row(3, "oom", "OutOfMemoryError: on rank 1"),
            _row(4, "failed", f"failed: {CRASH}"), _row(5, "invalid", "does not fit"), _row(6, "timeout", None)]
    heading, lines = failure_lines(rows)
    assert heading == ("why trials failed (each probe's whole output is its log in the run directory: trial 1's is "
                       "trials/0001/log.txt):")
    assert lines == [f"trials 1-2, 4 (failed): {CRASH}", "trial 3 (oom): OutOfMemoryError: on rank 1",
                     "trial 6 (timeout): no reason recorded"]


def test_a_retry_that_records_an_earlier_trial_s_probe_names_that_probe_s_log():
    """Trial74 #1: trial 1 recorded the timeout of trial 0's probe (told from outside while it ran), and the heading sent
    the user to trials/0001/log.txt, which no probe wrote."""
    heading, _ = failure_lines([_row(1, "timeout", "timeout: no result within 40 s", "/r/trials/0000")])
    assert heading.endswith("trial 1's is trials/0000/log.txt):"), heading


def test_no_failure_says_nothing_and_a_replay_names_no_log():
    assert failure_lines([_row(0, "ok", None), _row(1, "invalid", "does not fit")]) is None
    heading, _ = failure_lines([_row(1, "failed", "failed: recorded so")])  # a replayed record: no trial directory
    assert heading == "why trials failed:"


def test_many_reasons_say_the_commonest_and_where_the_rest_are():
    rows = [_row(n, "failed", f"failed: error {n}") for n in range(MOST_REASONS + 2)]
    _, lines = failure_lines(rows)
    assert len(lines) == MOST_REASONS + 1
    assert lines[-1] == "and 2 other reasons: report.html's trial table gives each"


def test_the_terminal_and_markdown_reports_say_why_trials_failed(failing_run):
    view, document = build_report(load_finished_study(failing_run))
    failed = [r["trial"] for r in view.trials if r["status"] == "failed"]
    assert failed
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    terminal = out.getvalue().splitlines()
    assert "why trials failed:" in terminal
    assert any(line.strip().endswith(f"(failed): {HOSTILE_ERROR}") for line in terminal)
    assert any(line.strip().endswith("(oom): CUDA out of memory") for line in terminal)
    markdown = markdown_report(view, document).splitlines()
    assert "**Why trials failed:**" in markdown
    assert any(line.startswith("- trial") and line.endswith(md_text(f"(failed): {HOSTILE_ERROR}")) for line in markdown)


def test_a_failed_trial_probed_again_names_its_retry():
    """Trial77 #7: after a resume probed a timed-out candidate again under other probe settings (ok, the baseline now),
    "why trials failed" still said "trial 0 (timeout): ..." alone, where an interrupted trial says "probed again as
    trial 4"."""
    timeout = "no result within 45 s: killed the probe's process group"
    rows = [{**_row(0, "timeout", f"timeout: {timeout}", "/r/trials/0000"), "probed_again_as": 3},
            _row(3, "ok", None, "/r/trials/0003")]
    assert failure_lines(rows)[1] == [f"trial 0 (timeout): {timeout}; probed again as trial 3"]
    rows += [{**_row(1, "timeout", f"timeout: {timeout}"), "probed_again_as": 5}, _row(2, "timeout", f"timeout: {timeout}")]
    assert failure_lines(rows)[1] == [f"trials 0-2 (timeout): {timeout}; probed again: trial 0 as trial 3, trial 1 as trial 5"]
