"""Trial 33 (a newcomer with A100 nodes, for which no profile ships): hardware profiles.

#4 the committed measured study names another checkout's built-in profile by path and still reports,
exports and calibrates; #1 a [simulator_error] copied into a profile it was not measured on is ignored
with one warning; #6 unit mistakes (kW, MiB, GHz, a node's cap) are refused in one line, while real
hardware (the shipped profiles, an A100 and an H200 node from datasheet figures) still loads.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from autotune.errors import ConfigError
from autotune.hardware import PROFILE_DIR, available_hardware, hardware_flag, load_hardware, stored_hardware
from tests.cli import autotune_main

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "benchmarks" / "results" / "h100_power_study"
RECORDED = "/work/main/autotune/hardware/h100-sxm.toml"  # what the committed study.db names
ELSEWHERE = "/home/alice/src/autotune/autotune/hardware/h100-sxm.toml"  # a clone anywhere else

# A DGX-A100-like node from NVIDIA's A100 SXM4 80 GB datasheet (80 GB HBM2e at 2039 GB/s, 312 TFLOP/s dense
# bf16, 19.5 fp32, 400 W TDP, 1410 MHz boost, NVLink 3 600 GB/s both directions) and the DGX A100 user guide
# (2x EPYC 7742, 1 TiB, 8x HDR 200 Gb/s); idle and host powers are estimates (the trial's hw/a100-80.toml).
A100 = """\
name = "a100-80"
gpus_per_node = 8
cuda = true
module_scope_energy = false

[gpu]
name = "A100 SXM4 80 GB"
memory_gib = 80.0
memory_bandwidth_gbs = 2039.0
peak_bf16_tflops = 312.0
peak_fp32_tflops = 19.5
idle_power_w = 55.0
max_power_w = 400.0
min_sm_clock_mhz = 210.0
max_sm_clock_mhz = 1410.0

[cpu]
name = "2x AMD EPYC 7742 (share per GPU)"
cores = 16
memory_gib = 128.0
memory_bandwidth_gbs = 50.0
idle_power_w = 12.0
max_power_w = 56.0

[host_link]
name = "PCIe Gen4 x16"
bandwidth_gbs = 25.0

[intra_node]
name = "NVLink 3 / NVSwitch"
bandwidth_gbs = 300.0

[inter_node]
name = "InfiniBand HDR200 (one HCA per GPU)"
bandwidth_gbs = 25.0

