"""How a run ends when its probes do not succeed: a study with nothing on its front exits 2 whatever the
budget, and a resumed study probes again the candidates whose probes failed on the set-up (the launcher,
the nodes), while a candidate's own failure, an out-of-memory and a timeout stay final."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from autotune.counted import counted
from autotune.backends.base import Backend, ProbeResult
from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.failures import FailingStart, no_probe_succeeded
from autotune.study.loop import make_sampler
from autotune.study.retries import (
    SETUP_FAILURE_ATTR, is_evaluated, queue_setup_retries, released_trials, setup_failure,
)
from autotune.study.valid import valid_checks
from tests.cli import autotune_main

SETTINGS = ("--model", "32b", "--nodes", "4")
RUN = ("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2")


def _failed(**details) -> ProbeResult:
    return ProbeResult(status="failed", source="measured", energy_source="unavailable", error="boom",
                       details={"trial_dir": "/runs/x/trials/0000", "log_tail": "", **details})


# What the launch backend returns for each way a probe fails (backends/launch.py), and whose failure it is.
@pytest.mark.parametrize("result, setup", [
    (_failed(launcher="torchrun"), True),  # could not start the launcher, or the nodes are out of its reach
    (_failed(launcher="deepspeed", exit_code=1), True),  # exited without the trainer's result (a module missing)
    (_failed(launcher="srun", exit_code=0), True),
    (_failed(launcher="torchrun", exit_code=1, failed_rank=0), False),  # the trainer's own failure: the candidate's
    (_failed(launcher="torchrun", exit_code=1, failed_rank=0, refused=True), False),
    # The trainer says it failed before it ran the candidate (an unwritable ~/.cache, DeepSpeed's op build): trial 69 #7.
    (_failed(launcher="torchrun", exit_code=1, failed_rank=0, setup_failure=True), True),
    (_failed(launcher="torchrun", exit_code=-9), False),  # killed by a signal: the kernel's OOM killer, perhaps
    (ProbeResult(status="timeout", source="measured", energy_source="unavailable", details={"launcher": "torchrun"}), False),
    (ProbeResult(status="oom", source="measured", energy_source="unavailable", details={"launcher": "torchrun"}), False),
    (_failed(), False),  # replayed or scripted: a recorded figure, not a launch
])
def test_a_failure_is_the_setups_only_where_the_trainer_never_ran_the_candidate(result, setup):
    assert setup_failure(result) is setup


class _Probes(Backend):
    """The n-th evaluation answers `outcomes[n]` ("ok": the simulator's figures), "ok" past the end."""

    name, source = "launch", "measured"

    def __init__(self, *outcomes: str):
        self.outcomes, self.probed = outcomes, []

    def evaluate(self, candidate, trial_number: int = 0) -> ProbeResult:
        outcome = self.outcomes[len(self.probed)] if len(self.probed) < len(self.outcomes) else "ok"
        self.probed.append(candidate.knobs.to_dict())
        if outcome == "ok":  # the simulator's figures, labelled as a launch probe's (a simulated label is no probe of
            # a launch study: study/foreign.py leaves it out)
            return dataclasses.replace(SimulateBackend().evaluate(candidate, trial_number), source="measured",
                                       energy_source="measured")
        if outcome == "setup":  # the launcher ended without the trainer's result
            return _failed(launcher="torchrun", exit_code=1)
        if outcome == "candidate":  # the trainer's own failure, which it says is not the set-up's
            return _failed(launcher="torchrun", exit_code=1, failed_rank=0, setup_failure=False)
        if outcome == "unjudged":  # the same, of a trainer older than `setup_failure`: it did not say whose it was
            return _failed(launcher="torchrun", exit_code=1, failed_rank=0)
        return ProbeResult(status=outcome, source="measured", energy_source="unavailable", details={"launcher": "torchrun"})


def _study(tmp_path):
    return open_study(tmp_path, None, make_sampler(0, 30))


def _evaluated(study):
    released = released_trials(study)
    return [t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released)]


