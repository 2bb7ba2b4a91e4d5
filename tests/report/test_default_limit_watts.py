"""A power limit's watts where the probes read an NVML default other than the profile's (trial75 #2, #12): a study's
lines give every fraction in watts of one default (the 1.0 row's too), pareto.json keeps that default, and
`autotune compare`, which reads pareto.json alone, gives each pick the watts its own report gives and says where two
studies' "0.6 x default" are other limits. The records are replayed as the launch backend keeps them: only a probe
that set a limit (or clock) records the default it read."""

from __future__ import annotations

import json

import pytest

from autotune.hardware import load_hardware
from autotune.report.compare_checks import document_problem
from autotune.report.front import Point
from autotune.report.power_limit import limit_default_text, limit_default_w
from tests.cli import autotune_main

SPACE = """zero_stage = [3]
optimizer_offload = ["none"]
activation_checkpointing = ["recompute"]
sp_degree = [1]
micro_batch = [2]
power_limit = [1.0, 0.8, 0.6, 0.4]
sm_clock_mhz = ["max", 1500]
"""
# power_limit, clock, time_s, energy_kj: one configuration at four limits and one clock cap.
ROWS = [(1.0, "max", 527.0, 2400.0), (0.8, "max", 530.0, 2300.0), (0.6, "max", 570.0, 2000.0),
        (0.4, "max", 650.0, 1700.0), (1.0, 1500, 655.0, 1650.0)]
RUN = ("run", "--model", "7b", "--nodes", "1", "--hardware", "h100-sxm", "--trials", "10", "-q")


def _records(default_w: float) -> str:
    base = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
            "micro_batch": 2, "nodes": 1}
    lines = []
    for limit, clock, time_s, energy_kj in ROWS:
        record = {"params": dict(base, power_limit=limit, sm_clock_mhz=clock), "status": "ok", "source": "measured",
                  "time_s": time_s, "energy_kj": energy_kj, "tflops": 300.0 * 527 / time_s, "peak_mem_gib": 40.0}
        if (limit, clock) != (1.0, "max"):
            record["default_power_limit_w"] = default_w
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The same space simulated on the h100-sxm profile (700 W), and replayed at NVML defaults of 600 and 1000 W."""
    root = tmp_path_factory.mktemp("default-limit")
    (root / "space.toml").write_text(SPACE)
    dirs = {name: root / name for name in ("sim", "600", "1000")}
    ran = autotune_main(*RUN, "--space", root / "space.toml", "--backend", "simulate", "--out", dirs["sim"])
    assert ran.returncode == 0, ran.stderr
    for default in ("600", "1000"):
        (root / f"rp_{default}.jsonl").write_text(_records(float(default)))
        ran = autotune_main(*RUN, "--space", root / "space.toml", "--backend", "replay", "--measurements",
                            root / f"rp_{default}.jsonl", "--out", dirs[default])
        assert ran.returncode == 0, ran.stderr
    return dirs


def _words(text: str) -> str:
    return " ".join(text.split())


def _compare(*run_dirs) -> dict:
    done = autotune_main("compare", *run_dirs, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_study_line_gives_every_limit_in_watts_of_the_one_default_its_probes_read(runs):
    """The sweep gave 1.0 in the profile's 700 W and 0.8 in the 1000 W default's 800 W: the limited point above the
    untouched one; the table's column said "x 700 W"."""
    reported = autotune_main("report", runs["1000"])
    assert reported.returncode == 0, reported.stderr
    terminal = _words(reported.stdout)
    assert ("power limit of the fastest configuration (x default, W per GPU: of the 1000 W default NVML reported on "
            "the probes' devices; measured time, measured energy): 1.0 (1000 W): trial 0; 0.8 (800 W): trial ") in terminal
    assert "(x 1000 W)" in terminal and "(x 700 W)" not in terminal and "700 W" not in terminal.split("Which to deploy")[1]
    markdown = autotune_main("report", runs["1000"], "--format", "md")
    assert markdown.returncode == 0 and "power limit (x 1000 W)" in markdown.stdout
    assert "power limit (x 1000 W)" in (runs["1000"] / "report.html").read_text()


