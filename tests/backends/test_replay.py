"""The replay backend: recorded results looked up, every value checked where it is read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autotune.backends.replay import ReplayBackend, load_measurements, measurement_record, model_sizes, profile_of
from autotune.errors import ConfigError
from autotune.hardware import load_hardware
from autotune.models import PRESETS

KNOBS_OLD = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute",
             "sp_degree": 1, "micro_batch": 1, "nodes": 4}


OK = {"params": KNOBS_OLD, "status": "ok", "time_s": 1.0}
STUDY = {"model": "7b", "hardware": "gh200", "gpus_per_node": 4, "frames": 60, "text_tokens": 256, "global_batch": 64,
         "samples": 2048, "precision": "bf16"}


def _write(tmp_path, records, name="m.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _two_records(first: dict, second: dict) -> list[dict]:
    """Records of two candidates: `first` of KNOBS_OLD, `second` of it at micro-batch 2 (their params set here)."""
    return [{**first, "params": KNOBS_OLD}, {**second, "params": {**KNOBS_OLD, "micro_batch": 2}}]


def test_a_record_without_the_device_knobs_means_untouched(tmp_path, make_candidate):
    path = _write(tmp_path, [{"params": KNOBS_OLD, "status": "ok", "time_s": 100.0, "energy_kj": 500.0, "tflops": 300}])
    backend = ReplayBackend(path)
    result = backend.evaluate(make_candidate(**KNOBS_OLD))
    assert result.ok and result.time_s == 100.0 and result.energy_kj == 500.0 and result.tflops == 300
    assert result.source == "measured" and result.energy_source == "measured"  # the default label
    other = backend.evaluate(make_candidate(**KNOBS_OLD, power_limit=0.8))
    assert other.status == "failed" and "no record" in other.error and str(path) in other.error


def test_labels_are_kept(tmp_path, make_candidate):
    records = [
        {"params": KNOBS_OLD, "status": "ok", "time_s": 100.0, "energy_kj": 500.0, "source": "estimated"},
        {"params": {**KNOBS_OLD, "micro_batch": 2}, "status": "oom", "source": "simulated"},
    ]
    backend = ReplayBackend(_write(tmp_path, records))
    estimated = backend.evaluate(make_candidate(**KNOBS_OLD))
    assert (estimated.source, estimated.energy_source) == ("measured", "estimated")
    oom = backend.evaluate(make_candidate(**{**KNOBS_OLD, "micro_batch": 2}))
    assert oom.status == "oom" and oom.time_s is None and oom.energy_source == "unavailable"
    assert oom.error == "out of memory in the replayed record"  # not "recorded as oom", read as "oom: recorded as oom"


@pytest.mark.parametrize(
    "record, words",
    [
        ({"params": KNOBS_OLD, "status": "ok", "time_s": "fast", "energy_kj": 1.0}, ["line 2", "time_s", '"fast"']),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": -1.0, "energy_kj": 1.0}, ["line 2", "time_s", "out of range"]),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_kj": 1e308}, ["line 2", "energy_kj", "out of range"]),
        ({"params": {**KNOBS_OLD, "zero_stage": 4}, "status": "ok", "time_s": 1.0}, ["line 2", "zero_stage", "4"]),
        ({"params": {**KNOBS_OLD, "nodes": 0}, "status": "ok", "time_s": 1.0}, ["line 2", "nodes"]),
        ({"params": {**KNOBS_OLD, "power_limit": 1.5}, "status": "ok", "time_s": 1.0}, ["line 2", "power_limit"]),
        ({"params": {"zero_stage": 3}, "status": "ok", "time_s": 1.0}, ["line 2", "lacks", "micro_batch"]),
        ({"params": KNOBS_OLD, "status": "crashed"}, ["line 2", "status", "crashed"]),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "source": "guessed"}, ["line 2", "source"]),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "enrgy_kj": 1.0}, ["line 2", "enrgy_kj"]),
        ({"params": KNOBS_OLD, "status": "ok"}, ["line 2", "time_s"]),
        # a finished probe's figures on a record marked oom or failed (by hand, perhaps the wrong record)
        ({**OK, "status": "oom", "energy_kj": 2.0}, ["line 2", "an oom record holds time_s, energy_kj", 'set its status to "ok"']),
        ({"params": KNOBS_OLD, "status": "failed", "tflops": 3.0}, ["line 2", "a failed record", "or drop tflops"]),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_not_measured": "cpu"}, ["line 2", "energy_not_measured", '"cpu"']),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_not_measured": ["disk"]}, ["line 2", "energy_not_measured", '"disk"']),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_not_measured": [1]}, ["line 2", "energy_not_measured"]),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_not_measured": {"cpu": True}}, ["line 2", "energy_not_measured"]),
        ({"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_not_measured": [None]}, ["line 2", "energy_not_measured"]),
        # what the figures were measured for: every part, each of its type and range
        ({**OK, "study": "7b"}, ["line 2", 'study = "7b" is not an object of model, hardware']),
        ({**OK, "study": [STUDY]}, ["line 2", "is not an object"]),
        ({**OK, "study": {k: v for k, v in STUDY.items() if k != "samples"}}, ["line 2", "study lacks samples"]),
        ({**OK, "study": {**STUDY, "nodes": 4}}, ["line 2 study", "unknown key nodes"]),
        ({**OK, "study": {**STUDY, "model": ""}}, ["line 2", 'study.model = "" is not a name']),
        ({**OK, "study": {**STUDY, "model": 7}}, ["line 2", "study.model = 7 is not a name"]),
        ({**OK, "study": {**STUDY, "hardware": None}}, ["line 2", "study.hardware = null is not a name"]),
        ({**OK, "study": {**STUDY, "gpus_per_node": 0}}, ["line 2", "study.gpus_per_node = 0", ">= 1"]),
        ({**OK, "study": {**STUDY, "gpus_per_node": 1.5}}, ["line 2", "study.gpus_per_node = 1.5", "whole number"]),
        ({**OK, "study": {**STUDY, "frames": True}}, ["line 2", "study.frames = true"]),
        ({**OK, "study": {**STUDY, "global_batch": "64"}}, ["line 2", 'study.global_batch = "64"']),
        ({**OK, "study": {**STUDY, "samples": -2048}}, ["line 2", "study.samples = -2048"]),
        ({**OK, "study": {**STUDY, "text_tokens": float("nan")}}, ["line 2", "study.text_tokens = NaN"]),
        ({**OK, "study": {**STUDY, "precision": ""}}, ["line 2", 'study.precision = "" is not a name']),
        # Trial 41: a finished probe's zero work or memory, a float count, and the space list's keys were taken.
        ({**OK, "tflops": 0}, ["line 2", "tflops = 0 is out of range; it must be a number > 0"]),
        ({**OK, "peak_mem_gib": 0.0}, ["line 2", "peak_mem_gib = 0.0 is out of range"]),
        # Below compare's least figure, so a replayed study's report was refused by compare (trial 58): one bound.
        ({**OK, "time_s": 5e-13}, ["line 2", "time_s = 5e-13 is out of range; it must be a number >= 1e-12 and <= 1e+18"]),
        ({**OK, "energy_kj": 1e-320}, ["line 2", "energy_kj = 1e-320 is out of range; it must be a number >= 1e-12"]),
        ({**OK, "study": {**STUDY, "frames": 60.0}}, ["line 2", "study.frames = 60.0", "without a decimal point"]),
        # Trial 63 #22: 1e13 was told "(10000000000000)", a number past what the flag that gives it takes.
        ({**OK, "study": {**STUDY, "gpus_per_node": 1e13}}, ["line 2", "study.gpus_per_node = 10000000000000.0 is not a "
          "whole number; write it without a decimal point or an exponent, and it is too large: it must be a whole number "
          ">= 1 and <= 1000000000000"]),
        ({**OK, "valid": False}, ["line 2", "a candidate listed invalid (valid false) holds time_s"]),
        ({**OK, "valid": "yes"}, ["line 2", 'valid = "yes" is not true or false']),
        ({**OK, "reason": 5}, ["line 2", "reason = 5 is not a text"]),
        (None, ["line 2", "a record must be a JSON object, not null"]),
    ],
)
def test_bad_values_name_file_line_and_key(tmp_path, record, words):
    good = {"params": {**KNOBS_OLD, "micro_batch": 4}, "status": "ok", "time_s": 1.0, "energy_kj": 1.0}
    path = _write(tmp_path, [good, record])
    with pytest.raises(ConfigError) as error:
        load_measurements(path)
    message = str(error.value)
    assert "\n" not in message and str(path) in message
    for word in words:
        assert word in message


def test_torn_json_and_duplicates_are_refused(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"params": ' + "\n")
    with pytest.raises(ConfigError, match="line 1: not valid JSON"):
        load_measurements(path)
    record = {"params": KNOBS_OLD, "status": "ok", "time_s": 1.0, "energy_kj": 1.0}
    with pytest.raises(ConfigError, match="line 2: a second record") as refused:
        load_measurements(_write(tmp_path, [record, record]))
    assert "has no" not in str(refused.value)  # a true duplicate of a file from before the device knobs:
    assert "(neither names power_limit (taken as 1.0), sm_clock_mhz (taken as max): records that differ only there " \
           "read as one)" in str(refused.value)  # ... or two power limits whose knob was deleted from both
    # A device knob deleted by hand is the untouched setting's record again: the line says which record lacks what.
    full = {**record, "params": {**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}}
    lacking = {**record, "params": {**KNOBS_OLD, "sm_clock_mhz": "max"}}
    for records, said in (([full, lacking], "line 2 has no power_limit (taken as 1.0)"),
                          ([lacking, full], "line 1 has no power_limit (taken as 1.0)")):
        with pytest.raises(ConfigError, match=r"line 2: a second record for the same knobs as .* line 1 \(") as refused:
            load_measurements(_write(tmp_path, records))
        assert said in str(refused.value)
    path.write_bytes(json.dumps({**record, "status": "failed", "error": "dXpassement"}).encode().replace(b"X", b"\xe9"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at offset \d+\); save it as UTF-8"):
        load_measurements(path)  # a Latin-1 error message pasted from a log


def test_a_key_given_twice_and_a_reason_that_is_no_text_are_refused(tmp_path):
    """Trial 39 #8: `"time_s": 785.1, "time_s": 1.0` replayed as 1 s; `"error": 42` was dropped."""
    path = tmp_path / "twice.jsonl"
    path.write_text('{"params": %s, "status": "ok", "time_s": 785.1, "time_s": 1.0}\n' % json.dumps(KNOBS_OLD))
    with pytest.raises(ConfigError, match=r"line 1: not valid JSON \(key time_s appears more than once\)"):
        load_measurements(path)
    path.write_text(json.dumps([{**OK, "energy_kj": 1.0, "energy_kj ": 2.0}]).replace('"energy_kj "', '"energy_kj"'))
    with pytest.raises(ConfigError, match=r"not valid JSON \(key energy_kj appears more than once\)"):
        load_measurements(path)  # the JSON list `space --simulate --json` prints
    failed = {"params": KNOBS_OLD, "status": "failed", "error": 42}
    with pytest.raises(ConfigError, match=r"line 1: error = 42 is not a text \(the reason the probe failed\)"):
        load_measurements(_write(tmp_path, [failed]))


