"""`autotune sensors`, run as a real subprocess against fake sysfs trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _autotune(*args: str, sysfs: Path, sources: str = "hwmon,rapl", **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AUTOTUNE_SYSFS_ROOT": str(sysfs), "AUTOTUNE_ENERGY_SOURCES": sources,
           "PYTHONPATH": str(REPO), **extra}
    return subprocess.run([sys.executable, "-m", "autotune.cli", "sensors", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_json_lists_the_sixteen_gh200_sensors(gh200_tree):
    done = _autotune("--json", sysfs=gh200_tree.root)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["sources"]
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
    rows = {r["label"]: r for r in json.loads(done.stdout)["sources"]}
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


def _fake_gpus(tmp_path, **kwargs) -> dict:
    from measure_fakes import FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV, FakeNvml

    state = tmp_path / "nvml.json"
    FakeNvml(names=("NVIDIA GH200 120GB", "NVIDIA H100 80GB HBM3"), state_path=state, **kwargs)
    return {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state),
            "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}"}


def test_json_lists_each_gpu_s_power_limits_and_clocks(tmp_path):
    done = _autotune("--json", sysfs=tmp_path, **_fake_gpus(tmp_path))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    gh200, h100 = document["devices"]
    assert (gh200["scope"], gh200["power_limit_w"], gh200["default_power_limit_w"]) == ("module", 680, 680)
    assert (h100["scope"], h100["min_power_limit_w"], h100["max_power_limit_w"]) == ("gpu", 200, 700)
    assert (h100["sm_clock_mhz"], h100["max_sm_clock_mhz"], h100["min_supported_sm_clock_mhz"]) == (1980, 1980, 345)
    assert document["device_settings_settable"] is True


def test_table_says_why_limits_cannot_be_changed(tmp_path):
    done = _autotune(sysfs=tmp_path, **_fake_gpus(tmp_path, permission=False))
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "680-680" not in text and "200-680" in text and "200-700" in text
    assert "cannot change them" in text and "CAP_SYS_ADMIN" in text


def test_no_nvml_is_a_reason_for_the_limits_too(tmp_path):
    done = _autotune("--json", sysfs=tmp_path, AUTOTUNE_NVML_API="")
    document = json.loads(done.stdout)
    if document["devices"]:
        pytest.skip("a real NVIDIA GPU is here")
    assert document["devices_reason"] and document["device_settings_settable"] is False
    import shutil

    if shutil.which("nvidia-smi") is None:
        assert document["gpus"] is None  # no nvidia-smi: no claim about GPUs (a tuner elsewhere must not read "none")
