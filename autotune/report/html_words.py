"""Words and colour keys report.html shows its readers in place of raw identifiers.

pareto.json and the energy blocks keep their keys (`memory_interconnect`, `zero3_block_overhead`) as other
tools read them; a reader of the page gets words (trial 49 met `memory_interconnect` and `CPU ranks (gpu)`).
A chart's colours come from CSS classes (`part-N`, `band phase-<name>`); `swatch` draws the same class as a
small square, so a table beside a chart is its colour key.
"""

from __future__ import annotations

from html import escape

from autotune.report.device_words import DeviceWords

COMPONENT_WORDS = {
    "cpu": "CPU",
    "memory_interconnect": "memory and interconnect",
    "power_delivery": "power delivery loss",
}


def component_words(name: str, words: DeviceWords) -> str:
    """An energy component as the page names it: `gpu` is the study's devices (GPUs, or CPU ranks)."""
    if name == "gpu":
        return words.many
    return COMPONENT_WORDS.get(name, name.replace("_", " "))


def swatch(css_class: str) -> str:
    """A 10 px square in a chart's colour class, before a table row's name: the chart's key."""
    return (f'<svg class="swatch" viewBox="0 0 10 10" width="10" height="10" aria-hidden="true">'
            f'<rect class="{escape(css_class)}" width="10" height="10"/></svg> ')
