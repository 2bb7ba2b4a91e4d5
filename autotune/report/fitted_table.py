"""A rich table printed whole: no figure or word of it cut.

rich fits a table too wide for the console by wrapping, then by cutting every column evenly with "…": at 80
columns the report's 14 columns read "1.…" for a time of 12.1 and "5…" for 526 TFLOP/s, at 40 every cell was
empty, and piped at 160 columns the picks read "max-slowdo…". Here a figure keeps its whole line, a word that
does not fit its column wraps onto the next (overflow "fold") instead of losing its end, and a table that
cannot fit even so is split, on a terminal, into tables one under the other, each of as many columns as fit
(as pandas prints a wide frame), each repeating the column that names a row. That reads better than the alternatives: a table
wider than the terminal is wrapped by the terminal line by line into an unreadable weave, and dropping columns
would hide figures the report is for. Into a file or a pipe the table is printed whole, as wide as it needs,
one row to a line for grep.
"""

from __future__ import annotations

import copy
import dataclasses

from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table

# Measured as if the console had no edge: a cell's width of its own, not the console's.
_UNBOUNDED = 100_000


@dataclasses.dataclass(frozen=True)
class _Limits:
    least: int  # the narrowest the column can be with nothing cut: its widest figure, else its longest word
    natural: int  # its widest cell on one line


def print_table(console: Console, table: Table, keys: int | None = 1) -> None:
    """`keys`: the leading columns that name a row (the report's "trial"), repeated in each part of a split
    table; None where no column does (the space's candidates): the parts number the rows ("#") instead."""
    for column in table.columns:
        column.overflow = "fold"
    limits = [_limits(console, column) for column in table.columns]
    room = console.width
    if _table_width(table, [limit.natural for limit in limits]) <= room:
        console.print(table)  # rich's own layout: each cell on its line
    elif _table_width(table, [limit.least for limit in limits]) <= room:
        _set_widths(table.columns, _shared(limits, room - _table_width(table, [0] * len(limits))))
        console.print(table)
    elif not console.is_terminal:
        _print_wider(console, table, _table_width(table, [limit.natural for limit in limits]))
    else:
        for part in _parts(table, limits, keys, room):
            console.print(part)


def _limits(console: Console, column: Column) -> _Limits:
    options = console.options.update_width(_UNBOUNDED)
    header = Measurement.get(console, options, column.header)
    cells = [Measurement.get(console, options, cell) for cell in column.cells]
    natural = max([header.maximum, *(cell.maximum for cell in cells)])
    if column.justify == "right":  # a figure ("12.1 +- 3.4%"): on one line, else its error bar reads as another's
        return _Limits(max([header.minimum, *(cell.maximum for cell in cells)]), natural)
    return _Limits(max([header.minimum, *(cell.minimum for cell in cells)]), natural)


def _table_width(table: Table, widths: list[int]) -> int:
    """The printed width of `table` whose columns' cells are `widths` wide: their padding and the box's lines."""
    _, right, _, left = table.padding
    lines = len(widths) + 1 if table.box and table.show_edge else max(len(widths) - 1, 0) if table.box else 0
    return sum(widths) + len(widths) * (left + right) + lines


def _shared(limits: list[_Limits], room: int) -> list[int]:
    """Widths within `room`, as rich shares it: the widest columns are narrowed first, to a common cap, so that
    short headers and figures stay on one line and the long texts wrap; no column below its least."""
    def capped(cap: int) -> list[int]:
        return [max(limit.least, min(limit.natural, cap)) for limit in limits]

    cap = max(limit.natural for limit in limits)
    while cap > 0 and sum(capped(cap)) > room:
        cap -= 1
    widths = capped(cap)
    # What the cap leaves (fewer columns at it than columns of it) goes to those still narrowed, widest first.
    for index in sorted(range(len(limits)), key=lambda i: -limits[i].natural):
        more = max(min(room - sum(widths), limits[index].natural - widths[index]), 0)
        widths[index] += more
    return widths


def _set_widths(columns: list[Column], widths: list[int]) -> None:
    for column, width in zip(columns, widths):
        column.width = width


def _print_wider(console: Console, table: Table, width: int) -> None:
    """A file or a pipe has no edge: the whole table at `width`, wider than the console was set."""
    before = console.width
    console.width = width
    try:
        console.print(table, crop=False)
    finally:
        console.width = before


def _parts(table: Table, limits: list[_Limits], keys: int | None, room: int) -> list[Table]:
    """`table` as tables of a few of its columns each, no wider than `room`, the key columns first in each;
    the title over the first, the caption under the last."""
    start = keys or 0
    if keys is None:
        numbers = dataclasses.replace(Column("#", justify="right"), _cells=[str(n) for n in range(1, table.row_count + 1)])
        key = [(numbers, _Limits(len(str(table.row_count)), len(str(table.row_count))))]
    else:
        key = list(zip(table.columns[:start], limits[:start]))
    groups: list[list[tuple[Column, _Limits]]] = [[]]
    for column in zip(table.columns[start:], limits[start:]):
        if groups[-1] and _table_width(table, [limit.least for _, limit in key + groups[-1] + [column]]) > room:
            groups.append([])
        groups[-1].append(column)
    parts = []
    for index, group in enumerate(groups):
        part = copy.copy(table)
        part.columns = [dataclasses.replace(column, _index=n) for n, (column, _) in enumerate(key + group)]
        part.title = table.title if index == 0 else None
        part.caption = table.caption if index == len(groups) - 1 else None
        free = room - _table_width(part, [0] * len(part.columns))
        fitted = [limit for _, limit in key + group]
        if len(group) == 1:  # a text column wider alone than the room folds its words (a figure is never that wide)
            fitted[-1] = _Limits(max(min(fitted[-1].least, free - sum(limit.least for _, limit in key)), 1), fitted[-1].natural)
        _set_widths(part.columns, _shared(fitted, free))
        parts.append(part)
    return parts
