"""Why trials failed, as the terminal and report.md say it (report.html's trial table has each row's reason): the
probes that ran out of memory, crashed or timed out, grouped by their reason, and where each probe's log is. Without
it a crashed probe's reason was in report.html alone, and a job's output file said that probes failed, never why."""

from __future__ import annotations

from pathlib import PurePath

from autotune.counted import agreeing, counted
from autotune.space.files import spans_text

# The statuses of a probe that ran and gave no figure to rank ("invalid" never ran; "interrupted" is probed again).
FAILED_STATUSES = ("oom", "failed", "timeout")
# A study whose probes failed many ways: its commonest reasons here, every one in report.html's trial table.
MOST_REASONS = 5


def failure_groups(trials: list[dict]) -> list[tuple[str, list[int], str]]:
    """(status, trial numbers, reason) for each status and reason the failed trials give, commonest first. The
    status is said once: a reason that starts with it ("failed: RuntimeError: ...", as the study loop keeps a
    crash's) is given without it."""
    groups: dict[tuple[str, str], list[int]] = {}
    for row in trials:
        if row["status"] in FAILED_STATUSES:
            reason = row.get("reason") or "no reason recorded"
            reason = reason.removeprefix(f"{row['status']}: ")
            groups.setdefault((row["status"], reason), []).append(row["trial"])
    ranked = sorted(groups.items(), key=lambda group: (-len(group[1]), min(group[1])))
    return [(status, numbers, reason) for (status, reason), numbers in ranked]


def failure_lines(trials: list[dict]) -> tuple[str, list[str]] | None:
    """The heading and one line per reason (`trials 1, 2, 4 (failed): RuntimeError: ...`), or None where no probe
    failed. The heading names the log of the first failed trial that has one (a probe of the launch backend; a
    replayed record has none)."""
    groups = failure_groups(trials)
    if not groups:
        return None
    # The folder its probe wrote, not the trial's number: a retry that records the outcome of an earlier trial's probe
    # (one killed after it, or told from outside while it ran: study/retries.py) has no folder of its own.
    logged = sorted((row["trial"], PurePath(row["details"]["trial_dir"]).name) for row in trials
                    if row["status"] in FAILED_STATUSES and (row.get("details") or {}).get("trial_dir"))
    log = (f" (each probe's whole output is its log in the run directory: trial {logged[0][0]}'s is "
           f"{PurePath('trials', logged[0][1], 'log.txt')})" if logged else "")
    again = {row["trial"]: row["probed_again_as"] for row in trials if row.get("probed_again_as") is not None}
    lines = [f"{agreeing(len(numbers), 'trial', 'trials')} {spans_text(numbers)} ({status}): {reason}"
             f"{_probed_again(numbers, again)}" for status, numbers, reason in groups[:MOST_REASONS]]
    if len(groups) > MOST_REASONS:
        lines.append(f"and {counted(len(groups) - MOST_REASONS, 'other reason')}: report.html's trial table gives each")
    return f"why trials failed{log}:", lines


def _probed_again(numbers: list[int], again: dict[int, int]) -> str:
    """`; probed again as trial 3` after a reason whose trial a resume probed again (a timeout under other probe
    settings, a set-up failure: study/retries.py), as an interrupted trial's reason says it; "" where none was. Without
    it a timed-out candidate read as failed beside the baseline line that showed it ok (trial77 #7)."""
    retried = [n for n in numbers if n in again]
    if not retried:
        return ""
    if len(numbers) == 1:
        return f"; probed again as trial {again[retried[0]]}"
    return "; probed again: " + ", ".join(f"trial {n} as trial {again[n]}" for n in retried)
