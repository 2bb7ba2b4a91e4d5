"""A run whose first probes all fail, before any probe of the study has run, stops after three and
names the failure; a study in which a probe has run goes on through failures (they are results)."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from autotune.backends.base import Backend, ProbeResult
from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import settings_for
from autotune.errors import UserError
from autotune.study import open_study, run_study
from autotune.study.failures import FAILING_START_PROBES, FailingStart
from autotune.study.loop import make_sampler
from autotune.study.retries import is_evaluated

SETTINGS = ("--model", "32b", "--nodes", "4")


class _Scripted(Backend):
    """The n-th evaluation returns outcomes[n] ("ok": the simulator's figures), the last one after."""

    name, source = "scripted", "measured"

    def __init__(self, *outcomes: str, log_tail: str = "RuntimeError: boom"):
        self.outcomes, self.log_tail, self.calls = outcomes, log_tail, 0

    def evaluate(self, candidate, trial_number: int = 0) -> ProbeResult:
        outcome = self.outcomes[min(self.calls, len(self.outcomes) - 1)]
        self.calls += 1
        if outcome == "ok":
            return SimulateBackend().evaluate(candidate, trial_number)
        if outcome == "estimated":  # ran, but with energy no sensor measured
            simulated = SimulateBackend().evaluate(candidate, trial_number)
            return ProbeResult(status="ok", source="measured", energy_source="estimated",
                               time_s=simulated.time_s, energy_kj=simulated.energy_kj)
        if outcome == "oom":
            return ProbeResult(status="oom", source="measured", energy_source="unavailable", error="CUDA out of memory")
        return ProbeResult(status=outcome, source="measured", energy_source="unavailable",
                           error=f"the probe exited with status 1 without writing a result: {self.log_tail}",
                           details={"log_tail": f"== autotune: repeat 1/1\n{self.log_tail}\n",
                                    "trial_dir": f"/runs/x/trials/{trial_number:04d}"})


def _study(tmp_path):
    return open_study(tmp_path, None, make_sampler(0, 30))


def _evaluated(study):
    return [t for t in study.get_trials(deepcopy=False) if is_evaluated(t)]


@pytest.mark.parametrize("status", ["failed", "timeout"])
def test_three_failed_probes_before_any_ran_stop_the_run_and_name_the_last(tmp_path, status):
    study = _study(tmp_path)
    backend = _Scripted(status, log_tail="ModuleNotFoundError: No module named 'deepspeed'")
    with pytest.raises(FailingStart) as stopped:
        run_study(study, settings_for(*SETTINGS), backend, 30, accept_estimated_energy=False)
    assert isinstance(stopped.value, UserError)  # the CLI's one line and exit 2
    message = str(stopped.value)
    assert "\n" not in message
    assert f"the {FAILING_START_PROBES} probes of this run all failed or timed out" in message
    assert f"Trial {FAILING_START_PROBES - 1}: {status}: the probe exited with status 1" in message
    assert "No module named 'deepspeed' (its log: /runs/x/trials/0002/log.txt)" in message
    evaluated = _evaluated(study)
    assert backend.calls == len(evaluated) == FAILING_START_PROBES
    assert all(t.state == TrialState.FAIL and t.user_attrs["reason"].startswith(status) for t in evaluated)


def test_the_same_command_again_probes_the_same_candidates_and_then_goes_on_once_one_runs(tmp_path):
    """Trial 43 F4: with no probe of the study ever run, the failures point at the set-up (an unwritable HOME failed
    the trainer on rank 0, which read as the candidates' own): a resume probes those candidates again, the baseline
    among them, where it used to try three new ones and never the baseline again."""
    from autotune.study.retries import queue_setup_retries, released_trials

    settings = settings_for(*SETTINGS)
    with pytest.raises(FailingStart) as stopped:
        run_study(_study(tmp_path), settings, _Scripted("failed"), 30)
    assert str(stopped.value).endswith("Fix that and run the same command again: the study resumes and probes these 3 "
                                       "candidates again (no probe of the study had run, so their failures may be the "
                                       "set-up's)")
    first = {json.dumps(t.params, sort_keys=True) for t in _evaluated(_study(tmp_path))}
    study = _study(tmp_path)
    assert queue_setup_retries(study) == [0, 1, 2]  # as `autotune run` does on resume
    with pytest.raises(FailingStart):  # still broken: the same three candidates, tried again
        run_study(study, settings, _Scripted("failed"), 30)
    assert {json.dumps(t.params, sort_keys=True) for t in _evaluated(_study(tmp_path))} == first
    # Fixed: those candidates run, the baseline first, and the study goes on to its budget.
    study = _study(tmp_path)
    assert queue_setup_retries(study) == [3, 4, 5]
    run_study(study, settings, _Scripted("ok"), 10, early_stop=False)
    study = _study(tmp_path)
    evaluated = [t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released_trials(study))]
    assert len(evaluated) == 10 and all(t.state == TrialState.COMPLETE for t in evaluated)
    assert first <= {json.dumps(t.params, sort_keys=True) for t in evaluated}
    assert any(t.user_attrs.get("baseline") for t in evaluated)