def test_a_space_list_without_figures_and_a_pretty_printed_record_say_what_to_do(tmp_path):
    """Trial 39 nit 15: `autotune space --json` (no --simulate) read "an ok record needs time_s"; a record spread over
    lines read "not valid JSON" alone."""
    listed = tmp_path / "space.json"
    listed.write_text(json.dumps([{"params": KNOBS_OLD, "valid": False, "reason": "x"}, {"params": KNOBS_OLD, "valid": True}]))
    with pytest.raises(ConfigError, match=r"entry 2: a candidate `autotune space --json` listed without figures; list them "
                                          r"with `autotune space --simulate --json`"):
        load_measurements(listed)
    spread = tmp_path / "pretty.jsonl"
    spread.write_text(json.dumps(OK, indent=1) + "\n")
    with pytest.raises(ConfigError, match=r"line 1: not valid JSON \(.*\) \(JSON lines: each record is one line\)"):
        load_measurements(spread)


def test_measurements_dash_are_read_from_standard_input(monkeypatch):
    """Trial 39 nit 14: `export --measurements -` wrote to stdout, `run --measurements -` looked for a file named "-"."""
    import io
    import sys

    records = [OK, {"params": {**KNOBS_OLD, "micro_batch": 2}, "status": "oom"}]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())))
    loaded = load_measurements(Path("-"))
    assert sorted(r["status"] for r in loaded.values()) == ["ok", "oom"]
    assert {r["origin"] for r in loaded.values()} == {"measurements - line 1", "measurements - line 2"}


