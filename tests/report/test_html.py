"""report.html as text: self-contained, escaped, every section there; and the small SVG helpers."""

import json
import re

import pytest

from autotune.report.device_words import CPU_RANK_WORDS
from autotune.report.svg import Frame, Marker, axes, nice_ticks, scatter_svg, stacked_bar_svg
from autotune.report.svg_power import power_timeline_svg
from autotune.report.units import report_energy_text, time_text
from tests.report.conftest import HOSTILE_ERROR


def _links(html):
    return re.findall(r'href="([^"]+)"', html)


def test_page_is_self_contained(simulated_run):
    html = (simulated_run / "report.html").read_text()
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    # Only the SVG namespace may name a URL: it is an identifier, never fetched.
    assert set(re.findall(r"https?://[^\"' ]+", html)) <= {"http://www.w3.org/2000/svg"}


def test_page_sections_for_a_simulated_run(simulated_run):
    html = (simulated_run / "report.html").read_text()
    doc = json.loads((simulated_run / "pareto.json").read_text())
    assert html.index("Where the figures come from") < html.index("<svg")  # provenance first
    assert "Time is simulated by the analytic model" in html
    assert html.count('class="marker ') == sum(1 for _ in doc["feasible"])  # every evaluated trial is drawn
    assert '<polyline class="front-line"' in html or len(doc["front"]) == 1
    for trial in set(doc["recommendations"].values()):
        assert f'id="trial-{trial}"' in html
    for link in (link for link in _links(html) if link.startswith("configs/")):
        assert (simulated_run / link).is_file(), link
    stems = {"fastest", "min-energy", "knee", "max-slowdown", "cost-weighted"}
    assert {link[len("configs/"):-len(".json")] for link in _links(html) if link.startswith("configs/")} == stems
    assert html.count("<pre>") == len(set(doc["recommendations"].values()))  # one config per distinct pick
    assert "&quot;zero_optimization&quot;" in html
    for index, component in enumerate(("GPUs", "CPU", "memory and interconnect")):  # each with its bar's colour key
        assert re.search(rf'<td><svg class="swatch"[^>]*><rect class="part-{index}"[^>]*/></svg> {component}</td>', html)


def test_failed_and_oom_trials_shown_apart_and_escaped(failing_run):
    html = (failing_run / "report.html").read_text()
    doc = json.loads((failing_run / "pareto.json").read_text())
    assert doc["trials_by_status"].get("oom", 0) >= 1 and doc["trials_by_status"].get("failed", 0) >= 1
    assert "<script" not in html and "&lt;script&gt;" in html  # the hostile error text, harmless
    assert html.count('class="status status-oom"') == doc["trials_by_status"]["oom"]
    assert html.count('class="status status-failed"') == doc["trials_by_status"]["failed"]
    # Failed probes here still carried figures: drawn as infeasible squares, not as feasible points.
    assert html.count('<rect class="marker infeasible"') == doc["trials_by_status"]["failed"]
    assert "CUDA out of memory" in html


def test_nice_ticks_cover_the_range_with_round_steps():
    assert nice_ticks(0.18, 2.2) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    ticks = nice_ticks(7.0, 7.0)  # one point: still an axis around it
    assert ticks[0] <= 7.0 <= ticks[-1] and len(ticks) >= 2


def test_axes_span_the_plot_area_from_the_first_tick_to_the_last_and_are_escaped():
    frame = Frame(300, 200, left=60, right=20, top=10, bottom=40, x_ticks=[0.5, 1.0, 1.5], y_ticks=[0.0, 50.0, 100.0])
    assert (frame.px(0.5), frame.px(1.5), frame.py(0.0), frame.py(100.0)) == (60, 280, 160, 10)
    drawn = "\n".join(axes(frame, "limit <x>", "energy & kJ"))
    assert re.findall(r'<text class="tick" [^>]*>([^<]+)</text>', drawn) == ["0.5", "1", "1.5", "0", "50", "100"]
    assert drawn.count('class="grid"') == 3 and "limit &lt;x&gt;" in drawn and "energy &amp; kJ" in drawn
    assert "\n".join(axes(frame, "x", "y", x_grid=True)).count('class="grid"') == 6


def test_scatter_labels_never_overlap_and_are_escaped():
    markers = [Marker(1.0, 1.0, "front", "a", "fastest"), Marker(1.01, 1.0, "front", "b", "<knee>"),
               Marker(1.02, 1.0, "baseline", "c", "baseline")]
    svg = scatter_svg(markers, [(1.0, 1.0), (1.01, 1.0)], "time (h)", "energy (kWh)", "t")
    ys = sorted(float(y) for y in re.findall(r'<text class="pick-label" x="[^"]+" y="([^"]+)"', svg))
    assert len(ys) == 3 and all(b - a >= 15 for a, b in zip(ys, ys[1:]))
    assert "&lt;knee&gt;" in svg and "<knee>" not in svg
    assert svg.count('<line class="leader"') == 2  # two labels moved off their markers point back


def _titles(svg):
    return re.findall(r"<title>([^<]*)</title>", svg)


