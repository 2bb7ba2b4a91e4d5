"""report.html gives each pick's GPUs and GPU-h, and the caveat on GPU counts, where the picks and the baseline span
GPU counts, as the terminal and report.md do (trial59 #8: the page a team shares left out the one fair footing for
picks on different node counts); the counts read "16 and 32 GPUs", not "16, 32 GPUs"."""

import re
from html import unescape

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.pick_figures import spans_gpus
from autotune.report.units import figure
from autotune.study import load_finished_study
from tests.report.test_outputs import _cells


def test_picks_on_several_gpu_counts_give_their_gpus_gpu_hours_and_the_caveat(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    assert spans_gpus(view)
    html = (simulated_run / "report.html").read_text()
    picks = _cells(html, "picks")
    configuration = picks[0].index("configuration")
    for row in picks[1:]:
        p = view.point(int(row[1]))
        assert unescape(row[configuration]).endswith(f" ({p.gpus} GPUs, {figure(p.gpus * p.time_s / 3600)} GPU-h)"), row
    caveat = next(line for line in markdown_report(view, document).splitlines() if line.startswith("The picks run on "))
    assert caveat in unescape(html)
    counts = caveat.removeprefix("The picks run on ").partition(" GPUs")[0]
    assert re.fullmatch(r"(\d+(-\d+)?, )*\d+(-\d+)? and \d+(-\d+)?", counts), caveat


def test_one_gpu_count_gives_the_page_no_gpu_hours_nor_caveat(single_point_run):
    html = (single_point_run / "report.html").read_text()
    assert "GPU-h)" not in html and "part of a change in time" not in html
