"""The version a study records (`inputs.proposed_by[].autotune_version`) and `autotune --version` tell versions
apart: the release has been 0.1.0 at every commit, so studies of different autotunes read the same (trial52 #5)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import autotune

ROOT = Path(autotune.__file__).resolve().parents[1]


def _version(env: dict) -> str:
    done = subprocess.run([sys.executable, "-c", "import autotune; print(autotune.__version__)"], capture_output=True,
                          text=True, timeout=60, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout")
def test_a_git_checkout_s_version_names_its_commit():
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(rf"{re.escape(autotune.RELEASE)}\+g{commit[:12]}(\.dirty)?", autotune.__version__)
    assert autotune.__version__ == autotune.__version__  # kept: one git status, not one per use


def test_without_git_the_version_is_the_release_and_nothing_fails():
    env = {**os.environ, "PATH": "", "PYTHONPATH": str(ROOT)}
    assert _version(env) == autotune.RELEASE


def test_the_readme_says_what_an_upgrade_carries_over_and_re_checks():
    """trial52 #9: nothing said whether an older version's study.db, measurements or profiles are read."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Upgrading"):]
    section = section[:section.index("\n## ", 1)]
    for words in ("study.db", "pareto.json", "--measurements", "--space", "calibrate -o", "schema_version",
                  "memory estimate", "profile pinning", "autotune_version"):
        assert words in section, words


def test_a_command_starts_without_reading_the_version_and_version_still_says_it():
    """The version runs a git status: argparse's version action, given its text when the parser was built, ran it at
    the start of every command. Built lazily, the parser leaves it unread; `--version` reads it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import autotune, autotune.cli as cli; cli.build_parser(); print('__version__' in vars(autotune))"
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert built.returncode == 0 and built.stdout.strip() == "False", built.stderr
    asked = subprocess.run([sys.executable, "-m", "autotune.cli", "--version"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=ROOT)
    assert asked.returncode == 0 and asked.stdout.strip() == f"autotune {_version(env)}", asked.stderr
