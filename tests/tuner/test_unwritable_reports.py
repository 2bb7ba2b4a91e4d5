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