def test_measurements_dash_with_standard_input_closed_is_one_line(tmp_path):
    """Trial 45 §9: `run --backend replay --measurements - <&-` (sys.stdin None) ended in an AttributeError traceback."""
    import os
    import subprocess
    import sys

    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "4", "--out", str(out),
                           "--backend", "replay", "--measurements", "-"],
                          capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.close(0))  # `<&-`
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("autotune run: error: --measurements -: standard input is closed; pipe the records in (`autotune "
                           "export RUN --measurements - | autotune run ... --measurements -`), or pass a file\n")
    assert not out.exists()


def test_a_measurements_file_is_read_within_bounds_and_a_byte_order_mark_is_no_part_of_it(tmp_path, monkeypatch):
    """Trial 37 F15: a 1.5 GB binary file passed by mistake held 3 GB in memory, /dev/zero ended in MemoryError;
    a file an editor on Windows saved with a byte-order mark was refused as "not valid JSON"."""
    from autotune.backends import replay

    record = {"params": KNOBS_OLD, "status": "ok", "time_s": 10.0, "energy_kj": 5.0, "tflops": 100.0}
    marked = tmp_path / "bom.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + json.dumps(record).encode() + b"\n")
    assert len(load_measurements(marked)) == 1
    with pytest.raises(ConfigError, match=r"^--measurements /dev/zero is a device, not a file of records"):
        load_measurements(Path("/dev/zero"))
    monkeypatch.setattr(replay, "MAX_MEASUREMENTS_BYTES", 64)
    with pytest.raises(ConfigError, match=r"is larger than 0 MiB, far more than any study's records"):
        load_measurements(marked)


def test_an_unreadable_measurements_file_is_told_to_be_made_readable(tmp_path, monkeypatch):
    """Trial69 #10: a file whose mode forbids reading was told to "pass an existing file". Root reads any file, so
    the refused read is made here."""
    from autotune.backends import replay

    path = _write(tmp_path, [OK])

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(replay, "open", refused, raising=False)  # the module's open, ahead of the builtin
    with pytest.raises(ConfigError) as refusal:
        load_measurements(path)
    assert str(refusal.value) == (f"cannot read --measurements {path} (Permission denied); make it readable (check its "
                                  "permissions and those of its folders), or pass a readable file")
    monkeypatch.undo()
    with pytest.raises(ConfigError, match=r"\(No such file or directory\); pass an existing file$"):
        load_measurements(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match=r"\(Is a directory\); pass the records file, not a folder$"):
        load_measurements(tmp_path)


def test_the_space_list_is_accepted_and_invalid_entries_skipped(tmp_path):
    rows = [
        {"params": KNOBS_OLD, "valid": True, "reason": None, "peak_mem_gib": 40.0, "time_s": 10.0, "energy_kj": 5.0,
         "tflops": 200.0, "source": "simulated"},
        {"params": {**KNOBS_OLD, "zero_stage": 0}, "valid": False, "reason": "does not fit", "peak_mem_gib": 400.0},
    ]
    path = tmp_path / "space.json"
    path.write_text(json.dumps(rows, indent=1))
    records = load_measurements(path)
    assert len(records) == 1 and next(iter(records.values()))["source"] == "simulated"


