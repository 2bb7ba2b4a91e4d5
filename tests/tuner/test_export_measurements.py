"""What `autotune export RUN --measurements FILE` writes, `autotune run --backend replay --measurements FILE` reads
(a newcomer's trial: a study of 1e12 samples, which run takes, exported energies past the 1e12 kJ the replay reader
took as the most, and its own export could not be replayed)."""

import json

import pytest

from tests.cli import autotune, autotune_main

HUGE = ("--model", "32b", "--nodes", "4", "--samples", str(10**12))


@pytest.fixture(scope="module")
def huge_study(tmp_path_factory):
    out = tmp_path_factory.mktemp("huge") / "run"
    result = autotune_main("run", *HUGE, "--trials", "3", "--backend", "simulate", "--out", out, "-q")
    assert result.returncode == 0, result.stderr
    return out


def test_an_export_of_a_study_of_many_samples_replays(huge_study, tmp_path):
    records = tmp_path / "huge.jsonl"
    exported = autotune("export", huge_study, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    energies = [json.loads(line)["energy_kj"] for line in records.read_text().splitlines()]
    assert max(energies) > 1e12  # what the reader refused
    replayed = autotune("run", *HUGE, "--backend", "replay", "--measurements", records, "--out", tmp_path / "again", "-q")
    assert replayed.returncode == 0, replayed.stderr
    pareto = json.loads((tmp_path / "again" / "pareto.json").read_text())
    assert sorted(p["energy_kj"] for p in pareto["feasible"]) == pytest.approx(sorted(energies))


@pytest.mark.parametrize("key, value", [("energy_kj", 1e19), ("time_s", 1e300), ("tflops", 2e12), ("peak_mem_gib", 2e12)])
def test_a_figure_past_any_training_is_still_a_damaged_record(tmp_path, key, value):
    from autotune.backends.replay import checked_record
    from autotune.errors import ConfigError

    params = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "none", "sp_degree": 1,
              "micro_batch": 1, "nodes": 1}
    record = {"params": params, "status": "ok", "time_s": 10.0, "energy_kj": 1.0, key: value}
    with pytest.raises(ConfigError, match=f"{key} = .* is out of range"):
        checked_record("line 1", record)


def test_export_writes_no_record_a_replay_would_refuse(huge_study, tmp_path, monkeypatch):
    """Export checks each record with the replay reader's own check: where the two disagree again, the export is one
    line and no file, not a file whose replay fails later, perhaps on another cluster."""
    from autotune.backends import replay

    monkeypatch.setattr(replay, "MAX_SOLUTION_FIGURE", 1e12)  # the bound as it was
    records = tmp_path / "huge.jsonl"
    refused = autotune_main("export", huge_study, "--measurements", records)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"--measurements {records}: not written: trial " in refused.stderr
    assert "energy_kj = " in refused.stderr and "which a replay of it would refuse" in refused.stderr
    assert "record format" not in refused.stderr and not records.exists()


def test_timeouts_and_set_up_failures_are_left_out_of_the_measurements(tmp_path):
    """A timeout is the probe settings' (a resume with a longer --probe-timeout probes it again) and a set-up failure
    the cluster's; exported as "failed", a replay held them final, as the candidates' own (trial 54 F9)."""
    import sqlite3

    out = tmp_path / "run"
    ran = autotune_main("run", "--model", "32b", "--nodes", "4", "--trials", "4", "--backend", "simulate", "--out", out, "-q")
    assert ran.returncode == 0, ran.stderr
    timeout = {"status": "timeout", "source": "measured", "energy_source": "unavailable",
               "error": "no result within 1 s: killed the probe's process group",
               "details": {"launcher": "torchrun", "exit_code": None}}
    failed = {**timeout, "status": "failed", "error": "the probe exited with status 1 without writing a result",
              "details": {"launcher": "torchrun", "exit_code": 1}}
    with sqlite3.connect(out / "study.db") as db:  # a launch study's records, on a simulated one (finished trials)
        ids = [row[0] for row in db.execute("SELECT trial_id FROM trials ORDER BY number")]
        for trial_id, result in ((ids[1], timeout), (ids[2], failed)):
            db.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND key = 'result'",
                       (json.dumps(result), trial_id))
        db.execute("INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES (?, 'setup_failure', 'true')",
                   (ids[2],))
        # A launch study's records are measured: in a study of the simulate backend, which never gives such, they are
        # no probe of it (study/foreign.py). A replay's may be either.
        db.execute("UPDATE study_user_attributes SET value_json = ? WHERE key = 'backend'",
                   (json.dumps({"name": "replay", "reason": ""}),))
    records = tmp_path / "m.jsonl"
    exported = autotune("export", out, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    assert len(records.read_text().splitlines()) == 2
    assert all(json.loads(line)["status"] == "ok" for line in records.read_text().splitlines())
    assert exported.stderr.count("\n") == 1, exported.stderr
    assert ("2 probe results left out: they timed out (trial 1) or failed on the set-up (trial 2), which says nothing "
            "of the candidates") in exported.stderr
    assert "longer --probe-timeout" in exported.stderr and f"{records}: 2 simulated results" in exported.stdout


def _damage_result(out, number, value):
    import sqlite3

    with sqlite3.connect(out / "study.db") as db:
        trial_id = db.execute("SELECT trial_id FROM trials WHERE number = ?", (number,)).fetchone()[0]
        db.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND key = 'result'",
                   (json.dumps(value), trial_id))


