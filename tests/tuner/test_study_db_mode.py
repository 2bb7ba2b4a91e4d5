"""study.db gets the permissions every other file of a run directory gets (open()'s, less the umask): SQLite
creates it 0644 whatever the umask, so under umask 002 a group shared the reports but could not resume the
study or keep a re-pick (trial 45)."""

import os
import stat

import pytest

from autotune.atomic_write import new_file_mode, process_umask
from tests.cli import autotune_main


@pytest.fixture
def umask_002():
    before = os.umask(0o002)
    yield
    os.umask(before)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_study_db_gets_the_umasks_mode_as_the_reports_do(tmp_path, umask_002):
    assert process_umask() == 0o002 and new_file_mode() == 0o664
    out = tmp_path / "run"
    result = autotune_main("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "2", "--out", out)
    assert result.returncode == 0, result.stderr
    assert _mode(out / "study.db") == _mode(out / "pareto.json") == 0o664


def test_an_existing_study_dbs_mode_is_left_as_its_owner_set_it(tmp_path, umask_002):
    out = tmp_path / "run"
    assert autotune_main("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "2", "--out", out).returncode == 0
    (out / "study.db").chmod(0o600)  # narrowed by its owner: a resume must not widen it
    result = autotune_main("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "3", "--out", out)
    assert result.returncode == 0, result.stderr
    assert _mode(out / "study.db") == 0o600
