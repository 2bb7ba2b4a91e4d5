"""Tuning cost (what the probes took) and payback (training hours until a pick repays it)."""

import json
from dataclasses import replace

import pytest

from autotune.report.front import Point
from autotune.report.payback import cost_sentence, payback_row, probe_cost
from autotune.report.study_points import StudyView
from autotune.report.units import figure, report_energy_text
from autotune.study import load_finished_study
from tests.report.conftest import OOM_PROBE_COST


def pt(trial, time_s, energy_kj):
    return Point(trial=trial, params={}, time_s=time_s, energy_kj=energy_kj, gpus=16)


def test_probe_cost_prefers_probe_cost_then_window_then_simulated():
    block = {"provenance": "measured", "energy_j": 52_000.0, "window_s": 20.0}
    assert probe_cost({"details": {"energy": block, "probe_cost": {"time_s": 90.0, "energy_kj": 80.0}}}) == {
        "time_s": 90.0, "energy_kj": 80.0, "basis": "probe_cost", "provenance": "measured", "window_s": None}
    assert probe_cost({"details": {"energy": block}}) == {
        "time_s": 20.0, "energy_kj": 52.0, "basis": "energy_window", "provenance": "measured"}
    assert probe_cost({"source": "simulated", "details": {"phases_s": {}}})["energy_kj"] == 0.0
    assert probe_cost({"source": "measured", "details": {}})["basis"] == "unknown"
    # A failed probe's result says its energy is "unavailable"; a recorded cost's energy is still a figure, of
    # unknown provenance, never labelled "unavailable" beside a number.
    failed = {"energy_source": "unavailable", "details": {"probe_cost": {"time_s": 90.0, "energy_kj": 0.0147}}}
    assert probe_cost(failed)["provenance"] == "unknown"
    no_energy = {"energy_source": "unavailable", "details": {"probe_cost": {"time_s": 90.0, "energy_kj": None}}}
    assert probe_cost(no_energy)["provenance"] == "unavailable"


def test_payback_and_probe_time_figures_keep_three_significant_figures():
    # trial60 #5: "1.62e+03 runs of the workload" and "0.025 h of probe time" (`:.3g`), beside "21,398 J" and
    # "0.0501" in the same lines: the report's figures keep their thousands separators and trailing zeros.
    view = StudyView(None, [], [pt(0, 100.0, 10.0), pt(1, 90.0, 9.99)], [], {}, 0)
    row = payback_row("knee", 1, view, 16.2, ran_on_hardware=True)
    assert "(1,620 runs of the workload)" in row["text"], row["text"]
    cost = {"ran_on_hardware": True, "probes": 4, "time_s": 90.0, "gpu_hours": 0.05, "energy_kj": 0.01,
            "provenance": "measured", "note": ""}
    assert "0.0250 h of probe time, 0.0500 GPU-hours," in cost_sentence(cost, ("J", 1e-3))


def test_an_hourly_saving_within_noise_is_labelled_as_the_saving_per_run_and_so_is_its_payback():
    # trial60 #6: "saves 4.03 J (estimated) ... (within noise: +- 37%) (64,169 J saved per hour ...); tuning is repaid
    # after at least 0.0492 h": the hourly figure had neither mark, and the payback read as firm.
    from autotune.report.payback import payback_sentence

    points = [replace(p, energy_source="estimated") for p in (pt(0, 100.0, 10.0), pt(1, 90.0, 9.6))]
    view = StudyView(None, [], points, [], {}, 0)
    row = payback_row("knee", 1, view, 16.0, ran_on_hardware=True, lower_bound=True)
    row.update(energy_noise_pct=37.0, within_noise=True)  # what change_noise_pct gives repeats this noisy
    said = payback_sentence(row, ("J", 1e-3))
    assert "against the baseline doing the same work; estimated, within noise: +- 37%)" in said, said
    assert said.endswith(", if that saving, within noise, is there at all"), said
    row.update(energy_noise_pct=1.0, within_noise=False)  # a saving beyond its noise: the payback is stated as it is
    said = payback_sentence(row, ("J", 1e-3))
    assert "same work; estimated)" in said and "within noise" not in said, said


def test_report_html_gives_the_payback_hours_to_three_significant_figures():
    # trial60 #5: report.html's "payback h" column used `.3g` too ("0.025" beside the line's "0.0250 h").
    from autotune.report.html_analysis import tuning_cost_section

    view = StudyView(None, [], [pt(0, 100.0, 10.0), pt(1, 90.0, 9.6)], [], {}, 0)
    row = payback_row("knee", 1, view, 0.4, ran_on_hardware=True)
    cost = {"ran_on_hardware": True, "probes": 4, "time_s": 90.0, "gpu_hours": 0.05, "energy_kj": 0.4,
            "provenance": "measured", "note": "", "payback": [row]}
    assert "<td>0.0250</td>" in tuning_cost_section(view, {"tuning_cost": cost}, None)


