"""A retry of an interrupted trial takes over the repeats it completed and runs only the missing ones
(autotune/backends/repeat_takeover.py). Fast: a stand-in probe plays the trainer (as in
test_launch_outcomes.py), writing a result of the candidate and settings it was given, and noting each
start in a calls file; one of its starts can be made to hang, and the test aborts it there."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from autotune.backends.launch import ProbeInterrupted
from autotune.backends.repeat_takeover import RUNS_FILE

FAKE_PROBE = f"""#!{sys.executable}
import json, os, sys, time
args = sys.argv
def arg(flag):
    return args[args.index(flag) + 1]
out = arg("--out")
with open(os.environ["FAKE_CALLS"], "a") as calls:
    calls.write(out + "\\n")
if os.environ.get("FAKE_HANG_ON") and out.endswith(os.environ["FAKE_HANG_ON"]):
    time.sleep(300)
with open(arg("--candidate")) as handle:
    candidate = json.load(handle)
candidate.pop("hardware_profile", None)  # the result holds Candidate.to_dict(), as the trainer writes it
with open(arg("--deepspeed-config")) as handle:
    ds_config = json.load(handle)
energy_j = 100.0 + len(out) % 7 + (time.time() % 1.0)  # differs per repeat
tflops = float(os.environ.get("FAKE_TFLOPS", "1.0"))  # what a replay of its export needs its 0.5 s steps to give
result = {{"schema_version": 1, "source": "measured", "status": os.environ.get("FAKE_STATUS", "ok"),
          "candidate": candidate, "ds_config": ds_config, "world_size": 1,
          "steps": {{"warmup": int(arg("--warmup-steps")), "measured": int(arg("--steps"))}},
          "window_s": 0.1, "step_time_s": {{"mean": 0.5, "std": 0.0, "min": 0.5, "max": 0.5}},
          "tflops": {{"model_total": tflops, "model_per_device": tflops}}, "mfu": 0.1, "peak_memory_gib": 1.0,
          "energy": {{"provenance": "measured", "energy_j": energy_j, "window_s": 0.1}}}}
with open(out + ".tmp", "w") as handle:
    json.dump(result, handle)
