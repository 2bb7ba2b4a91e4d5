"""`autotune run` and `autotune report` into a pipe or a job's output file: the table 160 columns wide,
and each sentence on one line, so grep finds a pick's whole line (rich broke them at 160 columns)."""

from __future__ import annotations

from tests.cli import autotune


def test_piped_report_keeps_each_pick_on_one_line_and_the_table_within_160_columns(tmp_path):
    run = autotune("run", "--model", "32b", "--nodes", "4", "--out", str(tmp_path / "run"), timeout=300)
    assert run.returncode == 0, run.stderr
    report = autotune("report", str(tmp_path / "run"), timeout=300)
    assert report.returncode == 0, report.stderr
    for shown in (run.stdout, report.stdout):
        lines = shown.splitlines()
        picks = [line for line in lines if line.startswith(("fastest:", "min-energy", "knee:", "max-slowdown"))]
        assert len(picks) == 4, shown
        for line in picks:  # each pick's sentence ends with its change against the baseline, on its own line
            assert "  (against baseline trial 0: " in line and line.rstrip().endswith(")"), line
        assert any(len(line) > 160 for line in picks)  # long enough that a 160-column wrap would have cut it
        table = [line for line in lines if line.startswith(("┏", "┃", "│", "└"))]
        assert table and max(len(line) for line in table) <= 160
