"""A measurements file, or a results folder holding one and no study.db, given to calibrate as RUN_DIR points at the
replay route, as `--reference FILE` does: one line, exit 2 (trial64 #9: "pass the --out directory of an `autotune
run`", which a colleague's committed results are not)."""

import json

import pytest

from tests.cli import autotune_main

RECORD = {"params": {"zero_stage": 3}, "status": "ok", "time_s": 9.0}


@pytest.mark.parametrize("as_folder", [False, True])
def test_measurements_given_as_a_run_directory_say_to_replay_them(tmp_path, as_folder):
    results = tmp_path / "my results"
    results.mkdir()
    measurements = results / "measurements.jsonl"
    measurements.write_text(json.dumps(RECORD) + "\n")
    given = results if as_folder else measurements
    refused = autotune_main("calibrate", given, "--hardware", "h100-sxm", "--no-loo")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    what = "holds measurements.jsonl but no study.db" if as_folder else "is a measurements file"
    assert f"{given} {what}" in refused.stderr
    assert f"autotune run --backend replay --measurements '{measurements}'" in refused.stderr
    assert "then `autotune calibrate DIR`" in refused.stderr


def test_a_file_that_holds_no_measurements_is_still_no_run_directory(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("nothing\n")
    refused = autotune_main("calibrate", other, "--no-loo")
    assert refused.returncode == 2 and "is a file, not a run directory" in refused.stderr
    assert "replay" not in refused.stderr
