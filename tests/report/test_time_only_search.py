"""A time-only study's search texts speak of time alone (trial 32's #8): the stop rule it converged by is
the best time's, and a simulate study still says whether its fastest candidate was found exhaustively."""

from __future__ import annotations

import json

from autotune.study.stop_rule import STOP_RULE, stop_rule, stop_rule_summary
from tests.cli import autotune_main


def test_a_time_only_simulate_study_states_the_time_rule_and_its_exhaustive_check(tmp_path):
    out = tmp_path / "time"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "4", "--objectives", "time", "--out", out)
    assert done.returncode == 0, done.stderr
    search = json.loads((out / "pareto.json").read_text())["search"]
    assert search["converged"]["rule"] == stop_rule(1) != STOP_RULE
    # The run's own line points at the report's, which says the time rule: "in time or energy" was said for a
    # time-only study. The rule is said once (trial57 #10), in the report.
    assert "in time or energy" not in done.stderr and stop_rule_summary(1) not in " ".join(done.stderr.split())
    assert f"converged after {search['converged']['probes']} simulated probes: {stop_rule_summary(1)}" in " ".join(done.stdout.split())
    assert "time or energy" not in search["converged"]["rule"] and "best probed time by more than 1%" in search["converged"]["rule"]
    assert search["exhaustive"] is True, search
    assert search["exhaustive_note"].startswith("exhaustive: all ") and "faster than the fastest probe" in search["exhaustive_note"]
    report = autotune_main("report", out)
    assert report.returncode == 0, report.stderr
    said = " ".join(report.stdout.split())
    assert f"converged after {search['converged']['probes']} simulated probes: {stop_rule_summary(1)}" in said, said
    assert "search: exhaustive: all " in said and "in time or energy" not in said


def test_a_two_objective_study_keeps_the_front_wording(tmp_path):
    out = tmp_path / "both"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "4", "--out", out)
    assert done.returncode == 0, done.stderr
    search = json.loads((out / "pareto.json").read_text())["search"]
    if search["converged"]:
        assert search["converged"]["rule"] == STOP_RULE
    assert "in time or energy" in search["exhaustive_note"] or "front" in search["exhaustive_note"], search