def test_a_cost_of_unknown_provenance_says_so_in_words():
    cost = {"ran_on_hardware": True, "probes": 2, "time_s": 180.0, "gpu_hours": 0.1, "energy_kj": 0.0147,
            "provenance": "unknown", "note": ""}
    assert "14.7 J; provenance unknown." in cost_sentence(cost, ("J", 1e-3))


def test_payback_hours_compare_the_same_work():
    # Baseline 10 h, 1000 kWh; pick 8 h, 800 kWh: 200 kWh saved per workload, over 8 h of training
    # with the pick = 25 kWh (90,000 kJ) per hour; 180,000 kJ of tuning repaid after 2 h (0.25 workloads).
    view = StudyView(None, [], [pt(0, 36_000.0, 3_600_000.0), pt(1, 28_800.0, 2_880_000.0)], [], {}, 0)
    row = payback_row("knee", 1, view, 180_000.0, ran_on_hardware=True)
    assert row["saved_kj_per_training_hour"] == pytest.approx(90_000.0)
    assert row["payback_training_hours"] == pytest.approx(2.0) and row["payback_workloads"] == pytest.approx(0.25)
    assert payback_row("fastest", 0, view, 180_000.0, True)["text"].startswith("no saving")
    assert payback_row("knee", 1, view, None, True)["text"].startswith("unknown")
    oom_baseline = StudyView(None, [{"trial": 5, "status": "oom"}], [pt(1, 28_800.0, 2_880_000.0)], [], {}, 5)
    row = payback_row("knee", 1, oom_baseline, 180_000.0, True)
    assert row["payback_training_hours"] is None
    assert row["text"] == "n/a: the baseline (trial 5) is not feasible (oom), so there is no saving to measure against"
    no_baseline = StudyView(None, [], [pt(1, 28_800.0, 2_880_000.0)], [], {}, None)  # a space without one
    assert payback_row("knee", 1, no_baseline, 180_000.0, True)["text"].startswith("n/a: this space holds no baseline")


def test_simulated_study_cost_nothing_and_says_so(simulated_run):
    cost = json.loads((simulated_run / "pareto.json").read_text())["tuning_cost"]
    assert cost["ran_on_hardware"] is False and cost["energy_kj"] == 0.0 and cost["time_s"] == 0.0
    assert "nothing ran on hardware" in cost["note"]
    # Repaid at once where the pick saves energy; a pick that saves none is never repaid (test below).
    assert {row["payback_training_hours"] for row in cost["payback"] if row["saved_kj_per_training_hour"] > 0} == {0.0}
    assert "nothing ran on hardware" in (simulated_run / "report.html").read_text()


def test_a_simulated_pick_that_uses_more_energy_than_the_baseline_is_never_repaid():
    # trial33 #8: "uses 1.02 kWh (simulated) more per training hour against the baseline; tuning is repaid at
    # once: no probe ran on hardware". Tuning that cost nothing is repaid at once only by a pick that saves.
    from autotune.report.payback import payback_sentence

    points = [pt(0, 36_000.0, 3_600_000.0), pt(1, 28_800.0, 3_672_000.0), pt(2, 28_800.0, 2_880_000.0)]
    view = StudyView(None, [], [replace(p, source="simulated", energy_source="simulated") for p in points], [], {}, 0)
    more = payback_row("fastest", 1, view, 0.0, ran_on_hardware=False)
    assert more["payback_training_hours"] is None and more["payback_workloads"] is None
    assert more["text"] == "never: this pick uses no less energy than the baseline"
    assert payback_sentence(more, ("kWh", 3600.0)) == ("uses 20.0 kWh (simulated) more per run of the workload against the baseline (2.50 kWh "
                                      "extra per hour of this pick's training, against the baseline doing the same work; simulated); tuning is never repaid: this pick uses "
                                      "no less energy than the baseline")
    same = payback_row("fastest", 0, view, 0.0, ran_on_hardware=False)  # the baseline itself
    # trial60 #11: "tuning is never repaid: this pick is the baseline itself, which needs no tuning", after tuning ran.
    assert payback_sentence(same, ("kWh", 3600.0)) == ("saves nothing per run of the workload against the baseline: "
                                      "this pick is the baseline itself")
    saves = payback_row("knee", 2, view, 0.0, ran_on_hardware=False)
    assert saves["payback_training_hours"] == 0.0 and payback_sentence(saves, ("kWh", 3600.0)) == (
        "saves 200 kWh (simulated) per run of the workload against the baseline (25.0 kWh saved per hour of this "
        "pick's training, against the baseline doing the same work; simulated)")  # "repaid at once" is the cost line's, said once
    # Trial 46: per run of the workload is what compares picks; the hourly figure grows with a pick's speed.
    assert saves["saved_kj_per_workload"] == 720_000.0 and saves["saved_kj_per_training_hour"] == 90_000.0


