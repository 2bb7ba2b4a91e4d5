"""Interrupted probes' recorded time in the whole-probe energy estimate, at idle power, never in the measured figure."""

import json

import pytest

from autotune.measure.estimate import PowerModel
from autotune.report.front import Point
from autotune.report.payback import cost_sentence, payback_sentence, tuning_cost
from autotune.report.study_points import StudyView
from autotune.report.units import figure, report_energy_text


def _settings():
    from autotune.commands.options import settings_for

    return settings_for("--model", "tiny", "--nodes", "1", "--hardware", "h100-sxm", "--gpus-per-node", "2")


def _idle_w(settings, gpus: int) -> float:
    return PowerModel.from_hardware(settings.hardware, accelerators=gpus).node_power_w(0.0)


def _study(tmp_path):
    """Trial 0 (1 GPU) interrupted in its second repeat after its first took 40 s; trial 1 (2 GPUs) interrupted
    after 30 s and 12 s; trial 2, trial 1's retry, took over trial 1's first repeat and counts its 30 s itself;
    trial 3, the baseline, ran whole. Every finished probe's energy is its windows' only (the launch backend)."""
    trials = tmp_path / "trials"

    def record(trial, runs):
        (trials / f"{trial:04d}").mkdir(parents=True)
        (trials / f"{trial:04d}" / "probe_runs.json").write_text(json.dumps({"probe_settings": {}, "runs": runs}))

    record(0, {"1": {"started_unix_s": 1.0, "wall_s": 40.0}, "2": {"started_unix_s": 2.0, "wall_s": 3.5}})
    record(1, {"1": {"started_unix_s": 3.0, "wall_s": 30.0}, "2": {"started_unix_s": 4.0, "wall_s": 12.0}})

    def done(trial, time_s, energy_kj, window_s, taken_over=()):
        parts = {"window_s": window_s, "taken_over": list(taken_over)}
        return {"trial": trial, "status": "ok", "gpus": 2, "source": "measured", "energy_source": "measured",
                "details": {"trial_dir": str(trials / f"{trial:04d}"), "energy": {"provenance": "measured"},
                            "probe_cost": {"time_s": time_s, "energy_kj": energy_kj, "energy_scope": "window", "parts": parts}}}

    retry = done(2, 80.0, 1.2, 4.0, [{"repeat": 1, "from": str(trials / "0001" / "result-1.json"), "wall_s": 30.0,
                                      "wall": "recorded"}])
    rows = [{"trial": 0, "status": "interrupted", "gpus": 1, "details": {}},
            {"trial": 1, "status": "interrupted", "gpus": 2, "details": {}}, retry, done(3, 60.0, 1.0, 3.0)]
    points = [Point(trial=2, params={}, time_s=5.0, energy_kj=1.0, gpus=2), Point(trial=3, params={}, time_s=6.0, energy_kj=2.0, gpus=2)]
    return StudyView(_settings(), rows, points, [], {"knee": 2}, 3)


def test_interrupted_runs_enter_the_whole_probe_estimate_at_idle_power_not_the_measured_energy(tmp_path):
    view = _study(tmp_path)
    settings = view.settings
    cost = tuning_cost(view)
    # Trial 0's 43.5 s and trial 1's 12 s (its 30 s is the retry's): 55.5 s of interrupted runs.
    interrupted_s = 40.0 + 3.5 + 12.0
    assert cost["time_s"] == pytest.approx(80.0 + 60.0 + interrupted_s)
    assert cost["energy_kj"] == pytest.approx(2.2)  # what sensors saw, the windows only: no idle power in it
    assert cost["provenance"] == "measured" and cost["energy_lower_bound"] is True
    windows_kj = 1.2 + 1.0 + _idle_w(settings, 2) * ((80.0 - 4.0) + (60.0 - 3.0)) / 1000
    interrupted_kj = (_idle_w(settings, 1) * (40.0 + 3.5) + _idle_w(settings, 2) * 12.0) / 1000
    whole_kj = windows_kj + interrupted_kj
    assert cost["whole_probe_energy_kj"] == pytest.approx(whole_kj)

    whole = report_energy_text(whole_kj, ("kJ", 1.0))  # the report's unit: its front (none here) reads kJ (trial57 #4)
    assert cost["note"].endswith(
        "2 probes were interrupted (Ctrl-C, SIGTERM) before they wrote a cost (each probed again when the study resumes): the 55.5 s their runs "
        "recorded (`probe_runs.json`) that no retry took over is in the probe time and, at idle power, in the whole-probe "
        f"estimate, not in the measured energy. Whole probes estimated at {whole} or more: the windows' energy plus the "
        "h100-sxm profile's idle power of each probe's ranks over the rest of its wall time and 55.5 s of interrupted runs "
        "at idle power (start-up, warm-up and the interrupted runs draw more); the payback uses this.")
    assert "their energy is not" not in cost["note"]
    # The line's measured figure stays the sensors' 2.2 kJ.
    assert (f"GPU-hours, {whole} or more with start-up and warm-up (estimated, below), 2.20 kJ of it "
            "in the measurement windows (measured). ") in cost_sentence(cost, ("kJ", 1.0))

    # The payback divides the estimate, interrupted runs included, and says it is a floor.
    knee = cost["payback"][0]
    saved_kj_per_hour = (2.0 - 1.0) / 5.0 * 3600
    assert knee["payback_training_hours"] == pytest.approx(whole_kj / saved_kj_per_hour)
    assert knee["payback_lower_bound"] is True
    assert f"tuning is repaid after at least {figure(whole_kj / saved_kj_per_hour)} h of training" in payback_sentence(knee, ("kJ", 1.0))


