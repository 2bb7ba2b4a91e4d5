"""Which figures of a measured probe become observations, and which are skipped with a reason."""

from dataclasses import replace
from types import SimpleNamespace

import pytest

from autotune.calibrate.measured import MeasuredRuns, _trial_observations
from autotune.errors import ConfigError
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.space import load_space
from autotune.study.settings import StudySettings
from autotune.workload import make_workload

KNOBS = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
         "micro_batch": 1, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}


def _settings(hardware="h100-sxm", space=None):
    """A study of 7b on one node: the default space, or `space` (knob -> values) in place of its lists."""
    model = load_model("7b")
    profile = load_hardware(hardware) if isinstance(hardware, str) else hardware
    default = load_space(None, (1,))
    return StudySettings(model, profile, make_workload(model), profile.gpus_per_node,
                         replace(default, **{knob: tuple(values) for knob, values in (space or {}).items()}))


def _trial(**result):
    base = {"status": "ok", "source": "measured", "energy_source": "measured", "time_s": 600.0, "tflops": 400.0,
            "energy_kj": 2000.0, "mean_power_w": 500.0, "energy_components_kj": {"gpu": 1800.0, "cpu": 200.0}}
    return SimpleNamespace(number=3, user_attrs={"result": {**base, **result}, "candidate": {"knobs": KNOBS}})


def _observe(trial, **allow):
    runs = MeasuredRuns()
    _trial_observations("runs/x", trial, _settings(), allow.get("estimated", False), allow.get("simulated", False), runs)
    return runs


def test_a_measured_probe_gives_every_metric_with_gpu_power_from_its_gpu_energy():
    runs = _observe(_trial())
    got = {o.metric: o.value for o in runs.observations}
    assert got == {"time_s": 600.0, "tflops": 400.0, "energy_kj": 2000.0, "module_power_w": 500.0,
                   "power_w": pytest.approx(1800e3 / 600 / 8)}
    assert not runs.skipped


def test_estimated_energy_and_the_gpu_power_derived_from_it_are_skipped_with_a_reason_unless_allowed():
    """GPU power is the GPU energy over the time: estimated, it is the power model's output. Fitted before
    (a CPU study moved the power constants to their bounds and wrote a `power_w_pct` nothing measured)."""
    runs = _observe(_trial(energy_source="estimated"))
    assert {o.metric for o in runs.observations} == {"time_s", "tflops"}
    assert runs.skipped == ["runs/x trial 3: energy_kj, module_power_w and power_w are estimated from a power model, "
                            "not measured; pass --allow-estimated-energy to fit it anyway"]
    allowed = _observe(_trial(energy_source="estimated"), estimated=True)
    assert {o.metric for o in allowed.observations} == {"time_s", "tflops", "energy_kj", "module_power_w", "power_w"}
    assert not allowed.skipped


def test_energy_without_the_cpu_is_not_compared_with_whole_node_energy():
    details = {"energy": {"components": {"gpu_j": 1.0, "not_measured": ["cpu"]}}}
    runs = _observe(_trial(details=details))
    assert "energy_kj" not in {o.metric for o in runs.observations}
    assert any("module_power_w leave out cpu" in line for line in runs.skipped)


def test_a_result_without_tflops_fits_its_time_and_energy_with_a_line_saying_so():
    """A hand-written measurements record holds time and energy and no tflops (search.md does not ask for it): replay
    took it and calibrate refused it, "re-run it", which means nothing for replayed figures (trial61 #7)."""
    runs = _observe(_trial(tflops=None))
    assert {o.metric for o in runs.observations} == {"time_s", "energy_kj", "module_power_w", "power_w"}
    assert runs.skipped == ["runs/x trial 3: no tflops in the result: its time and energy are fitted (TFLOP/s is the "
                            "model's work over that time)"]


def test_oom_and_failed_probes_are_counted_not_fitted():
    runs = _observe(_trial(status="oom"))
    assert runs.not_run == {"oom": 1} and not runs.observations


@pytest.mark.parametrize("result, words", [
    ({"time_s": None}, "lacks time_s"),
    ({"time_s": -5.0}, "out of range"),
    ({"tflops": "fast"}, "is not a number"),
])
def test_a_corrupt_probe_result_is_refused_in_one_line(result, words):
    with pytest.raises(ConfigError) as refused:
        _observe(_trial(**result))
    assert words in str(refused.value) and "trial 3" in str(refused.value) and "\n" not in str(refused.value)


def test_an_unknown_knob_is_refused():
    trial = _trial()
    trial.user_attrs["candidate"] = {"knobs": {**KNOBS, "zero_stag": 3}}
    with pytest.raises(ConfigError, match="unknown key"):
        _observe(trial)


@pytest.mark.parametrize("knob, value, words", [
    ("zero_stage", True, "zero_stage = true is not one of the allowed values 0, 1, 2, 3"),  # accepted before: True == 1
    ("sp_degree", 2.0, "sp_degree = 2.0 is not a whole number; write it without a decimal point or an exponent (2)"),  # read as 2 before
    ("nodes", 10**13, "nodes = 10000000000000 is not a whole number"),  # no upper bound before
    ("power_limit", 1.5, "power_limit = 1.5 is not a fraction of the default power limit"),
])
def test_a_knob_value_is_refused_as_a_space_file_refuses_it(knob, value, words):
    assert words in _refusal(knob, value)