@pytest.mark.parametrize("first", ["ok", "oom"])
def test_once_a_probe_has_run_failures_are_results_and_the_study_goes_on(tmp_path, first):
    study = _study(tmp_path)
    backend = _Scripted(first, "failed")
    run_study(study, settings_for(*SETTINGS), backend, 8)
    evaluated = _evaluated(study)
    assert backend.calls == len(evaluated) == 8
    assert sum(t.state == TrialState.FAIL for t in evaluated) == 7


def test_a_probe_that_ran_on_another_worker_counts_as_run(tmp_path):
    # A study that already holds a finished probe (an earlier run, or another worker on shared storage).
    settings = settings_for(*SETTINGS)
    run_study(_study(tmp_path), settings, _Scripted("ok"), 1)
    study = _study(tmp_path)
    run_study(study, settings, _Scripted("failed"), 6)
    assert len(_evaluated(study)) == 6


def test_probes_whose_energy_was_only_estimated_stop_the_run_with_the_fix(tmp_path):
    study = _study(tmp_path)
    with pytest.raises(FailingStart, match="--allow-estimated-energy"):
        run_study(study, settings_for(*SETTINGS), _Scripted("estimated"), 30, accept_estimated_energy=False)
    # Such a probe ran, so the report must not list it as ok: its status is failed, with the reason.
    from autotune.report.study_points import study_view

    rows = study_view(study).trials
    assert [row["status"] for row in rows] == ["failed"] * FAILING_START_PROBES
    assert all("estimated" in row["reason"] for row in rows)


def test_a_resume_with_estimates_allowed_names_the_trials_that_stay_failed(tmp_path):
    """A probe is never run twice, so the flag given late does not rank the probes it would have: say so."""
    from tests.cli import autotune_main

    with pytest.raises(FailingStart):
        run_study(_study(tmp_path), settings_for(*SETTINGS), _Scripted("estimated"), 30, accept_estimated_energy=False)
    resumed = autotune_main("run", *SETTINGS, "--backend", "simulate", "--trials", "5", "--out", tmp_path,
                       "--allow-estimated-energy")
    assert resumed.returncode == 0, resumed.stderr
    said = " ".join(resumed.stderr.split())
    assert ("trials 0, 1, 2 failed earlier because their energy was only estimated, and stay failed: a study probes "
            "no candidate twice") in said and "--allow-estimated-energy (--out NEW_DIR)" in said


def test_the_progress_line_of_a_probe_that_cannot_be_ranked_says_why(tmp_path):
    """Its figures alone would read as a success: the line says it is not ranked, and why."""
    import io

    from rich.console import Console

    from autotune.commands.progress import trial_progress

    out = io.StringIO()
    with trial_progress(Console(file=out, width=400), total=2) as progress:
        run_study(_study(tmp_path), settings_for(*SETTINGS), _Scripted("estimated", "ok"), 2, progress,
                  accept_estimated_energy=False)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("trial 0 (1/2): ") and lines[0].endswith(
        "(estimated); not ranked: energy was only estimated (no sensor on a probe node); pass --allow-estimated-energy "
        "or --objectives time")
    assert lines[1].startswith("trial 1 (2/2): ") and "not ranked" not in lines[1]


def _failed_records(tmp_path, count: int = 10):
    """A recording of `count` valid candidates, all failed, as a broken cluster's probes would be."""
    from autotune.study.valid import valid_checks

    recorded = [c.candidate.knobs.to_dict() for c in valid_checks(settings_for(*SETTINGS)) if c.valid][:count]
    measurements = tmp_path / "m.jsonl"
    measurements.write_text("".join(json.dumps({"params": knobs, "status": "failed", "error": "NCCL timeout"}) + "\n"
                                    for knobs in recorded))
    return measurements


def test_the_cli_says_it_in_one_last_line_keeps_the_trials_and_the_report_names_the_failure(tmp_path, monkeypatch):
    from autotune.backends.replay import ReplayBackend
    from tests.cli import autotune_main

    # The broken cluster itself, stood in for by its recording: failures that may be the set-up's, as a probe's are.
    monkeypatch.setattr(ReplayBackend, "failures_may_be_the_setup", True)
    run_dir = tmp_path / "run"
    done = autotune_main("run", *SETTINGS, "--backend", "replay", "--measurements", _failed_records(tmp_path),
                         "--out", run_dir)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("autotune run: error: stopped: the 3 probes of this run all failed or timed out"), last
    assert "Traceback" not in done.stderr
    trials = optuna.load_study(study_name=None, storage=f"sqlite:///{run_dir / 'study.db'}").trials
    assert [t.state for t in trials] == [TrialState.FAIL] * 3
    report = autotune_main("report", run_dir, "--format", "json")
    assert report.returncode == 0, report.stderr
    note = json.loads(report.stdout)["note"]
    assert "3 failed with: failed: NCCL timeout" in note, note
    export = autotune_main("export", run_dir, "--pick", "knee")
    assert export.returncode == 2 and export.stderr.strip().count("\n") == 0
    assert "no feasible configuration to export yet (3 trials: 3 failed); `autotune report` names why" in export.stderr