def test_every_output_of_a_simulated_study_says_a_pick_using_more_energy_is_never_repaid(tmp_path):
    # 32b on 2-8 GH200 nodes: the fastest pick (8 nodes) uses more energy than the baseline (2 nodes).
    from tests.cli import autotune_main

    run_dir = tmp_path / "run"
    done = autotune_main("run", "--model", "32b", "--nodes", "2-8", "--out", run_dir)
    assert done.returncode == 0, done.stderr
    payback = json.loads((run_dir / "pareto.json").read_text())["tuning_cost"]["payback"]
    more = [row for row in payback if row["saved_kj_per_training_hour"] <= 0]
    assert more and more[0]["name"] == "fastest"
    assert all(row["text"] == "never: this pick uses no less energy than the baseline"
               and row["payback_training_hours"] is None for row in more)
    fastest = more[0]
    used_kwh = f"{-fastest['saved_kj_per_workload'] / 3600:.3g}"
    hourly = f"{-fastest['saved_kj_per_training_hour'] / 3600:.3g}"
    line = (f"fastest (trial {fastest['trial']}): uses {used_kwh} kWh (simulated) more per run of the workload against the "
            f"baseline ({hourly} kWh extra per hour of this pick's training, against the baseline doing the same work; simulated); "
            "tuning is never repaid: this pick uses no "
            "less energy than the baseline")
    said = " ".join(done.stdout.split())  # the report: the progress lines go to stderr
    assert line in said and f"({hourly} kWh extra per hour of this pick's training, against the baseline doing the same work); tuning is repaid" not in said
    markdown = autotune_main("report", run_dir, "--format", "md")
    assert markdown.returncode == 0, markdown.stderr
    assert line.removeprefix("fastest ") in " ".join(markdown.stdout.split())
    html = (run_dir / "report.html").read_text()
    assert "tuning is never repaid: this pick uses no less energy than the baseline" in html
    # trial57 #1: "kWh less per hour of training with this pick" read as a drop in power per wall-clock hour, while
    # the pick may draw more: every output words the hourly figure as the saving on the same work, alike.
    import html as html_lib

    basis = "per hour of this pick's training, against the baseline doing the same work"
    page = " ".join(html_lib.unescape(html).split())
    assert f"kWh saved {basis}" in page and "not a drop in power per wall-clock hour" in page
    # trial59 #4: the page's table read "kWh saved: -0.170", backwards; it says what the terminal says, in words.
    assert line.partition(": ")[2] in page and f"-{used_kwh}" not in page
    for text in (said, " ".join(markdown.stdout.split()), page):
        assert "per hour of training with" not in text
        assert basis in text


def test_measured_study_sums_every_probe_that_ran(measured_run):
    doc = json.loads((measured_run / "pareto.json").read_text())
    cost = doc["tuning_cost"]
    study = load_finished_study(measured_run)
    ran = [t for t in study.trials if "result" in t.user_attrs and "duplicate_of" not in t.user_attrs]
    expected_kj = sum(t.user_attrs["result"]["details"]["probe_cost"]["energy_kj"] for t in ran)
    assert doc["trials_by_status"]["oom"] >= 1  # OOM probes cost energy too
    assert cost["probes"] == len(ran) and cost["energy_kj"] == pytest.approx(expected_kj)
    assert cost["complete"] is True and cost["provenance"] == "measured"
    assert cost["energy_kj"] > doc["trials_by_status"]["oom"] * OOM_PROBE_COST["energy_kj"]
    knee = next(row for row in cost["payback"] if row["name"] == "knee")
    by_trial = {p["trial"]: p for p in doc["feasible"]}
    base, pick = by_trial[doc["baseline"]], by_trial[knee["trial"]]
    saved = (base["energy_kj"] - pick["energy_kj"]) / pick["time_s"] * 3600
    assert knee["saved_kj_per_training_hour"] == pytest.approx(saved)
    if saved > 0:
        assert knee["payback_training_hours"] == pytest.approx(cost["energy_kj"] / saved)
    html = (measured_run / "report.html").read_text()
    assert "Tuning ran " in html and "GPU-hours" in html and 'class="payback"' in html


def _settings(hardware: str = "gh200"):
    from autotune.commands.options import settings_for

    return settings_for("--model", "tiny", "--nodes", "1", "--hardware", hardware, "--gpus-per-node", "2")