def test_a_resumed_study_probes_again_the_candidates_whose_probes_failed_on_the_setup(tmp_path):
    settings = settings_for(*SETTINGS)
    broken = _Probes("setup", "setup")
    run_study(_study(tmp_path), settings, broken, 2)  # a budget below the failing-start stop: it ends, all failed
    study = _study(tmp_path)
    failed = _evaluated(study)
    assert [t.user_attrs.get(SETUP_FAILURE_ATTR) for t in failed] == [True, True]
    assert "the study resumes and probes again the 2 candidates that failed on the set-up" in no_probe_succeeded(study)
    fixed = _Probes()
    run_study(study, settings, fixed, 2)  # the same command, set-up fixed: the same candidates, probed again
    assert fixed.probed == broken.probed
    evaluated = _evaluated(_study(tmp_path))
    assert [t.state for t in evaluated] == [TrialState.COMPLETE] * 2 and evaluated[0].user_attrs.get("baseline")
    assert sorted(t.user_attrs["retry_of"] for t in evaluated) == [t.number for t in failed]
    assert released_trials(study) == {t.number for t in failed} and no_probe_succeeded(study) is None
    assert queue_setup_retries(_study(tmp_path)) == []  # once per trial: nothing left to retry


def test_a_candidates_own_failure_an_oom_and_a_timeout_stay_final_on_resume(tmp_path):
    settings = settings_for(*SETTINGS)
    run_study(_study(tmp_path), settings, _Probes(), 1)  # one probe ran: failures are results, the study goes on
    run_study(_study(tmp_path), settings, _Probes("candidate", "oom", "timeout", "setup", "candidate", "setup", "timeout"), 8,
              early_stop=False)
    study = _study(tmp_path)
    setup = [t for t in _evaluated(study) if t.user_attrs.get(SETUP_FAILURE_ATTR)]
    assert len(setup) == 2
    again = _Probes()
    run_study(study, settings, again, 8, early_stop=False)  # the same budget: room only for the set-up failures
    assert sorted(json.dumps(p, sort_keys=True) for p in again.probed) == sorted(json.dumps(t.params, sort_keys=True) for t in setup)
    assert len(_evaluated(_study(tmp_path))) == 8


def test_a_failing_start_of_setup_failures_says_the_resume_probes_them_again(tmp_path):
    with pytest.raises(FailingStart) as stopped:
        run_study(_study(tmp_path), settings_for(*SETTINGS), _Probes(*["setup"] * 30), 30)
    assert str(stopped.value).endswith("run the same command again: the study resumes and probes again the 3 "
                                       "candidates that failed on the set-up")


def _records(tmp_path, statuses) -> str:
    """A replay file whose records of the study's first candidates have these statuses."""
    knobs = [c.candidate.knobs.to_dict() for c in valid_checks(settings_for(*RUN[1:])) if c.valid]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"params": k, "status": s, "error": "NCCL timeout"}) + "\n" for k, s in zip(knobs, statuses)))
    return str(path)


@pytest.mark.parametrize("trials", ["1", "2", "30"])  # below the failing-start stop, at the space's end, past it
def test_a_study_in_which_no_probe_succeeded_exits_2_in_one_line_whatever_the_budget(tmp_path, trials):
    replay = (*RUN, "--backend", "replay", "--measurements", _records(tmp_path, ["failed", "failed"]), "--out", tmp_path / "r")
    done = autotune_main(*replay, "--trials", trials)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    evaluated = min(int(trials), 2)
    head = (f"autotune run: error: no probe of this study succeeded (of its {counted(evaluated, 'evaluated candidate')}, "
            f"{evaluated} failed), so nothing is on its front. Trial {evaluated - 1}: failed: NCCL timeout")
    if evaluated == 1:  # a recorded candidate is left: a larger budget replays it (no "Fix that": it is recorded)
        assert last == f"{head}: replay the other recorded candidates with a larger --trials", last
    else:  # the recording is exhausted: running the replay again changes nothing, a probe on hardware does
        assert last == (f"{head}. Every recorded candidate was evaluated (the recording is exhausted): measure the valid "
                        "candidates it lacks (--backend launch)"), last
    assert "Traceback" not in done.stderr and (tmp_path / "r" / "pareto.json").is_file()  # the reports name each failure
    again = autotune_main(*replay, "--trials", trials)  # nothing left to probe: still no success
    assert again.returncode == 2 and again.stderr.strip().splitlines()[-1] == last


def test_a_study_whose_every_probe_ran_out_of_memory_exits_2_with_what_to_widen(tmp_path):
    done = autotune_main(*RUN, "--backend", "replay", "--measurements", _records(tmp_path, ["oom", "oom"]), "--out", tmp_path / "r")
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("autotune run: error: no probe of this study succeeded (of its 2 evaluated candidates, 2 ran out "
                    "of memory), so nothing is on its front. Every recorded candidate was evaluated (the recording is "
                    "exhausted): measure the valid candidates it lacks (--backend launch)"), last