@pytest.fixture
def small_study(tmp_path):
    out = tmp_path / "run"
    ran = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--backend", "simulate", "--out", out, "-q")
    assert ran.returncode == 0, ran.stderr
    return out


@pytest.mark.parametrize("value", ["x", [1]])
def test_a_result_that_is_not_an_object_is_left_out_in_one_line(small_study, tmp_path, value):
    """A damaged `result` attribute was a traceback (trial 58 F2); it is left out, and said, and the rest written."""
    _damage_result(small_study, 1, value)
    records = tmp_path / "m.jsonl"
    exported = autotune_main("export", small_study, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    assert "Traceback" not in exported.stderr and exported.stderr.count("\n") == 1, exported.stderr
    assert ("1 trial left out of the measurements as no probe of this study (as of the search, the front and the "
            f"picks): trial 1 (its result = {json.dumps(value)} is not a probe's record (an object): added or edited by "
            "hand)\n") == exported.stderr
    assert len(records.read_text().splitlines()) == 2


@pytest.mark.parametrize("status", [5, None, "done"])
def test_a_result_whose_status_is_unknown_is_left_out_in_one_line(small_study, tmp_path, status):
    """A status of another type was left out silently (trial 58 F3); it is said, as the timed-out ones are."""
    import sqlite3

    with sqlite3.connect(small_study / "study.db") as db:
        trial_id = db.execute("SELECT trial_id FROM trials WHERE number = 1").fetchone()[0]
        result = json.loads(db.execute("SELECT value_json FROM trial_user_attributes WHERE trial_id = ? AND key = "
                                       "'result'", (trial_id,)).fetchone()[0])
    _damage_result(small_study, 1, {**result, "status": status})
    records = tmp_path / "m.jsonl"
    exported = autotune_main("export", small_study, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.count("\n") == 1, exported.stderr
    assert f"trial 1 (its result.status = {json.dumps(status)} is not one of ok, oom, " in exported.stderr
    assert len(records.read_text().splitlines()) == 2


def test_measurements_given_twice_is_refused_as_an_output_given_twice(small_study, tmp_path):
    """The later one silently won (trial 58 F8), as -o given twice once did."""
    first, second = tmp_path / "m.jsonl", tmp_path / "m2.jsonl"
    refused = autotune_main("export", small_study, "--measurements", first, "--measurements", second)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert f"argument --measurements: the output is given twice ({first}, then {second}); give it once" in refused.stderr
    assert not first.exists() and not second.exists()


def test_the_measured_default_power_limit_is_kept_through_export_and_replay(tmp_path):
    """A launch probe that set a limit keeps the default NVML reported (launch.measured_default_limit), and the report
    gives the pick's limit in watts of it; its export dropped it, and the replayed report gave the profile's watts."""
    import sqlite3

    study = ("--model", "32b", "--nodes", "4")
    out = tmp_path / "run"
    ran = autotune_main("run", *study, "--trials", "5", "--backend", "simulate", "--out", out, "-q")
    assert ran.returncode == 0, ran.stderr
    with sqlite3.connect(out / "study.db") as db:  # what the launch backend writes in a trial that set a limit
        for trial_id, value in db.execute("SELECT trial_id, value_json FROM trial_user_attributes WHERE key = 'result'"
                                          ).fetchall():
            result = json.loads(value)
            result["details"] = {**(result.get("details") or {}), "default_power_limit_w": 660.0}
            db.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND key = 'result'",
                       (json.dumps(result), trial_id))
    records = tmp_path / "m.jsonl"
    exported = autotune_main("export", out, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    assert {json.loads(line)["default_power_limit_w"] for line in records.read_text().splitlines()} == {660.0}
    replayed = autotune_main("run", *study, "--backend", "replay", "--measurements", records, "--out", tmp_path / "again")
    assert replayed.returncode == 0, replayed.stderr
    assert "of the 660 W default NVML reported on the probe's devices" in replayed.stdout
    assert "on the gh200 profile" not in replayed.stdout.split("Pareto front")[1].split("power limit of the fastest")[0]


@pytest.mark.parametrize("value, problem", [
    ("660", 'default_power_limit_w = "660" is not a number'), (True, "default_power_limit_w = true is not a number"),
    ([660], "default_power_limit_w = [660] is not a number"), (0, "default_power_limit_w = 0 is out of range"),
    (-660.0, "default_power_limit_w = -660.0 is out of range"), (float("nan"), "default_power_limit_w = NaN is not finite"),
    (660000.0, "default_power_limit_w = 660000.0 is out of range; it must be a number > 0 and <= 100000"),
])
def test_a_records_default_power_limit_is_checked(tmp_path, value, problem):
    from autotune.backends.replay import checked_record
    from autotune.errors import ConfigError

    params = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "none", "sp_degree": 1,
              "micro_batch": 1, "nodes": 1, "power_limit": 0.7}
    with pytest.raises(ConfigError) as refused:
        checked_record("line 1", {"params": params, "status": "ok", "time_s": 10.0, "default_power_limit_w": value})
    assert str(refused.value).startswith(f"line 1: {problem}") and "\n" not in str(refused.value)


def test_a_replay_that_ends_with_its_recording_says_so_as_its_report_does(tmp_path):
    """A replay whose --trials equals its record count stopped at the budget before its stop rule was asked: the report
    said "converged after 5 probes" (at the end of the recording), and the run printed no line of it as it stopped.
    Both now say that the recording ended, and how little of the space it holds (the words "converged" and "no
    unprobed valid candidate" were a whole-space search's)."""
    study = ("--model", "32b", "--nodes", "4")
    out, records = tmp_path / "run", tmp_path / "m.jsonl"
    assert autotune_main("run", *study, "--trials", "5", "--backend", "simulate", "--out", out, "-q").returncode == 0
    assert autotune_main("export", out, "--measurements", records).returncode == 0
    count = len(records.read_text().splitlines())
    replayed = autotune_main("run", *study, "--backend", "replay", "--measurements", records, "--trials", count,
                             "--out", tmp_path / "again")
    assert replayed.returncode == 0, replayed.stderr
    report = json.loads((tmp_path / "again" / "pareto.json").read_text())["search"]["converged"]
    assert report["probes"] == count and report["at_end_of_recording"] is True and report["recorded"] == count
    ended = (f"stopped after {count} probes: no recorded candidate is left to replay ({count} of the "
             f"{count + report['unrecorded']} valid candidates were recorded; the other {report['unrecorded']} were not "
             "measured, so the front is the recorded candidates' front only, not exhaustive)")
    assert f"{ended}; the report's `search:` line says what the model predicts of the others" in replayed.stderr
    assert f"search: {ended}; a prediction, not a measurement: the model" in " ".join(replayed.stdout.split())
    assert "converged" not in replayed.stderr


def test_the_kept_result_of_a_trial_marked_fail_by_hand_is_written_and_named(small_study, tmp_path):
    """trial68 #17: a FAIL trial that keeps its probe's result (the report: "interrupted: its probe's result is kept")
    was left out of the measurements without a word; a study killed after its last probe lost that measurement."""
    import sqlite3

    unmarked = tmp_path / "unmarked.jsonl"
    assert autotune_main("export", small_study, "--measurements", unmarked).returncode == 0
    with sqlite3.connect(small_study / "study.db") as db:
        complete = [n for (n,) in db.execute("SELECT number FROM trials WHERE state = 'COMPLETE' ORDER BY number")]
        db.execute("UPDATE trials SET state = 'FAIL' WHERE number = ?", (complete[-1],))
    records = tmp_path / "m.jsonl"
    exported = autotune_main("export", small_study, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    assert records.read_text() == unmarked.read_text()  # the same records as before the mark: none lost
    assert f", one the kept result of interrupted trial {complete[-1]} (replay with" in exported.stdout, exported.stdout
