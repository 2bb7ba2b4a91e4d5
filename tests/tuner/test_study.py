import json
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest

from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.retries import is_evaluated


def _run(tmp_path, trials, seed=0):
    settings = settings_for("--model", "32b", "--nodes", "4")
    study = open_study(tmp_path, None, make_sampler(seed, trials))
    run_study(study, settings, SimulateBackend(), trials)
    return study


def _evaluated(study):
    # is_evaluated: a trial killed after its probe stored a result counts once, by the retry that took it.
    return [t for t in study.trials if is_evaluated(t)]


def test_baseline_first_and_trials_counted(tmp_path):
    study = _run(tmp_path, 8)
    evaluated = _evaluated(study)
    assert len(evaluated) == 8
    assert study.trials[0].user_attrs.get("baseline") is True
    knobs = [json.dumps(t.user_attrs["candidate"]["knobs"], sort_keys=True) for t in evaluated]
    assert len(set(knobs)) == len(knobs)  # nothing evaluated twice
    assert study.metric_names == ["time_to_solution_s", "energy_to_solution_kj"]


def test_invalid_proposals_are_pruned_with_violated_constraints(tmp_path):
    study = _run(tmp_path, 10)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    for t in pruned:
        assert t.user_attrs["reason"]
        assert max(t.constraints.values()) > 0
        assert "result" not in t.user_attrs  # never evaluated


def test_same_seed_same_result(tmp_path):
    a = _run(tmp_path / "a", 6, seed=3)
    b = _run(tmp_path / "b", 6, seed=3)
    assert [t.params for t in a.trials] == [t.params for t in b.trials]
    assert [t.values for t in a.trials] == [t.values for t in b.trials]


def test_resume_adds_trials_without_repeating(tmp_path):
    first = _run(tmp_path, 5)
    done = {t.number: t.values for t in _evaluated(first)}
    second = _run(tmp_path, 9)
    evaluated = _evaluated(second)
    assert len(evaluated) == 9
    assert {t.number: t.values for t in evaluated if t.number in done} == done
    knobs = [json.dumps(t.user_attrs["candidate"]["knobs"], sort_keys=True) for t in evaluated]
    assert len(set(knobs)) == 9


@pytest.mark.timeout(180)
def test_run_killed_midway_resumes(tmp_path):
    """A real `autotune run` killed with SIGKILL mid-study; the same command finishes the study."""
    out = tmp_path / "run"
    trials = 30  # after 3 probes at least 27 are left, seconds of work: the kill still comes midway
    cmd = [sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "2-8", "--trials", str(trials),
           "--sampler", "tpe", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    db = out / "study.db"
    deadline = time.time() + 120
    n = 0
    while time.time() < deadline and proc.poll() is None and n < 3:
        time.sleep(0.2)
        try:
            n = len(_evaluated(optuna.load_study(study_name="autotune", storage=f"sqlite:///{db}")))
        except Exception:  # not created yet
            continue
    assert proc.poll() is None and n >= 3, f"the run must be caught midway (exit {proc.poll()}, {n} trials)"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = {t.number: t.values for t in _evaluated(optuna.load_study(study_name="autotune", storage=f"sqlite:///{db}"))}
    assert 0 < len(before) < trials
    subprocess.run(cmd, check=True, timeout=180, capture_output=True)
    after = optuna.load_study(study_name="autotune", storage=f"sqlite:///{db}")
    evaluated = _evaluated(after)
    assert len(evaluated) == trials
    assert {t.number: t.values for t in evaluated if t.number in before} == before
    assert not [t for t in after.trials if t.state == optuna.trial.TrialState.RUNNING]
    assert json.loads((out / "pareto.json").read_text())["recommendations"]


def test_values_no_valid_candidate_has_are_never_offered():
    from autotune.study.valid import usable_values, valid_checks

    choices = usable_values(valid_checks(settings_for("--model", "tiny", "--hardware", "cpu", "--nodes", "1")))
    assert "async" not in choices["optimizer_offload"]  # SuperOffload needs CUDA
    assert choices["sp_degree"] == [1, 2]  # 2 CPU ranks: SP 4 and 8 cannot divide them
    assert choices["zero_stage"] == [0, 1, 2, 3]