def test_window_scoped_energy_is_a_lower_bound_and_says_so():
    from autotune.report.payback import tuning_cost

    whole = {"time_s": 120.0, "energy_kj": 40.0, "energy_scope": "window"}
    unseen = {"time_s": 30.0, "energy_kj": None, "energy_scope": "window"}  # OOM before its window
    rows = [{"status": "ok", "gpus": 4, "details": {"energy": {"provenance": "measured"}, "probe_cost": whole}},
            {"status": "oom", "gpus": 4, "energy_source": "unavailable", "details": {"probe_cost": unseen}}]
    assert probe_cost(rows[0])["basis"] == "probe_cost_window_energy"
    cost = tuning_cost(StudyView(_settings(), rows, [], [], {}, None))
    assert cost["time_s"] == 150.0 and cost["energy_kj"] == 40.0 and cost["complete"] is False
    assert cost["energy_lower_bound"] is True
    assert "lower bound" in cost["note"] and "whole probe" in cost["note"]
    assert "energy measured only in the windows" in cost["note"]  # the OOM's unavailable energy is no third kind
    # Where no sensor was, the windows' energy was estimated: the note must not claim a measurement.
    estimated = [{**rows[0], "details": {"energy": {"provenance": "estimated"}, "probe_cost": whole}}]
    note = tuning_cost(StudyView(_settings(), estimated, [], [], {}, None))["note"]
    assert "energy estimated only in the windows" in note and "measured only" not in note


def test_a_payback_from_window_only_energy_is_at_least_and_uses_the_whole_probes_estimate():
    # trial30 #5: a CPU study's 6 probes took 316 s of 2-rank wall time but sensors saw 0.5 s of windows
    # (24.7 J); "tuning is repaid after 0.000186 h" was stated as a fact, about 300x too soon.
    from autotune.measure.estimate import PowerModel
    from autotune.report.payback import payback_sentence, tuning_cost

    settings = _settings("cpu")
    cost = {"time_s": 100.0, "energy_kj": 0.005, "energy_scope": "window", "parts": {"window_s": 0.1}}
    rows = [{"trial": t, "status": "ok", "gpus": 2, "energy_source": "estimated",
             "details": {"energy": {"provenance": "estimated"}, "probe_cost": cost}} for t in (0, 1)]
    points = [Point(trial=0, params={}, time_s=1.0, energy_kj=0.02, gpus=2, energy_source="estimated"),
              Point(trial=1, params={}, time_s=0.5, energy_kj=0.01, gpus=2, energy_source="estimated")]
    document = tuning_cost(StudyView(settings, rows, points, [], {"knee": 1}, 0))
    idle_w = PowerModel.from_hardware(settings.hardware, accelerators=2).node_power_w(0.0)
    whole_kj = 2 * (0.005 + idle_w * 99.9 / 1000)
    assert document["energy_kj"] == pytest.approx(0.01)  # what sensors saw: kept, a lower bound
    assert document["energy_lower_bound"] is True
    assert document["whole_probe_energy_kj"] == pytest.approx(whole_kj)
    assert "Whole probes estimated at" in document["note"] and "or more" in document["note"]
    # Trial 49 #14: the line led with the windows' energy, 20x less than the whole probes' the payback uses.
    from autotune.report.payback import cost_sentence

    headline = cost_sentence(document, ("J", 1e-3)).split(". ")[0]  # one unit, the report's (trial57 #4)
    assert headline.endswith(f"{report_energy_text(whole_kj, ('J', 1e-3))} or more with start-up and warm-up (estimated, below), 10.0 J of it "
                             "in the measurement windows (estimated)"), headline
    knee = document["payback"][0]
    saved_per_hour_kj = 0.01 / 0.5 * 3600
    assert knee["payback_training_hours"] == pytest.approx(whole_kj / saved_per_hour_kj)
    assert knee["payback_lower_bound"] is True and knee["saved_source"] == "estimated"
    sentence = payback_sentence(knee, ("J", 1e-3))
    assert "saves 10.0 J (estimated) per run of the workload" in sentence
    # trial60 #6: the hourly figure carries the per-run saving's label as well.
    assert "(72,000 J saved per hour of this pick's training, against the baseline doing the same work; estimated)" in sentence
    assert "tuning is repaid after at least " in sentence
    # Trial 38 #5: the row itself says its tuning energy is the estimate, not a measured figure.
    assert knee["tuning_energy_estimated"] is True and sentence.endswith("from the whole probes' estimated energy)")
    # Every probe's whole cost known (another backend's probe_cost): the payback is stated as it is.
    exact = [{**r, "details": {"probe_cost": {"time_s": 100.0, "energy_kj": 5.0}}, "energy_source": "measured"} for r in rows]
    measured = [Point(**{**p.__dict__, "energy_source": "measured"}) for p in points]
    row = tuning_cost(StudyView(settings, exact, measured, [], {"knee": 1}, 0))["payback"][0]
    assert row["payback_lower_bound"] is False and "at least" not in row["text"]
    assert row["tuning_energy_estimated"] is False and "estimated" not in row["text"]
    assert "saves 10.0 J per run of the workload against the baseline (72,000 J saved per hour" in payback_sentence(row, ("J", 1e-3))


