"""A worker's closing report beside other workers: what it counts is of one read of the study, and what that read
leaves out is said (trial80 #3)."""

from __future__ import annotations

import threading
import time

import optuna

from autotune.study.loop import CONVERGED_ATTR, PROBING_ATTR
from tests.cli import autotune_main


def _finish(study, trial) -> None:
    """Another worker records its probe's result, as loop.py does."""
    from autotune.backends.simulate import SimulateBackend
    from autotune.study.settings import StudySettings

    candidate = StudySettings.from_dict(study.user_attrs["settings"]).candidate(trial.params)
    result = SimulateBackend().evaluate(candidate, trial.number)
    trial.set_user_attr("candidate", candidate.to_dict())
    trial.set_user_attr("result", result.to_dict())
    study.tell(trial, [result.time_s, result.energy_kj])


def test_a_probe_that_finishes_while_the_report_is_made_is_named_as_left_out_not_counted_finished_since(tmp_path, monkeypatch):
    """A guided worker that converged read the study for its report while another worker's probe ran, and counted
    "finished since" from a later read: "converged after 5 probes (2 more ... finished since)" beside "5 trials", and
    picks without them; and "converged after 11 probes" beside 10 trials where another worker's record of its convergence
    was read after the trials. Its counts are now of the report's read, which names the probe it leaves out."""
    from autotune.commands import finish

    url = f"sqlite:///{tmp_path / 's.db'}"  # on a run directory alone, the other's trial would be a dead worker's
    flags = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "-q", "--storage", url, "--study-name", "s",
             "--out", tmp_path / "r")
    assert autotune_main(*flags).returncode == 0
    study = optuna.load_study(study_name="s", storage=url)
    other = study.ask(fixed_distributions=study.trials[0].distributions)  # another worker's probe, under way
    other.set_user_attr(PROBING_ATTR, True)
    real_view = finish.study_view

    def finished_just_after(study, *args, **kwargs):  # the other worker records its result once the report has read,
        view = real_view(study, *args, **kwargs)     # and its own convergence on it
        _finish(study, other)
        record = study.user_attrs[CONVERGED_ATTR]
        study.set_user_attr(CONVERGED_ATTR, {**record, "probes": record["probes"] + 1, "trials": len(study.trials)})
        return view

    monkeypatch.setattr(finish, "study_view", finished_just_after)
    again = autotune_main(*flags)
    assert again.returncode == 0, again.stderr
    said = " ".join(again.stderr.split()) + " " + " ".join(again.stdout.split())
    trials = len([t for t in study.trials if t.number != other.number and "result" in t.user_attrs])
    assert "1 probe still running on other workers is not in this report" in said, said
    assert f" {trials} trials ({trials} ok)" in said, said
    assert f"search: converged after {trials} simulated probes: " in said and "finished since" not in said, said


def test_the_closing_report_waits_for_another_workers_proposal_under_way():
    """A trial another worker is still proposing (RUNNING, not probing yet) was neither in the first worker's report
    nor named as left out: the report now reads the study once it is probing or finished."""
    from autotune.commands.run import _proposals_settled

    study = optuna.create_study(directions=["minimize", "minimize"])
    proposing = study.ask()
    threading.Timer(0.5, lambda: study.tell(proposing, [1.0, 1.0])).start()
    started = time.monotonic()
    _proposals_settled(study)
    assert time.monotonic() - started >= 0.4 and study.trials[0].state == optuna.trial.TrialState.COMPLETE
    probing = study.ask()  # a probe under way is named by the report, not waited for (it may take hours)
    probing.set_user_attr(PROBING_ATTR, True)
    started = time.monotonic()
    _proposals_settled(study)
    assert time.monotonic() - started < 0.4
