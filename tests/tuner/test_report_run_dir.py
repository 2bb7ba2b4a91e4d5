"""`autotune report RUN_DIR` given what is not a run directory: one line, exit 2, naming the directory meant where it
can tell (a file of a run directory, a folder inside one), and nothing written (trial 45, a newcomer's bad input)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests import cli


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return cli.simulated_run(tmp_path_factory, nodes=1, trials=3)


def _files(folder) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _refused(*argv) -> str:
    done = cli.autotune_main("report", *argv)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and done.stdout == "", done.stderr
    return lines[0].removeprefix("autotune report: error: ")


@pytest.mark.parametrize("inside", ["pareto.json", "study.db", "report.html", "configs/knee.json"])
def test_a_file_of_a_run_directory_names_the_directory(tmp_path, finished, inside):
    run = shutil.copytree(finished, tmp_path / "run")
    before = _files(run)
    assert _refused(run / inside) == f"{run / inside} is a file of the run directory {run}; pass the directory, {run}"
    assert _files(run) == before


def test_a_folder_inside_a_run_directory_names_it_and_gets_no_reports(tmp_path, finished):
    """With --storage too: its reports went into the run's configs/ (configs/pareto.json, configs/configs/)."""
    run = shutil.copytree(finished, tmp_path / "run")
    before = _files(run)
    for argv in ([run / "configs"], [run / "configs", "--storage", f"sqlite:///{run / 'study.db'}"]):
        assert _refused(*argv) == f"{run / 'configs'} is inside the run directory {run}; pass {run}"
    assert _files(run) == before


def test_what_is_no_directory_is_said_as_what_it_is(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    os.symlink(tmp_path / "gone", tmp_path / "link")
    fix = "pass the --out directory of an `autotune run`"
    assert _refused(tmp_path / "nowhere") == f"{tmp_path / 'nowhere'} does not exist; {fix}"
    assert _refused(tmp_path / "notes.txt") == f"{tmp_path / 'notes.txt'} is a file, not a run directory; {fix}"
    assert _refused(tmp_path / "link") == f"{tmp_path / 'link'} is a link to {tmp_path / 'gone'}, which does not exist; {fix}"
    assert _refused("/dev/null") == f"/dev/null is not a directory (a device, pipe or socket), not a run directory; {fix}"


def test_a_pareto_json_that_is_a_loop_of_links_is_one_line(tmp_path, finished):
    run = shutil.copytree(finished, tmp_path / "run")
    (run / "pareto.json").unlink()
    os.symlink("loop", run / "pareto.json")
    os.symlink("pareto.json", run / "loop")
    assert _refused(run) == (f"cannot write {run / 'pareto.json'}: it is a link that leads back to itself (a loop of "
                             "symbolic links); remove the link, and run the command again (what the study measured is "
                             "kept in its database)")


def test_a_study_db_that_is_no_file_is_named_not_taken_for_a_storage_run(tmp_path, finished):
    run = shutil.copytree(finished, tmp_path / "run")
    (run / "study.db").unlink()
    (run / "study.db").mkdir()
    assert _refused(run) == (f"{run / 'study.db'} is a directory, where the run directory's study database belongs; move "
                             "it out of the way (the study's database is the file study.db)")
    (run / "study.db").rmdir()
    os.symlink(tmp_path / "moved.db", run / "study.db")
    assert _refused(run).startswith(f"{run / 'study.db'} is a link to {tmp_path / 'moved.db'}, which does not exist, where")


def test_another_tool_s_optuna_study_is_not_said_to_have_no_trials(tmp_path):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'study.db'}", study_name="mine")
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=2)
    assert _refused(tmp_path) == (f"the study 'mine' in {tmp_path / 'study.db'} was not made by autotune (its 2 trial(s) "
                                  "hold no autotune settings); pass the --out directory of an `autotune run`")