def test_measurement_record_round_trips_a_result(tmp_path, make_candidate):
    result = {"status": "timeout", "source": "measured", "energy_source": "unavailable", "error": "no result within 900 s"}
    assert measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, result)["status"] == "failed"
    ok = {"status": "ok", "source": "measured", "energy_source": "estimated", "time_s": 3.0, "energy_kj": 2.0, "tflops": 1.0,
          "peak_mem_gib": None, "details": {"probe_cost": {"time_s": 60.0, "energy_kj": None}}}
    record = measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, ok)
    replayed = ReplayBackend(_write(tmp_path, [record])).evaluate(make_candidate(**KNOBS_OLD))
    assert (replayed.time_s, replayed.energy_kj, replayed.energy_source) == (3.0, 2.0, "estimated")
    assert replayed.details["probe_cost"] == {"time_s": 60.0, "energy_kj": None}


def test_what_a_probe_cost_covers_and_its_noise_are_kept_through_export_and_replay(tmp_path, make_candidate):
    # trial30 #5, #8: the record dropped `energy_scope: window` (the replayed report then called the
    # windows' energy the whole probes') and the spread the probe measured (no saving within noise).
    results = []
    for run, steps_s in enumerate(([1.0, 1.2, 0.8], [2.0, 2.0, 2.0])):
        path = tmp_path / f"result-{run + 1}.json"
        path.write_text(json.dumps({"step_time_s": {"all": steps_s}}))
        results.append({"result_file": str(path), "time_s": 3.0 + run})
    cost = {"time_s": 120.0, "energy_kj": 0.05, "energy_scope": "window", "energy_provenance": "estimated",
            "parts": {"runs": 2, "wall_s": [60.0, 60.0], "window_s": 0.4}}
    ok = {"status": "ok", "source": "measured", "energy_source": "estimated", "time_s": 3.5, "energy_kj": 2.0, "tflops": 1.0,
          "peak_mem_gib": None, "details": {"probe_cost": cost, "repeats": results, "cv": {"time": 0.2, "energy": 0.25}}}
    record = measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, ok)
    assert record["probe_cost"] == {"time_s": 120.0, "energy_kj": 0.05, "energy_scope": "window", "window_s": 0.4,
                                    "energy_provenance": "estimated"}
    assert record["noise"] == {"runs": 2, "time_cv": 0.2, "energy_cv": 0.25, "step_time_cv": pytest.approx(0.2 / 2)}
    replayed = ReplayBackend(_write(tmp_path, [record])).evaluate(make_candidate(**KNOBS_OLD))
    assert replayed.details["probe_cost"] == {"time_s": 120.0, "energy_kj": 0.05, "energy_scope": "window",
                                              "energy_provenance": "estimated", "parts": {"window_s": 0.4}}
    assert replayed.details["cv"] == {"time": 0.2, "energy": 0.25} and len(replayed.details["repeats"]) == 2
    assert replayed.details["step_time_cv"] == pytest.approx(0.1)
    # Exported again from the replayed study: the same record.
    again = measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, replayed.to_dict())
    assert again["probe_cost"] == record["probe_cost"] and again["noise"] == record["noise"]
    # A probe measured once, its result file gone (the run directory moved): no noise to record.
    once = {**ok, "details": {"probe_cost": cost, "repeats": [{"result_file": str(tmp_path / "gone.json")}]}}
    assert "noise" not in measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, once)


@pytest.mark.parametrize("extra, words", [
    ({"probe_cost": {"time_s": 1.0, "energy_kj": 1.0, "energy_scope": "probe"}}, ["probe_cost", "energy_scope", '"probe"']),
    ({"probe_cost": {"time_s": 1.0, "energy_kj": 1.0, "window_s": -1}}, ["probe_cost", "window_s", "out of range"]),
    ({"noise": 0.1}, ["noise = 0.1 is not an object"]),
    ({"noise": {"time_cv": "big"}}, ["noise", "time_cv", '"big"']),
    ({"noise": {"runs": 0}}, ["noise", "runs"]),
    ({"noise": {"spread": 1}}, ["noise", "unknown key spread"]),
    # Trial 39 #8: a misspelt cost key made the tuning cost "unknown" without a word.
    ({"probe_cost": {"time_s": 180.0, "energy_KJ": 350.0}}, ["probe_cost", "unknown key energy_KJ", "energy_kj"]),
])
def test_a_records_cost_scope_and_noise_are_checked(tmp_path, extra, words):
    with pytest.raises(ConfigError) as error:
        load_measurements(_write(tmp_path, [{**OK, **extra}]))
    assert all(w in str(error.value) for w in words), str(error.value)


def test_what_measured_energy_left_out_is_kept_through_export_and_replay(tmp_path, make_candidate):
    # A GPU node with NVML alone: the probe's energy block lists the parts no sensor saw.
    ok = {"status": "ok", "source": "measured", "energy_source": "measured", "time_s": 3.0, "energy_kj": 2.0, "tflops": 1.0,
          "peak_mem_gib": 50.0, "details": {"energy": {"components": {"gpu_j": 2000.0, "not_measured": ["cpu", "memory_interconnect"]}}}}
    record = measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, ok)
    assert record["energy_not_measured"] == ["cpu", "memory_interconnect"]
    replayed = ReplayBackend(_write(tmp_path, [record])).evaluate(make_candidate(**KNOBS_OLD))
    assert replayed.details["energy"]["components"]["not_measured"] == ["cpu", "memory_interconnect"]
    whole_node = measurement_record({**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}, {**ok, "details": {}})
    assert "energy_not_measured" not in whole_node


