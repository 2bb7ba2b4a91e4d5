"""A launch study ranks by energy only where this machine has a sensor, or the user accepts estimates."""

from __future__ import annotations

import pytest

from autotune.backends.launch import LaunchBackend
from autotune.backends.select import check_energy_objective
from autotune.errors import UserError


def test_no_sensor_refuses_energy_ranking_in_one_line(no_sensor_env, tmp_path):
    backend = LaunchBackend(run_dir=tmp_path / "run")
    with pytest.raises(UserError) as refused:
        check_energy_objective(backend, "time,energy", allow_estimated=False)
    line = str(refused.value)
    assert "no energy sensor on this machine" in line and "--allow-estimated-energy" in line
    assert "--objectives time" in line and "\n" not in line
    check_energy_objective(backend, "time,energy", allow_estimated=True)  # asked for: estimates rank
    check_energy_objective(backend, "time", allow_estimated=False)  # energy is not an objective


def test_a_sensor_lets_energy_rank(rapl_tree, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(tmp_path / "sys"))
    monkeypatch.setenv("AUTOTUNE_ENERGY_SOURCES", "rapl")
    backend = LaunchBackend(run_dir=tmp_path / "run")
    assert backend.estimated_energy_only() is None
    check_energy_objective(backend, "time,energy", allow_estimated=False)