def test_an_exhausted_replay_of_the_whole_space_says_to_widen_it(tmp_path):
    """Where the file held every valid candidate, measuring 'the others' is no step: the space must grow."""
    study = _study(tmp_path)
    run_study(study, settings_for(*SETTINGS), _Probes("oom", "oom"), 2, early_stop=False)
    said = no_probe_succeeded(study, others_left=False, replayed=True, unrecorded_left=False)
    assert said == ("no probe of this study succeeded (of its 2 evaluated candidates, 2 ran out of memory), so nothing "
                    "is on its front. Every recorded candidate, and so every valid one of the space, was evaluated: "
                    "widen the space (ZeRO-3, offload, checkpointing, more --nodes in a --space file) and measure its "
                    "new candidates (--backend launch)")
    # The launch backend's study at the space's end: its own wording, not a recording's.
    assert no_probe_succeeded(study, others_left=False).endswith("every candidate of the space was probed; widen the space "
                                                                 "(ZeRO-3, offload, checkpointing, more --nodes in a --space file)")


def test_one_probe_that_succeeded_is_enough(tmp_path):
    path = _records(tmp_path, ["failed", "oom", "ok"])
    lines = [json.loads(line) for line in open(path)]
    lines[2].update(time_s=100.0, energy_kj=50.0, source="measured")
    open(path, "w").write("".join(json.dumps(line) + "\n" for line in lines))
    done = autotune_main(*RUN, "--backend", "replay", "--measurements", path, "--out", tmp_path / "r")
    assert done.returncode == 0, done.stderr


def test_a_probe_that_ran_but_cannot_be_ranked_succeeded_as_a_probe(tmp_path):
    """Its figures are reported with why they are not ranked (here: no energy): not a failed study. (Another record
    has an energy: a file where none has one is refused before the study opens, trial60 #4.)"""
    path = _records(tmp_path, ["ok", "ok"])
    unranked, ranked = (json.loads(line) for line in open(path).read().splitlines())
    open(path, "w").write(json.dumps({**unranked, "time_s": 100.0}) + "\n"
                          + json.dumps({**ranked, "time_s": 200.0, "energy_kj": 100.0}) + "\n")
    done = autotune_main(*RUN, "--backend", "replay", "--measurements", path, "--trials", "2", "--out", tmp_path / "r")
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="autotune", storage=f"sqlite:///{tmp_path / 'r' / 'study.db'}").trials
    assert sorted(t.state for t in trials) == [TrialState.COMPLETE, TrialState.FAIL]
    assert any("energy" in (t.user_attrs.get("reason") or "") for t in trials if t.state == TrialState.FAIL)


@pytest.mark.slow
def test_a_launch_study_whose_nodes_lacked_the_trainer_probes_the_same_candidates_once_fixed(tmp_path):
    """Real probes on CPU: a `trainer` package that cannot be imported (a node without the project) is the
    set-up's failure; the same command after the fix probes those candidates, and the header names torchrun."""
    broken = tmp_path / "broken" / "trainer"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'deepspeed'\")\n")
    env = {k: v for k, v in os.environ.items() if k != "AUTOTUNE_PROBE_TEST_HOOK"}
    env.update(DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--nodes", "1", "--gpus-per-node", "1",
           "--hardware", "cpu", "--backend", "launch", "--warmup-steps", "1", "--probe-steps", "2", "--trials", "1",
           "--allow-estimated-energy", "--out", str(tmp_path / "run")]  # one probe: each real one is seconds of the suite
    first = subprocess.run(cmd, env={**env, "PYTHONPATH": str(broken.parent)}, capture_output=True, text=True, timeout=300)
    assert first.returncode == 2, first.stderr[-3000:]
    said = " ".join(first.stderr.split())
    assert "real probe runs via torchrun (auto)," in said
    assert "the study resumes and probes again the 1 candidate that failed on the set-up" in said
    fixed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert "probing again the candidate of trial 0" in " ".join(fixed.stderr.split())
    trials = optuna.load_study(study_name="autotune", storage=f"sqlite:///{tmp_path / 'run' / 'study.db'}").trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.COMPLETE]
    assert trials[1].params == trials[0].params


def test_a_converged_study_probes_the_setup_failures_it_queued_again_before_it_stops(tmp_path):
    """The run says it probes them again: a model that converged (on the others) must not stop it first."""
    settings = settings_for(*SETTINGS)
    checks = valid_checks(settings)

    def guided_study():
        return open_study(tmp_path, None, make_sampler(0, 30, "guided", checks))

    # The baseline ran, the next two probes failed on the set-up, the rest ran until the model converged.
    run_study(guided_study(), settings, _Probes("ok", "setup", "setup"), 30, checks=checks)
    study = guided_study()
    assert study.user_attrs.get("converged")
    setup = [t for t in _evaluated(study) if t.user_attrs.get(SETUP_FAILURE_ATTR)]
    assert len(setup) == 2
    again = _Probes()
    run_study(guided_study(), settings, again, 30, checks=checks)
    assert all(t.params in again.probed for t in setup)


