"""No two parentheses follow one another on a pick's line, in the terminal, report.md or report.html (trial61:
"power limit 0.7 x default (476 W per module on the gh200 profile) (4 GPUs, 1.02 GPU-h)", "(tie ...)  (against
baseline ...)", "(estimated) (tie ...)" and "min-energy (least energy) (tie ...)" each read as two asides)."""

import re
from html import unescape

import pytest

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.study import load_finished_study
from tests.cli import autotune_main
from tests.report.test_outputs import _cells

# A closing parenthesis, then (past spaces, or the page's line break) an opening one.
TWO_IN_A_ROW = re.compile(r"\)\s*\(")
PICKS = ("fastest", "min-energy", "knee", "max-slowdown", "cost-weighted")


@pytest.fixture(scope="module")
def gpu_span_run(tmp_path_factory):
    """7b on 1-2 nodes: picks on 4 and 8 GPUs, with power limits, and leads inside the simulator's error."""
    out = tmp_path_factory.mktemp("runs") / "7b"
    done = autotune_main("run", "--model", "7b", "--nodes", "1-2", "--out", out)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_a_pick_s_gpus_follow_its_nodes_and_no_two_parentheses_follow_one_another(gpu_span_run):
    out, printed = gpu_span_run
    view, document = build_report(load_finished_study(out))
    terminal = [line for line in printed.splitlines() if line.startswith(tuple(f"{name}" for name in PICKS))]
    md = [line for line in markdown_report(view, document).splitlines() if line.startswith("- **")]
    page = (out / "report.html").read_text()
    cells = [cell for row in _cells(page, "picks")[1:] for cell in row]
    pick_cells = [unescape(re.sub(r"<[^>]+>", " ", cell)) for cell in
                  re.findall(r'<td><a href="#trial-\d+">.*?</td>', page)]  # the name, then any tie on its own line
    assert len(terminal) == len(md) == len(document["picks"]) == len(pick_cells)
    for line in [*terminal, *md, *cells, *pick_cells]:
        assert not TWO_IN_A_ROW.search(line), line
    limited = next(line for line in md if "power limit" in line)
    assert re.search(r", \d nodes? \(\d GPUs, [\d.]+ GPU-h\), power limit 0\.\d x default \(\d+ W per module on the "
                     r"gh200 profile\); ", limited), limited
    assert any("inside the" in line for line in terminal)  # a tie was said, inside the one parenthetical