def test_without_a_whole_probe_estimate_the_interrupted_energy_is_not_counted_and_the_line_says_so(tmp_path):
    # Every finished probe's whole cost known (no window-only energy): no estimate, so the interrupted runs'
    # energy is in no figure.
    view = _study(tmp_path)
    for row in view.trials:
        cost = (row["details"] or {}).get("probe_cost")
        if cost:
            cost.pop("energy_scope")
    cost = tuning_cost(view)
    assert cost["whole_probe_energy_kj"] is None and cost["energy_kj"] == pytest.approx(2.2)
    assert ("the 55.5 s their runs recorded (`probe_runs.json`) that no retry took over is in the probe time, their "
            "energy is not;") in cost["note"]
    # 2.2 kJ over 140 s of probes is window energy with its scope taken off: the note says so.
    assert cost["note"].endswith("likely their measured windows' energy alone, so the energy is a lower bound.")


def test_interrupted_probes_without_a_record_add_nothing_to_the_estimate(tmp_path):
    # A replayed or simulated study's interrupted trial has no trials/ folder: no time, no idle energy.
    view = _study(tmp_path)
    finished = [row for row in view.trials if row["status"] != "interrupted"]
    alone = tuning_cost(StudyView(view.settings, finished, view.points, [], {"knee": 2}, 3))
    for trial in ("0000", "0001"):
        (tmp_path / "trials" / trial / "probe_runs.json").unlink()
    cost = tuning_cost(view)
    assert cost["whole_probe_energy_kj"] == pytest.approx(alone["whole_probe_energy_kj"])
    assert "interrupted runs at idle power" not in cost["note"] and "start-up and warm-up draw more" in cost["note"]


def test_a_probe_an_error_of_the_tuner_stopped_is_not_said_to_be_interrupted_by_ctrl_c(tmp_path):
    """Trial 69 #8: a run stopped on an error of the tuner (its trial folder unwritable) read, in the tuning cost,
    "1 probe was interrupted (Ctrl-C, SIGTERM)", though no signal was sent. Mid-probe, it is a probe stopped by that
    error; before its probe started (no probe_runs.json: the launch backend writes it before the launcher starts), it
    is no probe at all, and the note says what stopped it."""
    view = _study(tmp_path)
    error = "trial 1 was not probed: /r/trials/0001 cannot be written (Permission denied): make it writable; kept"
    view.trials[1]["stopped_by"] = error  # trial 1 has its runs on record: its probe ran
    note = tuning_cost(view)["note"]
    assert ('2 probes were interrupted (Ctrl-C, SIGTERM, or for 1 of them an error of the tuner, "trial 1 was not probed: '
            '/r/trials/0001 cannot be written (Permission denied): make it writable") before they wrote a cost') in note
    view.trials[0]["stopped_by"] = error.replace("1", "0")
    assert "2 probes were stopped by an error of the tuner (the last, trial 1: \"trial 1 was not probed" in tuning_cost(view)["note"]

    (tmp_path / "trials" / "0001" / "probe_runs.json").unlink()  # trial 1's error came before its probe files
    cost = tuning_cost(view)
    assert cost["probes"] == 3 and cost["time_s"] == pytest.approx(80.0 + 60.0 + 43.5)
    assert ('1 probe was stopped by an error of the tuner ("trial 0 was not probed: /r/trials/0000 cannot be written '
            '(Permission denied): make it writable") before it wrote a cost') in cost["note"]
    assert (' Trial 1 was stopped by an error of the tuner before its probe started ("trial 1 was not probed: '
            '/r/trials/0001 cannot be written (Permission denied): make it writable"): no probe ran, nothing was spent, '
            "and the study probes its candidate when it resumes.") in cost["note"]
    assert "Ctrl-C" not in cost["note"]


def test_a_run_stopped_before_a_probe_on_an_unwritable_trial_folder_counts_no_probe_for_it(tmp_path):
    """The same through a study: the loop keeps the error on the trial (`stopped_by`), the report's view hands it on."""
    from autotune.backends.base import Backend, ProbeResult
    from autotune.backends.trial_dirs import probe_files_error
    from autotune.commands.options import settings_for
    from autotune.errors import UserError
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler
    from autotune.report.study_points import study_view

    trials = tmp_path / "trials"

    class _Probes(Backend):
        name, source = "launch", "measured"

        def evaluate(self, candidate, trial_number: int = 0) -> ProbeResult:
            folder = trials / f"{trial_number:04d}"
            if trial_number == 2:
                raise probe_files_error(folder, 2, PermissionError(13, "Permission denied", str(folder / "log.txt")))
            cost = {"time_s": 10.0, "energy_kj": 1.0, "energy_scope": "window", "parts": {"window_s": 2.0}}
            return ProbeResult(status="ok", source="measured", energy_source="measured", time_s=5.0 + trial_number,
                               energy_kj=1.0 + trial_number, details={"trial_dir": str(folder), "probe_cost": cost})

    settings = settings_for("--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--gpus-per-node", "1")
    with pytest.raises(UserError, match="trial 2 was not probed"):
        run_study(open_study(tmp_path, None, make_sampler(0, 30)), settings, _Probes(), 4, early_stop=False)
    cost = tuning_cost(study_view(open_study(tmp_path, None, make_sampler(0, 30))))
    assert cost["probes"] == 2 and "interrupted" not in cost["note"], cost["note"]
    assert f' Trial 2 was stopped by an error of the tuner before its probe started ("trial 2 was not probed: {trials / "0002"} ' \
           "cannot be written (Permission denied)" in cost["note"]