def test_a_replay_of_recorded_failures_looks_them_up_and_never_calls_them_the_set_up(tmp_path):
    """A replay stopped after its third recorded failure and said to fix the set-up and run again: looking up the
    rest of the recording costs nothing, and running the replay again fixes nothing."""
    from tests.cli import autotune_main

    measurements = _failed_records(tmp_path)
    run_dir = tmp_path / "run"
    done = autotune_main("run", *SETTINGS, "--backend", "replay", "--measurements", measurements, "--trials", "5",
                         "--out", run_dir)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("autotune run: error: no probe of this study succeeded (of its 5 evaluated candidates, 5 failed), "
                    "so nothing is on its front. Trial 4: failed: NCCL timeout: replay the other recorded candidates "
                    "with a larger --trials"), last
    done = autotune_main("run", *SETTINGS, "--backend", "replay", "--measurements", measurements, "--out", run_dir)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "of its 10 evaluated candidates, 10 failed" in last, done.stderr
    assert "the recording is exhausted): measure the valid candidates it lacks (--backend launch)" in last


@pytest.mark.parametrize("timeout_s, said", [
    (1.0, "Every one timed out at --probe-timeout 1 s, likely too short for a probe to start (Python, torch and "
          "DeepSpeed start first, and the first probe may build DeepSpeed's ops): raise --probe-timeout (default 900) "
          "and run the command again: the study resumes"),
    (600.0, "Every one timed out at --probe-timeout 600 s: if probes need longer (the first may build DeepSpeed's ops), "
            "raise --probe-timeout, else fix what hangs them (their logs say how far they got), and run the command "
            "again: the study resumes"),
])
def test_a_start_of_timeouts_names_the_probe_timeout_as_the_fix(tmp_path, timeout_s, said):
    """Trial 54 F7: `--probe-timeout 1` timed every probe out before it could start, and the stop said "Fix that and
    run the same command again", which times out again: it names the timeout, and raising it."""

    class _Timeouts(_Scripted):
        def timeout_settings(self) -> dict:
            return {"--probe-steps": 5, "--probe-timeout": timeout_s}

    with pytest.raises(FailingStart) as stopped:
        run_study(_study(tmp_path), settings_for(*SETTINGS), _Timeouts("timeout"), 30)
    message = str(stopped.value)
    assert said in message and "Fix that" not in message and "\n" not in message, message
    with pytest.raises(FailingStart) as stopped:  # a failure among them: the set-up's, as before
        run_study(_study(tmp_path / "mixed"), settings_for(*SETTINGS), _Timeouts("timeout", "failed"), 30)
    assert "Fix that and run the same command again" in str(stopped.value)


def test_a_failing_start_counts_and_names_only_this_workers_probes(tmp_path):
    """Trial80 #4: three array tasks on one study, every probe failing on the set-up: each counted every failure
    finished since it began as "the N probes of this run" and named the last of them, another task's trial with its
    job's log. Another worker's three failures land during this worker's first probe; this one stops on its own
    three, naming its own last trial and log."""
    settings = settings_for(*SETTINGS)

    class _WithAnotherWorker(_Scripted):
        def evaluate(self, candidate, trial_number: int = 0) -> ProbeResult:
            if self.calls == 0:  # the other worker's run, start to end, while this probe runs
                with pytest.raises(FailingStart):
                    run_study(_study(tmp_path), settings, _Scripted("failed", log_tail="job 3001"), 30, shared_storage=True)
            return super().evaluate(candidate, trial_number)

    study = _study(tmp_path)
    with pytest.raises(FailingStart) as stopped:
        run_study(study, settings, _WithAnotherWorker("failed", log_tail="job 3003"), 30, shared_storage=True)
    message = str(stopped.value)
    own = [t.number for t in _evaluated(study) if "job 3003" in t.user_attrs["result"]["error"]]
    assert len(own) == FAILING_START_PROBES and len(_evaluated(study)) == 2 * FAILING_START_PROBES
    assert f"the {FAILING_START_PROBES} probes of this run all failed" in message, message
    assert f"Trial {max(own)}: failed: " in message and "job 3003" in message and "job 3001" not in message, message
    assert f"(its log: /runs/x/trials/{max(own):04d}/log.txt)" in message, message