[power]
module_cap_w = 400.0
memory_interconnect_w = 20.0
min_limit_w = 100.0
"""

# An HGX H200 node (H200 SXM datasheet: 141 GB HBM3e at 4.8 TB/s, 700 W), as the trial wrote it.
H200 = (A100.replace('name = "a100-80"', 'name = "h200"').replace("memory_gib = 80.0", "memory_gib = 141.0")
        .replace("memory_bandwidth_gbs = 2039.0", "memory_bandwidth_gbs = 4800.0")
        .replace("peak_bf16_tflops = 312.0", "peak_bf16_tflops = 989.0").replace("peak_fp32_tflops = 19.5", "peak_fp32_tflops = 67.0")
        .replace("max_power_w = 400.0", "max_power_w = 700.0").replace("min_sm_clock_mhz = 210.0", "min_sm_clock_mhz = 345.0")
        .replace("max_sm_clock_mhz = 1410.0", "max_sm_clock_mhz = 1980.0").replace("module_cap_w = 400.0", "module_cap_w = 700.0")
        .replace("min_limit_w = 100.0", "min_limit_w = 200.0"))


def _write(tmp_path: Path, text: str, name: str = "node.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- #4: a study made in another checkout -------------------------------------------------------------

def _moved_study(tmp_path: Path, recorded: str = ELSEWHERE, hardware_name: str = "h100-sxm") -> Path:
    """The committed study as a clone at another path has it: every recorded profile path rewritten."""
    run_dir = tmp_path / "h100_moved"
    run_dir.mkdir()
    shutil.copy(STUDY / "study.db", run_dir / "study.db")
    with sqlite3.connect(run_dir / "study.db") as db:
        for table in ("study_user_attributes", "trial_user_attributes"):
            db.execute(f"UPDATE {table} SET value_json = replace(value_json, ?, ?)", (RECORDED, recorded))
        db.execute("UPDATE study_user_attributes SET value_json = replace(value_json, ?, ?) WHERE key = 'settings'",
                   ('"hardware_name": "h100-sxm"', f'"hardware_name": "{hardware_name}"'))
    return run_dir


def test_the_committed_study_names_a_builtin_by_a_path_and_keeps_no_copy():
    """What the fallback is for: if the study is ever re-saved with its profile, this test says so."""
    with sqlite3.connect(STUDY / "study.db") as db:
        settings = json.loads(db.execute("SELECT value_json FROM study_user_attributes WHERE key = 'settings'").fetchone()[0])
    assert settings["hardware"] == RECORDED and settings["hardware_name"] == "h100-sxm"
    assert "hardware_profile" not in settings


def test_a_study_made_in_another_checkout_reports_exports_and_calibrates(tmp_path):
    run_dir = _moved_study(tmp_path)
    report = autotune_main("report", run_dir)
    assert report.returncode == 0, report.stderr
    kept = json.loads((run_dir / "pareto.json").read_text())
    assert kept["trials_by_status"] == {"ok": 10}
    assert kept["hardware"] == "h100-sxm" and kept["hardware_file"] is None  # the built-in, wherever its file was
    export = autotune_main("export", run_dir, "--pick", "knee", "-o", tmp_path / "knee.json")
    assert export.returncode == 0, export.stderr
    calibrate = autotune_main("calibrate", run_dir, "--no-loo", "--json")
    assert calibrate.returncode == 0, calibrate.stderr
    assert "does not exist" not in report.stderr + export.stderr + calibrate.stderr


def test_the_hint_names_the_builtin_not_another_checkouts_file(tmp_path):
    refused = autotune_main("calibrate", _moved_study(tmp_path), "--hardware", "gh200", "--no-loo")
    assert refused.returncode == 2
    assert "pass --hardware h100-sxm (" in refused.stderr and "/home/alice" not in refused.stderr


def _older_autotunes_profile(text: str) -> str:
    """A profile as autotune wrote it before the CPU Adam rate moved from [cpu] to [simulator] (commit 3135000)."""
    rate = re.search(r"^cpu_adam_params_per_s = (\S+)", text, re.M)
    text = text.replace(rate.group(0), "")
    return text.replace("[cpu]\n", f"[cpu]\nadam_params_per_s = {rate.group(1)}\n", 1)


def test_a_study_of_an_older_install_still_there_reads_this_installs_builtin(tmp_path):
    """trial73 #4: while the older autotune a study was made with is still installed (its venv kept beside the upgrade),
    the path the study recorded was read, that install's own built-in, and refused for a key this version moved: every
    command but `run` was one line pointing into the other package. The built-in is read by its name, as where that
    install is gone."""
    older = tmp_path / "old-venv" / "autotune" / "hardware" / "h100-sxm.toml"
    older.parent.mkdir(parents=True)
    older.write_text(_older_autotunes_profile((PROFILE_DIR / "h100-sxm.toml").read_text()))
    run_dir = _moved_study(tmp_path, str(older))
    for command in (("report", run_dir), ("export", run_dir, "--measurements", tmp_path / "m.jsonl"),
                    ("export", run_dir, "--trial", "0", "-o", tmp_path / "t0.json"), ("calibrate", run_dir, "--no-loo", "--json")):
        done = autotune_main(*command)
        assert done.returncode == 0, (command, done.stderr)
        assert str(older) not in done.stderr
    assert len((tmp_path / "m.jsonl").read_text().splitlines()) == 10


def test_a_copy_of_an_older_profile_names_where_its_moved_key_goes_now(tmp_path):
    """trial73 #8: a profile copied from an older autotune's built-in (docs/calibration.md's way to make one) was
    refused for "unknown key adam_params_per_s", read as a typo; the line now names the key's place now."""
    mine = tmp_path / "mynode.toml"
    mine.write_text(_older_autotunes_profile((PROFILE_DIR / "h100-sxm.toml").read_text()).replace(
        'name = "h100-sxm"', 'name = "mynode"', 1))
    refused = autotune_main("run", "--model", "7b", "--nodes", "1", "--hardware", mine, "--trials", "2", "--out", tmp_path / "r")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert (f"hardware profile {mine}: [cpu] adam_params_per_s is an older autotune's key: move it to [simulator] as "
            "cpu_adam_params_per_s (the same value)") in " ".join(refused.stderr.split())


