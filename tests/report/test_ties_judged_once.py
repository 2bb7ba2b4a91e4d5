"""The picks' ties are judged once per report (StudyView.pick_ties): pareto.json's pick rows, and the "Which to deploy"
of the terminal, report.md and report.html, each judged every tie again, over every point each pick is compared with."""

import io

from rich.console import Console

import autotune.report.choosing as choosing
from autotune.commands.finish import build_report
from autotune.report.html import render_report_html
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.study import load_finished_study


def test_every_output_reads_the_ties_judged_once(simulated_run, monkeypatch):
    judged = []
    rule = choosing.ties_by_rule
    monkeypatch.setattr(choosing, "ties_by_rule", lambda *args: judged.append(args) or rule(*args))
    view, document = build_report(load_finished_study(simulated_run))
    print_report(view, document, Console(file=io.StringIO(), width=1000))
    md, html = markdown_report(view, document), render_report_html(view, document, simulated_run)
    assert len(judged) == 1
    # ...and what each says of them is what pareto.json says: the one judgement, read four times.
    simulator, noise, near = view.pick_ties
    for row in document["picks"]:
        assert row["tied_with"] == simulator[row["name"]] and row["tie_noise_cv"] == noise[row["name"]]
        assert row["near_tie"] == near.get(row["name"])
    assert "Which to deploy" in md and "Which to deploy" in html
