"""`report` of a --storage study whose workers are still probing says so, and its pareto.json keeps it for `compare`
(trial80 #5): a --storage worker holds no lock on RUN_DIR, by which a run directory's report tells a run under way."""

from __future__ import annotations

import json

import optuna

from autotune.study.loop import PROBING_ATTR
from tests.cli import autotune_main


def test_a_report_of_a_storage_study_with_probes_under_way_says_so_and_pareto_json_keeps_it(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    run = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--sampler", "random", "--trials", "3", "-q",
           "--storage", url)
    assert autotune_main(*run, "--out", tmp_path / "w").returncode == 0
    assert autotune_main(*run, "--out", tmp_path / "solo", "--study-name", "solo").returncode == 0
    study = optuna.load_study(study_name="autotune", storage=url)
    under_way = study.ask(fixed_distributions=study.trials[0].distributions)  # a worker's probe, running now
    under_way.set_user_attr(PROBING_ATTR, True)
    report = autotune_main("report", tmp_path / "r", "--storage", url)
    assert report.returncode == 0, report.stderr
    said = " ".join(report.stderr.split())
    assert "1 probe still running on the study's workers is not in this report; `autotune report" in said, said
    assert "under way: 1 probe still running on the study's workers is not in this report" in " ".join(report.stdout.split())
    search = json.loads((tmp_path / "r" / "pareto.json").read_text())["search"]
    assert search["unfinished"]["running_elsewhere"] == 1 and search["unfinished"]["probes"] == 3, search
    compared = autotune_main("compare", tmp_path / "r", tmp_path / "solo")
    assert compared.returncode == 0, compared.stderr
    assert "Study 1 was still running elsewhere when its pareto.json was written (1 probe under way" in " ".join(
        (compared.stdout + compared.stderr).split())
    study.tell(under_way, state=optuna.trial.TrialState.FAIL)  # that worker gone (its trial failed): nothing under way
    again = autotune_main("report", tmp_path / "r", "--storage", url)
    assert "still running" not in again.stderr + again.stdout
    assert json.loads((tmp_path / "r" / "pareto.json").read_text())["search"].get("unfinished") is None