@pytest.mark.parametrize("knob, value, words", [
    # Accepted before (1.0 matched no candidate's key; 2.0 and 1600.0 were read as 2 and 1600): now refused as a space file refuses them.
    ("zero_stage", 1.0, ["params.zero_stage = 1.0 is not a whole number; write it without a decimal point or an exponent (1)"]),
    ("nodes", 2.0, ["params.nodes = 2.0 is not a whole number; write it without a decimal point or an exponent (2)"]),
    ("sm_clock_mhz", 1600.0, ["params.sm_clock_mhz = 1600.0 is not a whole number; write it without a decimal point or an exponent (1600)"]),
    ("micro_batch", 10**13, ["params.micro_batch = 10000000000000 is not a whole number >= 1 and <= 1000000000000"]),
    ("nodes", 1e13, ["params.nodes = 10000000000000.0 is not a whole number; write it without a decimal point or an exponent, "
                     "and it is too large: it must be a whole number >= 1 and <= 1000000000000"]),  # trial 63 #22
    ("sm_clock_mhz", 10**13, ["params.sm_clock_mhz = 10000000000000"]),
    # Refused before too, shown as the file writes them.
    ("optimizer_offload", "cpu", ['params.optimizer_offload = "cpu" is not one of the allowed values "none", "sync", "async"']),
    ("activation_checkpointing", True, ["params.activation_checkpointing = true is not one of"]),
    ("power_limit", 0, ["params.power_limit = 0 is not a fraction of the default power limit in (0, 1]"]),
    ("sm_clock_mhz", "MAX", ['params.sm_clock_mhz = "MAX" is not "max"']),
])
def test_knob_values_are_refused_as_a_space_file_refuses_them(tmp_path, knob, value, words):
    path = _write(tmp_path, [{"params": {**KNOBS_OLD, knob: value}, "status": "ok", "time_s": 1.0}])
    with pytest.raises(ConfigError) as error:
        load_measurements(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"measurements {path} line 1: ") and message.endswith("(--measurements) for the record format")
    for word in words:
        assert word in message


def test_a_power_limit_of_1_is_the_untouched_limit(tmp_path):
    records = load_measurements(_write(tmp_path, [{"params": {**KNOBS_OLD, "power_limit": 1}, "status": "ok", "time_s": 1.0}]))
    assert next(iter(records.values()))["params"]["power_limit"] == 1.0


def test_a_file_for_another_node_count_is_refused_before_the_study_opens(tmp_path):
    # Records of 4-node candidates replayed as a 1-node study: every probe would fail with "no record".
    from tests.cli import autotune_main

    path = _write(tmp_path, [{"params": KNOBS_OLD, "status": "ok", "time_s": 100.0, "energy_kj": 500.0, "tflops": 300}])
    run_dir = tmp_path / "run"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", str(path),
                    "--trials", "5", "--out", str(run_dir))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "none of its 1 record is a valid candidate of this study" in lines[0]
    assert "--nodes 4" in lines[0] and not run_dir.exists()
    # A study whose node range holds the file's 4 nodes replays it.
    ok = autotune_main("run", "--model", "32b", "--nodes", "2-8", "--backend", "replay", "--measurements", str(path),
                  "--trials", "2", "--out", str(tmp_path / "range"))
    assert ok.returncode == 0, ok.stderr


def _energy_refusal(backend, allow_estimated: bool) -> str:
    """The one line by which a study ranked by energy is refused the backend's records (it must be refused)."""
    from autotune.backends.select import check_energy_objective
    from autotune.errors import UserError

    with pytest.raises(UserError) as err:
        check_energy_objective(backend, "time,energy", allow_estimated=allow_estimated)
    return str(err.value)


def test_a_file_with_estimated_energy_needs_the_estimate_allowed(tmp_path):
    # Each such replayed probe would fail on its label (no sensor where it was measured), dropping it from
    # the front unseen: refused up front, whether every record or one is estimated.
    from autotune.backends.select import check_energy_objective

    estimated = {"status": "ok", "time_s": 100.0, "energy_kj": 500.0, "source": "estimated"}
    backend = ReplayBackend(_write(tmp_path, _two_records(estimated, {"status": "oom"})))
    assert re.search("every record's energy was estimated.*--allow-estimated-energy", _energy_refusal(backend, False))
    check_energy_objective(backend, "time,energy", allow_estimated=True)
    check_energy_objective(backend, "time", allow_estimated=False)
    measured = {**estimated, "source": "measured"}
    mixed = ReplayBackend(_write(tmp_path, _two_records(estimated, measured), name="mixed.jsonl"))
    assert _energy_refusal(mixed, False) == (
        f"measurements {tmp_path / 'mixed.jsonl'}: 1 of its 2 records' energy was estimated (no sensor where it was "
        "measured; first line 1): pass --allow-estimated-energy to rank by estimated energy, or --objectives time")
    check_energy_objective(mixed, "time,energy", allow_estimated=True)


