"""`autotune calibrate` of a run whose study lives in a --storage database (trial 48 F1): the error for such a
RUN_DIR told the user to pass `--storage URL --study-name NAME`, flags calibrate did not have."""

import json
import shutil

import pytest

from tests import cli

autotune = cli.autotune_main


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(a --storage run's directory, its URL, a run directory with its own study.db), each a finished simulate study."""
    where = tmp_path_factory.mktemp("storage")
    url = f"sqlite:///{where / 'shared.db'}"
    shared = autotune("run", "--model", "7b", "--nodes", "1", "--trials", "4", "--backend", "simulate",
                      "--storage", url, "--study-name", "s1", "--out", where / "st")
    assert shared.returncode == 0, shared.stderr
    return where / "st", url, cli.simulated_run(tmp_path_factory, nodes=1, trials=4)


def test_the_flags_the_error_names_calibrate_the_storage_study(runs):
    storage_run, url, _ = runs
    refused = autotune("calibrate", storage_run, "--allow-simulated", "--no-loo")
    assert refused.returncode == 2
    advised = refused.stderr.split("; pass ", 1)[1].split()
    assert advised == ["--storage", url, "--study-name", "s1"]
    done = autotune("calibrate", storage_run, "--allow-simulated", "--no-loo", "--json", *advised)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["sources"] == [str(storage_run)] and document["observations"] >= 4


def test_run_directories_with_their_own_study_db_join_the_storage_one(runs):
    storage_run, url, own = runs
    done = autotune("calibrate", own, storage_run, "--storage", url, "--study-name", "s1", "--allow-simulated",
                    "--no-loo", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["sources"]) == sorted([str(own), str(storage_run)])


def test_help_says_which_run_directory_the_flags_are_for():
    said = " ".join(autotune("calibrate", "--help").stdout.split())
    assert "--storage URL the study's storage URL, for the one RUN_DIR that holds no study.db" in said
    assert "--study-name NAME the study's name in --storage" in said


def test_storage_that_no_run_directory_reads_is_refused_not_ignored(runs):
    _, url, own = runs
    unread = autotune("calibrate", own, "--storage", url, "--study-name", "s1", "--allow-simulated", "--no-loo")
    assert unread.returncode == 2 and len(unread.stderr.splitlines()) == 1
    assert unread.stderr.startswith(f"autotune calibrate: error: --storage {url} is for the RUN_DIR that holds no "
                                    "study.db, and every RUN_DIR given holds its own")
    for flags in (("--storage", url), ("--study-name", "s1")):
        alone = autotune("calibrate", "--reference", "gh200-study", "--no-loo", *flags)
        assert alone.returncode == 2
        assert f"error: {flags[0]} names the study of a RUN_DIR, and none is given" in alone.stderr


def test_two_run_directories_of_one_storage_study_are_refused(runs, tmp_path):
    """One URL and name are one study: the same probes from two directories would be fitted twice."""
    storage_run, url, _ = runs
    copy = shutil.copytree(storage_run, tmp_path / "st-copy")
    twice = autotune("calibrate", storage_run, copy, "--storage", url, "--study-name", "s1", "--allow-simulated", "--no-loo")
    assert twice.returncode == 2 and len(twice.stderr.splitlines()) == 1
    assert f"2 RUN_DIRs hold no study.db ({storage_run}, {copy})" in twice.stderr


def test_a_run_directory_that_is_not_one_is_said_before_storage_is_judged(runs, tmp_path):
    _, url, _ = runs
    missing = autotune("calibrate", tmp_path / "nope", "--storage", url, "--study-name", "s1")
    assert missing.returncode == 2
    assert missing.stderr == f"autotune calibrate: error: {tmp_path / 'nope'} does not exist; pass the " \
                             "--out directory of an `autotune run`\n"
