"""A pick's changes against the baseline say where their figures came from (trial 38 #2, #3): a measured pick
against a simulated baseline, and TFLOP/kJ (work per energy) wherever that energy is an estimate."""

import io
import json
from contextlib import redirect_stdout

import pytest
from rich.console import Console

from autotune.cli import main
from autotune.commands.finish import build_report
from autotune.report.front import Point
from autotune.report.markdown import markdown_report
from autotune.report.picks import baseline_label
from autotune.report.table import print_report
from autotune.study import load_finished_study

BASELINE = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
            "micro_batch": 2, "nodes": 4, "power_limit": 1.0, "sm_clock_mhz": "max"}


def test_the_baseline_is_labelled_where_its_figures_come_from_elsewhere():
    def point(source, energy_source):
        return Point(0, {}, time_s=1.0, energy_kj=1.0, source=source, energy_source=energy_source)

    measured = point("measured", "measured")
    assert baseline_label(measured, measured) == "" and baseline_label(measured, None) == ""
    assert baseline_label(measured, point("simulated", "simulated")) == "its figures simulated"
    assert baseline_label(measured, point("measured", "estimated")) == "its time measured, energy estimated"


@pytest.fixture(scope="module")
def valid_records():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["space", "--model", "32b", "--nodes", "4", "--simulate", "--json"]) == 0
    return [entry for entry in json.loads(out.getvalue()) if entry["valid"]]


def _outputs(tmp_path, records, *flags):
    measurements = tmp_path / "m.json"
    measurements.write_text(json.dumps(records))
    out = tmp_path / "run"
    assert main(["run", "--model", "32b", "--nodes", "4", "--backend", "replay", "--measurements", str(measurements),
                 "--out", str(out), *flags]) == 0
    view, document = build_report(load_finished_study(out))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    return view, document, terminal.getvalue(), markdown_report(view, document), (out / "report.html").read_text()


def test_savings_against_a_simulated_baseline_say_so_in_every_output(tmp_path, valid_records):
    records = [dict(r, source="simulated" if r["params"] == BASELINE else "measured") for r in valid_records]
    view, document, terminal, md, html = _outputs(tmp_path, records, "--trials", "12")
    assert view.baseline_point().source == "simulated"
    for row in document["picks"]:
        line = next(line for line in terminal.splitlines() if f": trial {row['trial']}," in line)
        assert f"  (against baseline trial {view.baseline_trial}, its figures simulated: " in line, line
        md_line = next(line for line in md.splitlines() if line.startswith("- **") and f": trial {row['trial']}," in line)
        assert f"(baseline trial {view.baseline_trial}: its figures simulated)" in md_line
    assert f"Savings are against the baseline trial {view.baseline_trial} (what one would run untuned; its figures simulated)" in html


def test_tflop_per_kj_of_estimated_energy_is_labelled_estimated(tmp_path, valid_records):
    records = [dict(r, source="estimated" if r["params"]["power_limit"] < 1 else "measured") for r in valid_records]
    view, document, terminal, md, html = _outputs(tmp_path, records, "--allow-estimated-energy", "--trials", "12")
    estimated = [p for p in view.front if p.energy_source == "estimated"]
    assert estimated and len(estimated) < len(view.front)  # a front of both: the marks are per figure
    for p in view.front:
        md_row = next(line for line in md.splitlines() if line.startswith(f"| {p.trial} |"))
        tflop_per_kj = md_row.split("|")[-4]  # before the memory and pick columns
        assert ("(estimated)" in tflop_per_kj) == (p.energy_source == "estimated"), md_row
    min_energy = next(row for row in document["picks"] if row["name"] == "min_energy")
    line = next(line for line in terminal.splitlines() if line.startswith("min-energy"))
    assert view.point(min_energy["trial"]).energy_source == "estimated"
    assert "% less energy (estimated)" in line and "% more TFLOP/kJ (estimated)" in line, line
    assert "TFLOP/kJ (estimated)" not in next(line for line in terminal.splitlines() if line.startswith("fastest:"))


def test_trials_with_a_time_but_no_energy_are_counted_as_such_in_every_output(tmp_path, valid_records):
    """Trial 38 #4: records without energy (a sensor that saw nothing) fail the study's ranking; the terminal and
    Markdown said "27 failed", which reads as 27 crashes, and the plot's hover named no label."""
    records = [dict(r, source="measured") for r in valid_records]
    for record in records:
        if record["params"]["power_limit"] < 1:
            record.pop("energy_kj")
    view, document, terminal, md, html = _outputs(tmp_path, records, "--trials", "12")
    failed = document["trials_by_status"]["failed"]
    words = f"{failed} failed (of them {failed} with a time but energy unavailable: no sensor saw it and nothing estimated it)"
    assert failed and all(words in text for text in (terminal, md, html))
    assert "12.0 min (measured), 1.93 kWh (measured)</title>" in html