def test_the_probe_hours_of_a_cpu_study_are_cpu_rank_hours(tmp_path):
    from dataclasses import replace

    from autotune.backends.simulate import SimulateBackend
    from autotune.commands.options import settings_for
    from autotune.report.payback import cost_sentence, tuning_cost
    from autotune.report.study_points import study_view
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler

    class _Timed(SimulateBackend):  # a probe that ran, with its whole cost, on the cpu profile's ranks
        source = "measured"

        def evaluate(self, candidate, trial_number=0):
            result = super().evaluate(candidate, trial_number)
            return replace(result, source="measured", details={"probe_cost": {"time_s": 36.0, "energy_kj": None}})

    for hardware, unit in (("cpu", "CPU-rank-hours"), ("gh200", "GPU-hours")):
        settings = settings_for("--model", "tiny", "--nodes", "1", "--hardware", hardware, "--gpus-per-node", "2")
        study = open_study(tmp_path / hardware, None, make_sampler(0, 2))
        run_study(study, settings, _Timed(), 2, early_stop=False)
        cost = tuning_cost(study_view(study))
        assert cost["gpu_hours"] == pytest.approx(2 * 36.0 * 2 / 3600)
        assert f"{figure(cost['gpu_hours'])} {unit}," in cost_sentence(cost, ("kJ", 1.0))


def test_probes_with_no_energy_say_so_once_of_every_probe(tmp_path):
    # trial60 #2: "..., unknown energy; unavailable. energy is unknown for some probes that have a time." of 4
    # probes none of which had an energy: said twice, a sentence in lower case, and "some" for all.
    from autotune.backends.simulate import SimulateBackend
    from autotune.commands.options import settings_for
    from autotune.report.payback import tuning_cost
    from autotune.report.study_points import study_view
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler

    class _NoSensor(SimulateBackend):  # a timed probe no sensor read and nothing estimated
        source = "measured"

        def evaluate(self, candidate, trial_number=0):
            result = super().evaluate(candidate, trial_number)
            return replace(result, source="measured", energy_source="unavailable",
                           details={"probe_cost": {"time_s": 36.0, "energy_kj": None}})

    settings = settings_for("--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--gpus-per-node", "2")
    study = open_study(tmp_path / "study", None, make_sampler(0, 2))
    run_study(study, settings, _NoSensor(), 2, early_stop=False)
    cost = tuning_cost(study_view(study))
    said = cost_sentence(cost, ("kJ", 1.0))
    assert said.endswith("CPU-rank-hours, energy unavailable. None of the 2 probes has an energy on record "
                         "(no sensor reading and no estimate)."), said
    assert said.count("unavailable") == 1 and "some" not in said


def test_replayed_probes_without_a_recorded_cost_make_the_cost_unknown_not_zero():
    # A study replayed from a measurements file with no `probe_cost`: the probes ran on some cluster at
    # a cost the file does not say. Reported as 0 h, 0 kJ, "repaid after 0 h" before.
    from autotune.report.payback import cost_sentence, tuning_cost

    replayed = {"status": "ok", "gpus": 16, "source": "measured", "details": {"replayed_from": "measured.jsonl"}}
    assert probe_cost(replayed)["basis"] == "replayed"
    view = StudyView(None, [replayed, replayed], [pt(0, 36_000.0, 3_600_000.0), pt(1, 28_800.0, 2_880_000.0)], [], {"knee": 1}, 0)
    cost = tuning_cost(view)
    assert cost["ran_on_hardware"] is True and cost["complete"] is False
    assert cost["time_s"] is None and cost["gpu_hours"] is None and cost["energy_kj"] is None
    assert "replayed from a measurements file that records no probe cost" in cost["note"]
    assert "have a time" not in cost["note"]  # none has
    assert "unknown probe time and unknown energy" in cost_sentence(cost, ("kJ", 1.0))
    knee = cost["payback"][0]
    assert knee["saved_kj_per_training_hour"] > 0 and knee["payback_training_hours"] is None
    assert knee["text"].startswith("unknown")
    # Beside a probe of known cost, one replayed without it is left out of the totals and their label.
    costed = {"status": "ok", "gpus": 16, "energy_source": "measured",
              "details": {"replayed_from": "measured.jsonl", "probe_cost": {"time_s": 60.0, "energy_kj": 30.0}}}
    mixed = tuning_cost(StudyView(None, [costed, replayed], [], [], {}, None))
    assert mixed["time_s"] == 60.0 and mixed["energy_kj"] == 30.0 and mixed["provenance"] == "measured"
    assert mixed["complete"] is False
    # Probes that failed before measuring, none of known cost: unknown too, not 0 kJ.
    failed = {"status": "failed", "gpus": 16, "source": "measured", "details": {}}
    assert tuning_cost(StudyView(None, [failed], [], [], {}, None))["energy_kj"] is None


