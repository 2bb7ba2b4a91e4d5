"""Small HTML helpers every report.html section shares: escaping, number cells, tables."""

from __future__ import annotations

from html import escape


def esc(value) -> str:
    return escape("" if value is None else str(value))


def num(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def table(headers: list[str], rows: list[list[str]], css_class: str = "") -> str:
    """Cells are HTML already (callers escape); headers are escaped here."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    # In a box of its own that scrolls sideways: a wide table on a phone no longer widens the whole page.
    return (f'<div class="table-scroll"><table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n'
            "</tbody></table></div>")
