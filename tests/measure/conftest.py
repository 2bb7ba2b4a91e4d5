"""Fixtures for the measurement tests (the fakes themselves live in measure_fakes.py)."""

from __future__ import annotations

import pytest
from measure_fakes import FakeClock, Gh200Tree, RaplTree


@pytest.fixture
def gh200_tree(tmp_path) -> Gh200Tree:
    return Gh200Tree(tmp_path / "sys")


@pytest.fixture
def rapl_tree(tmp_path) -> RaplTree:
    return RaplTree(tmp_path / "sys")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def no_sensor_env(tmp_path, monkeypatch):
    """An empty sysfs and no NVML probing: this machine, seen as a sensorless node."""
    empty = tmp_path / "empty-sys"
    empty.mkdir()
    monkeypatch.setenv("AUTOTUNE_SYSFS_ROOT", str(empty))
    monkeypatch.setenv("AUTOTUNE_ENERGY_SOURCES", "hwmon,rapl")
    return empty

