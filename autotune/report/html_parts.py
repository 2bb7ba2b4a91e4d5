"""Small HTML helpers every report.html section shares: escaping, number cells, tables."""

from __future__ import annotations

from html import escape


def esc(value) -> str:
    return escape("" if value is None else str(value))


def plus_minus(text: str) -> str:
    """`(within noise: +- 9%)`: the report.within_noise marks' `±` as the rest of the page writes an error
    (`12.6 +- ?%`, `time +- 3.4%`), so one page spells it one way."""
    return text.replace("±", "+- ")


def limit_text(limit: float) -> str:
    """A power limit as every other output writes it: `1.0`, `0.7`, `0.75` (never a bare `1`)."""
    return f"{limit:.1f}" if round(limit, 1) == limit else f"{limit:g}"


def num(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def table(headers: list[str], rows: list[list[str]], css_class: str = "") -> str:
    """Cells are HTML already (callers escape); headers are escaped here."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    # In a box of its own that scrolls sideways: a wide table on a phone no longer widens the whole page.
    return (f'<div class="table-scroll"><table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n'
            "</tbody></table></div>")