@pytest.mark.parametrize("recorded, hardware_name", [
    ("/home/alice/profiles/h100-sxm.toml", "h100-sxm"),  # the user's own file, named like a built-in
    (ELSEWHERE, "my-h100"),  # a file in a checkout's profile folder that is not that built-in
])
def test_a_gone_file_that_was_no_builtin_is_not_replaced_by_one(tmp_path, recorded, hardware_name):
    refused = autotune_main("report", _moved_study(tmp_path, recorded, hardware_name))
    assert refused.returncode == 2 and f"hardware profile {recorded} does not exist" in refused.stderr


@pytest.mark.parametrize("source, flag", [
    (str(PROFILE_DIR / "gh200.toml"), "gh200"),
    (RECORDED, "h100-sxm"),
    (ELSEWHERE, "h100-sxm"),
    ("cpu", "cpu"),
    ("/home/alice/profiles/h100-sxm.toml", "/home/alice/profiles/h100-sxm.toml"),
    ("/home/alice/autotune/hardware/a100.toml", "/home/alice/autotune/hardware/a100.toml"),  # no such built-in
])
def test_hardware_flag_names_a_builtin_wherever_its_file_was(source, flag):
    assert hardware_flag(source) == flag


# --- #1: a [simulator_error] is the profile's own, or ignored -------------------------------------------

GH200_ERROR = load_hardware("gh200").simulator_error


def _without_scope_table(text: str) -> str:
    """gh200.toml's text as an older calibrate wrote its profiles: without [error_measured_on], which none wrote."""
    return text[:text.index("\n# What that error was measured on")] + "\n"


def _gh200_copy(tmp_path: Path, name: str = "a100-from-gh200.toml") -> Path:
    """What "copy gh200.toml" gave: another node's figures with gh200's [simulator] and [simulator_error]."""
    gh200 = (PROFILE_DIR / "gh200.toml").read_text()
    return _write(tmp_path, A100 + gh200[gh200.index("[simulator]"):], name)


def test_the_builtin_profiles_keep_their_error_and_say_nothing(capsys):
    assert GH200_ERROR  # the shipped, calibrated one
    for name in available_hardware():
        load_hardware(name)
    assert capsys.readouterr().err == ""


def test_a_copied_error_is_ignored_with_one_line_naming_the_file_and_the_fix(tmp_path, capsys):
    path = _gh200_copy(tmp_path)
    profiles = [load_hardware(str(path)) for _ in range(3)]  # a command reads it several times
    assert all(p.simulator_error == {} for p in profiles)
    assert profiles[0].simulator.max_compute_efficiency == load_hardware("gh200").simulator.max_compute_efficiency
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"warning: hardware profile {path}: its [simulator_error] is ignored")
    assert "computed on the profile it was copied from" in lines[0]
    assert f"autotune calibrate RUN_DIR --hardware {path} -o FILE; docs/calibration.md" in lines[0]


def test_a_profile_calibrate_wrote_keeps_its_error(tmp_path, capsys):
    text = _without_scope_table(_gh200_copy(tmp_path).read_text()).replace('name = "a100-80"',
                                                                            'name = "a100-cal"\ncalibrated_from = "a100-80"')
    # calibrated_from alone is hand-writable: calibrate's header (an older one's) or figures_sha256 vouches for the
    # error (tests/calibrate/test_calibrated_from.py).
    text = "# Calibrated by `autotune calibrate` from a100-80.toml against 40 observations (runs/x).\n" + text
    profile = load_hardware(str(_write(tmp_path, text, "a100-cal.toml")))
    assert profile.simulator_error == GH200_ERROR and capsys.readouterr().err == ""