def _timeout(**details) -> ProbeResult:
    return ProbeResult(status="timeout", source="measured", energy_source="unavailable",
                       error="no result within 5 s: killed the probe's process group", details=details)


def test_a_timeout_spent_on_a_build_lock_is_the_setups_and_its_candidate_is_probed_again(tmp_path):
    """A short --probe-timeout spent waiting on a torch extension build lock older than the probe (the backend's
    diagnosis, `timeout_cause`) is no verdict on the candidate, here the baseline: the resume probes it again.
    Any other timeout stays final, and so does a replayed one (no launcher)."""
    on_lock = _timeout(launcher="torchrun", exit_code=None, timeout_cause="build_lock", build_locks=["/x/cpu_adam/lock"])
    assert setup_failure(on_lock) is True
    assert setup_failure(_timeout(launcher="torchrun", exit_code=None)) is False
    assert setup_failure(_timeout(timeout_cause="build_lock")) is False

    class _LockedOnce(_Probes):
        def evaluate(self, candidate, trial_number: int = 0) -> ProbeResult:
            if not self.probed:
                self.probed.append(candidate.knobs.to_dict())
                return on_lock
            return super().evaluate(candidate, trial_number)

    settings = settings_for(*SETTINGS)
    locked = _LockedOnce()
    run_study(_study(tmp_path), settings, locked, 2)
    study = _study(tmp_path)
    baseline = _evaluated(study)[0]
    assert baseline.user_attrs.get("baseline") and baseline.user_attrs.get(SETUP_FAILURE_ATTR)
    again = _Probes()
    run_study(study, settings, again, 2)
    assert again.probed[0] == locked.probed[0]  # the baseline, first
    retried = [t for t in _evaluated(_study(tmp_path)) if t.user_attrs.get("retry_of") == baseline.number]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE and retried[0].user_attrs.get("baseline")


def test_a_space_too_small_for_the_failing_start_stop_probes_its_failures_again_once_fixed(tmp_path):
    """Trial 54 F1: a space of three candidates or fewer, every probe failed and none of the study ever ran: the
    run ends at the space's end before the failing-start stop, and "Fix that and run the same command again" used
    to resume a study that probed nothing. Its failures point at the set-up as a failing start's do: probed again."""
    settings = settings_for(*SETTINGS)
    broken = _Probes("candidate", "timeout")
    run_study(_study(tmp_path), settings, broken, 2, early_stop=False)
    study = _study(tmp_path)
    said = no_probe_succeeded(study, others_left=False)
    assert said.endswith("Fix that and run the same command again (every candidate of the space was probed): the study "
                         "resumes and probes these 2 candidates again (no probe of the study had run, so their failures "
                         "may be the set-up's)"), said
    assert queue_setup_retries(_study(tmp_path)) == [0, 1]  # as `autotune run` does on resume
    fixed = _Probes()
    run_study(_study(tmp_path), settings, fixed, 2, early_stop=False)
    assert fixed.probed == broken.probed
    assert no_probe_succeeded(_study(tmp_path), others_left=False) is None


def test_failures_with_candidates_left_stay_final_below_the_failing_start_stop(tmp_path):
    """Trial 69 #7: the line said "Fix that and run the same command again", and that command, its --trials budget
    spent, probed nothing and ended on the same line: a candidate's own failure is final, and a larger --trials is
    what probes more."""
    run_study(_study(tmp_path), settings_for(*SETTINGS), _Probes("candidate"), 1)
    study = _study(tmp_path)
    said = no_probe_succeeded(study)
    assert said.endswith(": its failure is the candidate's own (the trainer ran it) and final. A larger --trials probes "
                         "others (the study resumes, and its failed trials are kept); where a failure is the machine's "
                         "rather than the candidate's (its log says), fix that first"), said
    assert "same command" not in said
    assert queue_setup_retries(_study(tmp_path)) == []


