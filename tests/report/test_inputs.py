"""pareto.json's `inputs` and the reports' line of them (trial 47): the space, who proposed each trial (a
study resumed with another seed keeps both), the profile's content hash (a copied profile edited in place
keeps its name and path) and a replay's file, so two studies that read alike can be told apart."""

from __future__ import annotations

import json
import shutil

from autotune import __version__
from autotune.hardware import load_hardware
from autotune.space.files import DEFAULT_SPACE
from tests.cli import autotune_main
from tests.report.test_searchable_nodes import reports

RUN = ("run", "--model", "7b", "--nodes", "1", "--backend", "simulate")


def _pareto(run_dir) -> dict:
    return json.loads((run_dir / "pareto.json").read_text(encoding="utf-8"))


def test_a_resumed_study_lists_each_seed_with_its_own_trials_and_the_space_it_searched(tmp_path):
    out = tmp_path / "run"
    first = autotune_main(*RUN, "--sampler", "random", "--trials", "3", "--out", out)
    assert first.returncode == 0, first.stderr
    again = autotune_main(*RUN, "--sampler", "random", "--seed", "5", "--trials", "5", "--out", out)
    assert again.returncode == 0, again.stderr
    document = _pareto(out)
    assert document["schema_version"] == 1
    inputs = document["inputs"]
    first_run, resumed = inputs["proposed_by"]
    assert {k: v for k, v in first_run.items() if k not in ("trials", "evaluated")} == {
        "sampler": "random", "seed": 0, "trials_budget": 3, "autotune_version": __version__}
    assert {k: v for k, v in resumed.items() if k not in ("trials", "evaluated")} == {
        "sampler": "random", "seed": 5, "trials_budget": 5, "autotune_version": __version__}
    # Each trial once, the resumed run's after the first's (an invalid proposal is a trial of its proposer too).
    assert max(first_run["trials"]) < min(resumed["trials"])
    assert sorted(first_run["trials"] + resumed["trials"]) == list(range(document["trials"]))
    assert inputs["space"]["power_limit"] == [1.0, 0.9, 0.8, 0.7] and inputs["space"]["nodes"] == [1]
    assert inputs["probe_settings"] is None and inputs["measurements"] is None
    _, _, md, html = reports(out)
    # --trials counts evaluated candidates: 3, then 2 more; the refused proposals are trials too, said apart.
    assert (first_run["evaluated"], resumed["evaluated"]) == (3, 2)
    def evaluated_of(run: dict) -> str:  # "of N trials" where a run's refused proposals make trials too
        return f"{run['evaluated']} evaluated" + ("" if len(run["trials"]) == run["evaluated"] else f" of {len(run['trials'])} trials")

    assert len(first_run["trials"]) > 3  # seed 0's draws include refused ones: the wording with "of N trials"
    said = (f"Inputs: trials proposed by random seed 0 (--trials 3, autotune {__version__}): {evaluated_of(first_run)}, "
            f"random seed 5 (--trials 5, autotune {__version__}): {evaluated_of(resumed)}; searched the default space; "
            "hardware profile sha256 ")
    assert said in md and said in html


def test_a_space_file_and_an_edited_copy_of_a_profile_are_told_apart(tmp_path):
    space = tmp_path / "space.toml"
    space.write_text(DEFAULT_SPACE.read_text(encoding="utf-8").replace("power_limit = [1.0, 0.9, 0.8, 0.7]", "power_limit = [1.0]"),
                     encoding="utf-8")
    profile = tmp_path / "mynode.toml"
    shutil.copy(load_hardware("gh200").source, profile)
    a = autotune_main(*RUN, "--hardware", profile, "--space", space, "--out", tmp_path / "a")
    assert a.returncode == 0, a.stderr
    text = profile.read_text(encoding="utf-8")
    assert "step_overhead_s = 3.787e-10" in text
    profile.write_text(text.replace("step_overhead_s = 3.787e-10", "step_overhead_s = 0.5"), encoding="utf-8")
    b = autotune_main(*RUN, "--hardware", profile, "--space", space, "--out", tmp_path / "b")
    assert b.returncode == 0, b.stderr
    first, second = _pareto(tmp_path / "a"), _pareto(tmp_path / "b")
    assert first["hardware"] == second["hardware"] and first["hardware_file"] == second["hardware_file"]
    assert first["inputs"]["hardware_sha256"] != second["inputs"]["hardware_sha256"]
    assert first["inputs"]["space"]["power_limit"] == [1.0]
    _, _, md, _ = reports(tmp_path / "a")
    assert "; searched a --space file's power_limit 1.0, the other knobs as in the default space; hardware profile sha256 " in md


