"""A --probe-timeout no probe can start within is refused, on the command line and by the launch backend alike (a
newcomer's trial: `--probe-timeout 1e-300` was taken, and every probe was killed at its start, each a trial spent)."""

import pytest

from autotune.backends.probe_options import MIN_PROBE_TIMEOUT_S, check_probe_options
from autotune.errors import ConfigError
from tests.cli import autotune


@pytest.mark.parametrize("value", ["1e-300", "0.001", "0.5", "0.999", "5e-324", "0", "-0"])
def test_a_timeout_under_a_second_is_one_line_naming_the_minimum(tmp_path, value):
    refused = autotune("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--backend", "launch",
                       "--allow-estimated-energy", "--probe-timeout", value, "--out", tmp_path / "run")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"argument --probe-timeout: '{value}' is out of range; it must be a number >= 1 and <= 604800" in refused.stderr
    assert "Python, torch, DeepSpeed" in refused.stderr and not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", [1e-300, 0.5])
def test_the_launch_backend_refuses_it_too(value):
    with pytest.raises(ConfigError, match=r"--probe-timeout = .* is out of range; it must be a number >= 1 and"):
        check_probe_options(probe_timeout_s=value)


def test_the_minimum_itself_and_the_default_are_taken():
    assert check_probe_options(probe_timeout_s=MIN_PROBE_TIMEOUT_S)["probe_timeout_s"] == 1.0
    assert check_probe_options(probe_timeout_s=900)["probe_timeout_s"] == 900.0
