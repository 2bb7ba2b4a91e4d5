"""report.html's charts read without guessing (trial 49): each bar's colours keyed in the table beside it, every
phase band coloured (two were SVG's default black), an estimated power timeline says so on its axis, the front
tells from the other points by fill as well as colour, and readers see words, not identifiers."""

import re
from html import unescape

from autotune.report.html import STYLE
from autotune.report.svg_power import power_timeline_svg

RAW = ("memory_interconnect", "power_delivery", "zero3_block_overhead", "step_overhead", "CPU ranks (gpu)")


def _css_rule(selector: str) -> str:
    found = re.search(rf"(?:^|[}}\s]){re.escape(selector)} \{{([^}}]*)\}}", STYLE)
    assert found, selector
    return found.group(1)


def test_every_phase_band_on_the_page_has_its_own_colour(simulated_run):
    html = (simulated_run / "report.html").read_text()
    phases = set(re.findall(r'class="band (phase-[a-z0-9_]+)"', html))
    assert {"phase-zero3_block_overhead", "phase-compute"} <= phases
    for phase in phases:
        assert "fill:" in _css_rule(f".band.{phase}"), phase
    assert "fill:" in _css_rule(".band")  # a phase named later is never black


def test_each_bar_is_keyed_by_swatches_in_its_table(simulated_run):
    html = (simulated_run / "report.html").read_text()
    for article in re.findall(r'<article class="pick".*?</article>', html, flags=re.S):
        bar_parts = re.findall(r'<rect class="(part-\d+)" x=', article)
        keyed = re.findall(r'<svg class="swatch"[^>]*><rect class="(part-\d+)"', article)
        assert bar_parts and sorted(keyed) == sorted(bar_parts)
        bands = re.findall(r'<rect class="(band phase-[a-z0-9_]+)" x=', article)
        assert sorted(re.findall(r'<svg class="swatch"[^>]*><rect class="(band phase-[a-z0-9_]+)"', article)) == sorted(bands)


def test_readers_see_words_not_identifiers(simulated_run):
    html = (simulated_run / "report.html").read_text()
    shown = re.sub(r"<(pre|style)>.*?</\1>", "", html, flags=re.S)  # the config and the stylesheet keep their keys
    text = unescape(re.sub(r"<[^>]+>", " ", shown))
    for raw in RAW:
        assert raw not in text, raw
    assert "memory and interconnect" in text and "ZeRO-3 per-block overhead" in text


def test_an_estimated_power_timeline_says_so_on_its_axis():
    samples = [(0.0, 100.0, "llm_fwd"), (0.001, 120.0, "llm_fwd"), (0.002, 90.0, "optimizer")]
    assert ">power (W, estimated)</text>" in power_timeline_svg(samples, "t", provenance="estimated")
    assert ">power (W)</text>" in power_timeline_svg(samples, "t")


def test_the_front_differs_from_other_points_by_fill_not_only_colour(simulated_run):
    front, other = _css_rule(".marker.front, .sweep-point"), _css_rule(".marker.feasible")
    assert "fill: #3b6fd8" in front and "fill: #fff" in other and "stroke:" in other
    html = (simulated_run / "report.html").read_text()
    legend = re.search(r'<p class="legend"[^>]*>.*?</p>', html, flags=re.S).group(0)
    assert "(filled" in legend and "other feasible (hollow)" in legend and "the picks drawn larger" in legend


def test_a_simulated_step_is_headed_as_the_phases_it_shows(simulated_run, measured_run):
    assert "<h4>Time by phase in one step</h4>" in (simulated_run / "report.html").read_text()
    assert "<h4>Power over one step</h4>" in (measured_run / "report.html").read_text()
