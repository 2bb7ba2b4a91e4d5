"""benchmarks/gpu_power_study.sh and the measured H100 study it produced (benchmarks/results/h100_power_study):
the script fails fast without a GPU, and the committed study reads back as measured data through
`report` and `calibrate`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_power_study.sh"
STUDY = REPO / "benchmarks" / "results" / "h100_power_study"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], timeout=30).returncode == 0


def test_without_a_gpu_it_fails_fast_and_clearly(tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU is here: run the script itself")
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "run")], capture_output=True, text=True, timeout=60, env=ENV)
    assert done.returncode == 2 and "no NVIDIA driver" in done.stderr
    assert not (tmp_path / "run").exists()


def test_the_measured_study_reports_its_power_limit_front(tmp_path):
    run_dir = tmp_path / "study"
    run_dir.mkdir()
    shutil.copy(STUDY / "study.db", run_dir / "study.db")
    done = subprocess.run([sys.executable, "-m", "autotune.cli", "report", str(run_dir)], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=ENV)
    assert done.returncode == 0, done.stderr
    document = json.loads((run_dir / "pareto.json").read_text())
    assert document["source"] == "measured" and document["energy_source"] == "measured"
    # NVML saw the GPU alone: the report says what the measured energy leaves out.
    assert document["energy_not_measured"] == ["cpu", "memory_interconnect"]
    assert "energy is measured (without cpu, memory/interconnect: no sensor)" in done.stdout
    assert document["trials_by_status"] == {"ok": 10}
    front = document["front"]
    # The power limit alone makes the front at one GPU: every point the same knobs but the limit.
    assert sorted(p["params"]["power_limit"] for p in front) == [0.35, 0.5, 0.7, 1.0]
    assert {(p["params"]["zero_stage"], p["params"]["activation_checkpointing"]) for p in front} == {(0, "none")}
    # The exported pick travels without the report: its GPU-only energy says so there too (trial 38 #13).
    section = json.loads((run_dir / "configs" / "knee.json").read_text())["autotune"]
    assert section["energy_not_measured"] == ["cpu", "memory_interconnect"]
    assert "measured (energy of the node without cpu, memory/interconnect: no sensor saw them)" in section["note"]
    assert "measured energy without cpu, memory/interconnect)" in (run_dir / "configs" / "knee.launch.sh").read_text()


def test_the_committed_measurements_replay_with_their_window_scoped_energy(tmp_path):
    """Exported before `energy_scope` existed, the file's replay read "Totals cover every probe" and repaid tuning
    3.5x sooner than the study's own report (trial 38 #8)."""
    records = [json.loads(line) for line in (STUDY / "measurements.jsonl").read_text().splitlines()]
    assert {r["probe_cost"]["energy_scope"] for r in records} == {"window"}
    done = subprocess.run([sys.executable, "-m", "autotune.cli", "run", "--backend", "replay", "--measurements",
                           str(STUDY / "measurements.jsonl"), "--model", "benchmarks/models/qwen2.5-1.5b.json",
                           "--hardware", "h100-sxm", "--gpus-per-node", "1", "--frames", "8", "--global-batch", "4",
                           "--samples", "64", "--nodes", "1", "--space", "benchmarks/spaces/one_gpu_power.toml",
                           "--out", str(tmp_path / "replay")], capture_output=True, text=True, timeout=120, cwd=REPO, env=ENV)
    assert done.returncode == 0, done.stderr
    assert "energy measured only in the windows" in done.stdout and "Totals cover every probe" not in done.stdout
    assert "5.15 kJ (measured without cpu, memory/interconnect)" in done.stdout + done.stderr  # the progress line


def test_calibrating_on_the_measured_study_lowers_the_left_out_error():
    done = subprocess.run([sys.executable, "-m", "autotune.cli", "calibrate", str(STUDY), "--hardware", "h100-sxm", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=ENV)
    assert done.returncode == 0, done.stderr
    fit = json.loads(done.stdout)
    assert set(fit["loo_mape"]) == {"time_s", "tflops", "power_w"}
    for metric in ("time_s", "tflops"):
        assert fit["loo_mape"][metric] < fit["before_mape"][metric]
