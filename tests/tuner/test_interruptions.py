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
            # ... and its heartbeat callback (storage.py): the trial queued again, to be probed by that worker
            optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=2)(study, study.trials[trial_number])
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


def _told_while_probing(run_dir, monkeypatch, told: dict):
    """The simulate backend, whose second probe sees its trial told from outside (`study.tell(**told)`) while it runs;
    returns the trial numbers each probe ran for."""
    evaluate, calls = SimulateBackend.evaluate, []

    def told_meanwhile(self, candidate, trial_number=0):
        calls.append(trial_number)
        if len(calls) == 2:  # an Optuna user cancelling a probe that seems to hang, from another shell
            study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
            study.tell(trial_number, **told)
        return evaluate(self, candidate, trial_number)

    monkeypatch.setattr(SimulateBackend, "evaluate", told_meanwhile)
    return calls


def test_a_trial_told_from_outside_while_its_probe_runs_is_said_so_and_its_outcome_kept(tmp_path, capsys, monkeypatch):
    """Trial74 #1: a RUNNING trial told COMPLETE from outside (study.tell) while its probe ran ended the run, exit 2,
    with "this worker was stopped longer than the heartbeat's grace ... another worker ... probes it again", none of
    which was so, and the probe's outcome was lost (a timeout probed again by the next run)."""
    run_dir = tmp_path / "run"
    calls = _told_while_probing(run_dir, monkeypatch, {"values": [1.0, 1.0]})
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 0
    said = capsys.readouterr()
    told = calls[1]
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
    retry = next(t for t in study.trials if t.user_attrs.get("retry_of") == told)
    assert (f"warning: trial {told} was finished from outside autotune (state COMPLETE, values [1.0, 1.0]: Optuna's "
            f"study.tell) while its probe ran; the probe's outcome (ok) is kept: trial {retry.number} records it without "
            "probing again") in said.out + said.err
    assert "heartbeat" not in said.out + said.err
    assert retry.state == optuna.trial.TrialState.COMPLETE and retry.user_attrs["result"]["status"] == "ok"
    assert len(calls) == 3 and calls.count(told) == 1  # the candidate is not probed again: 3 probes for 3 candidates
    assert retry.params == study.trials[told].params


def test_a_trial_told_failed_from_outside_while_its_probe_runs_keeps_its_outcome(tmp_path, capsys, monkeypatch):
    """Trial74 #1: `study.tell(n, state=FAIL)`, Optuna's way to cancel a hanging trial: the same false line, and the
    report then showed a '1 fail' with no reason and no probe."""
    run_dir = tmp_path / "run"
    calls = _told_while_probing(run_dir, monkeypatch, {"state": optuna.trial.TrialState.FAIL})
    assert main([*STUDY, "--trials", "3", "--out", str(run_dir)]) == 0
    said = capsys.readouterr()
    told = calls[1]
    assert (f"trial {told} was finished from outside autotune (state FAIL: Optuna's study.tell) while its probe ran"
            in said.out + said.err)
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
    retry = next(t for t in study.trials if t.user_attrs.get("retry_of") == told)
    assert retry.state == optuna.trial.TrialState.COMPLETE and len(calls) == 3
    assert retry.number in [point["trial"] for point in json.loads((run_dir / "pareto.json").read_text())["feasible"]]