def test_a_failure_recorded_before_the_trainer_said_whose_it_was_is_not_called_the_candidates_own(tmp_path):
    """A study recorded before result.json's `setup_failure`: its trainer named a `failed_rank` for a failure of its
    set-up as well (trial 69 #7), so nothing tells whose the failure was, and the line said "the candidate's own (the
    trainer ran it)" of it."""
    run_study(_study(tmp_path), settings_for(*SETTINGS), _Probes("unjudged"), 1)
    said = no_probe_succeeded(_study(tmp_path))
    assert said.endswith(": its failure is final, and was recorded before autotune marked set-up failures: whether it "
                         "was the candidate's own or the set-up's, only its log says. A larger --trials probes others "
                         "(the study resumes, and its failed trials are kept); where a failure is the machine's rather "
                         "than the candidate's (its log says), fix that first"), said
    assert "the candidate's own (the trainer ran it)" not in said
    tmp_mixed = tmp_path / "mixed"
    run_study(_study(tmp_mixed), settings_for(*SETTINGS), _Probes("candidate", "unjudged"), 2)
    said = no_probe_succeeded(_study(tmp_mixed))
    assert ": their failures are final: 1 the candidates' own (the trainer ran them), 1 recorded before autotune marked " \
           "set-up failures (whether each was the candidate's own or the set-up's, only its log says). " in said, said


def test_failures_of_the_whole_space_after_one_ran_name_no_same_command_either(tmp_path):
    """Trial 69 #7: every candidate of the space probed, one out of memory and one failed by its own fault: the same
    command probes nothing again, so the line names the space, not that command."""
    run_study(_study(tmp_path), settings_for(*SETTINGS), _Probes("oom", "candidate"), 2, early_stop=False)
    said = no_probe_succeeded(_study(tmp_path), others_left=False)
    assert said.endswith("its failure is the candidate's own (the trainer ran it) and final, and every candidate of the "
                         "space was probed: widen the space (ZeRO-3, offload, checkpointing, more --nodes in a --space "
                         "file)"), said
    assert "same command" not in said


def test_a_whole_space_replay_of_failures_is_not_told_to_add_memory_savings(tmp_path):
    """Trial 54 F4: every record failed (an NCCL error), and the end said "widen the space (ZeRO-3, offload,
    checkpointing, more --nodes ...)": those save memory, and no failure was of memory."""
    study = _study(tmp_path)
    run_study(study, settings_for(*SETTINGS), _Probes("candidate", "candidate"), 2, early_stop=False)
    said = no_probe_succeeded(study, others_left=False, replayed=True, unrecorded_left=False)
    assert said.endswith("was evaluated: widen the space (other candidates in a --space file) and measure its new "
                         "candidates (--backend launch)"), said


_PROPOSED_BY = {"sampler": "guided", "seed": 0, "autotune_version": "test"}  # as `autotune run` keeps it on each trial


def _search_line(tmp_path, budget: int, *outcomes: str, probes: int) -> str:
    """The report's `search:` line of a guided launch study whose last run, of --trials `budget`, stopped after `probes`
    evaluations (fewer: interrupted)."""
    from autotune.commands.finish import build_report
    from autotune.report.search import search_sentences

    study = _study(tmp_path)
    study.set_user_attr("sampler", "guided")
    study.set_user_attr("backend", {"name": "launch", "reason": "test"})
    run_study(study, settings_for(*SETTINGS), _Probes(*outcomes), probes,
              proposed_by={**_PROPOSED_BY, "trials_budget": budget})
    return search_sentences(build_report(_study(tmp_path))[1]["search"])[0]


def test_the_report_of_a_study_whose_failures_are_final_names_a_larger_budget(tmp_path):
    """trial73 #10: the run's own last line names a larger --trials where no failure is probed again (trial 69 #7), but
    the report's search line still said "fix what failed them, then the same command resumes the study", which, the
    budget spent, probes nothing."""
    said = _search_line(tmp_path, 2, "candidate", "candidate", probes=2)
    assert said.endswith("No probe succeeded, and the failures are the candidates' own (the trainer ran them) and final: "
                         "a larger --trials probes others (each trial's reason says why; where a failure is the machine's "
                         "rather than the candidate's, its log in the run directory's trials/ folder says so: fix that "
                         "first)"), said
    assert "same command" not in said


def test_the_report_of_a_study_stopped_before_its_budget_says_the_same_command_resumes_it(tmp_path):
    """trial73 #7: a run interrupted after its first probe of --trials 4 said "run the same command again to resume",
    which does, and its report said "The same command with a larger --trials resumes the study" (and "1 probes")."""
    said = _search_line(tmp_path, 4, probes=1)
    assert said.startswith("not converged: stopped after 1 probe while fewer than 3 probes succeeded"), said
    assert said.endswith(". The same command resumes the study"), said