def test_a_replay_refused_for_estimated_energy_is_its_error_line_alone(tmp_path):
    # trial67 #5: "searching the 1 of 684 valid candidates ..." came first, of a search that never starts.
    from tests.cli import autotune_main

    # 7b on 16 GH200s: 300 TFLOP/s per GPU is what ~330 s give its workload, 2000 kJ ~380 W per module.
    estimated = {"status": "ok", "time_s": 330.0, "energy_kj": 2000.0, "tflops": 300, "source": "estimated"}
    params = {**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}  # no warning of knobs or study it lacks
    path = _write(tmp_path, [{**estimated, "params": params, "study": STUDY}])
    run_dir = tmp_path / "run"
    done = autotune_main("run", "--model", "7b", "--nodes", "4", "--backend", "replay", "--measurements", str(path),
                         "--out", str(run_dir))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "every record's energy was estimated" in lines[0], lines
    assert not run_dir.exists()


def test_an_exported_file_replays_only_for_the_study_it_was_measured_for(tmp_path):
    """Records hold knobs, not the model or workload: the `study` export writes beside them refuses a
    replay that would label 7b figures as 32b ones (or 60-frame figures as 30-frame ones)."""
    from tests.cli import autotune_main

    measured = autotune_main("run", "--model", "7b", "--nodes", "2", "--trials", "4", "--out", tmp_path / "run")
    assert measured.returncode == 0, measured.stderr
    path = tmp_path / "m.jsonl"
    assert autotune_main("export", tmp_path / "run", "--measurements", path).returncode == 0
    records = [json.loads(line) for line in path.read_text().splitlines()]
    gh200 = profile_of(load_hardware("gh200"))  # simulated figures: the profile's own (trial64 #2)
    assert records and all(r["study"] == {**STUDY, "model": "7b", "model_sizes": model_sizes(PRESETS["7b"]), "profile": gh200}
                           for r in records)
    for flags, said in [
        (("--model", "32b"), "holds figures for model 7b, not this study's 32b; replay it with --model 7b"),
        (("--model", "7b", "--frames", "30", "--samples", "1024"),
         "holds figures for frames 60, samples 2048, not this study's 30, 1024; replay it with --frames 60 --samples 2048"),
        (("--model", "7b", "--hardware", "h100-sxm"), "replay it with --hardware gh200 --gpus-per-node 4"),
    ]:
        refused = autotune_main("run", *flags, "--nodes", "2", "--backend", "replay", "--measurements", path,
                           "--out", tmp_path / "refused")
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and len(lines) == 1 and said in lines[0], refused.stderr
        assert f"measurements {path} line 1 " in lines[0] and not (tmp_path / "refused").exists()
    replayed = autotune_main("run", "--model", "7b", "--nodes", "2", "--backend", "replay", "--measurements", path,
                        "--out", tmp_path / "replayed")
    assert replayed.returncode == 0, replayed.stderr
    assert "name no study" not in replayed.stdout + replayed.stderr
    # a file without `study` (older exports, a hand-written one) is taken at its word, and says so once
    for record in records:
        record.pop("study")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    anyway = autotune_main("run", "--model", "7b", "--nodes", "2", "--samples", "1024", "--backend", "replay",
                      "--measurements", path, "--out", tmp_path / "anyway")
    assert anyway.returncode == 0, anyway.stderr
    said = " ".join((anyway.stdout + anyway.stderr).split())
    assert said.count("name no study") == 1
    assert "records name no power_limit" not in said  # export writes every knob
    assert (f"measurements {path}: {len(records)} of its {len(records)} records name no study (the model, hardware and "
            "workload they were measured for), so nothing checks that they are this run's --model 7b --hardware gh200") in said


def test_a_simulated_space_list_says_what_study_its_figures_are_for(tmp_path):
    from tests.cli import autotune_main

    listed = autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    study = {**STUDY, "model": "7b", "model_sizes": model_sizes(PRESETS["7b"]), "profile": profile_of(load_hardware("gh200"))}
    assert all(r["study"] == study for r in rows if r["valid"]) and not any("study" in r for r in rows if not r["valid"])
    path = tmp_path / "space.json"
    path.write_text(listed.stdout)
    refused = autotune_main("run", "--model", "7b", "--nodes", "1", "--frames", "30", "--backend", "replay", "--measurements", path,
                       "--out", tmp_path / "run")
    assert refused.returncode == 2 and "holds figures for frames 60, not this study's 30; replay it with --frames 60" in refused.stderr


@pytest.mark.parametrize("sampler", ["guided", "tpe"])
def test_a_partial_file_is_searched_over_its_recorded_candidates_only(tmp_path, sampler):
    """A guided study's export records a dozen of hundreds of candidates: replayed, the study searches
    those, and no trial of the --trials budget is spent on a candidate without a record."""
    import optuna

    from autotune.candidate import params_key
    from tests.cli import autotune_main

    listed = json.loads(autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json").stdout)
    recorded = [e for e in listed if e["valid"]][::80]  # 13 of 980, spread over the space
    path = _write(tmp_path, [{k: e[k] for k in ("params", "time_s", "energy_kj", "tflops")} | {"status": "ok"}
                             for e in recorded])
    run_dir = tmp_path / "run"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", str(path),
                    "--trials", "30", "--sampler", sampler, "--out", str(run_dir))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert f"searching the {len(recorded)} of 980 valid candidates the replay backend can evaluate; the others: no record in" in said
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{run_dir / 'study.db'}")
    keys = {params_key(e["params"]) for e in recorded}
    ran = [t for t in study.trials if "result" in t.user_attrs]
    assert ran and {params_key(t.user_attrs["candidate"]["knobs"]) for t in ran} <= keys
    assert all(t.user_attrs["result"]["status"] == "ok" for t in ran)
    if sampler == "tpe":  # the budget outlasts the file: every recorded candidate is replayed, once
        assert len(ran) == len(recorded)
        # Its proposals of unrecorded candidates are refused as invalid, and counted as what they are (trial 39 #10).
        unrecorded = sum(1 for t in study.trials if str(t.user_attrs.get("reason", "")).startswith("no record"))
        assert unrecorded and f"invalid (of them {unrecorded} with no record in the replayed file)" in " ".join(done.stdout.split())
        assert f"; {unrecorded} of them no record in the replayed file)" in (run_dir / "report.html").read_text()


