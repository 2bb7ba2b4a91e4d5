"""Small HTML helpers every report.html section shares: escaping, number cells, tables."""

from __future__ import annotations

from html import escape


def esc(value) -> str:
    return escape("" if value is None else str(value))


def num(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def table(headers: list[str], rows: list[list[str]], css_class: str = "", row_ids: list[str] | None = None) -> str:
    """Cells are HTML already (callers escape); headers are escaped here. `row_ids`, one per row, are the
    anchors a chart's points link to (svg.chart_point): a keyboard or a finger reaches a point's figures there."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    ids = [f' id="{esc(i)}"' for i in row_ids] if row_ids else [""] * len(rows)
    body = "\n".join(f"<tr{i}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for i, row in zip(ids, rows))
    # In a box of its own that scrolls sideways: a wide table on a phone no longer widens the whole page.
    return (f'<div class="table-scroll"><table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n'
            "</tbody></table></div>")


def trial_row_id(trial: int) -> str:
    """The id of a trial's row in the table of all evaluated trials (`trial-N` is its pick's article)."""
    return f"trial-row-{trial}"
