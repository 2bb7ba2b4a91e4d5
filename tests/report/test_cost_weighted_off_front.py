"""The cost-weighted pick is the least Zeus cost of every feasible trial, as --help and docs/report.md define it, and
says so where that trial lies off the time-energy front (trial72 #9: across node counts the pick was the front's least
cost, 5% dearer at eta 0 than a 32-GPU trial a 64-GPU one beat in time and energy, and not the fewest GPU-hours)."""

import json

import pytest

from autotune.commands.finish import build_report
from autotune.report.front import Point, cost_weighted, pareto_front, recommendations, zeus_cost_j
from autotune.report.markdown import markdown_report
from autotune.study import load_finished_study
from tests.cli import autotune_main


def pt(trial, time_s, energy_kj, gpus):
    return Point(trial=trial, params={"trial": trial}, time_s=time_s, energy_kj=energy_kj, gpus=gpus)


# Trial 2 on 32 GPUs is beaten in both figures by trial 1 on 64, yet takes fewer GPU-hours (32 x 739 s against 64 x 483 s).
POINTS = [pt(0, 440.0, 15_500.0, 64), pt(1, 483.0, 13_360.0, 64), pt(2, 739.0, 13_800.0, 32), pt(3, 822.0, 11_900.0, 32)]


def test_the_least_cost_is_taken_over_every_feasible_point_not_the_front_alone():
    front = pareto_front(POINTS)
    assert 2 not in [p.trial for p in front]
    assert cost_weighted(POINTS, 0.0, 680.0).trial == 2  # eta 0: the fewest GPU-hours
    assert zeus_cost_j(POINTS[2], 0.0, 680.0) < min(zeus_cost_j(p, 0.0, 680.0) for p in front)
    assert recommendations(front, 1.05, 0.0, 680.0, feasible=POINTS)["cost_weighted"] == 2
    assert recommendations(front, 1.05, 1.0, 680.0, feasible=POINTS)["cost_weighted"] == 3  # energy alone: on the front


SPACE = """zero_stage = [3]
optimizer_offload = ["async"]
activation_checkpointing = ["recompute"]
sp_degree = [1]
micro_batch = [1, 2]
power_limit = [1.0, 0.7]
sm_clock_mhz = ["max"]
"""


@pytest.fixture(scope="module")
def node_span_run(tmp_path_factory):
    """72b on 8 and 16 nodes at eta 0, every candidate simulated: the fewest GPU-hours is an 8-node trial off the front."""
    root = tmp_path_factory.mktemp("eta0")
    (root / "space.toml").write_text(SPACE)
    out = root / "run"
    done = autotune_main("run", "--model", "72b", "--nodes", "8,16", "--space", root / "space.toml", "--backend",
                         "simulate", "--sampler", "random", "--trials", "12", "--eta", "0", "--out", out, "-q")
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_a_study_over_node_counts_picks_the_fewest_gpu_hours_at_eta_0_and_says_it_is_off_the_front(node_span_run):
    out, printed = node_span_run
    document = json.loads((out / "pareto.json").read_text())
    fewest = min(document["feasible"], key=lambda p: p["gpus"] * p["time_s"])
    row = next(r for r in document["picks"] if r["name"] == "cost_weighted")
    assert row["trial"] == fewest["trial"] == document["recommendations"]["cost_weighted"]
    front = [p["trial"] for p in document["front"]]
    assert row["trial"] not in front and row["on_front"] is False and row["beaten_by"] and set(row["beaten_by"]) <= set(front)
    assert all(r["on_front"] is True and r["beaten_by"] == [] for r in document["picks"] if r["name"] != "cost_weighted")
    said = f"off the time-energy front: trial {row['beaten_by'][0]} takes "
    line = next(line for line in printed.splitlines() if line.startswith("cost-weighted (eta 0): "))
    assert said in line and "the cost counts GPUs x time, which the front does not rank" in line
    view, document = build_report(load_finished_study(out))
    assert said in next(line for line in markdown_report(view, document).splitlines() if line.startswith("- **cost-weighted"))
    assert said[0].upper() + said[1:] in (out / "report.html").read_text()


def test_its_export_says_why_it_is_the_pick_though_off_the_front(node_span_run, tmp_path):
    out, _ = node_span_run
    document = json.loads((out / "pareto.json").read_text())
    row = next(r for r in document["picks"] if r["name"] == "cost_weighted")
    done = autotune_main("export", out, "--pick", "cost-weighted", "-o", tmp_path / "cw.json")
    assert done.returncode == 0, done.stderr
    said = (f"it is the cost-weighted pick all the same: trial {row['beaten_by'][0]} runs on 64 GPUs against 32 (")
    assert said in done.stderr and said in (tmp_path / "cw.launch.sh").read_text()
    assert json.loads((tmp_path / "cw.json").read_text())["autotune"]["on_front"] is False
