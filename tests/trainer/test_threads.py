"""Threads per probe rank: one rule under every launcher (trainer/threads.py), and the user's
OMP_NUM_THREADS carried to every rank as a probe flag."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainer.threads import threads_per_rank


@pytest.mark.parametrize("requested, ranks, cores, expected", [
    (None, 1, 2, 2), (None, 2, 2, 1), (None, 4, 72, 18), (None, 4, 2, 1),  # never none
    (3, 4, 72, 3),  # asked for: taken as it is
])
def test_a_rank_takes_its_share_of_the_cores_unless_told(requested, ranks, cores, expected):
    assert threads_per_rank(requested, ranks, cores) == expected


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "abc", "", "nan", "4097", "99999999999999999999", "1_6", "\uff14"])
def test_the_probe_refuses_a_thread_count_that_is_not_a_whole_number_of_at_least_one(value, capsys):
    # The probe's own parser, in this process (a probe process per value cost the suite 14 s; the command's exit
    # status is the one argparse gives every flag, seen once below).
    from trainer.probe import parse_args

    with pytest.raises(SystemExit) as refused:
        parse_args(["--model", "tiny", "--threads-per-rank", value])
    said = capsys.readouterr().err
    assert refused.value.code == 2 and "--threads-per-rank" in said and ">= 1 and <= 4096" in said


def test_the_probe_command_exits_2_on_a_thread_count_it_refuses():
    done = subprocess.run([sys.executable, "-m", "trainer.probe", "--model", "tiny", "--threads-per-rank", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--threads-per-rank" in done.stderr and ">= 1 and <= 4096" in done.stderr


@pytest.mark.parametrize("omp, flag", [("8", ["--threads-per-rank", "8"]), (None, []), ("0", []), ("auto", [])])
def test_the_tuner_passes_the_users_omp_num_threads_to_every_rank(tmp_path, monkeypatch, omp, flag):
    from autotune.backends.launch import LaunchBackend

    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    args = LaunchBackend(run_dir=tmp_path, launcher="torchrun")._probe_args(tmp_path, tmp_path / "result.json")
    assert args[args.index("--collective-timeout-s") + 2:] == flag
