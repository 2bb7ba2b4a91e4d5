"""Trial 63 #6: a replayed default_power_limit_w (the default NVML reported where a probe set a limit) is what a
pick's limit is given in watts of; a kW typo (0.65), a damaged 1e-9 or a 100000 W figure passed the record's own
range and read "0 W per GPU". It is now held to what the study's profile says of the GPU, refused in one line on a
profile without NVML limits, and records of one study that disagree on it are warned of."""

from __future__ import annotations

import json

import pytest

from autotune.backends.replay import ReplayBackend, study_of
from autotune.commands.options import settings_for
from autotune.errors import ConfigError
from autotune.simulator import simulate
from autotune.study.valid import valid_checks
from tests.cli import autotune_main

# h100-sxm: [power] min_limit_w 200, [gpu] max_power_w 700 (per-GPU scope: 1.5 x 700 = 1050 W at most).
SETTINGS = ("--model", "7b", "--hardware", "h100-sxm", "--nodes", "1")
CHECKS = valid_checks(settings_for(*SETTINGS))
VALID = [c.candidate for c in CHECKS if c.valid][:6]


def _write(tmp_path, defaults_w, checks=None) -> ReplayBackend:
    """Six of the study's candidates at their simulated figures, record i giving defaults_w[i % len] (None: no key)."""
    valid = [c.candidate for c in (checks or CHECKS) if c.valid][:6]
    lines = []
    for i, candidate in enumerate(valid):
        simulated = simulate(candidate)
        record = {"params": candidate.knobs.to_dict(), "status": "ok", "study": study_of(candidate),
                  "time_s": simulated.time_s, "energy_kj": simulated.energy_kj}
        if defaults_w[i % len(defaults_w)] is not None:
            record["default_power_limit_w"] = defaults_w[i % len(defaults_w)]
        lines.append(json.dumps(record))
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return ReplayBackend(path)


@pytest.mark.parametrize("default_w", [200.0, 650.0, 700.0, 900.0, 1050.0])
def test_a_default_any_h100_may_report_is_taken(tmp_path, default_w):
    backend = _write(tmp_path, [default_w, None])
    backend.check_candidates(CHECKS)
    assert backend.unchecked_records(CHECKS) == []


@pytest.mark.parametrize("default_w, said", [
    (0.65, "default_power_limit_w = 0.65 W is below the 200 W h100-sxm gives as NVML's lowest limit ([power] "
           "min_limit_w), under which no default lies (3 such records); it reads as kW (0.65 kW = 650 W): write the "
           "'Default Power Limit' of nvidia-smi -q -d POWER in W"),
    (1e-9, "default_power_limit_w = 1e-09 W is below the 200 W h100-sxm gives as NVML's lowest limit ([power] "
           "min_limit_w), under which no default lies (3 such records); no unit slip puts it in range"),
    (100000.0, "default_power_limit_w = 100000 W is more than 1.5 x [gpu] max_power_w = 700 W of h100-sxm, and a "
               "default limit is about the device's full-load power (3 such records); no unit slip puts it in range"),
    (5600.0, "default_power_limit_w = 5600 W is more than 1.5 x [gpu] max_power_w = 700 W"),  # a node's 8 x 700
])
def test_a_default_no_gpu_of_the_profile_has_is_refused(tmp_path, default_w, said):
    with pytest.raises(ConfigError) as refused:
        _write(tmp_path, [default_w, None]).check_candidates(CHECKS)
    message = str(refused.value)
    assert "\n" not in message and "m.jsonl line 1: " in message and said in message, message
    assert message.endswith("or replay with the --hardware the records were measured on")


def test_a_module_scope_default_is_judged_against_all_the_module_powers(tmp_path):
    """gh200: the module's limit covers GPU, CPU and memory (680 W cap); NVML's module default may be 900 W."""
    checks = valid_checks(settings_for("--model", "7b", "--hardware", "gh200", "--nodes", "1"))
    _write(tmp_path, [900.0], checks).check_candidates(checks)
    with pytest.raises(ConfigError, match=r"default_power_limit_w = 0\.9 W is below the 400 W gh200 gives"):
        _write(tmp_path, [0.9], checks).check_candidates(checks)


def test_records_of_one_study_that_disagree_are_warned_of(tmp_path):
    backend = _write(tmp_path, [650.0, 700.0])
    backend.check_candidates(CHECKS)
    assert backend.unchecked_records(CHECKS) == [
        f"measurements {backend.path}: its records give 2 default power limits (650 W on 3 records, first line 1; "
        "700 W on 3 records, first line 2), where one study's GPUs share one (files of two clusters merged?); each "
        "limited pick's watts are of its own record's default"]


def test_a_default_on_a_profile_without_nvml_limits_is_refused(tmp_path):
    checks = valid_checks(settings_for("--model", "tiny", "--hardware", "cpu", "--nodes", "1"))
    with pytest.raises(ConfigError) as refused:
        _write(tmp_path, [650.0, None], checks).check_candidates(checks)
    assert str(refused.value).endswith(
        "line 1: default_power_limit_w = 650 W is a GPU's default power limit, and cpu has none (cuda = false: its "
        "ranks are host processes; 3 records give one): drop the key, or replay with the --hardware the records were "
        "measured on")
    # One such record: its verb agrees (trial77 #3: "1 record give one").
    with pytest.raises(ConfigError) as refused:
        _write(tmp_path, [650.0, None, None, None, None, None], checks).check_candidates(checks)
    assert "ranks are host processes; 1 record gives one): drop the key" in str(refused.value), str(refused.value)


def test_the_run_refuses_it_in_one_line_with_status_2(tmp_path):
    backend = _write(tmp_path, [0.65])
    ran = autotune_main("run", *SETTINGS, "--backend", "replay", "--measurements", backend.path, "--trials", "4",
                        "--out", tmp_path / "r", "-q")
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.count("\n") == 1 and "it reads as kW (0.65 kW = 650 W)" in ran.stderr, ran.stderr
    assert not (tmp_path / "r" / "study.db").exists()
