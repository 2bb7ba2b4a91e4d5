"""`report` of a --storage study whose workers are still probing says so, and its pareto.json keeps it for `compare`
(trial80 #5): a --storage worker holds no lock on RUN_DIR, by which a run directory's report tells a run under way."""

from __future__ import annotations

import json

import optuna

from autotune.commands import finish
from autotune.study.loop import PROBING_ATTR
from tests.cli import autotune_main
from tests.tuner.test_closing_report import _finish


def test_a_report_of_a_storage_study_with_probes_under_way_says_so_and_pareto_json_keeps_it(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 's.db'}"
    run = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--sampler", "random", "--trials", "3", "-q",
           "--storage", url)
    assert autotune_main(*run, "--out", tmp_path / "w").returncode == 0
    assert autotune_main(*run, "--out", tmp_path / "solo", "--study-name", "solo").returncode == 0
    study = optuna.load_study(study_name="autotune", storage=url)
    under_way, finishing = (study.ask(fixed_distributions=study.trials[0].distributions) for _ in range(2))
    for trial in (under_way, finishing):  # two workers' probes, running now
        trial.set_user_attr(PROBING_ATTR, True)
    real_view = finish.study_view

    def finished_just_after(study, *args, **kwargs):  # one of them records its result once the report has read
        view = real_view(study, *args, **kwargs)
        if finishing.number not in view.evaluated:
            _finish(study, finishing)
        return view

    monkeypatch.setattr(finish, "study_view", finished_just_after)
    report = autotune_main("report", tmp_path / "r", "--storage", url)
    assert report.returncode == 0, report.stderr
    said = " ".join(report.stderr.split())
    assert "2 probes still running on the study's workers are not in this report; `autotune report" in said, said
    assert "under way: 2 probes still running on the study's workers are not in this report" in " ".join(report.stdout.split())
    document = json.loads((tmp_path / "r" / "pareto.json").read_text())
    search = document["search"]
    # Counted in the report's own read, as its trials are: not 4 probes beside "3 ok".
    assert search["unfinished"]["running_elsewhere"] == 2 and search["unfinished"]["probes"] == 3, search
    assert search["unfinished"]["succeeded"] == document["trials_by_status"]["ok"] == 3, document["trials_by_status"]
    compared = autotune_main("compare", tmp_path / "r", tmp_path / "solo")
    assert compared.returncode == 0, compared.stderr
    assert "Study 1 was still running elsewhere when its pareto.json was written (2 probes under way" in " ".join(
        (compared.stdout + compared.stderr).split())
    study.tell(under_way, state=optuna.trial.TrialState.FAIL)  # that worker gone (its trial failed): nothing under way
    monkeypatch.undo()
    again = autotune_main("report", tmp_path / "r", "--storage", url)
    assert "still running" not in again.stderr + again.stdout
    assert json.loads((tmp_path / "r" / "pareto.json").read_text())["search"].get("unfinished") is None
