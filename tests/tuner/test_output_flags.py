"""The commands that write a file take its flag under the other commands' spelling too: a newcomer's trial typed
`export RUN --out FILE` (run's flag) and met "unrecognized arguments". export's and calibrate's --help list --out too
(the docs name it); run's shows --out alone."""

import pytest

from tests.cli import autotune, autotune_main, simulated_run


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=1, trials=3)


def test_export_takes_out_as_its_output_flag(finished, tmp_path):
    result = autotune("export", finished, "--out", tmp_path / "mine.json")
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines()] == [str(tmp_path / name) for name in
                                                            ("mine.json", "mine.candidate.json", "mine.launch.sh")]
    assert autotune_main("export", finished, f"--out={tmp_path / 'eq.json'}").returncode == 0
    assert (tmp_path / "eq.launch.sh").is_file()


@pytest.mark.parametrize("flags", [("-o", "a.json", "--out", "b.json"), ("--out", "a.json", "--output", "b.json"),
                                   ("-o", "a.json", "-o", "b.json")])
def test_an_output_given_twice_is_refused_whatever_its_spelling(finished, tmp_path, flags):
    result = autotune_main("export", finished, *flags, cwd=tmp_path)
    assert result.returncode == 2 and "the output is given twice (a.json, then b.json); give it once" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("wrong, said", [(("--out",), "expected one argument"), (("--out", ""), "is empty"),
                                         (("--out", "x.yaml"), "give it a .json name")])
def test_a_wrong_out_is_refused_as_a_wrong_o_is(finished, tmp_path, wrong, said):
    result = autotune_main("export", finished, *wrong, cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", ["export", "calibrate"])
def test_help_lists_out_beside_o_and_output(command):
    """Trial 67 #10: docs/commands.md gives export's and calibrate's output as `-o FILE (or --out FILE)`, which their
    --help did not list (a hidden alias, read as argparse's prefix of --output)."""
    text = autotune_main(command, "--help").stdout
    assert "-o FILE, --output FILE, --out FILE" in text


def test_calibrate_takes_out_as_its_output_flag(tmp_path):
    profile = tmp_path / "mine.toml"
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "--out", profile)
    assert result.returncode == 0, result.stderr
    assert profile.is_file() and f"wrote {profile}" in result.stdout


@pytest.mark.parametrize("flag", ["-o", "--output"])
def test_run_takes_o_and_output_as_its_out(tmp_path, flag):
    out = tmp_path / "mine"
    result = autotune_main("run", "--model", "7b", "--nodes", 1, "--trials", 1, "--backend", "simulate", flag, out)
    assert result.returncode == 0, result.stderr
    assert (out / "study.db").is_file() and (out / "pareto.json").is_file()


@pytest.mark.parametrize("flags", [("-o", "a", "--out", "b"), ("--out", "a", "--output", "b"), ("-o", "a", "-o", "b")])
def test_a_run_directory_given_twice_is_refused_whatever_its_spelling(tmp_path, flags):
    result = autotune_main("run", "--model", "7b", "--nodes", 1, "--trials", 1, "--backend", "simulate", *flags,
                           cwd=tmp_path)
    assert result.returncode == 2 and "the output is given twice (a, then b); give it once" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_run_help_shows_out_alone():
    text = autotune_main("run", "--help").stdout
    assert "--out DIR" in text and "-o DIR" not in text and "--output" not in text


@pytest.mark.parametrize("command", ["run", "report", "export", "calibrate"])
def test_a_storage_given_twice_is_refused_naming_both_its_password_hidden(tmp_path, command):
    """The later URL silently won, and the refusal that followed named it alone (trial 58 F9)."""
    run_dir = () if command == "run" else (tmp_path,)
    result = autotune_main(command, *run_dir, "--storage", "postgresql://me:secret@host/db", "--storage=sqlite:///b.db",
                           cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert ("argument --storage: the storage is given twice (postgresql://me:***@host/db, then sqlite:///b.db); give it "
            "once") in result.stderr
    assert "secret" not in result.stderr and list(tmp_path.iterdir()) == []