def test_a_probe_interrupted_and_probed_again_is_reported_as_interrupted_not_failed(tmp_path):
    # Ctrl-C during a probe: its trial is FAIL with an `interrupted` mark, and the next run probes the
    # candidate again. The report said "1 fail" and "failed before measuring" for it.
    from autotune.backends.simulate import SimulateBackend
    from autotune.commands.options import settings_for
    from autotune.report.payback import tuning_cost
    from autotune.report.study_points import study_view
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler

    class _Interrupted(SimulateBackend):
        def evaluate(self, candidate, trial_number=0):
            raise KeyboardInterrupt

    settings = settings_for("--model", "32b", "--nodes", "4")
    with pytest.raises(KeyboardInterrupt):
        run_study(open_study(tmp_path, None, make_sampler(0, 4)), settings, _Interrupted(), 4)
    study = open_study(tmp_path, None, make_sampler(0, 4))
    run_study(study, settings, SimulateBackend(), 4, early_stop=False)
    view = study_view(study)
    assert [row["status"] for row in view.trials].count("interrupted") == 1
    assert [row["status"] for row in view.trials].count("ok") == 4
    cost = tuning_cost(view)
    # Simulated, the interrupted trial ran nothing on hardware either (a launched one's cost: test_payback_interrupted_energy).
    assert cost["probes_by_basis"] == {"simulated": 5} and "failed before measuring" not in cost["note"]
    # Its reason names the trial that probed its candidate again (report.html's trial table showed none).
    stopped = next(row for row in view.trials if row["status"] == "interrupted")
    again = next(row for row in view.trials if row["params"] == stopped["params"] and row["trial"] != stopped["trial"])
    assert stopped["reason"] == ("its probe was stopped (Ctrl-C, SIGTERM, or the tuner killed): probed again as "
                                 f"trial {again['trial']}")


def test_interrupted_repeats_on_record_count_once_and_a_missing_record_makes_the_time_a_lower_bound(tmp_path):
    # Trial 1 was interrupted in its first repeat (28.7 s), trial 2 (its retry) in its second (4.7 s);
    # trial 3 took over trial 2's first repeat (114.8 s), and its own cost counts it.
    from autotune.report.payback import tuning_cost
    trials = tmp_path / "trials"

    def record(trial, runs):
        (trials / f"{trial:04d}").mkdir(parents=True)
        (trials / f"{trial:04d}" / "probe_runs.json").write_text(json.dumps({"probe_settings": {}, "runs": runs}))

    record(1, {"1": {"started_unix_s": 1.0, "wall_s": 28.7}})
    record(2, {"1": {"started_unix_s": 2.0, "wall_s": 114.8}, "2": {"started_unix_s": 3.0, "wall_s": 4.7}})
    done = {"status": "ok", "gpus": 2, "source": "measured", "details": {
        "trial_dir": str(trials / "0003"),
        "probe_cost": {"time_s": 133.2, "energy_kj": 0.02, "parts": {"taken_over": [
            {"repeat": 1, "from": str(trials / "0002" / "result-1.json"), "wall_s": 114.8, "wall": "recorded"}]}}}}
    rows = [{"trial": 1, "status": "interrupted", "gpus": 2, "details": {}},
            {"trial": 2, "status": "interrupted", "gpus": 2, "details": {}}, {"trial": 3, **done}]
    cost = tuning_cost(StudyView(_settings("cpu"), rows, [], [], {}, None))
    assert cost["time_s"] == pytest.approx(133.2 + 28.7 + 4.7) and cost["time_lower_bound"] is False
    assert "the 33.4 s their runs recorded" in cost["note"]
    assert "at least" not in cost_sentence(cost, ("kJ", 1.0)).split(";")[0]

    # Trial 4, stopped while it waited for another worker's probe on its devices: no run started, no probe.
    record(4, {})
    waited = tuning_cost(StudyView(_settings("cpu"), [*rows, {"trial": 4, "status": "interrupted", "gpus": 2, "details": {}}],
                                   [], [], {}, None))
    assert waited["probes"] == 3 and waited["time_s"] == pytest.approx(cost["time_s"]) and waited["note"] == cost["note"]

    # Trial 1's record lost (or a run never timed): what is known is counted, and the time is a floor.
    (trials / "0001" / "probe_runs.json").unlink()
    cost = tuning_cost(StudyView(_settings("cpu"), rows, [], [], {}, None))
    assert cost["time_s"] == pytest.approx(133.2 + 4.7) and cost["time_lower_bound"] is True
    assert "the probe time is a lower bound" in cost["note"]
    assert cost_sentence(cost, ("kJ", 1.0)).startswith("Tuning ran 3 probes: at least ")


