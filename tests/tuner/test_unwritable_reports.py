"""A run directory whose reports this user may not write (a colleague's configs/, chmod 000 or 555): `report` shows
the report and says what it left as it was and why, `report --html`, `export --pick` and `run` refuse in one line
before they write or probe anything; none ends in a traceback (trial69 #2)."""

from __future__ import annotations

import shutil

import pytest

from autotune.errors import UserError
from tests.cli import simulated_run
from tests.read_only import autotune_as_a_user


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    return simulated_run(tmp_path_factory, 1, 3)


def _files(run_dir) -> dict:
    return {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("mode", "problem"), [(0o000, "cannot list"), (0o555, "cannot write in")])
def test_a_configs_folder_this_user_may_not_write_is_said_in_one_line(finished_run, tmp_path, mode, problem):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    before = _files(run)
    configs = run / "configs"
    configs.chmod(mode)
    try:
        shown = autotune_as_a_user("report", run)
        assert shown.returncode == 0, shown.stderr
        assert "min-energy" in shown.stdout  # the report, from the study
        assert shown.stderr == (f"RUN_DIR {run}: {problem} {configs} (Permission denied): the report is shown, and "
                                "pareto.json, configs/ and report.html there are left as they were; make configs/ "
                                f"readable and writable for you (chmod u+rwx {configs}) to write them\n")
        html = autotune_as_a_user("report", run, "--html")
        assert (html.returncode, html.stdout) == (2, "")
        assert html.stderr == (f"autotune report: error: RUN_DIR {run}: {problem} {configs} (Permission denied); --html "
                               "writes report.html and configs/ there: make configs/ readable and writable for you "
                               f"(chmod u+rwx {configs}), or drop --html\n")
        exported = autotune_as_a_user("export", run, "--pick", "knee")
        assert exported.returncode == 2 and len(exported.stderr.splitlines()) == 1, exported.stderr
        assert f"-o's default {configs / 'knee.json'}: cannot" in exported.stderr
        assert "choose a writable path" in exported.stderr
        probed = autotune_as_a_user("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "5",
                                    "--out", run)
        assert (probed.returncode, probed.stdout) == (2, "")  # refused before its first probe, not after its last
        assert probed.stderr == (f"autotune run: error: --out {run}: {problem} {configs} (Permission denied), where the "
                                 f"picks' DeepSpeed configs go; make configs/ readable and writable for you (chmod u+rwx "
                                 f"{configs}), then run the command again\n")
    finally:
        configs.chmod(0o755)
    assert _files(run) == before


def test_reports_written_at_the_end_of_a_run_check_configs_first(finished_run, tmp_path, monkeypatch):
    """configs/ made unwritable while a run probed: the reports refuse before pareto.json is written beside picks it
    would disagree with."""
    from autotune.commands import finish
    from autotune.study import load_finished_study

    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    (run / "pareto.json").unlink()
    view, document = finish.build_report(load_finished_study(run))
    monkeypatch.setattr(finish, "configs_problem", lambda run_dir: f"cannot list {run_dir / 'configs'} (Permission denied)")
    with pytest.raises(UserError) as err:
        finish.write_outputs(view, document, run)
    assert str(err.value) == (f"run directory {run}: cannot list {run / 'configs'} (Permission denied), where the picks' "
                              f"DeepSpeed configs go; make configs/ readable and writable for you (chmod u+rwx "
                              f"{run / 'configs'}), then `autotune report {run}` writes the reports (what the study "
                              "measured is kept in its database)")
    assert not (run / "pareto.json").exists()


def _refused_as_not_yours(monkeypatch):
    """pareto.json refused as a colleague's in a shared, sticky folder is (only its owner may replace it), whatever
    this user's file modes: the refusal write_text_atomic makes of EPERM."""
    import errno

    from autotune.atomic_write import STUDY_KEPT, FileNotWritten
    from autotune.commands import finish

    def refused(path, document):
        raise FileNotWritten(f"cannot write {path} (Operation not permitted)", "have its folder made writable",
                             STUDY_KEPT, errno.EPERM)

    monkeypatch.setattr(finish, "write_pareto_json", refused)


def test_a_pareto_json_this_user_may_not_replace_leaves_the_reports_as_they_were_and_the_report_shown(
        finished_run, tmp_path, monkeypatch):
    """Trial69 #12: a colleague's pareto.json in a sticky folder: `report` said only "cannot write ... move what is in
    its way", the report unseen; a read-only run directory's report is shown, and so is this one now."""
    from tests.cli import autotune_main

    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    before = _files(run)
    _refused_as_not_yours(monkeypatch)
    shown = autotune_main("report", run)
    assert shown.returncode == 0 and "min-energy" in shown.stdout, shown.stderr
    assert shown.stderr == (f"RUN_DIR {run}: cannot write {run / 'pareto.json'} (Operation not permitted): the report is "
                            "shown, and pareto.json, configs/ and report.html there are left as they were; copy the run "
                            "directory to write them\n")
    assert _files(run) == before
    html = autotune_main("report", run, "--html")
    assert (html.returncode, html.stdout) == (2, "")
    said = (f"run directory {run}: cannot write {run / 'pareto.json'} (Operation not permitted): pareto.json, configs/ "
            f"and report.html there are left as they were; copy the run directory (cp -r {run} {tmp_path / 'COPY'}), "
            f"then `autotune report {tmp_path / 'COPY'}` writes them there (what the study measured is kept in its "
            "database)")
    assert html.stderr == f"autotune report: error: {said}\n"
    # A run whose probes ended: the report they made is shown, then the one line, exit 2.
    ran = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "4", "--out", run)
    assert ran.returncode == 2 and "min-energy" in ran.stdout, ran.stderr
    assert ran.stderr.splitlines()[-1] == f"autotune run: error: {said}"
    assert "run directory: " not in ran.stdout + ran.stderr  # the line that lists the reports written there
    assert _files(run).keys() == before.keys()


def test_a_colleagues_pareto_json_in_a_sticky_folder_is_reported_as_the_study_holds_it(finished_run, tmp_path):
    """The same with real owners (root only: making a file another user's needs it)."""
    import os
    import pwd

    if os.geteuid() != 0:
        pytest.skip("only root can make a file another user's")
    shared = tmp_path / "shared"
    shutil.copytree(finished_run, shared)
    nobody = pwd.getpwnam("nobody").pw_uid
    for path in (shared, shared / "pareto.json", shared / "report.html"):
        os.chown(path, nobody, -1)
    shared.chmod(0o1777)
    before = _files(shared)
    shown = autotune_as_a_user("report", shared)
    assert shown.returncode == 0 and "min-energy" in shown.stdout, shown.stderr
    assert shown.stderr == (f"RUN_DIR {shared}: cannot write {shared / 'pareto.json'} (Operation not permitted): the "
                            "report is shown, and pareto.json, configs/ and report.html there are left as they were; "
                            "copy the run directory to write them\n")
    assert _files(shared) == before
    # As the trial had it (`chown -R nobody`): configs/ is the colleague's too, which this user cannot chmod.
    configs = shared / "configs"
    for path in (configs, *configs.iterdir()):
        os.chown(path, nobody, -1)
    shown = autotune_as_a_user("report", shared)
    assert shown.returncode == 0 and "min-energy" in shown.stdout, shown.stderr
    assert shown.stderr == (f"RUN_DIR {shared}: cannot write in {configs} (Permission denied): the report is shown, and "
                            "pareto.json, configs/ and report.html there are left as they were; configs/ is nobody's: "
                            "have it made writable for you, or copy the run directory to write them\n")
    assert _files(shared) == before
