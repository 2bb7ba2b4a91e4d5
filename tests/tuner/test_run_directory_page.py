"""docs/run-directory.md says "what each file in it holds": every file a run writes there is named on it (trial67
#13: `.workers.lock` and `.reports.lock` were not, and a user cleaning a run directory could not tell whether
deleting them was safe)."""

from pathlib import Path

from autotune.commands.run import RUN_DIR_FILES

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "run-directory.md").read_text(encoding="utf-8")


def test_every_file_a_run_writes_is_named_on_the_run_directory_page():
    assert [name for name in RUN_DIR_FILES if f"`{name}" not in PAGE] == []


def test_the_page_says_what_pareto_json_s_trials_counts_and_what_a_run_does_with_an_ask_tell_trial(tmp_path):
    """Trial74 #10: an Optuna user's `study.ask()` trial, seconds old, was failed by the next run without a word, and
    pareto.json's `trials` (14) was not "how many trials the study holds" (15), as the page said."""
    import json

    import optuna

    from tests.cli import autotune_main

    run = ("run", "--model", "7b", "--nodes", "2", "--backend", "simulate", "-q", "--trials", "2", "--out", tmp_path)
    assert autotune_main(*run).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{tmp_path / 'study.db'}")
    asked = study.ask().number
    assert autotune_main(*run).returncode == 0
    assert study.trials[asked].state == optuna.trial.TrialState.FAIL  # as the page says: failed, no candidate
    assert json.loads((tmp_path / "pareto.json").read_text())["trials"] == len(study.trials) - 1
    page = " ".join(PAGE.split())
    assert "`trials`: how many trials the report counts" in page and "or an ask/tell trial autotune failed" in page
    assert "An ask/tell trial has none, so it is failed without a line" in page