os.replace(out + ".tmp", out)
"""


@pytest.fixture
def probe(tmp_path):
    """(python, calls file): the stand-in probe and the file listing every --out it was started with."""
    script = tmp_path / "fake-python"
    script.write_text(FAKE_PROBE)
    script.chmod(0o755)
    return str(script), tmp_path / "calls.txt"


@pytest.fixture
def backend_for(make_launch_backend, probe):
    """backend_for(hang_on=None, **overrides): a launch backend running the stand-in probe, repeats=3."""
    python, calls = probe

    def make(hang_on: str | None = None, status: str = "ok", **overrides):
        env = {"FAKE_CALLS": str(calls), "FAKE_STATUS": status, **({"FAKE_HANG_ON": hang_on} if hang_on else {})}
        return make_launch_backend(env_extra=env, python=python, **{"repeats": 3, **overrides})

    return make


def _calls(probe) -> list[str]:
    path = probe[1]
    return [str(Path(line).relative_to(Path(line).parents[1])) for line in path.read_text().split()] if path.exists() else []


def _interrupted(backend, candidate, number: int, during: int) -> None:
    """Trial `number` stopped while repeat `during` runs, as abort() (SIGTERM, scancel) stops it."""
    log = backend.trial_dir(number) / "log.txt"

    def abort_when_started():
        deadline = time.time() + 30
        while time.time() < deadline and f"repeat {during}/" not in (log.read_text() if log.exists() else ""):
            time.sleep(0.02)
        time.sleep(0.2)  # the stand-in is asleep by now
        backend.abort()

    aborter = threading.Thread(target=abort_when_started)
    aborter.start()
    try:
        with pytest.raises(ProbeInterrupted):
            backend.evaluate(candidate, number)
    finally:
        aborter.join()


def _log_lines(backend, number: int) -> list[str]:
    return [line for line in (backend.trial_dir(number) / "log.txt").read_text().splitlines() if line.startswith("== autotune:")]


def test_a_retry_runs_only_the_repeats_the_interrupted_trial_left_and_counts_their_cost(backend_for, make_candidate,
                                                                                        probe):
    candidate = make_candidate()
    first = backend_for(hang_on="0000/result-3.json")
    _interrupted(first, candidate, 0, during=3)
    before = {name: (first.trial_dir(0) / name).read_bytes() for name in ("result-1.json", "result-2.json")}
    recorded = json.loads((first.trial_dir(0) / RUNS_FILE).read_text())
    assert recorded["probe_settings"]["--repeats"] == 3 and recorded["runs"]["3"]["wall_s"] > 0  # the interrupted one too
    probe[1].unlink()

    resumed = backend_for()
    resumed.resumes(4, [0], candidate)
    result = resumed.evaluate(candidate, 4)

    assert result.ok, result.error
    assert _calls(probe) == ["0004/result-3.json"]  # repeats 1 and 2 were not measured again
    lines = _log_lines(resumed, 4)
    took = [line for line in lines if "took over" in line]
    assert len(took) == 1 and f"took over repeats 1, 2 of 3 from trial 0 ({first.trial_dir(0).resolve()}): " in took[0]
    assert took[0].endswith("; running repeat 3")
    assert not any("did not take over" in line for line in lines)
    # Copied, not moved: the interrupted trial keeps what it measured.
    for name, data in before.items():
        assert (first.trial_dir(0) / name).read_bytes() == data == (resumed.trial_dir(4) / name).read_bytes()
    assert [r["result_file"] for r in result.details["repeats"]] == [
        str(resumed.trial_dir(4).resolve() / f"result-{i}.json") for i in (1, 2, 3)]

    cost = result.details["probe_cost"]
    walls_s = cost["parts"]["wall_s"]
    assert cost["parts"]["runs"] == 3 and walls_s[:2] == [recorded["runs"][r]["wall_s"] for r in ("1", "2")]
    assert cost["time_s"] == pytest.approx(sum(walls_s)) and "time_scope" not in cost
    windows_j = [json.loads((resumed.trial_dir(4) / f"result-{i}.json").read_text())["energy"]["energy_j"] for i in (1, 2, 3)]
    assert cost["energy_kj"] == pytest.approx(sum(windows_j) / 1000.0)
    assert [t["repeat"] for t in cost["parts"]["taken_over"]] == [1, 2]
    assert all(t["wall"] == "recorded" for t in cost["parts"]["taken_over"])
    # The retry's own record says where its repeats came from, for a retry of it in turn.
    runs = json.loads((resumed.trial_dir(4) / RUNS_FILE).read_text())["runs"]
    assert runs["1"]["taken_over_from"] == str(first.trial_dir(0).resolve() / "result-1.json") and "taken_over_from" not in runs["3"]


def test_a_retry_of_a_retry_takes_over_through_the_lineage(backend_for, make_candidate, probe):
    candidate = make_candidate()
    _interrupted(backend_for(hang_on="0000/result-2.json"), candidate, 0, during=2)  # repeat 1 done
    second = backend_for(hang_on="0001/result-3.json")
    second.resumes(1, [0], candidate)
    _interrupted(second, candidate, 1, during=3)  # takes 1 over, runs 2, stopped in 3
    probe[1].unlink()

    third = backend_for()
    third.resumes(2, [1, 0], candidate)
    assert third.evaluate(candidate, 2).ok
    assert _calls(probe) == ["0002/result-3.json"]
    took = [line for line in _log_lines(third, 2) if "took over" in line]
    assert len(took) == 1 and "took over repeats 1, 2 of 3 from trial 1 (" in took[0]


def _refused(backend, number: int) -> list[str]:
    return [line for line in _log_lines(backend, number) if "did not take over" in line]


@pytest.mark.parametrize("change, why", [
    ({"probe_seconds": 1.0}, "probed with other settings (--probe-seconds 1 then, 0 now)"),
    ({"warmup_steps": 2}, "probed with other settings (--warmup-steps 2 then, 1 now)"),
    ({"repeats": 4}, "probed with other settings (--repeats 4 then, 3 now)"),
    ({"zero_stage": 1}, "a result of another candidate (its knobs differ)"),
])
def test_a_result_of_another_candidate_or_other_probe_settings_is_not_taken_over(backend_for, make_candidate, probe, change, why):
    knobs = {k: v for k, v in change.items() if k == "zero_stage"}
    settings = {k: v for k, v in change.items() if k != "zero_stage"}
    _interrupted(backend_for(hang_on="0000/result-2.json", **settings), make_candidate(**knobs), 0, during=2)
    probe[1].unlink()

    resumed, candidate = backend_for(), make_candidate()
    resumed.resumes(1, [0], candidate)
    assert resumed.evaluate(candidate, 1).ok
    assert _calls(probe) == [f"0001/result-{i}.json" for i in (1, 2, 3)]  # all measured again
    refused = _refused(resumed, 1)
    assert refused == [f"== autotune: did not take over {resumed.trial_dir(0).resolve() / 'result-1.json'}: {why}"]
    assert not any("took over" in line for line in _log_lines(resumed, 1))
    assert (resumed.trial_dir(0) / "result-1.json").is_file()  # nothing measured is deleted


@pytest.mark.parametrize("damage, why", [
    (lambda path: path.write_text(path.read_text()[:40]), "unreadable or partial (JSONDecodeError)"),
    (lambda path: path.write_text(json.dumps({**json.loads(path.read_text()), "status": "oom"})), "its status is 'oom', not ok"),
    (lambda path: (path.parent / RUNS_FILE).unlink(), f"no {RUNS_FILE} beside it to say the probe settings it ran with"),
    # trial79 #11: a figure out of range is refused where it is read, a result taken over too
    (lambda path: path.write_text(json.dumps({**json.loads(path.read_text()), "mfu": -1})),
     "it has mfu = -1, which is out of range; it must be a number >= 0"),
])
def test_a_partial_failed_or_unrecorded_result_is_not_taken_over(backend_for, make_candidate, probe, damage, why):
    candidate = make_candidate()
    first = backend_for(hang_on="0000/result-3.json")
    _interrupted(first, candidate, 0, during=3)
    damage(first.trial_dir(0) / "result-1.json")
    probe[1].unlink()

    resumed = backend_for()
    resumed.resumes(1, [0], candidate)
    assert resumed.evaluate(candidate, 1).ok
    refused = _refused(resumed, 1)
    assert refused and refused[0].startswith(f"== autotune: did not take over {first.trial_dir(0).resolve() / 'result-1.json'}: {why}")
    if "status" in why or "partial" in why or "range" in why:  # repeat 2 is still whole
        assert _calls(probe) == ["0001/result-1.json", "0001/result-3.json"]
    else:
        assert _calls(probe) == [f"0001/result-{i}.json" for i in (1, 2, 3)]


def test_a_repeat_whose_tuner_died_counts_from_its_start_to_its_result_as_a_lower_bound(backend_for, make_candidate,
                                                                                          probe):
    """kill -9 of the tuner: the probe wrote its result, the tuner never read its clock."""
    candidate = make_candidate()
    first = backend_for(hang_on="0000/result-3.json")
    _interrupted(first, candidate, 0, during=3)
    runs_file = first.trial_dir(0) / RUNS_FILE
    record = json.loads(runs_file.read_text())
    del record["runs"]["2"]["wall_s"]
    runs_file.write_text(json.dumps(record))
    written_s = (first.trial_dir(0) / "result-2.json").stat().st_mtime - record["runs"]["2"]["started_unix_s"]

    resumed = backend_for()
    resumed.resumes(1, [0], candidate)
    result = resumed.evaluate(candidate, 1)
    cost = result.details["probe_cost"]
    assert cost["time_scope"] == "lower_bound"
    assert cost["parts"]["wall_s"][1] == pytest.approx(written_s) and written_s >= 0
    assert [t["wall"] for t in cost["parts"]["taken_over"]] == ["recorded", "lower_bound"]
    took = [line for line in _log_lines(resumed, 1) if "took over" in line][0]
    assert "the wall time of repeat 2 was not recorded" in took and took.endswith("a lower bound")


def test_every_repeat_taken_over_launches_nothing(backend_for, make_candidate, probe):
    candidate = make_candidate()
    assert backend_for().evaluate(candidate, 0).ok  # all three done (the tuner then died before recording it)
    probe[1].unlink()
    resumed = backend_for()
    resumed.resumes(1, [0], candidate)
    result = resumed.evaluate(candidate, 1)
    assert result.ok and not probe[1].exists()
    assert "nothing left to run" in _log_lines(resumed, 1)[-1]
    assert result.details["probe_cost"]["parts"]["runs"] == 3


def test_a_first_attempt_takes_over_nothing(backend_for, make_candidate, probe):
    """Only the trials the study names: a trial directory of the same candidate is not a repeat of this one."""
    candidate = make_candidate()
    assert backend_for().evaluate(candidate, 0).ok
    probe[1].unlink()
    assert backend_for().evaluate(candidate, 1).ok
    assert _calls(probe) == [f"0001/result-{i}.json" for i in (1, 2, 3)]
    assert not any("took over" in line for line in _log_lines(backend_for(), 1))
