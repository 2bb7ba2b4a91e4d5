"""Tables printed whole at any width (trial 45 §2): at 80 columns the report's figures read "1.…" and "5…", at 40
every cell was empty, and piped at 160 columns the picks read "max-slowdo…"."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.table import Table

from autotune.commands.finish import build_report
from autotune.report.fitted_table import print_table
from autotune.report.table import print_report
from autotune.study import load_finished_study


def _shown(run_dir, width: int, terminal: bool) -> str:
    view, document = build_report(load_finished_study(run_dir))
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=width, force_terminal=terminal, color_system=None))
    return out.getvalue()


def _table_cells(shown: str) -> list[str]:
    """Every cell of the table's body rows, stripped."""
    rows = [line for line in shown.splitlines() if line.startswith("│")]
    return [cell.strip() for row in rows for cell in row.strip("│").split("│")]


@pytest.mark.parametrize(("width", "terminal"), [(80, True), (120, True), (40, True), (160, False)])
def test_no_figure_or_pick_of_the_report_is_cut(simulated_run, width, terminal):
    shown = _shown(simulated_run, width, terminal)
    cells = _table_cells(shown)
    assert cells and not [cell for cell in cells if "…" in cell], shown
    view, document = build_report(load_finished_study(simulated_run))
    for point in view.front:  # each trial's row names it in every part of a split table
        assert str(point.trial) in cells
    for pick in ("fastest", "min-energy", "knee", "max-slowdown", "cost-weighted"):  # whole, if wrapped
        assert any(pick in cell for cell in cells), shown
    if terminal:
        assert max(len(line) for line in shown.splitlines()) <= width  # no line wider than the terminal


def test_a_figure_keeps_its_error_bar_on_its_line():
    table = Table(title="t")
    table.add_column("trial", justify="right")
    table.add_column("time min +- 3.4%", justify="right")
    table.add_column("pick")
    table.add_row("4", "12.1 +- ?%", "max-slowdown (least energy within 5% of fastest)")
    out = io.StringIO()
    print_table(Console(file=out, width=40, force_terminal=True, color_system=None), table)
    assert "12.1 +- ?%" in out.getvalue(), out.getvalue()
    assert "max-slowdown" in out.getvalue() and "…" not in out.getvalue()


def test_piped_a_table_too_wide_for_160_columns_is_printed_whole():
    table = Table()
    table.add_column("trial", justify="right")
    for n in range(20):
        table.add_column(f"figure {n}", justify="right")
    table.add_row("1", *(f"{1000 + n}.5 +- 3.4%" for n in range(20)))
    out = io.StringIO()
    print_table(Console(file=out, width=160, force_terminal=False, soft_wrap=True), table)
    row = next(line for line in out.getvalue().splitlines() if line.startswith("│"))
    assert all(f"{1000 + n}.5 +- 3.4%" in row for n in range(20)), row  # one line for grep, none cut


def test_a_table_without_a_key_column_numbers_its_rows_when_split():
    table = Table()
    for n in range(10):
        table.add_column(f"knob {n}")
    for row in range(3):
        table.add_row(*(f"value{row}{n}" for n in range(10)))
    out = io.StringIO()
    print_table(Console(file=out, width=40, force_terminal=True, color_system=None), table, keys=None)
    shown = out.getvalue()
    assert all(f"value{row}{n}" in shown for row in range(3) for n in range(10)), shown
    numbered = [re.match(r"│\s+(\d+) │", line) for line in shown.splitlines()]
    assert [m.group(1) for m in numbered if m][:3] == ["1", "2", "3"]
