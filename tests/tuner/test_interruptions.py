"""A run stopped where a user does not expect it (trial 43): an error of the tuner mid-probe, a worker stopped past
the heartbeat's grace, a report taken while a run goes on."""

from __future__ import annotations

import html
import json

import optuna

from autotune.backends.simulate import SimulateBackend
from autotune.cli import main
from autotune.errors import UserError

STUDY = ["run", "--model", "7b", "--nodes", "1", "--sampler", "random"]


def test_a_probe_an_error_stopped_is_probed_again_on_resume(tmp_path, capsys, monkeypatch):
    """F1: an error that ended the tuner mid-probe (a full disk, trials/ removed) left the trial a plain FAIL: the
    resume never probed its candidate again, and with the baseline's gone every saving stayed "n/a"."""
    run_dir = tmp_path / "run"
    evaluate = SimulateBackend.evaluate

    def disk_full(self, candidate, trial_number=0):
        raise UserError(f"cannot write {run_dir}/trials/{trial_number:04d}/probe_runs.json (No space left on device); "
                        "run the command again (what the study measured is kept in its database)")

    monkeypatch.setattr(SimulateBackend, "evaluate", disk_full)
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    monkeypatch.setattr(SimulateBackend, "evaluate", evaluate)  # space freed
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 0
    said = capsys.readouterr()
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
    first = study.trials[0]
    assert first.user_attrs["baseline"] and first.user_attrs["interrupted"]
    assert first.user_attrs["stopped_by"].startswith(f"cannot write {run_dir}/trials/0000/probe_runs.json")
    retry = next(t for t in study.trials if t.user_attrs.get("retry_of") == 0)
    assert retry.state == optuna.trial.TrialState.COMPLETE and retry.user_attrs["baseline"]
    pareto = json.loads((run_dir / "pareto.json").read_text())
    assert pareto["baseline"] == retry.number  # savings are against the measured baseline, not "n/a"
    assert "its probe was stopped by an error of the tuner (cannot write" in html.unescape((run_dir / "report.html").read_text())
    assert "n/a" not in said.out


def test_a_worker_whose_trial_another_worker_failed_meanwhile_stops_in_one_line(tmp_path, capsys, monkeypatch):
    """Trial 43 F7: a worker stopped (Ctrl-Z) past the heartbeat's grace came back to a trial another worker had
    failed as a dead worker's: Optuna's "Cannot tell a FAIL trial." traceback, exit 1."""
    run_dir = tmp_path / "run"
    evaluate = SimulateBackend.evaluate

    calls = []

    def failed_meanwhile(self, candidate, trial_number=0):
        result = evaluate(self, candidate, trial_number)
        calls.append(trial_number)
        if len(calls) == 2:  # what another worker's fail_stale_trials does to this worker's trial while it is stopped
            study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
            study.tell(trial_number, state=optuna.trial.TrialState.FAIL)
        return result

    monkeypatch.setattr(SimulateBackend, "evaluate", failed_meanwhile)
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 2
    (said,) = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert said.startswith("autotune run: error: this worker was stopped longer than the heartbeat's grace"), said
    assert said.endswith("run the same command again to go on")
    monkeypatch.setattr(SimulateBackend, "evaluate", evaluate)
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 0  # and it goes on


def test_a_report_of_a_study_a_run_is_still_writing_says_so(tmp_path, capsys):
    """Trial 43 F9: a report taken while a run went on read as the study's end ("36 trials (15 invalid, 21 ok)")."""
    from autotune.study.run_dir_locks import sole_worker

    run_dir = tmp_path / "run"
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 0
    capsys.readouterr()
    said = "a run of this study is under way in"
    with sole_worker(run_dir, None):  # what a run holds while it runs
        assert main(["report", str(run_dir)]) == 0
        assert f"{said} {run_dir}: this report is of the trials finished so far" in capsys.readouterr().err
    assert main(["report", str(run_dir)]) == 0
    assert said not in capsys.readouterr().err
