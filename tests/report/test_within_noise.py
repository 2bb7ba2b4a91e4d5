"""A change no larger than the measured noise of the two figures it compares is marked "within noise"
in every output, and pareto.json carries the noise it was judged against; GPU-sized noise marks
nothing that is a real saving, and a simulated study says nothing of noise."""

import io
import json
from dataclasses import replace

import pytest
from rich.console import Console

from autotune.backends.base import Backend
from autotune.backends.simulate import SimulateBackend
from autotune.commands.finish import build_report
from autotune.report.front import Point
from autotune.report.markdown import markdown_report
from autotune.backends.probe_outcome import step_time_cv
from autotune.report.noise import point_cv
from autotune.report.power_limit import sweep_sentence
from autotune.report.study_points import StudyView
from autotune.report.table import print_report
from autotune.report.within_noise import change_noise_pct, noise_mark
from autotune.study import load_finished_study
from tests.report.conftest import JOULE_FIGURES, finished_run

MARK = "(within noise: +- "


def _write_steps(path, mean_s: float, cv: float) -> str:
    """A result.json whose three measured steps scatter with exactly this CV (sample stdev / mean)."""
    path.write_text(json.dumps({"step_time_s": {"all": [mean_s * (1 + cv * z) for z in (-1, 0, 1)]}}))
    return str(path)


class NoisyCpuBackend(Backend):
    """The CPU probe figures of conftest's JouleScaleBackend, with a measured noise: each probe's steps
    scatter by `step_cv` in its result.json, or (`repeats_cv`) the repeats' CV is in its details."""

    name = "noisy-fake"
    source = "measured"

    def __init__(self, trials_dir, step_cv=None, repeats_cv=None):
        self.trials_dir, self.step_cv, self.repeats_cv = trials_dir, step_cv, repeats_cv
        self.simulate = SimulateBackend()

    def evaluate(self, candidate, trial_number=0):
        time_s, energy_kj = JOULE_FIGURES[candidate.knobs.micro_batch]
        details = {}
        if self.step_cv is not None:
            result_file = _write_steps(self.trials_dir / f"result-{trial_number}.json", time_s / 8, self.step_cv)
            details["repeats"] = [{"result_file": result_file, "time_s": time_s, "energy_kj": energy_kj}]
        if self.repeats_cv is not None:
            details.update(cv=dict(self.repeats_cv), repeats=[{}, {}, {}])
        return replace(self.simulate.evaluate(candidate), source="measured", energy_source="measured",
                       time_s=time_s, energy_kj=energy_kj, details=details)


def _run(tmp_path_factory, name, **noise):
    run_dir = tmp_path_factory.mktemp(name) / "run"
    trials_dir = tmp_path_factory.mktemp(f"{name}-results")
    finished_run(run_dir, NoisyCpuBackend(trials_dir, **noise), 12, nodes="1",
                 study_flags=("--model", "tiny", "--hardware", "cpu"))
    return run_dir


@pytest.fixture(scope="module")
def cpu_noise_run(tmp_path_factory):
    """Steps scatter by 10%, as a newcomer's CPU probes did."""
    return _run(tmp_path_factory, "cpu-noise", step_cv=0.10)


@pytest.fixture(scope="module")
def gpu_noise_run(tmp_path_factory):
    """Repeats that agree within 1%, as GPU probes do."""
    return _run(tmp_path_factory, "gpu-noise", repeats_cv={"time": 0.01, "energy": 0.01})


def _outputs(run_dir):
    view, document = build_report(load_finished_study(run_dir))
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    return document, out.getvalue(), markdown_report(view, document), (run_dir / "report.html").read_text()


def _point(trial, time_s=10.0, energy_kj=1.0, source="measured", details=None, **params):
    return Point(trial, params, time_s=time_s, energy_kj=energy_kj, source=source, energy_source=source,
                 extra={"details": details or {}})


def test_the_rule_adds_the_two_figures_noise_in_quadrature(tmp_path):
    result_file = _write_steps(tmp_path / "result.json", 0.5, 0.08)
    assert step_time_cv({"repeats": [{"result_file": result_file}]}) == pytest.approx(0.08)
    a = _point(1, details={"repeats": [{"result_file": result_file}]})
    b = _point(2, details={"cv": {"time": 0.06, "energy": 0.06}})
    assert point_cv(a, "energy") == (pytest.approx(0.08), "step_times")  # energy takes time's within-probe scatter
    assert point_cv(b, "time") == (0.06, "repeats")
    assert change_noise_pct(a, b, "time") == pytest.approx(10.0)  # sqrt(8^2 + 6^2)
    assert noise_mark(-3.0, 10.0) == " (within noise: +- 10%)" and noise_mark(-12.0, 10.0) == ""
    assert noise_mark(0.5, 1.414) == " (within noise: +- 1.4%)" and noise_mark(90.0, 141.4) == " (within noise: +- 141%)"
    # Simulated figures have no noise, and a figure of unknown noise (no result.json) adds none.
    assert change_noise_pct(_point(1, source="simulated"), _point(2, source="simulated"), "time") is None
    assert change_noise_pct(_point(1, details={"repeats": [{"result_file": str(tmp_path / "gone.json")}]}), b, "time") == pytest.approx(6.0)