def test_pareto_json_keeps_the_default_each_limit_is_of(runs):
    replayed, simulated = (json.loads((runs[name] / "pareto.json").read_text()) for name in ("600", "sim"))
    assert (replayed["default_power_limit_w"], replayed["default_power_limit_source"]) == (600.0, "measured")
    assert (simulated["default_power_limit_w"], simulated["default_power_limit_source"]) == (700.0, "profile")
    for point in replayed["feasible"]:
        limited = (point["params"]["power_limit"], point["params"]["sm_clock_mhz"]) != (1.0, "max")
        assert point["default_power_limit_w"] == (600.0 if limited else None)


def test_compare_gives_a_measured_pick_the_watts_it_ran_at(runs):
    """compare gave the replayed knee "0.6 x default (420 W per GPU on the h100-sxm profile)"; it ran at 360 W."""
    document = _compare(runs["sim"], runs["600"])
    knee = next(row for row in document["picks"] if row["pick"] == "knee")["studies"]
    assert knee[0]["configuration"].endswith("power limit 0.6 x default (420 W per GPU on the h100-sxm profile)")
    assert knee[1]["configuration"].endswith(
        "power limit 0.6 x default (360 W per GPU: of the 600 W default NVML reported on the probe's devices)")
    assert knee[1]["knobs_changed"] == {"power_limit_w": [420, 360]}
    assert document["inputs"]["differ"]["default_power_limit"] == [{"watts": 700.0, "source": "profile"},
                                                                   {"watts": 600.0, "source": "measured"}]
    assert any(line.startswith("Other default power limits (study 1: 700 W (the profile's); study 2: 600 W (NVML's, "
                               "on the probes' devices))") for line in document["caveats"])


def test_compare_tells_two_clusters_same_fraction_apart(runs, monkeypatch):
    """The knees of a 600 W and a 1000 W default, both 0.6, read "same as study 1" with nothing in `knobs vs 1`."""
    monkeypatch.setenv("COLUMNS", "1000")  # the inputs table's cells unwrapped, whatever the run directories' paths
    document = _compare(runs["600"], runs["1000"])
    knee = next(row for row in document["picks"] if row["pick"] == "knee")["studies"]
    assert knee[1]["knobs_changed"] == {"power_limit_w": [360, 600]}
    fastest = next(row for row in document["picks"] if row["pick"] == "fastest")["studies"]
    assert fastest[1]["knobs_changed"] == {}  # untouched in both: no limit was set, so none differs
    table = autotune_main("compare", runs["600"], runs["1000"])
    assert table.returncode == 0, table.stderr
    assert "power limit W 360 -> 600" in _words(table.stdout)
    # The inputs table's row; its cells wrap with the width the run directories' paths leave them.
    rows = [line for line in table.stdout.splitlines() if "default power limit" in line]
    assert rows and "600 W" in rows[0], table.stdout


def test_probes_that_read_several_defaults_give_no_watts_of_either():
    """Files of two clusters merged (replay warns): no line mixes the two, and none gives the profile's instead."""
    h100 = load_hardware("h100-sxm")
    points = [Point(trial=n, params={"power_limit": limit}, time_s=1.0, energy_kj=1.0,
                    extra={"details": {"default_power_limit_w": default_w}} if default_w else {})
              for n, (limit, default_w) in enumerate(((1.0, None), (0.8, 600.0), (0.6, 1000.0)))]
    assert limit_default_w(points, h100) is None
    assert limit_default_text(points, h100) == ("x default; no watts: the probes' devices reported 2 default limits "
                                                "(600 W, 1000 W)")
    assert limit_default_w(points[:2], h100) == 600.0 and limit_default_w(points[:1], h100) == 700.0


def test_compare_refuses_a_default_limit_that_is_no_watts(runs):
    document = json.loads((runs["600"] / "pareto.json").read_text())
    assert document_problem(document) is None
    assert "`default_power_limit_w` = \"600\" is not a number" in document_problem({**document, "default_power_limit_w": "600"})
    document["front"][0]["default_power_limit_w"] = -1
    assert "`default_power_limit_w` = -1 is out of range" in document_problem(document)
