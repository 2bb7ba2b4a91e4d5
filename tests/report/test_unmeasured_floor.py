"""A newcomer's trial: on the H100 study (NVML, GPU energy alone) the least-energy pick, power limit 0.35, led 0.5 by
0.022 kJ while adding 4 s, over which the host parts no sensor saw draw about 0.11 kJ at idle: the reports named it
"least energy" with no word of it."""

import json
from pathlib import Path

import pytest

from autotune.report.study_points import study_view
from autotune.report.unmeasured_floor import unmeasured_floor
from autotune.study import load_finished_study
from tests.cli import autotune_main

REPO = Path(__file__).resolve().parents[2]
H100_STUDY = ("run", "--backend", "replay", "--measurements", REPO / "benchmarks/results/h100_power_study/measurements.jsonl",
              "--model", REPO / "benchmarks/models/qwen2.5-1.5b.json", "--hardware", "h100-sxm", "--gpus-per-node", "1",
              "--frames", "8", "--global-batch", "4", "--samples", "64", "--nodes", "1",
              "--space", REPO / "benchmarks/spaces/one_gpu_power.toml")


def test_a_least_energy_pick_that_leads_by_less_than_the_unmeasured_floor_says_so(tmp_path):
    run = autotune_main(*H100_STUDY, "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    floor = json.loads((tmp_path / "run" / "pareto.json").read_text())["unmeasured_floor"]
    assert floor["pick"] == 1 and floor["rival"] == 2 and floor["parts"] == ["cpu", "memory_interconnect"]
    assert floor["floor_w_per_gpu"] == 27.5  # h100-sxm: cpu idle 15 W + memory/interconnect 25 W x its idle share 0.5
    (pick_kj, pick_floor), (rival_kj, rival_floor) = floor["pick_kj"], floor["rival_kj"]
    assert pick_kj < rival_kj and rival_floor < pick_floor  # the lead, measured, and its reversal with the floor
    view = study_view(load_finished_study(tmp_path / "run"))
    pick, rival = view.point(1), view.point(2)
    assert pick_floor - pick_kj == pytest.approx(27.5 * pick.time_s / 1e3)  # one GPU each, over its time to solution
    assert rival_floor - rival_kj == pytest.approx(27.5 * rival.time_s / 1e3)
    said = "least energy as measured, which leaves out cpu, memory/interconnect (no sensor)"
    assert said in run.stdout and "the faster trial 2 would use less than trial 1" in run.stdout
    markdown = autotune_main("report", tmp_path / "run", "--format", "md")
    assert said in markdown.stdout
    assert "Least energy as measured, which leaves out cpu" in (tmp_path / "run" / "report.html").read_text()


def test_energy_that_covers_the_node_or_is_simulated_has_no_floor_to_count(tmp_path):
    run = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "4", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    assert unmeasured_floor(study_view(load_finished_study(tmp_path / "run"))) is None
    assert json.loads((tmp_path / "run" / "pareto.json").read_text())["unmeasured_floor"] is None