def _refusal(knob, value) -> str:
    """The one line that refuses trial 3 with `knob` set to `value`."""
    trial = _trial()
    trial.user_attrs["candidate"] = {"knobs": {**KNOBS, knob: value}}
    with pytest.raises(ConfigError) as refused:
        _observe(trial)
    assert "\n" not in str(refused.value)
    return str(refused.value)


@pytest.mark.parametrize("status", ["ok", "oom"])
@pytest.mark.parametrize("knob, value, space, words", [
    ("sp_degree", 3, {}, "sp_degree = 3, not among the space's [1, 2, 4, 8]"),
    ("power_limit", 0.1, {}, "power_limit = 0.1, not among the space's [1.0, 0.9, 0.8, 0.7]"),
    ("zero_stage", 3, {"zero_stage": (1, 2)}, "zero_stage = 3, not among the space's [1, 2]"),
    # In the space's lists, refused by its rules on the study's own profile.
    ("sp_degree", 3, {"sp_degree": (1, 3)}, "SP degree 3 does not divide the 8 GPUs"),
    ("power_limit", 0.1, {"power_limit": (1.0, 0.1)}, "power limit 0.1 x 700 W = 70 W is below the device's minimum of 200 W"),
    ("micro_batch", 128, {"micro_batch": (1, 128)},
     "micro-batch 128 x data-parallel size 8 = 1024 does not divide the global batch 64"),
])
def test_a_probe_outside_its_study_space_is_left_out_neither_fitted_nor_counted(knob, value, space, words, status):
    """A study never proposes such a candidate (one enqueued by hand, or judged by a profile the study has
    changed since): its figures answer another question, and its out-of-memory is none of the space's.
    Before, an ok probe stopped the command ("is not a valid candidate", or was fitted when only outside the
    space's lists) and a failed one was counted among the probes without figures."""
    trial = _trial(status=status)
    trial.user_attrs["candidate"] = {"knobs": {**KNOBS, knob: value}}
    runs = MeasuredRuns()
    _trial_observations("runs/x", trial, _settings(space=space), False, False, runs)
    assert not runs.observations and runs.not_run == {} and runs.skipped == []
    assert runs.left_out == [f"runs/x: 1 probe of candidates outside the study's space, neither fitted nor counted: "
                             f"trial 3 ({words})"]


def test_the_left_out_probes_of_a_run_are_one_line_with_each_reason_and_its_trials():
    runs = MeasuredRuns()
    for number, knobs in [(1, {"zero_stage": 0}), (2, {"sp_degree": 3}), (4, {"zero_stage": 0}), (5, {}), (6, {"zero_stage": 0})]:
        trial = _trial(status="oom")
        trial.number, trial.user_attrs["candidate"] = number, {"knobs": {**KNOBS, **knobs}}
        _trial_observations("runs/x", trial, _settings(space={"zero_stage": (1, 2, 3)}), False, False, runs)
    assert runs.not_run == {"oom": 1}  # trial 5 only
    assert runs.left_out == [
        "runs/x: 4 probes of candidates outside the study's space, neither fitted nor counted: trials 1, 4, 6 "
        "(zero_stage = 0, not among the space's [1, 2, 3]); trial 2 (sp_degree = 3, not among the space's [1, 2, 4, 8])"
    ]


def test_a_probe_the_profile_to_calibrate_refuses_but_its_study_allowed_is_refused():
    """The study's own profile allowed the candidate, the profile given to calibrate does not (a higher
    minimum power limit): that profile is not the node the study measured, one line says so."""
    h100 = load_hardware("h100-sxm")
    stricter = replace(h100, power=replace(h100.power, min_limit_w=500.0))
    trial = _trial()
    trial.user_attrs["candidate"] = {"knobs": {**KNOBS, "power_limit": 0.7}}
    with pytest.raises(ConfigError) as refused:
        _trial_observations("runs/x", trial, _settings(stricter), False, False, MeasuredRuns(), study_settings=_settings(h100))
    assert str(refused.value) == (
        "runs/x: trial 3 is not a valid candidate: power limit 0.7 x 700 W = 490 W is below the device's minimum of "
        "500 W; calibrate the profile the study ran on (its own, without --hardware), or leave the run out")


def test_one_line_per_reason_names_its_trials():
    details = {"energy": {"components": {"gpu_j": 1.0, "not_measured": ["cpu"]}}}
    runs = MeasuredRuns()
    for number in (0, 1, 2, 5, 7, 8):
        trial = _trial(details=details)
        trial.number = number
        _trial_observations("runs/x", trial, _settings(), False, False, runs)
    estimated = _trial(energy_source="estimated")
    _trial_observations("runs/x", estimated, _settings(), False, False, runs)
    assert runs.skipped == [
        "runs/x trials 0-2, 5, 7-8: energy_kj and module_power_w leave out cpu (no sensor), unlike the simulator's "
        "whole-node figure; not fitted",
        "runs/x trial 3: energy_kj, module_power_w and power_w are estimated from a power model, not measured; pass "
        "--allow-estimated-energy to fit it anyway",
    ]
