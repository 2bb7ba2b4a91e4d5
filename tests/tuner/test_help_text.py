"""What `--help` says, checked against the constants and the behaviour it describes (a newcomer's trial 48: defaults
left out, metavars argparse made up, exit statuses and environment variables written nowhere in one place)."""

import pytest

from tests.cli import autotune_main


def help_of(monkeypatch, *command: str) -> str:
    """`autotune COMMAND --help` on one line: a wide terminal, so that argparse breaks no name at its hyphen."""
    monkeypatch.setenv("COLUMNS", "1000")
    done = autotune_main(*command, "--help")
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


@pytest.mark.parametrize("command", ["run", "space"])
def test_the_workload_flags_show_their_defaults_and_tinys_own(command, monkeypatch):
    from autotune.models import PRESETS
    from autotune.workload import DEFAULT_WORKLOAD

    text = help_of(monkeypatch, command)
    for key, value in DEFAULT_WORKLOAD.items():
        tiny = PRESETS["tiny"].default_workload[key]
        assert f"(default: {value}, unless the model names its own default_workload: tiny {tiny})" in text, key
    assert "a Hugging Face checkpoint's directory or its config.json (default: 32b)" in text


def test_the_default_run_directory_of_a_node_range_is_the_one_help_names(monkeypatch, tmp_path):
    assert "runs/7b-1to2n for --nodes 1-2" in help_of(monkeypatch, "run")
    done = autotune_main("run", "--model", "7b", "--nodes", "1-2", "--trials", "2", "--backend", "simulate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "7b-1to2n" / "pareto.json").is_file()
