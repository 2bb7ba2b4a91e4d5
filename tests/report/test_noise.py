from autotune.report.noise import noise_sentence, noise_summary
from autotune.report.study_points import StudyView


def _view(rows):
    return StudyView(settings=None, trials=rows, points=[], front=[], picks={}, baseline_trial=None)


def test_no_repeats_no_noise_figure():
    assert noise_summary(_view([{"trial": 0, "details": {}}, {"trial": 1}])) is None


def test_median_and_worst_cv_over_repeated_trials():
    rows = [
        {"trial": 0, "details": {"cv": {"time": 0.01, "energy": 0.02}, "repeats": [{}, {}, {}]}},
        {"trial": 1, "details": {"cv": {"time": 0.03, "energy": None}, "repeats": [{}, {}, {}]}},
        {"trial": 2, "details": {"cv": {"time": 0.05, "energy": 0.04}, "repeats": [{}, {}, {}]}},
    ]
    summary = noise_summary(_view(rows))
    assert summary == {
        "trials": 3, "repeats": 3, "time_cv_median": 0.03, "time_cv_max": 0.05,
        "energy_cv_median": 0.03, "energy_cv_max": 0.04,
    }
    assert "3.0% median (5.0% worst)" in noise_sentence(summary)
