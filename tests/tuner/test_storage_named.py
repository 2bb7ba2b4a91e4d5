"""A run directory whose study is in a --storage database names that database (trial 32's #10):
pareto.json keeps the URL (password hidden), and `autotune report RUN_DIR` says the flags to pass."""

from __future__ import annotations

import json
import shlex

from autotune.study.storage import recorded_storage
from tests.cli import autotune_main


def test_report_of_a_storage_run_names_its_url_and_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared db.db'}"
    out = tmp_path / "s1"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--storage", url,
                         "--study-name", "s1", "--out", out)
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert (document["storage"], document["study_name"]) == (url, "s1")
    refused = autotune_main("report", out)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert lines[0].endswith(f"pass --storage {shlex.quote(url)} --study-name s1"), lines[0]
    again = autotune_main("report", out, "--storage", url, "--study-name", "s1")  # what it says works
    assert again.returncode == 0, again.stderr
    # The report it writes keeps the URL: a later bare `report RUN_DIR` still names it.
    assert json.loads((out / "pareto.json").read_text())["storage"] == url
    assert autotune_main("report", out).stderr.strip().endswith(f"pass --storage {shlex.quote(url)} --study-name s1")


def test_a_run_directory_study_records_no_storage(tmp_path):
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--out", tmp_path / "own")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "own" / "pareto.json").read_text())["storage"] is None  # the key in every pareto.json


def test_a_recorded_url_hides_its_password():
    assert recorded_storage("postgresql://tuner:s3cret@db.example/autotune") == "postgresql://tuner:***@db.example/autotune"
    assert recorded_storage("sqlite:////runs/shared.db") == "sqlite:////runs/shared.db"
