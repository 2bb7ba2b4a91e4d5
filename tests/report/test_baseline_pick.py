"""Trial 38 #14e: a pick that is the baseline shows no change against itself in every output (the HTML
showed "+0.0% (estimated) +0.0% +0.0%" and "0 (estimated)" kWh saved where the terminal said nothing)."""

import io
import json

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.report.conftest import ScriptedBackend, finished_run


def test_a_pick_that_is_the_baseline_says_so_and_no_change(tmp_path):
    run_dir = tmp_path / "run"
    # Only the first probe, the baseline, is feasible: every pick is the baseline.
    finished_run(run_dir, ScriptedBackend(lambda candidate, call: "ok" if call == 0 else "failed"), 3, nodes="4")
    document = json.loads((run_dir / "pareto.json").read_text())
    assert {row["trial"] for row in document["picks"]} == {document["baseline"]}
    assert {row["text"] for row in document["tuning_cost"]["payback"]} == {
        "no saving: this pick is the baseline itself"}

    view, document = build_report(load_finished_study(run_dir))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    said = terminal.getvalue()
    assert "(the baseline itself)" in said and "+0.0%" not in said
    markdown = markdown_report(view, document)
    assert "the baseline itself" in markdown and "+0.0%" not in markdown
    html = (run_dir / "report.html").read_text()
    picks = html[html.index('id="picks"'):html.index("</section>", html.index('id="picks"'))]
    assert "<td>the baseline</td>" in picks and "+0.0%" not in picks
    payback = html[html.index('id="tuning-cost"'):html.index("</section>", html.index('id="tuning-cost"'))]
    assert "none: the baseline" in payback and "0 (" not in payback


def test_a_study_with_no_pick_does_not_name_a_configs_folder_it_never_wrote(tmp_path):
    """Trial 40 nit 14: "run directory: runs/crash (study.db, pareto.json, report.html, configs/)" with no configs/."""
    from autotune.commands.finish import finish_run

    run_dir = tmp_path / "run"
    study = finished_run(run_dir, ScriptedBackend(lambda candidate, call: "oom"), 3, nodes="4")
    said = io.StringIO()
    finish_run(study, run_dir, Console(file=said, width=400))
    assert not (run_dir / "configs").exists()
    assert f"run directory: {run_dir} (study.db, pareto.json, report.html)" in said.getvalue()