def test_a_replay_names_its_file_and_the_content_of_its_records(tmp_path):
    listed = tmp_path / "space.json"
    space = autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json")
    assert space.returncode == 0, space.stderr
    listed.write_text(space.stdout, encoding="utf-8")
    replay = autotune_main("run", "--model", "7b", "--nodes", "1", "--measurements", listed, "--out", tmp_path / "r")
    assert replay.returncode == 0, replay.stderr
    exported = tmp_path / "m.jsonl"
    assert autotune_main("export", tmp_path / "r", "--measurements", exported).returncode == 0
    measurements = _pareto(tmp_path / "r")["inputs"]["measurements"]
    valid = sum(entry["valid"] for entry in json.loads(space.stdout))
    assert measurements["file"] == str(listed) and measurements["records"] == valid
    assert len(measurements["sha256"]) == 64
    moved = tmp_path / "moved.json"
    shutil.copy(listed, moved)
    again = autotune_main("run", "--model", "7b", "--nodes", "1", "--measurements", moved, "--out", tmp_path / "r2")
    assert again.returncode == 0, again.stderr
    assert _pareto(tmp_path / "r2")["inputs"]["measurements"]["sha256"] == measurements["sha256"]


def test_a_replay_of_the_simulated_space_gives_the_simulate_run_s_figures_whole(tmp_path):
    """Trial 47 #9: `space --json` rounded peak_mem_gib to 3 decimals, so its replay's front differed from the
    simulate run's in that figure alone."""
    listed = tmp_path / "space.json"
    space = autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json")
    listed.write_text(space.stdout, encoding="utf-8")
    assert autotune_main(*RUN, "--out", tmp_path / "s").returncode == 0
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--measurements", listed, "--out", tmp_path / "r").returncode == 0
    simulated, replayed = _pareto(tmp_path / "s"), _pareto(tmp_path / "r")
    assert [p["peak_mem_gib"] for p in replayed["front"]] == [p["peak_mem_gib"] for p in simulated["front"]]
    assert [(p["params"], p["time_s"], p["energy_kj"]) for p in replayed["front"]] == [
        (p["params"], p["time_s"], p["energy_kj"]) for p in simulated["front"]]


def test_a_launch_study_names_its_probe_timeout_and_whether_estimated_energy_ranks():
    """Trial 50 #10: a study whose probes all timed out at 3 s read as one run with the default 900 s."""
    import optuna

    from autotune.commands.options import settings_for
    from autotune.report.inputs import inputs_sentence, study_inputs

    study = optuna.create_study(directions=["minimize", "minimize"])
    study.set_user_attr("backend", {"name": "launch", "probe_settings": {"--warmup-steps": 2, "--probe-steps": 5,
                                                                         "--probe-seconds": 0.0, "--repeats": 1},
                                    "run_settings": {"--probe-timeout": 3.0, "--allow-estimated-energy": True}})
    inputs = study_inputs(study, settings_for("--model", "7b", "--nodes", "1"))
    assert inputs["probe_settings"] == {"--warmup-steps": 2, "--probe-steps": 5, "--probe-seconds": 0.0, "--repeats": 1,
                                        "--probe-timeout": 3.0, "--allow-estimated-energy": True}
    assert inputs_sentence(inputs).endswith("; probes --warmup-steps 2 --probe-steps 5 --probe-seconds 0 --repeats 1 "
                                            "--probe-timeout 3 --allow-estimated-energy (pareto.json `inputs`).")


def test_trials_an_older_autotune_proposed_are_counted_as_not_recorded(tmp_path):
    """A resumed old study's Inputs line named only the new proposer, its old trials in no entry (trial52 #6)."""
    import sqlite3

    out = tmp_path / "run"
    assert autotune_main(*RUN, "--sampler", "random", "--trials", "4", "--out", out).returncode == 0
    assert _pareto(out)["inputs"]["proposer_not_recorded"] == 0
    with sqlite3.connect(out / "study.db") as db:  # as an autotune older than the record left trials 0 and 1
        db.execute("DELETE FROM trial_user_attributes WHERE key = 'proposed_by' AND trial_id IN "
                   "(SELECT trial_id FROM trials WHERE number IN (0, 1))")
    done = autotune_main("report", out, "--format", "md")
    assert done.returncode == 0, done.stderr
    assert _pareto(out)["inputs"]["proposer_not_recorded"] == 2
    assert "; 2 trials: proposer not recorded (an older autotune); searched the default space" in " ".join(done.stdout.split())