def test_a_run_on_a_copied_profile_shows_an_unknown_error(tmp_path):
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--hardware", _gh200_copy(tmp_path),
                         "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("its [simulator_error] is ignored") == 1
    assert "+- ?%" in done.stdout and "+- 3.4%" not in done.stdout and "+- 4.5%" not in done.stdout
    kept = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert kept.get("simulator_error") in ({}, None)


def test_a_copy_of_a_builtin_that_kept_its_name_is_reported_as_that_file(tmp_path):
    """Trial 38: `cp gh200.toml mygh.toml` (edited or not) reported as "gh200", the built-in's name alone."""
    copy = _write(tmp_path, (PROFILE_DIR / "gh200.toml").read_text(), "mygh.toml")
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--hardware", copy, "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    kept = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert kept["hardware"] == "gh200" and kept["hardware_file"] == str(copy.resolve())
    assert f"7b on 1 node of gh200 (the profile in {copy.resolve()})" in " ".join(done.stdout.split())


def test_a_studys_kept_copy_is_judged_by_the_file_it_came_from(tmp_path, capsys):
    """A study from before this rule kept the copied error in its profile: its report ignores it too."""
    table = load_hardware("gh200")
    from autotune.hardware import hardware_to_dict

    kept = hardware_to_dict(table)
    mine = stored_hardware({"hardware": "/home/alice/hw/a100.toml", "hardware_profile": kept}, "the study's profile")
    assert mine.simulator_error == {} and "the study's profile: its [simulator_error] is ignored" in capsys.readouterr().err
    for recorded in (str(PROFILE_DIR / "gh200.toml"), "/elsewhere/autotune/hardware/gh200.toml", "gh200"):
        assert stored_hardware({"hardware": recorded, "hardware_profile": kept}, "x").simulator_error == GH200_ERROR
    assert capsys.readouterr().err == ""


# --- #6: unit mistakes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [A100, H200], ids=["a100-80", "h200"])
def test_real_nodes_load(tmp_path, text):
    assert load_hardware(str(_write(tmp_path, text))).gpus_per_node == 8


