"""The front table's pick column names each pick as `export --pick` does, all of a trial's picks on its row's one
line: at 80 and 120 columns "max-slowdown (least energy within 5% of fastest)" took four lines of a row, and
"knee, cost-weighted (eta 0.5)" three. What a pick means is said in its line under the table and defined at the end
of the report."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.picks import PICK_FILES, picks_by_trial
from autotune.report.table import print_report
from autotune.study import load_finished_study


def _shown(view, document, width: int) -> str:
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=width, force_terminal=True, color_system=None))
    return out.getvalue()


def _pick_cells(shown: str) -> dict[str, str]:
    """{trial: its pick cell} from the part of the table that holds the pick column, one row to a line."""
    lines = shown.splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("┃") and line.rstrip("┃ ").endswith("pick"))
    cells = {}
    for line in lines[header + 2:]:
        if not line.startswith("│"):
            break
        row = [cell.strip() for cell in line.strip("│").split("│")]
        assert row[0], f"a row went on to a second line:\n{shown}"  # a wrapped cell leaves the trial cell empty
        cells[row[0]] = row[-1]
    return cells


@pytest.mark.parametrize("width", [80, 120])
def test_each_row_names_its_picks_on_one_line(simulated_run, width):
    view, document = build_report(load_finished_study(simulated_run))
    shown = _shown(view, document, width)
    cells = _pick_cells(shown)
    assert set(cells) == {str(p.trial) for p in view.front}
    for trial, names in picks_by_trial(view).items():
        assert cells[str(trial)] == ",".join(PICK_FILES[name] for name in names), shown
    assert max(len(line) for line in shown.splitlines()) <= width
    # The meanings the column no longer holds are under it: in each pick's line and in the definitions at the end.
    assert "max-slowdown (least energy within 5% of fastest): trial" in shown
    assert "pick max-slowdown: the least energy" in " ".join(shown.split())  # a terminal's wrapping aside
