"""Counts the report knows are written as counts, with verbs that agree: "5 trials probed", "1 trial was simulated",
never "trial(s)" (trial59 #6)."""

from autotune.counted import agreeing, counted
from autotune.report.compare_caveats import _job
from autotune.report.front import Point
from autotune.report.noise import noise_sentence
from autotune.report.payback import _cost_note
from autotune.report.picks import time_only_note


def _point(trial, time_s):
    return Point(trial=trial, params={}, time_s=time_s, energy_kj=1000.0, tflop_per_kj=None, gpus=8)


def test_agreeing_follows_counted():
    assert [f"{counted(n, 'probe')} {agreeing(n, 'was', 'were')}" for n in (1, 3, "1-2")] == [
        "1 probe was", "3 probes were", "1-2 probes were"]


def test_noise_sentence_counts_trials():
    said = noise_sentence({"trials": 5, "repeats": 3, "time_cv_median": 0.02, "time_cv_max": 0.02,
                           "energy_cv_median": 0.03, "energy_cv_max": 0.03})
    assert said.startswith("5 trials probed 3 times: ")


def test_time_only_note_counts_configurations():
    points = [_point(0, 10.0), _point(1, 8.0), _point(2, 9.0)]
    assert "the one pick is the fastest of 3 feasible configurations, trial 1. " in time_only_note(points, [points[1]])


def test_cost_note_agrees_with_each_count():
    mixed = _cost_note(5, {"simulated": 2, "replayed": 3}, None, ["measured"])
    assert "2 trials were simulated: they ran nothing on hardware" in mixed
    assert "3 probes were replayed from a measurements file" in mixed
    single = _cost_note(2, {"simulated": 1, "replayed": 1, "unknown": 1, "energy_window": 1}, None, ["measured"])
    assert "1 trial was simulated: it ran nothing" in single and "1 probe was replayed" in single
    assert "1 probe has no cost figure" in single and "1 probe reports only its measured window" in single
    assert "(s)" not in mixed + single


def test_compare_job_caveat_agrees():
    assert "different jobs (they differ in model)" in _job({"model": ["32b", "72b"]})[0]


def test_ruled_out_sentence_counts_the_other_reasons():
    from autotune.report.study_points import ruled_out_sentence

    assert "(and 1 other reason; report.html" in ruled_out_sentence({1: "too big", 2: "too slow"})
    assert "(and 2 other reasons; report.html" in ruled_out_sentence({1: "too big", 2: "too slow", 3: "no fit"})
