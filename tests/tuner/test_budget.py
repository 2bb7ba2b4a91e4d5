"""`--trials` is a budget over the whole study: a worker does not start a probe when the evaluated
candidates and the probes running on other workers already fill it."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from autotune.backends.simulate import SimulateBackend
from autotune.candidate import params_key
from autotune.commands.options import settings_for
from autotune.report.study_points import study_view
from autotune.study import open_study, run_study
from autotune.study.loop import PROBING_ATTR, make_sampler, probes_running_elsewhere
from autotune.study.retries import is_evaluated
from autotune.study.valid import valid_checks
from autotune.study.outlook import observe
from autotune.study.unique import OVER_BUDGET_ATTR, held_keys

SPACE = Path(__file__).with_name("small_7b_space.toml")


class _Counting(SimulateBackend):
    def __init__(self):
        super().__init__()
        self.probed = []

    def evaluate(self, candidate, trial_number):
        self.probed.append(trial_number)
        return super().evaluate(candidate, trial_number)


def _study_with_a_probe_running_elsewhere(tmp_path, evaluated: int):
    """A study with `evaluated` probes done and one more running on "another worker" (a RUNNING trial
    marked as probing, as loop.py marks its own)."""
    settings = settings_for("--model", "7b", "--nodes", "1", "--space", str(SPACE))
    checks = valid_checks(settings)
    study = open_study(tmp_path, None, make_sampler(0, 10, "guided", checks), cheap_figures=True)
    run_study(study, settings, SimulateBackend(), evaluated, checks=checks, early_stop=False)
    probed = held_keys(study)
    elsewhere = next(c.candidate.knobs.to_dict() for c in checks if c.valid and params_key(c.candidate.knobs.to_dict()) not in probed)
    study.enqueue_trial(elsewhere)
    other = study.ask()
    other.set_user_attr(PROBING_ATTR, True)
    return settings, checks, study, other


def test_no_probe_starts_when_other_workers_probes_fill_the_budget(tmp_path):
    settings, checks, study, other = _study_with_a_probe_running_elsewhere(tmp_path, 3)
    backend = _Counting()
    ran = run_study(study, settings, backend, 4, checks=checks, shared_storage=True, early_stop=False)
    assert ran == 0 and backend.probed == []
    stopped = [t for t in study.trials if t.user_attrs.get(OVER_BUDGET_ATTR)]
    assert len(stopped) == 1 and stopped[0].state == TrialState.FAIL
    assert sum(is_evaluated(t) for t in study.trials) == 3
    assert probes_running_elsewhere(study) == 1
    # Its candidate was never evaluated: not held, not seen as failed by the guided sampler, not a
    # row of the report.
    key = params_key(stopped[0].params)
    assert key not in held_keys(study)
    index = {params_key(c.candidate.knobs.to_dict()): i for i, c in enumerate(c for c in checks if c.valid)}
    assert index[key] not in observe(study, index).failed
    assert stopped[0].number not in {row["trial"] for row in study_view(study).trials}

    # The other worker's probe ends: the study holds the budget exactly.
    study.tell(other, state=TrialState.FAIL)
    # A larger budget resumes and probes again (the stopped candidate may be proposed again).
    ran = run_study(study, settings, backend, 6, checks=checks, shared_storage=True, early_stop=False)
    assert ran == 3 and len(backend.probed) == 3  # 3 before, and this run fills 6
    assert probes_running_elsewhere(study) == 0


def test_room_left_in_the_budget_lets_a_probe_start_beside_another_workers(tmp_path):
    settings, checks, study, other = _study_with_a_probe_running_elsewhere(tmp_path, 3)
    backend = _Counting()
    ran = run_study(study, settings, backend, 5, checks=checks, shared_storage=True, early_stop=False)
    # 3 evaluated + 1 running elsewhere leave room for one: probed, then the budget is held.
    assert ran == 1 and len(backend.probed) == 1
    assert [t.user_attrs.get(OVER_BUDGET_ATTR) for t in study.trials].count(True) == 1
    assert sum(is_evaluated(t) for t in study.trials) + probes_running_elsewhere(study) == 5


def test_a_worker_whose_budget_other_workers_probes_hold_says_so(tmp_path):
    """It stopped without a probe and said nothing of why; now one line: its share, the others', the running ones."""
    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path / 's.db'}"
    flags = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--storage", url, "--study-name", "s",
             "--out", tmp_path / "r")  # guided: two probes are too few for it to stop on its own
    assert autotune_main(*flags, "--trials", "2").returncode == 0
    study = optuna.load_study(study_name="s", storage=url)
    # Another worker's probe, under way: proposed (its knobs set, or this worker would wait for them) and probing.
    running = study.ask(fixed_distributions=study.trials[0].distributions)
    running.set_user_attr(PROBING_ATTR, True)
    held = autotune_main(*flags, "--trials", "3")
    assert held.returncode == 0, held.stderr
    said = " ".join(held.stderr.split()) + " ".join(held.stdout.split())
    assert ("the --trials budget of 3 is spent: 0 of them evaluated by this run, 2 by other runs of the study (earlier "
            "ones, or workers beside this one), and 1 still probing on other workers") in said
    # The report's search line, too, does not read as the study's end while another probe runs beside it.
    assert "not converged: stopped after 2 probes (1 more still probing on other workers) while" in said, said
    # A requeued job resumes seconds after its worker died, whose trial reads as running (trial 43 F6): said when.
    assert ("1 probe still running on other workers is not in this report; `autotune report" in said and
            "(a worker killed a moment ago counts as running until its heartbeat is 120 s old; a run of the study "
            "started after that probes its trial again)") in said, said


