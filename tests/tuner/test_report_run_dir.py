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
    assert _refused(tmp_path) == (f"the study 'mine' in {tmp_path / 'study.db'} was not made by autotune (its 2 trials "
                                  "hold no autotune settings); pass the --out directory of an `autotune run`")


def test_a_pareto_json_without_a_study_db_that_names_no_storage_is_said_as_it_is(tmp_path, finished):
    """"its run kept the study in a --storage database; pass the same --storage URL" was said of each of these."""
    copy_url = f"sqlite:///{tmp_path / 'copy.db'}"
    shutil.copy(finished / "study.db", tmp_path / "copy.db")
    theirs, damaged, moved = tmp_path / "theirs", tmp_path / "damaged", tmp_path / "moved"
    for folder in (theirs, damaged, moved):
        folder.mkdir()
    (theirs / "pareto.json").write_text('{"points": [1, 2]}')
    (damaged / "pareto.json").write_text("{ half")
    shutil.copy(finished / "pareto.json", moved / "pareto.json")  # of the directory's own study.db: storage null
    for argv in ([theirs], [theirs, "--storage", copy_url]):  # its file is not replaced by a --storage study's report
        assert _refused(*argv) == (f"RUN_DIR {theirs} holds no study.db, and its pareto.json is not an autotune report "
                                   "(no front or recommendations: another tool's file?), which the report would replace; "
                                   "pass the --out directory of an `autotune run`, or move pareto.json out of the way")
    assert (theirs / "pareto.json").read_text() == '{"points": [1, 2]}'
    assert _refused(damaged).startswith(f"RUN_DIR {damaged} holds no study.db, and its pareto.json is damaged (")
    assert _refused(damaged).endswith("so it cannot name the database its run kept the study in; pass --storage URL and "
                                      "--study-name NAME as its `autotune run` gave them (the report rebuilds pareto.json)")
    assert cli.autotune_main("report", damaged, "--storage", copy_url).returncode == 0  # rebuilt, as ever
    assert _refused(moved) == (f"RUN_DIR {moved} holds no study.db, though its pareto.json is of the directory's own "
                               f"study.db (moved or removed?); put study.db back in {moved}, or pass --storage URL where "
                               "the study is kept now")


@pytest.mark.parametrize("command, flags", [("export", ()), ("export", ("--measurements", "m.jsonl")), ("calibrate", ())])
def test_export_and_calibrate_say_a_run_directory_that_is_not_there_as_report_does(tmp_path, finished, command, flags):
    """A missing RUN_DIR was "is not a directory" to export and calibrate (a newcomer's trial): it does not exist."""
    fix = "pass the --out directory of an `autotune run`"
    run = shutil.copytree(finished, tmp_path / "run")
    for given, said in ((tmp_path / "nope", f"{tmp_path / 'nope'} does not exist; {fix}"),
                        (run / "pareto.json", f"{run / 'pareto.json'} is a file of the run directory {run}; pass the directory, {run}")):
        done = cli.autotune_main(command, given, *flags, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr == f"autotune {command}: error: {said}\n", done.stderr
    assert not (tmp_path / "m.jsonl").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo", "dangling link"])
def test_run_names_a_study_db_that_is_no_file_as_report_does(tmp_path, finished, kind):
    """`run` opened it anyway and blamed a moved directory or the file system, its trials "kept in it" (trial69 #13)."""
    run = shutil.copytree(finished, tmp_path / "run")
    (run / "study.db").unlink()
    {"directory": lambda path: path.mkdir(), "fifo": os.mkfifo,
     "dangling link": lambda path: os.symlink(tmp_path / "moved.db", path)}[kind](run / "study.db")
    done = cli.autotune_main("run", "--model", "7b", "--nodes", 1, "--trials", 4, "--backend", "simulate", "--out", run)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"autotune run: error: {_refused(run)}\n"
    assert "where the run directory's study database belongs; move it out of the way" in done.stderr


def test_a_removed_study_db_is_said_removed_by_export_calibrate_and_run_as_by_report(tmp_path, finished):
    """export and calibrate said "its run kept the study in a --storage database; pass the same --storage URL" of a
    run that never had one, and run never named the likely fix, putting study.db back (trial69 #4)."""
    run = shutil.copytree(finished, tmp_path / "run")
    (run / "study.db").unlink()
    said = (f"RUN_DIR {run} holds no study.db, though its pareto.json is of the directory's own study.db (moved or "
            f"removed?); put study.db back in {run}, or pass --storage URL where the study is kept now")
    assert _refused(run) == said
    for argv in (("export", run, "--pick", "knee", "-o", tmp_path / "k.json"),
                 ("export", run, "--measurements", tmp_path / "m.jsonl"), ("calibrate", run, "-o", tmp_path / "c.toml")):
        done = cli.autotune_main(*argv)
        assert (done.returncode, done.stderr) == (2, f"autotune {argv[0]}: error: {said}\n")
    done = cli.autotune_main("run", "--model", "7b", "--nodes", 1, "--trials", 4, "--backend", "simulate", "--out", run)
    assert (done.returncode, done.stderr) == (2, (
        f"autotune run: error: --out {run} holds the reports (pareto.json, configs/) of a study kept in its own study.db, "
        f"which is not there (moved or removed?); put study.db back in {run} to resume that study, pass another --out "
        f"for a new one, or move pareto.json and configs/ out of {run} to start one there\n"))
    assert not (run / "study.db").exists()
