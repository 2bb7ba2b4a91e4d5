"""A current directory deleted under the command (a scratch cleaner, another shell or job) (trial 45 §3): what
needs no directory (an absolute --out, preset names) works; what does (a relative path, the default run
directory) is one line naming the fix, not a FileNotFoundError traceback from os.getcwd()."""

from __future__ import annotations

import os

import pytest

from autotune.backends.first_node import ask_first_node
from autotune.errors import UserError
from tests import cli
from tests.backends.conftest import REPO


@pytest.fixture
def in_deleted_directory(tmp_path, monkeypatch):
    """The test process, and the commands it starts, in a directory that no longer exists."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    return tmp_path


def _autotune(*args):
    """The CLI in a subprocess started here: this clone's package by PYTHONPATH, as `python -m` finds no
    package in a directory that is gone."""
    return cli.autotune(*args, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_an_absolute_out_and_preset_names_need_no_current_directory(in_deleted_directory):
    out = in_deleted_directory / "run"
    done = _autotune("run", "--model", "tiny", "--hardware", "cpu", "--nodes", 1, "--trials", 2, "--out", out)
    assert done.returncode == 0, done.stderr
    assert (out / "pareto.json").is_file()


@pytest.mark.parametrize("argv, words", [
    ([], "the run directory runs/tiny-1n is relative, but the current directory no longer exists; cd to an existing one"),
    (["--out", "run"], "argument --out: is relative, but the current directory no longer exists; cd to an existing one"),
    (["--model", "my.json"], "argument --model: is relative, but the current directory no longer exists"),
])
def test_a_path_relative_to_a_deleted_directory_is_one_line(in_deleted_directory, argv, words):
    base = {"--model": "tiny", "--hardware": "cpu", "--nodes": "1", "--trials": "2"}
    base.update(dict(zip(argv[::2], argv[1::2])))
    done = _autotune("run", *[part for pair in base.items() for part in pair])
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and words in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_first_node_is_not_asked_from_a_deleted_directory(in_deleted_directory):
    with pytest.raises(UserError, match=r"^the current directory no longer exists, and nid001 would be asked over ssh"):
        ask_first_node("nid001", "ssh", python="python", env={}, environ=dict(os.environ))