def test_a_trial_over_the_budget_is_never_another_workers_running_probe(tmp_path, monkeypatch):
    """Trial67 #9: a worker marked its trial probing before it found the budget spent, and the worker beside it, reading
    the study just then, said "1 probe still running on other workers" of a probe that never started. Two workers'
    studies on one SQLite file; the second reads the study while the first reserves (where the race fell)."""
    from autotune.study import loop

    url = f"sqlite:///{tmp_path / 's.db'}"
    settings = settings_for("--model", "7b", "--nodes", "1", "--space", str(SPACE))
    checks = valid_checks(settings)
    first = optuna.create_study(study_name="s", storage=url, directions=["minimize", "minimize"])
    run_study(first, settings, SimulateBackend(), 3, checks=checks, early_stop=False)
    beside = optuna.load_study(study_name="s", storage=url)
    seen_beside = []
    real_released = loop.released_trials

    def released_while_reserving(study):  # called by _reserve_probe after its own mark, before it counts the others
        seen_beside.append(probes_running_elsewhere(beside))
        return real_released(study)

    monkeypatch.setattr(loop, "released_trials", released_while_reserving)
    over = first.ask(fixed_distributions=first.trials[0].distributions)
    assert not loop._reserve_probe(over, 3)
    assert seen_beside == [0]
    first.tell(over, state=TrialState.FAIL)  # as the loop ends it
    # Room found: then it is a probe under way, for the budget and for the worker beside it alike.
    room = first.ask(fixed_distributions=first.trials[0].distributions)
    assert loop._reserve_probe(room, 4)
    assert seen_beside == [0, 0] and probes_running_elsewhere(beside) == 1
    # A trial still asking for room holds it against a worker that reserves at the same moment: the budget of 5
    # (3 evaluated, 1 probing) is full with it.
    asking = first.ask(fixed_distributions=first.trials[0].distributions)
    asking.set_user_attr(loop.RESERVING_ATTR, True)
    assert not loop._reserve_probe(beside.ask(fixed_distributions=first.trials[0].distributions), 5)


def test_a_probe_that_finishes_before_the_report_reads_the_study_is_not_said_to_be_missing_from_it(tmp_path, monkeypatch):
    """Trial66 #10: a worker counted the other workers' running probes, then wrote its report; one that finished in
    between was said to be "not in this report", above a report that held it. The count is the report's own read."""
    from autotune.backends.simulate import SimulateBackend
    from autotune.commands import finish
    from autotune.study.settings import StudySettings
    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path / 's.db'}"
    flags = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--storage", url, "--study-name", "s",
             "--out", tmp_path / "r")
    assert autotune_main(*flags, "--trials", "2").returncode == 0
    study = optuna.load_study(study_name="s", storage=url)
    other = study.ask(fixed_distributions=study.trials[0].distributions)  # another worker's probe, under way
    other.set_user_attr(PROBING_ATTR, True)
    real_build = finish.build_report

    def finished_just_before(study, *args, **kwargs):  # the other worker records its result as the report is made
        candidate = StudySettings.from_dict(study.user_attrs["settings"]).candidate(other.params)
        result = SimulateBackend().evaluate(candidate, other.number)
        other.set_user_attr("candidate", candidate.to_dict())
        other.set_user_attr("result", result.to_dict())
        study.tell(other, [result.time_s, result.energy_kj])
        return real_build(study, *args, **kwargs)

    monkeypatch.setattr(finish, "build_report", finished_just_before)
    held = autotune_main(*flags, "--trials", "3")
    assert held.returncode == 0, held.stderr
    said = " ".join(held.stderr.split()) + " ".join(held.stdout.split())
    assert "still probing on other workers" in said  # the budget line, told as the study stood when this worker ended
    assert "not in this report" not in said, said
    assert other.number in {row["trial"] for row in study_view(study).trials}
