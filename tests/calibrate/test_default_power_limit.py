"""A probe that set a power limit records the default limit NVML reported on its GPUs (default_power_limit_w); calibrate
fits its figures at that limit, not at the same fraction of the profile's module_cap_w, and says so (trial72 #10: 32
records at a 650 W default, fitted at 0.7 x 700 W, put four power constants on 0 without a word)."""

from dataclasses import replace
from types import SimpleNamespace

import pytest

from autotune.calibrate.fit import Calibration
from autotune.calibrate.measured import MeasuredRuns, _trial_observations, at_recorded_default, study_default_w
from autotune.calibrate.observations import Observation
from autotune.calibrate.report import report_text
from autotune.simulator import simulate
from autotune.simulator.clock import power_limit_w
from tests.calibrate.test_measured import KNOBS, _settings

LIMITED = {**KNOBS, "power_limit": 0.7}


def _trial(number=3, knobs=LIMITED, default_w=None):
    result = {"status": "ok", "source": "measured", "energy_source": "measured", "time_s": 600.0, "tflops": 400.0,
              "energy_kj": 2000.0, "mean_power_w": 500.0, "energy_components_kj": {"gpu": 1800.0, "cpu": 200.0},
              "details": {} if default_w is None else {"default_power_limit_w": default_w}}
    return SimpleNamespace(number=number, user_attrs={"result": result, "candidate": {"knobs": knobs}})


def test_a_recorded_default_other_than_the_profiles_is_the_limit_fitted_and_said():
    runs = MeasuredRuns()
    settings = _settings(space={"power_limit": [1.0, 0.7]})
    _trial_observations("runs/r650", _trial(default_w=650.0), settings, False, False, runs)
    assert runs.observations and [power_limit_w(o.candidate) for o in runs.observations] == [pytest.approx(0.7 * 650.0)] * len(runs.observations)
    assert runs.default_limits == [
        "runs/r650 trial 3: power limits fitted as fractions of the 650 W default power limit their GPUs reported, not "
        "of the profile's [power] module_cap_w = 700 W; a study on the profile (and the profile -o writes) assumes 700 W: "
        "if 650 W is your GPUs' default, set module_cap_w = 650 in a copy of the profile and calibrate that"]
    document = {"hardware": "h100-sxm", "observations": 0, "sources": [], "per_observation": [], "before_mape": {},
                "fit_mape": {}, "loo_mape": None, "fitted": [], "constants": {}, "configurations": 0, "at_bound": [],
                "default_limits": runs.default_limits}
    assert f"\n  default limit: {runs.default_limits[0]}\n" in report_text(document)


def test_the_profiles_own_default_changes_nothing_and_says_nothing():
    runs = MeasuredRuns()
    settings = _settings(space={"power_limit": [1.0, 0.7]})
    _trial_observations("runs/r700", _trial(default_w=700.0), settings, False, False, runs)
    assert {o.candidate.hardware for o in runs.observations} == {settings.hardware} and runs.default_limits == []


def test_a_probe_at_the_default_takes_its_studys_one_recorded_default():
    """A launch study records the default only where a probe set a limit: one at 1.0 ran on the same GPUs."""
    trials = [_trial(0, KNOBS), _trial(1, default_w=650.0), _trial(2, default_w=650.0)]
    assert study_default_w(trials) == 650.0
    assert study_default_w([*trials, _trial(4, default_w=700.0)]) is None  # two clusters' files merged: each its own
    runs = MeasuredRuns()
    _trial_observations("runs/r650", trials[0], _settings(space={"power_limit": [1.0, 0.7]}), False, False, runs,
                        study_default=650.0)
    assert runs.observations and [power_limit_w(o.candidate) for o in runs.observations] == [pytest.approx(650.0)] * len(runs.observations)


def test_a_default_above_the_profiles_cap_stays_under_the_cap():
    """A site's cap (module_cap_w) below the NVML default: a fraction of the default, never above the cap."""
    candidate = _settings().candidate(LIMITED)
    assert power_limit_w(at_recorded_default(candidate, 900.0)) == pytest.approx(630.0)
    untouched = _settings().candidate(KNOBS)
    assert at_recorded_default(untouched, 900.0) is untouched


def test_the_fit_simulates_the_candidate_at_its_recorded_limit():
    settings = _settings(space={"power_limit": [1.0, 0.7]})
    at_650 = at_recorded_default(settings.candidate(LIMITED), 650.0)
    cal = Calibration([Observation("r650#3", at_650, "time_s", 600.0, "runs/r650")], settings.hardware)
    expected = simulate(replace(at_650, hardware=replace(cal.profile_with(cal.base_constants),
                                                          power=at_650.hardware.power))).time_s
    at_700 = simulate(settings.candidate(LIMITED)).time_s
    assert cal.predict(cal.base_constants)[0] == pytest.approx(expected) and expected > at_700
