"""A flag's value that starts with '-' (`--probe-timeout -inf`, `-o -dash`) reads to argparse as an option: its
"expected one argument" (trial 58 F10) said neither that the value was seen nor how to give it."""

import pytest

from tests.cli import autotune_main


@pytest.mark.parametrize("command, flags, said", [
    # The flag's own check refuses the value: said at once, not the spelling that only leads to it (trial 62 F7).
    (("run",), ("--probe-timeout", "-inf"), "argument --probe-timeout: '-inf' is not finite; it must be a number >= 1"),
    (("run",), ("--probe-timeout", "-1e3"), "argument --probe-timeout: '-1e3' is out of range"),
    (("export", "RUN"), ("-o", "-dash"), "argument -o: '-dash' starts with '-', so it reads as an option, not as the value "
                                         "of -o; a value starting with '-' is given as --output=-dash"),
    (("report", "RUN"), ("--storage", "-x"), "given as --storage=-x"),
    # calibrate takes several run directories: its arguments are parsed again, intermixed (cli._parse_intermixed)
    (("calibrate", "RUN", "--no-loo", "RUN"), ("-o", "-p.toml"), "given as --output=-p.toml"),
    (("report", "RUN"), ("--storage", "-db*"), "given as '--storage=-db*'"),  # as the shell takes it back
])
def test_a_value_starting_with_a_dash_is_said_with_the_spelling_that_gives_it(tmp_path, command, flags, said):
    result = autotune_main(*command, *flags, cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert said in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_value_so_given_is_checked_as_any_other(tmp_path):
    result = autotune_main("run", "--probe-timeout=-inf", cwd=tmp_path)
    assert result.returncode == 2 and "argument --probe-timeout: '-inf' is not finite; it must be a number >= 1" in result.stderr


@pytest.mark.parametrize("flags", [("--out", "--trials", "3"), ("--out",), ("--out", "--")])
def test_a_value_left_out_is_still_said_as_one(tmp_path, flags):
    """The word after the flag is one of the command's own flags, or there is none: the value was left out."""
    result = autotune_main("run", *flags, cwd=tmp_path)
    assert result.returncode == 2 and "argument --out: expected one argument (see" in result.stderr, result.stderr