def test_bar_hover_texts_say_the_report_s_one_unit_and_never_read_zero():
    # A CPU probe of the tiny model: 4.2 J in all, once shown as "gpu: 0 kJ (60%)".
    in_joules = lambda v: report_energy_text(v, ("J", 1e-3))  # noqa: E731
    bar = stacked_bar_svg([("gpu", 0.00252), ("cpu", 0.00126), ("memory_interconnect", 0.00042), ("nic", 0.00000042)], "t",
                          in_joules)
    assert _titles(bar)[1:] == ["gpu: 2.52 J (60%)", "cpu: 1.26 J (30%)", "memory_interconnect: 0.420 J (10%)",
                                "nic: &lt;0.001 J (&lt;1%)"]
    # A GH200 study's, in its report's kWh: trial57 #4 read "GPUs: 1.51 kWh" beside "CPU: 615 kJ" in one chart.
    big = stacked_bar_svg([("gpu", 5400.0), ("cpu", 1800.0)], "t", lambda v: report_energy_text(v, ("kWh", 3600.0)))
    assert _titles(big)[1:] == ["gpu: 1.50 kWh (75%)", "cpu: 0.500 kWh (25%)"]
    phases = stacked_bar_svg([("compute", 0.0426), ("communication", 0.000446)], "t", time_text)
    assert _titles(phases)[1:] == ["compute: 42.6 ms (99%)", "communication: 0.446 ms (1%)"]


def test_power_timeline_hover_texts_of_millisecond_phases_show_their_times_and_the_device():
    samples = [(0.0, 10.0, "llm_fwd"), (0.001, 12.0, "llm_fwd"), (0.002, 14.0, "gpu_optimizer"), (0.003, 11.0, "gpu_optimizer")]
    gpu_svg, cpu_svg = power_timeline_svg(samples, "t"), power_timeline_svg(samples, "t", CPU_RANK_WORDS)
    assert _titles(gpu_svg)[1:] == ["LLM forward: 0-0.00150 s", "optimizer (GPU): 0.00150-0.00300 s"]
    assert _titles(cpu_svg)[1:] == ["LLM forward: 0-0.00150 s", "optimizer (CPU rank): 0.00150-0.00300 s"]
    assert ">optimizer (CPU rank)</text>" in cpu_svg  # the legend too


def test_a_gpu_profile_keeps_its_gpu_words(simulated_run):
    html = (simulated_run / "report.html").read_text()
    assert "<th>TFLOP/s /GPU</th>" in html and " GPUs.</p>" in html and "W per GPU x the configuration's GPUs" in html
    assert "CPU rank" not in html


def test_a_small_importance_share_reads_below_one_percent_never_zero():
    """Trial 38 #14c: a 0.2% share's bar read "0%", as the hover and component bars never do."""
    from autotune.report.svg import share_bars_svg

    svg = share_bars_svg({"micro_batch": 0.998, "optimizer_offload": 0.002}, "time")
    assert ">&lt;1%</text>" in svg and ">0%</text>" not in svg and ">100%</text>" in svg


def test_a_tuning_energy_reads_to_three_figures_in_the_report_s_unit():
    """Trial 38 #14d: "0.00183 kWh (7 kJ)"; trial57 #4: now in the report's one unit alone."""
    from autotune.report.units import report_energy_text

    assert report_energy_text(6.58, ("kJ", 1.0)) == "6.58 kJ" and report_energy_text(21_530.0, ("kWh", 3600.0)) == "5.98 kWh"


def test_a_near_zero_simulated_phase_reads_below_a_thousandth_of_its_unit_never_e_notation():
    """Trial57 #5: a calibrated fixed overhead driven to ~0 read "fixed per-step overhead: 3.79e-07 ms (<1%)" in the
    phases chart and "3.79e-10" in the table beside it."""
    from autotune.report.front import Point
    from autotune.report.html_analysis import power_html
    from autotune.report.units import figure

    details = {"phases_s": {"fwd_bwd": 0.8, "comm_exposed": 0.002, "fixed_overhead": 3.79e-10}}
    html = power_html(Point(trial=3, params={}, time_s=80.0, energy_kj=1.0, source="simulated", extra={"details": details}))
    assert "e-0" not in html and "e-1" not in html
    assert re.search(r": &lt;0\.001 ms \(&lt;1%\)</title>", html), html  # the bar's hover
    assert "<th>time ms</th>" in html and "<td>&lt;0.001</td>" in html and "<td>800</td>" in html  # the table's
    assert figure(3.79e-10) == "3.79e-10"  # only the phases: elsewhere a tiny figure keeps its three figures


def test_a_failed_trials_reason_names_the_trial_that_probed_it_again():
    """The trial table gave a timeout's reason without its retry, where "why trials failed" names it (trial77 #7)."""
    from autotune.report.html import _reason_with_retry

    timeout = {"reason": "timeout: no result within 45 s", "probed_again_as": 3}
    assert _reason_with_retry(timeout) == "timeout: no result within 45 s; probed again as trial 3"
    interrupted = {"reason": "its probe was stopped (Ctrl-C): probed again as trial 4", "probed_again_as": 4}
    assert _reason_with_retry(interrupted) == interrupted["reason"]
    assert _reason_with_retry({"reason": "out of memory"}) == "out of memory"