def test_a_power_limit_change_within_noise_is_marked():
    details = {"cv": {"time": 0.05, "energy": 0.05}}
    points = [_point(1, 10.0, 1.0, details=details, power_limit=1.0, zero_stage=1),
              _point(2, 10.3, 0.97, details=details, power_limit=0.8, zero_stage=1),
              _point(3, 13.0, 0.80, details=details, power_limit=0.6, zero_stage=1)]
    view = StudyView(None, [], points, points, {"fastest": 1}, None)
    sentence = sweep_sentence(view)
    assert "3.0% less energy (within noise: +- 7.1%), 3.0% more time (within noise: +- 7.1%)" in sentence
    assert "20.0% less energy, 30.0% more time" in sentence  # the 0.6 limit's changes are beyond the noise


def test_cpu_noise_marks_small_savings_in_every_output(cpu_noise_run):
    document, terminal, md, html = _outputs(cpu_noise_run)
    noise = document["change_noise"]
    assert noise["basis"] == "step_times" and noise["time_cv_median"] == pytest.approx(0.10) and noise["rule"]
    picks = {row["name"]: row for row in document["picks"]}
    # Least energy saves 6.5% (2.9 J against 3.1 J): within the 14% the two 10% scatters make together.
    least = picks["min_energy"]
    assert least["noise_pct"]["energy_saved_pct"] == pytest.approx(100 * 0.1 * 2 ** 0.5)
    assert least["within_noise"] == ["energy_saved_pct", "tflop_per_kj_change_pct"]  # +40% time is beyond it
    assert picks["fastest"]["within_noise"] == []
    payback = {row["name"]: row for row in document["tuning_cost"]["payback"]}
    assert payback["min_energy"]["within_noise"] and payback["min_energy"]["energy_noise_pct"] == pytest.approx(14.142, abs=1e-3)
    json.dumps(document)
    for text in (terminal, md, html):  # one notation, as the error bars write an error (trial59 #9)
        assert "6.5% less energy (within noise: +- 14%)" in text
        assert "±" not in text
        assert "40.0% more time" in text and "40.0% more time (within" not in text and "60.0% less time (within" not in text
        assert "within-probe scatter is a lower bound of run-to-run noise" in text
    assert "against the baseline (within noise: +- 14%)" in terminal  # the payback of a saving inside the noise
    # In the report's one unit (trial57 #4): joules here, as its table, not "2.86e-05" kWh.
    assert "saves 0.200 J per run of the workload against the baseline (within noise: +- 14%)" in html


def test_gpu_sized_noise_marks_nothing_that_is_a_saving(gpu_noise_run):
    document, terminal, md, html = _outputs(gpu_noise_run)
    assert document["change_noise"]["basis"] == "repeats" and document["noise"]["energy_cv_median"] == 0.01
    least = next(row for row in document["picks"] if row["name"] == "min_energy")
    assert least["noise_pct"]["energy_saved_pct"] == pytest.approx(1.414, abs=1e-3) and least["within_noise"] == []
    for text in (terminal, md, html):
        assert MARK not in text  # 6.5% less energy is beyond 1.4%: a real saving, shown as it was
        assert "lower bound" not in text  # repeats measure run-to-run noise itself


def test_a_simulated_study_says_nothing_of_noise(simulated_run):
    document, terminal, md, html = _outputs(simulated_run)
    assert document["change_noise"] is None
    assert all(row["noise_pct"] is None and row["within_noise"] == [] for row in document["picks"])
    for text in (terminal, md, html):
        assert "Measurement noise" not in text and MARK not in text


def test_a_replayed_record_s_step_scatter_is_its_noise_where_no_result_file_is(tmp_path):
    """A measurement replayed elsewhere has no result.json; its record carries the step-time CV it had
    (backends/replay.py), and the report marks its changes as the original study's did."""
    replayed = _point(1, details={"step_time_cv": 0.12, "repeats": [{"result_file": str(tmp_path / "gone.json")}]})
    assert point_cv(replayed, "time") == (0.12, "step_times")
    assert point_cv(_point(2, details={"repeats": [{"result_file": str(tmp_path / "gone.json")}]}), "time") == (None, None)


def test_a_change_says_in_words_which_way_it_goes_whatever_its_key_s_sign():
    """Trial 46: "(-123.1% energy saved, -55.8% time ...)" read as a double negative; trial57 #9: "(+7.7% energy saved,
    -10.0% time, +8.3% TFLOP/kJ)" put a plus on one good change and a minus on another. pareto.json's energy_saved_pct
    is positive for less energy, time_change_pct and tflop_per_kj_change_pct for more: the words say which."""
    from autotune.report.within_noise import labelled_change_text

    row = {"energy_saved_pct": 7.66, "time_change_pct": -10.0, "tflop_per_kj_change_pct": 8.3}
    said = [labelled_change_text(row, key, None, label) for key, label in
            (("energy_saved_pct", "energy"), ("time_change_pct", "time"), ("tflop_per_kj_change_pct", "TFLOP/kJ"))]
    assert said == ["7.7% less energy", "10.0% less time", "8.3% more TFLOP/kJ"]
    more = {"energy_saved_pct": -123.1, "time_change_pct": 12.0}
    assert labelled_change_text(more, "energy_saved_pct", None, "energy (estimated)") == "123.1% more energy (estimated)"
    assert labelled_change_text(more, "time_change_pct", None, "time") == "12.0% more time"
    assert labelled_change_text({"time_change_pct": 0.04}, "time_change_pct", None, "time") == "the same time"
    assert labelled_change_text({"energy_saved_pct": None}, "energy_saved_pct", None, "energy", missing="unavailable") == \
        "energy unavailable"
    noisy = labelled_change_text({"energy_saved_pct": -3.0}, "energy_saved_pct", {"energy_saved_pct": 9.0}, "energy")
    assert noisy == "3.0% more energy (within noise: +- 9%)"