def test_a_simulated_record_beside_probes_of_unknown_cost_does_not_make_the_cost_zero():
    """Trial 38 #1: a replay of 18 measured records without `probe_cost` and one simulated record read "0 J;
    simulated" and "repaid after at least 0 h": the simulated trial's 0 kJ is no figure of what hardware took."""
    from autotune.report.payback import tuning_cost

    replayed = {"status": "ok", "gpus": 16, "source": "measured", "energy_source": "measured",
                "details": {"replayed_from": "measured.jsonl"}}
    simulated = {"status": "ok", "gpus": 16, "source": "simulated", "energy_source": "simulated", "details": {}}
    view = StudyView(None, [simulated, replayed, replayed], [pt(0, 36_000.0, 3_600_000.0), pt(1, 28_800.0, 2_880_000.0)],
                     [], {"knee": 1}, 0)
    cost = tuning_cost(view)
    assert cost["time_s"] is None and cost["energy_kj"] is None and cost["provenance"] == "none"
    assert "1 trial was simulated: it ran nothing on hardware" in cost["note"]
    assert "unknown probe time and unknown energy" in cost_sentence(cost, ("kJ", 1.0))
    assert cost["payback"][0]["payback_training_hours"] is None and cost["payback"][0]["text"].startswith("unknown")
    # Beside a probe of known cost, the simulated one adds nothing and leaves no label.
    costed = {**replayed, "details": {"replayed_from": "m.jsonl", "probe_cost": {"time_s": 60.0, "energy_kj": 30.0}}}
    mixed = tuning_cost(StudyView(None, [simulated, costed], [], [], {}, None))
    assert mixed["time_s"] == 60.0 and mixed["energy_kj"] == 30.0 and mixed["provenance"] == "measured"


def test_window_energy_that_no_sensor_read_gives_no_whole_probe_estimate():
    """Trial 38 #9: a counter that never advanced leaves every window's energy unavailable; the note claimed
    "energy measured only in the windows" and "Whole probes estimated at 448 J or more" (the windows as 0 J)."""
    from autotune.report.payback import tuning_cost

    cost = {"time_s": 100.0, "energy_kj": None, "energy_scope": "window", "energy_provenance": "unavailable",
            "parts": {"window_s": 4.0}}
    rows = [{"trial": t, "status": "ok", "gpus": 2, "energy_source": "unavailable",
             "details": {"energy": {"provenance": "unavailable"}, "probe_cost": cost}} for t in (0, 1)]
    document = tuning_cost(StudyView(_settings("cpu"), rows, [], [], {}, None))
    assert document["energy_kj"] is None and document["whole_probe_energy_kj"] is None
    assert "energy unavailable (no sensor reading and no estimate" in document["note"]
    assert "measured only" not in document["note"] and "Whole probes estimated" not in document["note"]


def test_a_whole_probe_cost_below_idle_power_is_taken_for_window_energy():
    """Trial 38 #8: records exported before `energy_scope` existed (the shipped H100 study's, 1.6 kJ over 80 s of
    one GPU: 20 W) read "Totals cover every probe" and a payback 3.5x too soon."""
    from autotune.report.payback import tuning_cost

    def rows(energy_kj):
        return [{"trial": t, "status": "ok", "gpus": 2, "energy_source": "measured",
                 "details": {"replayed_from": "m.jsonl", "probe_cost": {"time_s": 80.0, "energy_kj": energy_kj}}}
                for t in (0, 1)]

    low = tuning_cost(StudyView(_settings(), rows(1.6), [], [], {}, None))
    assert "2 probes' recorded cost (`probe_cost`, which names no `energy_scope`) holds less energy" in low["note"]
    assert low["energy_lower_bound"] is True and "Totals cover every probe" not in low["note"]
    plausible = tuning_cost(StudyView(_settings(), rows(80.0), [], [], {}, None))  # 1 kW over two GPUs' ranks
    assert plausible["energy_lower_bound"] is False and plausible["note"].startswith("Totals cover every probe")


def test_an_interrupted_trial_of_a_simulated_study_cost_nothing_either():
    """Trial 37 F9: after a SIGTERM a simulated study's cost line spoke of interrupted probes, "at least 0 h"."""
    from autotune.report.payback import tuning_cost

    simulated = {"trial": 0, "status": "ok", "gpus": 16, "source": "simulated", "energy_source": "simulated", "details": {}}
    interrupted = {"trial": 1, "status": "interrupted", "gpus": 16, "details": {}}
    cost = tuning_cost(StudyView(None, [simulated, interrupted], [], [], {}, None))
    assert cost["ran_on_hardware"] is False and cost["probes_by_basis"] == {"simulated": 2}
    assert cost["note"].startswith("Simulated study: nothing ran on hardware (2 candidates modelled analytically)")


