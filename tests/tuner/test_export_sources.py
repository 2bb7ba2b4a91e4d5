"""What an export says it does, by where the exported figures came from: a simulated pick's launch.sh said "Runs the
probe again" and the terminal "train it as probed", and its measurements file "4 probe results", though nothing had
been probed (trial64 #11, #15). A replay keeps its records' source: a replay of measurements runs its probe again."""

from __future__ import annotations

import json

import pytest

from tests.cli import autotune_main

TINY = ("--model", "tiny", "--nodes", "1")


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """A simulated study, its measurements export, and a replay of those records relabelled measured."""
    root = tmp_path_factory.mktemp("sources")
    ran = autotune_main("run", *TINY, "--trials", "3", "--backend", "simulate", "--out", root / "sim", "-q")
    assert ran.returncode == 0, ran.stderr
    records = root / "sim.jsonl"
    exported = autotune_main("export", root / "sim", "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    measured = root / "measured.jsonl"
    measured.write_text("".join(json.dumps({**json.loads(line), "source": "measured"}) + "\n"
                                for line in records.read_text().splitlines()))
    replayed = autotune_main("run", *TINY, "--backend", "replay", "--measurements", measured, "--out", root / "replay", "-q")
    assert replayed.returncode == 0, replayed.stderr
    return {"simulated": root / "sim", "replayed": root / "replay", "export": exported, "records": records}


def _purpose(launch_sh) -> str:
    return launch_sh.read_text().splitlines()[1]


def test_a_simulated_pick_is_probed_not_probed_again(studies, tmp_path):
    done = autotune_main("export", studies["simulated"], "-o", tmp_path / "s.json")
    assert done.returncode == 0, done.stderr
    assert _purpose(tmp_path / "s.launch.sh") == ("# Probes this configuration (its figures were simulated): trains the "
                                                  "autotune model with s.json for a warm-up and a measured window,")
    assert f"train it: bash {tmp_path / 's.launch.sh'}\n" in done.stderr and "as probed" not in done.stderr


def test_a_replay_of_measurements_runs_its_probe_again(studies, tmp_path):
    done = autotune_main("export", studies["replayed"], "-o", tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    assert _purpose(tmp_path / "r.launch.sh") == ("# Runs the probe again: trains the autotune model with r.json "
                                                  "(measured time, measured energy) for a warm-up and a measured window,")
    assert f"train it as probed: bash {tmp_path / 'r.launch.sh'}\n" in done.stderr


def test_measurements_are_counted_by_their_source(studies, tmp_path):
    count = len(studies["records"].read_text().splitlines())
    assert studies["export"].stdout.startswith(f"{studies['records']}: {count} simulated results (replay with ")
    again = autotune_main("export", studies["replayed"], "--measurements", "-")
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith(f"{count} probe results on standard output"), again.stderr


def test_a_measurements_file_kept_says_what_it_holds_by_source(studies, tmp_path):
    """It said "already holds 4 probe results (perhaps the only copy of measurements ...)" of a simulated study's
    records; a simulation gives them again, where probe results may be the only copy."""
    count = len(studies["records"].read_text().splitlines())
    for study, held in (("simulated", f"{count} simulated results; give another"),
                        ("replayed", f"{count} probe results (perhaps the only copy of measurements taken elsewhere); ")):
        records = tmp_path / f"{study}.jsonl"
        assert autotune_main("export", studies[study], "--measurements", records).returncode == 0
        kept = autotune_main("export", studies[study], "--measurements", records)
        assert kept.returncode == 2 and f"--measurements {records} already holds {held}" in kept.stderr, kept.stderr


def test_a_file_of_both_sources_says_how_many_of_each():
    from autotune.commands.export import _results_text

    records = [{"source": "measured"}, {"source": "estimated"}, {"source": "simulated"}]
    assert _results_text(records) == "3 results (2 probe results, 1 simulated)"
    assert _results_text(records[2:]) == "1 simulated result" and _results_text([]) == "0 probe results"