@pytest.mark.parametrize("line, new, words", [
    ("max_power_w = 400.0", "max_power_w = 0.4", "[gpu] max_power_w = 0.4 is below 10 W"),  # kW
    ("idle_power_w = 55.0", "idle_power_w = 0.055", "[gpu] idle_power_w = 0.055 is below 0.001 x [gpu] max_power_w"),
    ("max_power_w = 400.0", "max_power_w = 6500.0", "a node's or several GPUs' power"),
    ("module_cap_w = 400.0", "module_cap_w = 4000.0", "[power] module_cap_w = 4000 is more than 1.5 x [gpu] max_power_w = 400"),
    ("module_cap_w = 400.0", "module_cap_w = 0.4", "[power] module_cap_w = 0.4 is below 10 W"),
    ("min_limit_w = 100.0", "min_limit_w = 0.1", "[power] min_limit_w = 0.1 is below 10 W"),
    ("memory_gib = 80.0", "memory_gib = 81920.0", "it reads as MiB (81920 MiB = 80 GiB)"),
    ("memory_gib = 80.0", "memory_gib = 0.078", "[gpu] memory_gib = 0.078 is below 1 GiB"),
    ("memory_bandwidth_gbs = 2039.0", "memory_bandwidth_gbs = 2.039", "it reads as TB/s (2.039 TB/s = 2039 GB/s)"),
    ("min_sm_clock_mhz = 210.0", "min_sm_clock_mhz = 0.21", "it reads as GHz (0.21 GHz = 210 MHz)"),
    ("max_sm_clock_mhz = 1410.0", "max_sm_clock_mhz = 14100.0", "[gpu] max_sm_clock_mhz = 14100 is above 5000 MHz"),
    ("memory_gib = 128.0", "memory_gib = 131072.0", "[cpu] memory_gib = 131072 is above 65536 GiB"),
    ("idle_power_w = 12.0", "idle_power_w = 0.012", "[cpu] idle_power_w = 0.012 is below 0.001 x [cpu] max_power_w"),
    ("bandwidth_gbs = 300.0", "bandwidth_gbs = 300000.0", "it reads as MB/s (300000 MB/s = 300 GB/s)"),
    # Trial 61 #13: a bf16 peak no GPU has (6240 for 624, itself the sparsity figure), an FP32 peak above bf16's.
    ("peak_bf16_tflops = 312.0", "peak_bf16_tflops = 6240.0", "[gpu] peak_bf16_tflops = 6240 is above 5000 TFLOP/s, "
     "and a CUDA GPU's dense bf16 peak is about 5 (Jetson Orin Nano) to 2500 TFLOP/s (B300) (cuda = true); it reads as "
     "a figure with sparsity, several GPUs' total or a typo, not one GPU's dense peak: write the datasheet's dense bf16 figure"),
    # Trial 63 #5/#12: a peak in PFLOP/s (datasheet tables print "0.312 PFLOPS"), the other figure right or not.
    ("peak_bf16_tflops = 312.0", "peak_bf16_tflops = 0.312", "[gpu] peak_bf16_tflops = 0.312 is below 3 TFLOP/s, "
     "and a CUDA GPU's dense bf16 peak is about 5 (Jetson Orin Nano) to 2500 TFLOP/s (B300) (cuda = true); it reads as "
     "PFLOP/s (0.312 PFLOP/s = 312 TFLOP/s): write the datasheet's dense bf16 figure for one GPU, in TFLOP/s"),
    ("peak_fp32_tflops = 19.5", "peak_fp32_tflops = 0.0195", "[gpu] peak_fp32_tflops = 0.0195 is below 0.3 TFLOP/s, "
     "and a CUDA GPU's FP32 peak is about 0.6 (Jetson Orin Nano) to 105 TFLOP/s (RTX 5090) (cuda = true); it reads as "
     "PFLOP/s (0.0195 PFLOP/s = 19.5 TFLOP/s): write it in TFLOP/s"),
    ("peak_fp32_tflops = 19.5", "peak_fp32_tflops = 900.0", "[gpu] peak_fp32_tflops = 900 is above [gpu] "
     "peak_bf16_tflops = 312, and a CUDA GPU's FP32 peak without tensor cores is a fraction of its dense bf16 tensor "
     "peak (A100 19.5 of 312 TFLOP/s); it reads as a TF32 or sparsity figure, or the two swapped"),
])
def test_a_unit_mistake_is_refused_in_one_line(tmp_path, line, new, words):
    assert line in A100
    path = _write(tmp_path, A100.replace(line, new, 1))
    with pytest.raises(ConfigError) as err:
        load_hardware(str(path))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"hardware profile {path}: ") and words in message, message
    assert message.endswith("see docs/hardware.md")


def test_both_peaks_in_pflops_are_refused_naming_bf16(tmp_path):
    """Trial 63 #5: with both peaks in PFLOP/s, FP32 stays below bf16 and only bf16's own bound catches it."""
    text = A100.replace("peak_bf16_tflops = 312.0", "peak_bf16_tflops = 0.312").replace("peak_fp32_tflops = 19.5", "peak_fp32_tflops = 0.0195")
    with pytest.raises(ConfigError, match=r"\[gpu\] peak_bf16_tflops = 0\.312 is below 3 TFLOP/s.*reads as PFLOP/s"):
        load_hardware(str(_write(tmp_path, text)))


def test_the_smallest_bf16_gpu_loads(tmp_path):
    """A Jetson Orin Nano 4 GB (~5 TFLOP/s dense bf16, ~0.6 FP32) is real hardware."""
    text = A100.replace("peak_bf16_tflops = 312.0", "peak_bf16_tflops = 5.0").replace("peak_fp32_tflops = 19.5", "peak_fp32_tflops = 0.6")
    assert load_hardware(str(_write(tmp_path, text))).gpu.peak_bf16_tflops == 5.0


