"""A simulated study's tuning cost is said once (trial57 #11): "tuning is repaid at once: no probe ran on hardware,
so tuning cost no energy" followed every pick's line, right after the line that had said the study cost nothing.
The cost line says it for every pick; each pick's line keeps what differs, its saving."""

import io
import re

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.study import load_finished_study


def test_a_simulated_study_says_once_that_tuning_cost_nothing_and_each_pick_its_saving(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    for text in (out.getvalue(), markdown_report(view, document)):
        cost_line = next(line for line in text.splitlines() if "Simulated study: nothing ran on hardware" in line)
        assert "a pick that saves energy repays it at once" in cost_line
        assert "no probe ran on hardware" not in text and text.count("repays it at once") == 1
        pick_lines = [line for line in text.splitlines() if re.search(r"\(trial \d+\): saves ", line)]
        assert pick_lines and all(line.rstrip().endswith("against the baseline doing the same work; simulated)") for line in pick_lines)
    html = (simulated_run / "report.html").read_text()
    payback = html[html.index('<table class="payback">'):]
    payback = payback[:payback.index("</table>")]
    # Each row's saving in the terminal's words, and no "at once" on each: the cost line above says it once.
    assert "no probe ran on hardware" not in payback and "at once" not in payback
    assert re.search(r"<td>saves [^<]* per run of the workload against the baseline \(", payback)