def test_a_probe_that_failed_before_its_window_counts_at_idle_power_in_the_whole_probe_estimate():
    """Trial77 #4: one timed-out probe (its cost window-scoped, its energy None, "unavailable") left the study with no
    whole-probe estimate, and the payback came from the windows' joules: 11.5 runs of the workload where ~530 was
    right. A probe that timed out, crashed or ran out of memory before any window closed counts its whole time at
    idle power, as an interrupted one does; one whose window ran with no sensor reading it still gives no estimate."""
    from autotune.backends.launch import probe_cost as launch_probe_cost
    from autotune.measure.estimate import PowerModel
    from autotune.report.payback import tuning_cost

    settings = _settings("cpu")
    ok_cost = {"time_s": 20.0, "energy_kj": 0.005, "energy_scope": "window", "energy_provenance": "estimated",
               "parts": {"window_s": 0.5}}
    ok = [{"trial": t, "status": "ok", "gpus": 2, "energy_source": "estimated",
           "details": {"energy": {"provenance": "estimated"}, "probe_cost": ok_cost}} for t in (1, 2)]
    timed_out = {"trial": 0, "status": "timeout", "gpus": 2, "energy_source": "unavailable",
                 "details": {"probe_cost": launch_probe_cost([45.0], [])}}  # as the launch backend writes it
    points = [Point(trial=1, params={}, time_s=1.0, energy_kj=0.02, gpus=2, energy_source="estimated"),
              Point(trial=2, params={}, time_s=0.5, energy_kj=0.01, gpus=2, energy_source="estimated")]
    document = tuning_cost(StudyView(settings, [timed_out, *ok], points, [], {"knee": 2}, 1))
    idle_w = PowerModel.from_hardware(settings.hardware, accelerators=2).node_power_w(0.0)
    whole_kj = 2 * (0.005 + idle_w * 19.5 / 1000) + idle_w * 45.0 / 1000
    assert document["whole_probe_energy_kj"] == pytest.approx(whole_kj)
    assert document["energy_kj"] == pytest.approx(0.01)  # what sensors saw: the timeout adds nothing to it
    knee = document["payback"][0]
    assert knee["tuning_energy_estimated"] is True and knee["payback_workloads"] == pytest.approx(whole_kj / 0.01)
    # A window that ran unseen (an earlier repeat's seconds on record, or an ok probe's): no estimate, as before.
    seen_window = {**timed_out, "details": {"probe_cost": {**launch_probe_cost([45.0], []), "parts": {"window_s": 0.5}}}}
    assert tuning_cost(StudyView(settings, [seen_window, *ok], points, [], {"knee": 2}, 1))["whole_probe_energy_kj"] is None
    unseen_ok = {**timed_out, "status": "ok"}
    assert tuning_cost(StudyView(settings, [unseen_ok, *ok], points, [], {"knee": 2}, 1))["whole_probe_energy_kj"] is None


def test_the_cost_line_counts_one_probe_in_the_singular():
    """Trial77 #3: "Tuning ran 1 probes: 0.00311 h of probe time, ..." (the note beside it said "1 probe: ...")."""
    cost = {"ran_on_hardware": True, "probes": 1, "time_s": 11.2, "gpu_hours": 0.0062, "energy_kj": 0.01,
            "provenance": "estimated", "note": ""}
    assert cost_sentence(cost, ("J", 1e-3)).startswith("Tuning ran 1 probe: 0.00311 h of probe time, ")
    assert cost_sentence({**cost, "probes": 2}, ("J", 1e-3)).startswith("Tuning ran 2 probes: ")
    replayed = {**cost, "replayed": 1}
    assert cost_sentence(replayed, ("J", 1e-3)).startswith("The 1 replayed probe took, where it was measured, 0.00311 h")
    assert cost_sentence({**replayed, "probes": 2, "replayed": 2}, ("J", 1e-3)).startswith(
        "The 2 replayed probes took, where they were measured, ")


def test_the_windows_energy_is_labelled_by_the_probes_it_holds_not_by_one_that_added_none():
    """Trial77 #4: beside a timed-out probe (no window, energy "unavailable") the windows' estimated joules read
    "17.1 J; mixed: estimated, unavailable"; the timeout adds no joule to them. With no probe's energy in the
    total, the label still says why there is no figure."""
    from autotune.backends.launch import probe_cost as launch_probe_cost
    from autotune.report.payback import tuning_cost

    ok_cost = {"time_s": 20.0, "energy_kj": 0.005, "energy_scope": "window", "energy_provenance": "estimated",
               "parts": {"window_s": 0.5}}
    ok = {"trial": 1, "status": "ok", "gpus": 2, "energy_source": "estimated",
          "details": {"energy": {"provenance": "estimated"}, "probe_cost": ok_cost}}
    timed_out = {"trial": 0, "status": "timeout", "gpus": 2, "energy_source": "unavailable",
                 "details": {"probe_cost": launch_probe_cost([45.0], [])}}
    document = tuning_cost(StudyView(_settings("cpu"), [timed_out, ok], [], [], {}, None))
    assert document["provenance"] == "estimated"
    assert "5.00 J of it in the measurement windows (estimated)." in cost_sentence(document, ("J", 1e-3))
    alone = tuning_cost(StudyView(_settings("cpu"), [timed_out], [], [], {}, None))
    assert alone["energy_kj"] is None and alone["provenance"] == "unavailable"
