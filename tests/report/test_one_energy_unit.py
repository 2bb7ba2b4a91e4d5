"""One energy unit per report (trial57 #4): a 7b study's table read kJ, its tuning-cost lines "saves 0.000256 kWh",
and report.html's energy-by-component chart "GPUs: 1.51 kWh" beside "CPU: 615 kJ". Every energy figure of a report
is now in its front's unit (units.front_energy_unit), chart labels included; `autotune compare` keeps one for its
whole output."""

import io
import re

import pytest
from rich.console import Console

from autotune.backends.simulate import SimulateBackend
from autotune.commands.finish import build_report
from autotune.report.compare_table import output_energy_unit
from autotune.report.markdown import markdown_report
from autotune.report.payback import payback_sentence
from autotune.report.table import print_report
from autotune.report.units import front_energy_unit, report_energy_text
from autotune.study import load_finished_study
from tests.report.conftest import finished_run

# An energy figure with its unit ("2,019 kJ", "<0.001 kWh"); "TFLOP/kJ" has no figure before its unit.
_ENERGY = re.compile(r"(?:<?\d[\d,]*(?:\.\d+)?) (mJ|J|kJ|kWh|MWh)\b")


@pytest.fixture(scope="module")
def one_node_7b(tmp_path_factory):
    """The reproduction's `run --model 7b --nodes 1`: its energies are kJ, its savings a few kJ."""
    run_dir = tmp_path_factory.mktemp("units") / "7b-1n"
    finished_run(run_dir, SimulateBackend(), 30, nodes="1", study_flags=("--model", "7b"))
    return run_dir


def test_every_energy_of_the_terminal_and_markdown_reports_is_in_the_front_unit(one_node_7b):
    view, document = build_report(load_finished_study(one_node_7b))
    assert front_energy_unit(view.front)[0] == "kJ"
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    for text in (out.getvalue(), markdown_report(view, document)):
        tuning = text[text.index("uning cost"):]
        assert "saves " in tuning and set(_ENERGY.findall(tuning)) == {"kJ"}, tuning
        assert set(_ENERGY.findall(text)) == {"kJ"}


def test_report_html_charts_and_tables_say_the_front_unit_alone(one_node_7b):
    view, document = build_report(load_finished_study(one_node_7b))
    html = (one_node_7b / "report.html").read_text()
    titles = re.findall(r"<title>([^<]*)</title>", html)
    components = [t for t in titles if t.startswith(("GPUs: ", "CPU: ", "memory"))]
    assert components and {u for t in components for u in _ENERGY.findall(t)} == {"kJ"}
    assert re.search(r"saves [0-9.]+ kJ \([a-z]+\) per run of the workload", html) and "kWh" not in html


def test_a_saving_too_small_for_the_unit_reads_as_a_floor_and_a_share_not_e_notation():
    row = {"saved_kj_per_workload": 0.92, "saved_kj_per_training_hour": 8.1, "saved_source": "simulated",
           "energy_change_pct": -0.05, "energy_noise_pct": None, "text": "at once: no probe ran on hardware"}
    said = payback_sentence(row, ("kWh", 3600.0))
    assert said.startswith("saves <0.001 kWh (simulated) per run of the workload against the baseline, under 0.1% of "
                           "its energy (0.00225 kWh saved per hour"), said
    assert payback_sentence(row, ("kJ", 1.0)).startswith("saves 0.920 kJ (simulated) per run")
    assert report_energy_text(None, ("kWh", 3600.0)) == "energy unavailable" and report_energy_text(0.0, ("kWh", 3600.0)) == "0 kWh"


def test_compare_gives_its_picks_and_shared_front_one_energy_unit():
    pick = {"energy_kj": 2000.0}
    shared = {"energy_kj": 5000.0}
    document = {"picks": [{"studies": [pick, None]}],
                "shared_front": {"configurations": [{"studies": [[shared], []]}]}}
    assert output_energy_unit(document) == ("kWh", 3600.0)  # the picks alone would read kJ
