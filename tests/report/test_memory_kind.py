"""Trial 38 #14h: the memory column says what its figures are (the simulator's estimate, a process's
peak RSS on CPU, CUDA's peak allocation), where one "mem GiB" header covered all three."""

import io

import pytest
from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.front import Point
from autotune.report.pareto_json import point_json
from autotune.report.table import memory_header, print_report
from autotune.study import load_finished_study
from tests.cli import autotune_main


def _point(source: str, kind: str | None = None, peak_mem_gib: float | None = 3.5) -> Point:
    details = {"peak_mem_kind": kind} if kind else {}
    return Point(trial=0, params={}, time_s=10.0, energy_kj=1.0, peak_mem_gib=peak_mem_gib, source=source,
                 extra={"details": details})


@pytest.mark.parametrize("points, header", [
    ([_point("simulated")], "mem GiB (estimated)"),
    ([_point("measured", "process_peak_rss")], "mem GiB (process peak RSS)"),
    ([_point("measured", "cuda_max_memory_allocated")], "mem GiB (CUDA peak allocated)"),
    ([_point("measured")], "mem GiB (measured)"),  # a replayed record, which does not say how
    ([_point("simulated"), _point("measured", "cuda_max_memory_allocated")], "mem GiB (CUDA peak allocated, estimated)"),
    ([_point("measured", "process_peak_rss", peak_mem_gib=None)], "mem GiB"),  # no figure: nothing to name
])
def test_the_memory_header_names_the_kind_of_its_figures(points, header):
    assert memory_header(points) == header


@pytest.mark.parametrize("point, kind", [
    (_point("simulated"), "simulator_estimate"),
    (_point("measured", "process_peak_rss"), "process_peak_rss"),
    (_point("measured", "cuda_max_memory_allocated"), "cuda_max_memory_allocated"),
    (_point("measured"), "measured"),  # a replayed record, which does not say how
    (_point("measured", "process_peak_rss", peak_mem_gib=None), None),  # no figure: nothing to name
])
def test_pareto_json_says_what_each_points_memory_is(point, kind):
    # trial67 #2: pareto.json's peak_mem_gib was a process's RSS or the simulator's estimate without a word of which.
    assert point_json(point)["peak_mem_kind"] == kind


def test_space_and_a_simulated_report_say_the_memory_is_an_estimate(tmp_path):
    space = autotune_main("space", "--model", "7b", "--nodes", "1", "--valid")
    assert space.returncode == 0 and "mem GiB (estimated)" in space.stdout
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--out", tmp_path / "run").returncode == 0
    view, document = build_report(load_finished_study(tmp_path / "run"))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    assert "mem GiB (estimated)" in terminal.getvalue()
    assert {p["peak_mem_kind"] for p in document["front"] + document["feasible"]} == {"simulator_estimate"}