def test_a_record_without_energy_is_not_ranked_and_the_reason_names_only_what_is_missing(tmp_path):
    import optuna

    from tests.cli import autotune_main

    listed = json.loads(autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json").stdout)
    entry, other = [e for e in listed if e["valid"]][:2]
    # Another record has energy: a file where none has is refused before the study opens (check_energy_objective).
    path = _write(tmp_path, [{"params": entry["params"], "status": "ok", "time_s": entry["time_s"]},
                             {"params": other["params"], "status": "ok", "time_s": other["time_s"],
                              "energy_kj": other["energy_kj"], "source": "measured"}])
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", str(path),
                    "--trials", "2", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="autotune", storage=f"sqlite:///{tmp_path / 'run' / 'study.db'}").trials
    (trial,) = [t for t in trials if t.user_attrs["candidate"]["knobs"] == entry["params"]]
    assert trial.user_attrs["reason"] == "no energy figure to rank by (--objectives time ranks by time alone)"  # its time_s was given


def test_records_without_a_device_knob_are_replayed_untouched_and_said_once(tmp_path):
    from tests.cli import autotune_main

    listed = autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json")
    rows = [r for r in json.loads(listed.stdout) if r["valid"] and r["params"]["power_limit"] == 1.0]
    for r in rows[:3]:
        del r["params"]["sm_clock_mhz"]
    path = tmp_path / "space.json"
    path.write_text(json.dumps(rows))
    run = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", path, "--trials", "2",
                        "--out", tmp_path / "run")
    said = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, run.stderr
    assert said.count("records name no") == 1
    assert (f"measurements {path}: 3 of its {len(rows)} records name no sm_clock_mhz (taken as max) (first entry 1): "
            "replayed at the untouched setting") in said


def test_a_file_without_energy_is_refused_before_a_study_ranked_by_energy_opens(tmp_path):
    # Each replayed probe would fail on its missing energy, and the run would stop after its first probes
    # calling them failed or timed out, its advice (the same command) a dead end.
    from autotune.backends.select import check_energy_objective

    no_energy = {"status": "ok", "time_s": 1.0, "source": "measured"}
    path = _write(tmp_path, _two_records(no_energy, {"status": "oom"}))
    backend = ReplayBackend(path)
    for allow_estimated in (False, True):
        assert _energy_refusal(backend, allow_estimated) == (
            f"measurements {path}: no record has an energy figure (its study had no sensor or estimate): pass "
            "--objectives time to rank by time alone (with a new --out where this one already holds a study ranked by "
            "energy too)")
    check_energy_objective(backend, "time", allow_estimated=False)
    # One record with energy is enough to rank by it: the others fail alone, as before.
    some = ReplayBackend(_write(tmp_path, _two_records(no_energy, {**OK, "energy_kj": 5.0, "source": "measured"}),
                                name="some.jsonl"))
    check_energy_objective(some, "time,energy", allow_estimated=False)


def test_what_a_peak_memory_figure_is_is_kept_through_export_and_replay(tmp_path, make_candidate):
    # trial60 #8: a CPU study's "mem GiB (process peak RSS)" read "mem GiB (measured)" once replayed, the
    # record keeping the figure but not what it is (a host's resident set, not a device's memory).
    from autotune.memory import measured_device_peak_gib
    from autotune.report.pick_figures import memory_kind
    from autotune.report.table import memory_header

    knobs = {**KNOBS_OLD, "power_limit": 1.0, "sm_clock_mhz": "max"}
    ok = {"status": "ok", "source": "measured", "energy_source": "estimated", "time_s": 3.0, "energy_kj": 2.0,
          "tflops": 1.0, "peak_mem_gib": 0.35, "details": {"peak_mem_kind": "process_peak_rss"}}
    record = measurement_record(knobs, ok)
    assert record["peak_mem_kind"] == "process_peak_rss"
    replayed = ReplayBackend(_write(tmp_path, [record])).evaluate(make_candidate(**KNOBS_OLD)).to_dict()
    assert replayed["details"]["peak_mem_kind"] == "process_peak_rss"
    assert measured_device_peak_gib(replayed) is None  # a host's figure, never taken for the device's

    class Point:  # as report/study_points reads a replayed trial
        source, peak_mem_gib, extra = "measured", 0.35, {"details": replayed["details"]}
    assert memory_kind(Point) == "process peak RSS" and memory_header([Point]) == "mem GiB (process peak RSS)"
    # A record with no figure says no kind; one naming a kind the trainer does not write is refused in one line.
    assert "peak_mem_kind" not in measurement_record(knobs, {**ok, "peak_mem_gib": None})
    bad = _write(tmp_path, [{**record, "peak_mem_kind": "rss"}], name="bad.jsonl")
    with pytest.raises(ConfigError, match=r"line 1: peak_mem_kind = \"rss\" is not one of \"process_peak_rss\", "
                                          r"\"cuda_max_memory_allocated\""):
        ReplayBackend(bad)


