"""A study deleted from its database with Optuna's own API (`optuna delete-study`), while a run directory still holds
its reports (trial74 #6, #7): those reports are all that is left of it, and no command writes another study's over them."""

from __future__ import annotations

import json

import optuna

from autotune.cli import main

STUDY = ["run", "--model", "7b", "--nodes", "1", "--trials", "3"]


def _refusal(capsys) -> str:
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    return line


def test_a_report_of_a_run_directory_whose_own_study_was_deleted_writes_no_other_study_over_it(tmp_path, capsys):
    """#6: with its own study deleted from study.db, `report RUN_DIR` took the one study left there (a --storage run's)
    and rewrote pareto.json and configs/ with it, calling the deleted study's "out of date"."""
    run_dir, other_dir = tmp_path / "r18", tmp_path / "r18x"
    url = f"sqlite:///{run_dir / 'study.db'}"
    assert main([*STUDY, "--out", str(run_dir)]) == 0
    assert main([*STUDY, "--sampler", "random", "--storage", url, "--study-name", "other", "--out", str(other_dir)]) == 0
    optuna.delete_study(study_name="autotune", storage=url)
    before = (run_dir / "pareto.json").read_text()
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 2
    line = _refusal(capsys)
    assert line.startswith(f"autotune report: error: RUN_DIR {run_dir} reports study 'autotune' (pareto.json, configs/), "
                           "which its study.db no longer holds (deleted from it: `optuna delete-study`?; it holds 'other' "
                           "now): those reports, all that is left of it, are kept as they are; put back a study.db"), line
    assert line.endswith(f"--storage {url} --study-name other"), line
    assert (run_dir / "pareto.json").read_text() == before
    assert main([*STUDY, "--out", str(run_dir)]) == 2  # nor a new study of that name over them
    assert "pass --out NEW_DIR to start 'autotune' anew" in _refusal(capsys)
    assert json.loads((run_dir / "pareto.json").read_text())["study_name"] == "autotune"


def test_a_study_deleted_from_a_shared_database_is_named_as_deleted(tmp_path, capsys):
    """#7: the line sent the user to the study left in the database ("pass --study-name beta"), which is another run
    directory's and was refused there; `run` called the directory's reports another study's than 'alpha'."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    alpha = tmp_path / "sa"
    assert main([*STUDY, "--storage", url, "--study-name", "alpha", "--out", str(alpha)]) == 0
    assert main([*STUDY, "--storage", url, "--study-name", "beta", "--out", str(tmp_path / "sb")]) == 0
    optuna.delete_study(study_name="alpha", storage=url)
    capsys.readouterr()
    said = (f"{alpha} reports study 'alpha' (pareto.json, configs/), which {url} no longer holds (deleted from it: "
            "`optuna delete-study`?; it holds 'beta' now): those reports, all that is left of it, are kept as they are; ")
    assert main(["report", str(alpha), "--storage", url, "--study-name", "alpha"]) == 2
    assert _refusal(capsys) == f"autotune report: error: RUN_DIR {said}pass --storage with the database that holds it now"
    assert main([*STUDY, "--storage", url, "--study-name", "alpha", "--out", str(alpha)]) == 2
    assert _refusal(capsys) == (f"autotune run: error: --out {said}pass --out NEW_DIR to start 'alpha' anew, or pass "
                                "--storage with the database that holds it now to resume it")
