"""A measured study whose study.db cannot be read (a full disk, a quota, a crash mid-write) keeps its probes only as
files in trials/: `export --measurements` reads them back, as the launch backend read them when it probed, for a
replay that rebuilds the study without probing (trial69 #14). The stand-in probe of test_repeat_takeover plays the
trainer."""

from __future__ import annotations

import json
import shutil

import pytest

from autotune.backends.launch import LaunchBackend
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from tests.backends.test_repeat_takeover import FAKE_PROBE
from tests.cli import autotune_main

SETTINGS = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu")


@pytest.fixture(scope="module", params=[1, 2], ids=["one run", "repeats"])
def probed(request, tmp_path_factory):
    """A launch study of 3 probes (with --repeats 2 too), and the measurements its intact study.db exports."""
    tmp_path = tmp_path_factory.mktemp("probed")
    script = tmp_path / "fake-python"
    script.write_text(FAKE_PROBE)
    script.chmod(0o755)
    run = tmp_path / "run"
    backend = LaunchBackend(run_dir=run, launcher="torchrun", python=str(script), repeats=request.param, warmup_steps=1,
                            probe_steps=2, probe_seconds=0.0, probe_timeout_s=60.0, kill_grace_s=5.0,
                            # The tiny model's work over its 0.5 s steps: ~0.0005 TFLOP/s, which a replay holds it to.
                            env={"FAKE_CALLS": str(tmp_path / "calls.txt"), "FAKE_TFLOPS": "0.0005"})
    study = open_study(run, None, make_sampler(0, 3))
    assert run_study(study, settings_for(*SETTINGS), backend, 3) == 3
    exported = autotune_main("export", run, "--measurements", tmp_path / "from-study.jsonl")
    assert exported.returncode == 0, exported.stderr
    return run, tmp_path / "from-study.jsonl"


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("damage", ["malformed", "emptied", "removed"])
def test_export_reads_a_lost_study_s_probes_back_from_trials(probed, tmp_path, damage):
    study_run, from_study = probed
    run = shutil.copytree(study_run, tmp_path / "run")
    database = run / "study.db"
    if damage == "malformed":
        database.write_bytes(database.read_bytes()[:5000])
    elif damage == "emptied":
        database.write_bytes(b"")
    else:
        database.unlink()
    refused = autotune_main("report", run)
    command = f"autotune export {run} --measurements run.jsonl"
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.rstrip().endswith(
        f"; the results of its 3 probes are kept in {run / 'trials'}/*/result.json: `{command}` reads them back for "
        "`autotune run --backend replay --measurements run.jsonl` (the study's flags, a new --out), which rebuilds the "
        "study without probing")
    exported = autotune_main("export", run, "--measurements", tmp_path / "run.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.startswith(f"the study database {database} cannot be read (")
    assert f"the records are read from the probes' own files in {run / 'trials'}, trials 0, 1, 2\n" in exported.stderr
    assert _records(tmp_path / "run.jsonl") == _records(from_study)  # what the study itself exported
    replayed = autotune_main("run", *SETTINGS, "--backend", "replay", "--measurements", tmp_path / "run.jsonl",
                             "--trials", 3, "--out", tmp_path / "rebuilt", "-q")
    assert replayed.returncode == 0, replayed.stderr
    again = autotune_main("export", tmp_path / "rebuilt", "--measurements", tmp_path / "again.jsonl")
    assert again.returncode == 0, again.stderr
    assert sorted(r["energy_kj"] for r in _records(tmp_path / "again.jsonl")) == sorted(
        r["energy_kj"] for r in _records(from_study))


def test_a_trial_whose_probe_left_no_whole_result_is_left_out_and_named(probed, tmp_path):
    study_run, from_study = probed
    run = shutil.copytree(study_run, tmp_path / "run")
    (run / "study.db").write_bytes(b"")
    (run / "trials" / "0001" / "candidate.json").write_text("{ half")
    exported = autotune_main("export", run, "--measurements", tmp_path / "run.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert "trials 0, 2\n1 trial directory left out: trial 1: its candidate.json is damaged (" in exported.stderr
    assert len(_records(tmp_path / "run.jsonl")) == 2
    for folder in ("0000", "0002"):
        shutil.rmtree(run / "trials" / folder)
    refused = autotune_main("export", run, "--measurements", tmp_path / "none.jsonl")
    assert refused.returncode == 2 and "and no probe in" in refused.stderr and not (tmp_path / "none.jsonl").exists()


def test_a_pick_is_still_refused_where_study_db_is_lost(probed, tmp_path):
    """Only the measurements come from trials/: a pick's config needs the study's front."""
    run = shutil.copytree(probed[0], tmp_path / "run")
    (run / "study.db").write_bytes(b"")
    refused = autotune_main("export", run, "--pick", "knee", "-o", tmp_path / "k.json")
    assert refused.returncode == 2 and "holds no Optuna study" in refused.stderr, refused.stderr


def test_a_lost_study_db_beside_an_older_pareto_json_is_not_said_to_be_a_storage_study(probed, tmp_path):
    """trial73 #3: a pareto.json from before the `storage` key was recorded was read as a --storage study's, whatever
    its run used: "its run kept the study in a --storage database; pass the same --storage URL", a URL that never was,
    and its probes' results in trials/ went unread. Both ways are named now, and `export --measurements` reads them."""
    study_run, from_study = probed
    run = shutil.copytree(study_run, tmp_path / "run")
    assert autotune_main("report", run).returncode == 0
    report = json.loads((run / "pareto.json").read_text())
    del report["storage"]  # as an older autotune wrote it
    (run / "pareto.json").write_text(json.dumps(report))
    (run / "study.db").unlink()
    refused = autotune_main("report", run)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert (f"RUN_DIR {run} holds no study.db, and its pareto.json (an older autotune's) does not record where the study "
            "was kept: if its run gave --storage, pass the same --storage URL and --study-name; else its study.db was "
            f"moved or removed: put it back in {run}; the results of its 3 probes are kept in ") in refused.stderr
    exported = autotune_main("export", run, "--measurements", tmp_path / "run.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert _records(tmp_path / "run.jsonl") == _records(from_study)


def test_a_damaged_figure_in_one_result_leaves_that_trial_out_and_writes_the_others(probed, tmp_path):
    """A negative energy in one result.json stopped the whole export as "a bug to report", naming neither the file
    nor the field (trial76 #3): every intact measurement was lost to the replay."""
    run = shutil.copytree(probed[0], tmp_path / "run")
    (run / "study.db").unlink()
    damaged = sorted((run / "trials" / "0002").glob("result*.json"))[0]
    result = json.loads(damaged.read_text())
    result["energy"]["energy_j"] = -3
    damaged.write_text(json.dumps(result))
    exported = autotune_main("export", run, "--measurements", tmp_path / "run.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert "bug" not in exported.stderr
    assert (f"trials 0, 1\n1 trial directory left out: trial 2: {damaged} has energy.energy_j = -3, a damaged figure "
            "(scaled to the workload: energy_kj = ") in exported.stderr, exported.stderr
    assert [r["params"] for r in _records(tmp_path / "run.jsonl")] == [r["params"] for r in _records(probed[1])][:2]


@pytest.mark.parametrize(("repeats", "said"), [
    ('"abc"', 'probe_settings.--repeats = "abc" is not a whole number; it must be a whole number >= 1 and <= 1000000000000'),
    ("-3", "probe_settings.--repeats = -3 is out of range; it must be a whole number >= 1 and <= 1000000000000"),
    ("2.5", "probe_settings.--repeats = 2.5 is not a whole number; it must be a whole number >= 1 and <= 1000000000000"),
])
def test_a_damaged_repeats_leaves_that_trial_out_and_writes_the_others(probed, tmp_path, repeats, said):
    """Trial78 #11: a hand-edited --repeats in one trial's probe_runs.json ("abc", -3) made export write nothing and
    blame study.db ("start the study over"), and 2.5 was read as 2, blamed on a missing result-1.json."""
    run = shutil.copytree(probed[0], tmp_path / "run")
    (run / "study.db").write_bytes(b"")
    runs = run / "trials" / "0000" / "probe_runs.json"
    runs.write_text(f'{{"probe_settings": {{"--repeats": {repeats}}}, "runs": {{}}}}')
    exported = autotune_main("export", run, "--measurements", tmp_path / "run.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert (f"trials 1, 2\n1 trial directory left out: trial 0: {runs}: {said} (the repeats its probe was asked for)\n"
            ) in exported.stderr, exported.stderr
    assert [r["params"] for r in _records(tmp_path / "run.jsonl")] == [r["params"] for r in _records(probed[1])][1:]


@pytest.mark.parametrize(("field", "value", "said"), [
    (("step_time_s", "mean"), "fast", 'has step_time_s.mean = "fast", which is not a number; it must be a number > 0'),
    (("steps", "measured"), 0, "has steps.measured = 0, which is out of range; it must be a whole number >= 1"),
    (("tflops", "model_per_device"), None, "lacks tflops.model_per_device, a figure of every ok result"),
])
def test_a_figure_measured_figures_cannot_use_is_named_with_its_value(probed, tmp_path, field, value, said):
    """Trial78 #11: "lacks a figure (TypeError("can't multiply sequence by non-int of type 'float'"))" named neither
    the field nor its value."""
    run = shutil.copytree(probed[0], tmp_path / "run")
    (run / "study.db").unlink()
    damaged = sorted((run / "trials" / "0000").glob("result*.json"))[0]
    result = json.loads(damaged.read_text())
    if value is None:
        del result[field[0]][field[1]]
    else:
        result[field[0]][field[1]] = value
    damaged.write_text(json.dumps(result))
    exported = autotune_main("export", run, "--measurements", tmp_path / "run.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert f"1 trial directory left out: trial 0: {damaged} {said}\n" in exported.stderr, exported.stderr
    assert len(_records(tmp_path / "run.jsonl")) == 2