def _sized(**changes) -> dict:
    """A record whose study holds 7b's sizes with `changes` ({"llm": {...}} merged into a part, or a part replaced)."""
    sizes = model_sizes(PRESETS["7b"])
    for part, change in changes.items():
        sizes[part] = {**sizes[part], **change} if isinstance(change, dict) else change
    return {**OK, "study": {**STUDY, "model_sizes": sizes}}


@pytest.mark.parametrize("study, words", [
    ({**STUDY, "model_sizes": "7b"}, ['study.model_sizes = "7b" is not an object of llm, vision']),
    ({**STUDY, "model_sizes": [1, 2]}, ["study.model_sizes = [1, 2] is not an object of llm, vision"]),
    ({**STUDY, "model_sizes": 7}, ["study.model_sizes = 7 is not an object"]),
    ({**STUDY, "model_sizes": {"llm": {}}}, ["study.model_sizes lacks vision"]),
    ({**STUDY, "model_sizes": {"llm": {}, "vision": {}, "name": "7b"}}, ["study.model_sizes", "unknown key name"]),
    (_sized(llm={"layers": "28"})["study"], ['study.model_sizes: llm.layers = "28"']),
    (_sized(llm={"layers": 0})["study"], ["study.model_sizes: llm.layers = 0"]),
    (_sized(llm={"layers": 28.5})["study"], ["study.model_sizes: llm.layers = 28.5"]),
    (_sized(llm={"hidden": True})["study"], ["study.model_sizes: llm.hidden = true"]),
    (_sized(llm={"vocab": None})["study"], ["study.model_sizes: llm.vocab = null"]),
    (_sized(llm={"mrope_sections": [16, 24]})["study"], ["study.model_sizes: llm.mrope_sections = [16, 24]"]),
    (_sized(llm={"tie_embeddings": "no"})["study"], ['study.model_sizes: llm.tie_embeddings = "no"']),
    (_sized(vision={"patch": -14})["study"], ["study.model_sizes: vision.patch = -14"]),
    (_sized(vision=None)["study"], ["study.model_sizes: vision = null is not an object"]),
    (_sized(llm={"heads": 27})["study"], ["study.model_sizes: llm.hidden 3584 is not a multiple of llm.heads 27"]),
])
def test_a_records_model_sizes_are_checked_as_a_model_files(tmp_path, study, words):
    path = _write(tmp_path, [{**OK, "study": study}])
    with pytest.raises(ConfigError) as error:
        load_measurements(path)
    message = str(error.value)
    assert "\n" not in message and f"measurements {path} line 1" in message
    assert all(word in message for word in words), message


def test_a_records_model_sizes_are_kept_as_the_study_db_keeps_them(tmp_path):
    """Read back in the shape model_sizes writes, defaults filled in: equal sizes compare equal (a hand-written file
    that leaves rope_theta out is the model with its default)."""
    record = _sized()
    del record["study"]["model_sizes"]["llm"]["rope_theta"]
    (read,) = load_measurements(_write(tmp_path, [record])).values()
    assert read["study"]["model_sizes"] == model_sizes(PRESETS["7b"]) == {
        part: PRESETS["7b"].to_json()[part] for part in ("llm", "vision")}


def test_a_model_of_the_same_name_and_other_sizes_is_refused(tmp_path):
    """trial61 #4: a config.json edited to other sizes that keeps its `_name_or_path` (here a model file that keeps its
    name) was replayed with the other model's figures, without a word; a resume of its run directory refuses it."""
    from tests.cli import autotune_main

    model = {"name": "mine", **model_sizes(PRESETS["tiny"])}
    (tmp_path / "mine.json").write_text(json.dumps(model))
    pruned = {**model, "llm": {**model["llm"], "layers": 1}}
    (tmp_path / "pruned.json").write_text(json.dumps(pruned))
    run = autotune_main("run", "--model", tmp_path / "mine.json", "--nodes", "1", "--trials", "3", "--backend", "simulate",
                        "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    path = tmp_path / "m.jsonl"
    assert autotune_main("export", tmp_path / "run", "--measurements", path).returncode == 0
    refused = autotune_main("run", "--model", tmp_path / "pruned.json", "--nodes", "1", "--backend", "replay",
                            "--measurements", path, "--out", tmp_path / "refused")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and not (tmp_path / "refused").exists(), refused.stderr
    assert (f"measurements {path} line 1 holds figures for a model named 'mine' of " in lines[0]
            and "and this run's --model of that name has " in lines[0] and "(llm.layers 2 there, 1 here)" in lines[0]
            and "replay it with the --model it was measured for" in lines[0]), lines[0]
    same = autotune_main("run", "--model", tmp_path / "mine.json", "--nodes", "1", "--backend", "replay",
                         "--measurements", path, "--out", tmp_path / "same")
    assert same.returncode == 0, same.stderr
    # Records without the sizes (an older autotune's export, a hand-written file) are taken as before.
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        del record["study"]["model_sizes"]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    older = autotune_main("run", "--model", tmp_path / "pruned.json", "--nodes", "1", "--backend", "replay",
                          "--measurements", path, "--out", tmp_path / "older")
    assert older.returncode == 0, older.stderr