def test_both_clocks_in_ghz_are_refused(tmp_path):
    text = A100.replace("min_sm_clock_mhz = 210.0", "min_sm_clock_mhz = 0.21").replace("max_sm_clock_mhz = 1410.0", "max_sm_clock_mhz = 1.41")
    with pytest.raises(ConfigError, match=r"min_sm_clock_mhz = 0\.21 is below 50 MHz.*GHz"):
        load_hardware(str(_write(tmp_path, text)))


def test_a_cap_a_gpu_may_have_is_kept(tmp_path):
    """A site's lower default limit, and one up to NVML's ~1.3x headroom over TDP, are real settings."""
    for cap in ("250.0", "560.0"):
        load_hardware(str(_write(tmp_path, A100.replace("module_cap_w = 400.0", f"module_cap_w = {cap}"))))


def test_a_module_scope_cap_is_judged_against_all_it_powers(tmp_path):
    """GH200's cap covers GPU 600 + CPU 100 + memory 35 W: 1000 W is within 1.5x of that, not of the GPU's 600."""
    text = (PROFILE_DIR / "gh200.toml").read_text().replace("module_cap_w = 680.0", "module_cap_w = 1000.0", 1)
    assert load_hardware(str(_write(tmp_path, text, "module.toml"))).power.module_cap_w == 1000.0
    per_gpu = text.replace("module_scope_energy = true", "module_scope_energy = false", 1)
    with pytest.raises(ConfigError, match=r"module_cap_w = 1000 is more than 1\.5 x \[gpu\] max_power_w = 600;"):
        load_hardware(str(_write(tmp_path, per_gpu, "per-gpu.toml")))


def test_the_cpu_profile_is_held_to_no_gpu_range(tmp_path):
    """cuda = false: a "GPU" is a process on host cores, 0.5 W and 0.5 GiB if the box is small."""
    text = (PROFILE_DIR / "cpu.toml").read_text()
    text = re.sub(r"^memory_gib = 8.0", "memory_gib = 0.5", text, count=1, flags=re.M)
    text = re.sub(r"^idle_power_w = 5.0", "idle_power_w = 0.1", text, count=1, flags=re.M)
    text = re.sub(r"^max_power_w = 15.0", "max_power_w = 0.5", text, count=1, flags=re.M)
    profile = load_hardware(str(_write(tmp_path, text)))
    assert (profile.gpu.max_power_w, profile.gpu.memory_gib, profile.power.module_cap_w) == (0.5, 0.5, 40.0)


def test_profile_errors_point_to_the_schema_page(tmp_path):
    with pytest.raises(ConfigError, match=r"see docs/hardware\.md"):
        load_hardware(str(_write(tmp_path, A100.replace("memory_gib = 80.0", "memory_gb = 80.0", 1))))
    assert (REPO / "docs" / "hardware.md").is_file()


def test_a_profile_an_older_calibrate_wrote_keeps_its_error_and_is_not_called_a_copy(tmp_path, capsys):
    """An older `autotune calibrate -o` recorded no calibrated_from: its profile was told it was "copied from another
    profile" and then "not calibrated" (trial52 #4). Its first line says calibrate wrote it: its error is its own."""
    gh200 = _without_scope_table((PROFILE_DIR / "gh200.toml").read_text())
    body = gh200[gh200.index('name = "gh200"'):]
    header = ("# Calibrated by `autotune calibrate` from /old/autotune/hardware/gh200.toml against 65 observations "
              "(gh200-study).\n# Leave-one-out mean absolute error (%): {'time_s_pct': 3.4}\n")
    path = _write(tmp_path, header + body, "cal650.toml")
    assert load_hardware(str(path)).simulator_error == GH200_ERROR
    assert capsys.readouterr().err == ""
    # Without the header it is a copy, as before.
    copy = _write(tmp_path, body, "copied.toml")
    assert load_hardware(str(copy)).simulator_error == {}
    assert "copied from" in capsys.readouterr().err
