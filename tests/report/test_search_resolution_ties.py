"""On a profile with no measured error a pick's lead under the search's 1% resolution is flagged, not read as a
ranking (trial61 #3: a least-energy pick 0.007% below the knee, at twice its time, on an uncalibrated profile, and
"Which to deploy" sent whoever pays for energy to it).

The study: `autotune run --model 7b --nodes 1-2` on a copy of gh200.toml without its [simulator_error] (a profile
never calibrated): min-energy (1 node) leads the knee (2 nodes) by 0.2% of energy at twice its time.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from autotune.report.front import Point
from autotune.report.near_ties import SEARCH_RESOLUTION_PCT, near_tie_text, near_ties, size_text

FLAG = ("0.2% less energy than knee, under the 1% the search tells apart: the difference may not be real; knee takes "
        "50% less time, on 8 GPUs against 4 (0.5% more GPU-h)")


@pytest.fixture(scope="module")
def uncalibrated_study(tmp_path_factory):
    from autotune.cli import main
    from autotune.commands.finish import build_report
    from autotune.hardware import load_hardware
    from autotune.report.markdown import markdown_report
    from autotune.report.table import print_report
    from autotune.study import load_finished_study

    tmp = tmp_path_factory.mktemp("uncalibrated")
    text = Path(load_hardware("gh200").source).read_text()
    text = re.sub(r"\n\[simulator_error\][^\[]*", "\n", text).replace('name = "gh200"', 'name = "gh200-uncalibrated"')
    profile = tmp / "gh200-uncalibrated.toml"
    profile.write_text(text)
    out = tmp / "run"
    assert main(["run", "--model", "7b", "--nodes", "1-2", "--hardware", str(profile), "--out", str(out)]) == 0
    view, document = build_report(load_finished_study(out))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=1000))
    return view, document, terminal.getvalue(), markdown_report(view, document)


def test_a_lead_under_the_search_resolution_is_flagged_where_no_error_was_measured(uncalibrated_study):
    view, document, terminal, md = uncalibrated_study
    assert document["simulator_error"] == {}
    tie = {row["name"]: row for row in document["picks"]}["min_energy"]["near_tie"]
    assert tie["trial"] == view.picks["knee"] and tie["figure"] == "energy"
    assert (tie["bound"], tie["bound_pct"], tie["calibrated_error_pct"]) == ("search_resolution", 1.0, None)
    min_energy_line = next(line for line in terminal.splitlines() if line.startswith("min-energy (least energy):"))
    assert FLAG in min_energy_line and FLAG in md
    deploy = next(line for line in terminal.splitlines() if line.startswith("Which to deploy:"))
    assert "less energy than knee, under the 1% the search tells apart, so it may not be real" in deploy


def _point(trial, time_s, energy_kj):
    return Point(trial, {}, time_s, energy_kj, source="simulated", energy_source="simulated")


def _view(points, picks):
    return SimpleNamespace(picks=picks, point=lambda trial: next(p for p in points if p.trial == trial))


def test_the_bound_is_the_larger_of_the_measured_error_and_the_search_resolution():
    points = [_point(1, 100.0, 300.0), _point(2, 200.0, 299.0)]  # 2 leads 1 by 0.33% of energy at twice the time
    view = _view(points, {"fastest": 1, "min_energy": 2})
    outside = {"extrapolated": {"2": ["power limit 0.7"]}}
    # A measured error under 1%: the search's resolution still bounds the lead, and is named.
    small = near_ties(view, {"time_s_pct": 0.2, "energy_kj_pct": 0.2, **outside})["min_energy"]
    assert (small["bound"], small["bound_pct"], small["calibrated_error_pct"]) == ("search_resolution", 1.0, 0.2)
    # One above it: the measured error, as before.
    large = near_ties(view, {"time_s_pct": 3.4, "energy_kj_pct": 3.3, **outside})["min_energy"]
    assert (large["bound"], large["bound_pct"]) == ("calibrated_error", 3.3)
    assert "inside the 3.3% error measured at calibrated configurations" in near_tie_text(large)
    # A lead over the resolution, with no error measured anywhere: no flag (nothing to hold it against).
    apart = _view([_point(1, 100.0, 300.0), _point(2, 200.0, 290.0)], {"fastest": 1, "min_energy": 2})
    assert near_ties(apart, {})["min_energy"] is None
    assert SEARCH_RESOLUTION_PCT == 1.0


def test_a_difference_under_a_tenth_of_a_percent_keeps_one_significant_figure():
    assert [size_text(pct) for pct in (0.007, 0.05, 0.2, 6.5, 50)] == ["0.007%", "0.05%", "0.2%", "6.5%", "50%"]


def test_an_older_pick_row_without_a_bound_reads_as_the_calibrated_error():
    old = {"trial": 3, "picks": ["knee"], "figure": "energy", "lead_pct": 0.2, "calibrated_error_pct": 3.3,
           "other_figure": "time", "other_less_pct": 50.0, "other_error_pct": 3.4}
    assert near_tie_text(old).startswith("0.2% less energy than knee, inside the 3.3% error measured at calibrated")
