"""A CPU study of the tiny model, as a newcomer's trial ran it: joule-scale figures, CPU ranks for
devices, and configurations that tie exactly. Its hover texts show the figures (never "0 kJ"), its
words name CPU ranks (never GPUs), and its front keeps every tied configuration."""

import io
import json
import re
from html import unescape

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.report.units import energy_text, time_text
from autotune.study import load_finished_study
from tests.report.conftest import JOULE_FIGURES

# A figure of zero in some unit, as a hover text would print a joule-scale value in kJ.
_ZERO_FIGURE = re.compile(r"(?<![\d.])0(\.0+)? ?(J|kJ|kWh|MWh|s|min|h)\b")


def _titles(html: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<title>([^<]*)</title>", html)]


def _words(html: str) -> str:
    """The page's human-readable text: without the style sheet, the DeepSpeed JSON (`<pre>`, whose keys
    DeepSpeed names) and tag attributes (CSS classes such as `phase-gpu_optimizer`)."""
    html = re.sub(r"<style>.*?</style>|<pre>.*?</pre>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", " ", html))


def test_hover_texts_show_joule_scale_figures_never_zero(cpu_joule_run):
    html = (cpu_joule_run / "report.html").read_text()
    doc = json.loads((cpu_joule_run / "pareto.json").read_text())
    titles = _titles(html)
    assert not [t for t in titles if _ZERO_FIGURE.search(t)]
    # Every plotted trial's hover text carries its own figures, in the unit that reads best for them.
    for point in doc["feasible"]:
        figures = (f"{time_text(point['time_s'])} ({point['source']}), "
                   f"{energy_text(point['energy_kj'])} ({point['energy_source']})")  # with their own labels
        assert any(t.startswith(f"trial {point['trial']} ") and t.endswith(figures) for t in titles), point["trial"]
    assert any(t.endswith("; 3.00 s (measured), 4.20 J (measured)") for t in titles)
    # The energy-by-component bar of each pick: 60% of 4.2 J is 2.52 J, not "0 kJ".
    assert any(re.fullmatch(r"CPU ranks: 2\.52 J \(60%\)", t) for t in titles)


def test_a_cpu_profile_reads_cpu_ranks_in_every_output_and_keeps_its_json_keys(cpu_joule_run):
    html = (cpu_joule_run / "report.html").read_text()
    words = _words(html)
    assert "GPU" not in words, re.findall(r".{40}GPU.{40}", words)
    assert "TFLOP/s /CPU rank" in words and "CPU ranks" in words
    view, doc = build_report(load_finished_study(cpu_joule_run))
    md = markdown_report(view, doc)
    assert "GPU" not in md and "TFLOP/s /CPU rank" in md
    out = io.StringIO()
    print_report(view, doc, Console(file=out, width=400))
    assert "GPU" not in out.getvalue() and "max power per CPU rank x CPU ranks x time" in out.getvalue()
    # Words change, keys do not: other tools read them.
    assert doc["gpus"] == 2 and "gpu_hours" in doc["tuning_cost"] and "max_power_per_gpu_w" in doc["recommendation_parameters"]


def test_configurations_that_tie_exactly_are_all_on_the_front_and_in_the_report(cpu_joule_run):
    doc = json.loads((cpu_joule_run / "pareto.json").read_text())
    front = {p["trial"] for p in doc["front"]}
    # Every feasible configuration shares its figures with the front's (they hang on micro_batch alone).
    assert front == {p["trial"] for p in doc["feasible"]}
    assert len(front) > len({(p["time_s"], p["energy_kj"]) for p in doc["feasible"]})  # ties there to keep
    assert [(p["time_s"], p["energy_kj"]) for p in doc["front"]] == sorted((p["time_s"], p["energy_kj"]) for p in doc["front"])
    html = (cpu_joule_run / "report.html").read_text()
    assert html.count('class="marker front"') == len(front)
    # Picks stay one trial each, the lowest of a tie: fastest among the micro-batch-1 ties.
    fastest_time_s = JOULE_FIGURES[1][0]
    assert doc["recommendations"]["fastest"] == min(p["trial"] for p in doc["front"] if p["time_s"] == fastest_time_s)
    assert set(doc["recommendations"].values()) <= front
    # ... and the note says which configurations tie exactly (trial 54 F6: unsaid where the front held others too).
    assert "tie with exactly the same time and energy: a pick among them names the lowest trial" in doc["note"]
