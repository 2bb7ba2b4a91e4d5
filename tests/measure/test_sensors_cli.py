"""`autotune sensors`, run as a real subprocess against fake sysfs trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _autotune(*args: str, sysfs: Path, sources: str = "hwmon,rapl") -> subprocess.CompletedProcess:
    env = {**os.environ, "AUTOTUNE_SYSFS_ROOT": str(sysfs), "AUTOTUNE_ENERGY_SOURCES": sources,
           "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "autotune.cli", "sensors", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_json_lists_the_sixteen_gh200_sensors(gh200_tree):
    done = _autotune("--json", sysfs=gh200_tree.root)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    hwmon_rows = [r for r in rows if r["kind"] == "hwmon"]
    assert len(hwmon_rows) == 16 and all(r["available"] for r in hwmon_rows)
    labels = {r["label"]: r for r in hwmon_rows}
    for socket in range(4):
        assert labels[f"Module Power Socket {socket}"]["scope"] == "module"
        assert labels[f"Grace Power Socket {socket}"]["scope"] == "grace"
        assert labels[f"CPU Power Socket {socket}"]["scope"] == "cpu"
        assert labels[f"SysIO Power Socket {socket}"]["scope"] == "sysio"
    assert {r["unit"] for r in hwmon_rows} == {"uW"}
    (rapl_row,) = [r for r in rows if r["kind"] == "rapl"]
    assert not rapl_row["available"] and rapl_row["reason"].startswith("no driver")


def test_sample_adds_mean_power_in_watts(gh200_tree):
    done = _autotune("--json", "--sample", "0.3", "--period", "0.05", sysfs=gh200_tree.root)
    assert done.returncode == 0, done.stderr
    rows = {r["label"]: r for r in json.loads(done.stdout)}
    assert rows["Module Power Socket 2"]["mean_power_w"] == pytest.approx(602.0)
    assert rows["SysIO Power Socket 0"]["mean_power_w"] == pytest.approx(20.0)
    assert rows["RAPL"]["mean_power_w"] is None  # unavailable, never 0 W


def test_table_names_each_missing_source_and_why(tmp_path):
    done = _autotune(sysfs=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no driver" in done.stdout and "estimated" in done.stdout


def test_bad_sample_is_a_user_error(tmp_path):
    done = _autotune("--sample", "-1", sysfs=tmp_path)
    assert done.returncode == 2 and "--sample" in done.stderr


def test_measurement_imports_neither_torch_nor_pynvml():
    code = ("import sys, autotune.measure, autotune.commands.sensors, trainer.energy; "
            "print(sorted(m for m in ('torch', 'pynvml', 'deepspeed') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
