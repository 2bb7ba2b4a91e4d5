"""Simulated records carry the profile that made them (trial64 #2): an export of a study simulated on a calibrated
profile was labelled with its base, replayed there as the base's figures, and compare called the hardware the same.
Measured records keep the node's rule: every calibration of the node replays them."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from autotune.backends.replay import load_measurements, measurement_record, profile_of, study_of
from autotune.candidate import Candidate, Knobs
from autotune.errors import ConfigError
from autotune.hardware import dump_hardware, load_hardware, simulation_sha256, with_simulator_constants
from autotune.models import load_model
from autotune.workload import make_workload
from tests.cli import autotune_main

KNOBS = {"zero_stage": 1, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
         "micro_batch": 1, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}


def _candidate() -> Candidate:
    """A candidate of `run --model 7b --nodes 1` (on gh200, the default)."""
    model = load_model("7b")
    return Candidate(Knobs(**KNOBS), model, load_hardware("gh200"), make_workload(model), gpus_per_node=4)


def _calibrated(tmp_path):
    """A profile calibrated from gh200, its step overhead changed: what `autotune calibrate -o` writes."""
    base = load_hardware("gh200")
    calibrated = replace(with_simulator_constants(base, {"step_overhead_s": 0.5}), name="gh200-cal", calibrated_from="gh200")
    path = tmp_path / "gh200-cal.toml"
    path.write_text(dump_hardware(calibrated))
    return path


def _replay(tmp_path, path, hardware, out="replay"):
    return autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", path,
                         "--hardware", hardware, "--out", tmp_path / out, "--allow-estimated-energy")


def test_a_calibrated_profile_s_simulation_replays_on_that_profile_only(tmp_path):
    profile = _calibrated(tmp_path)
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "4", "--hardware", profile, "--out", tmp_path / "cal")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "sim.jsonl"
    assert autotune_main("export", tmp_path / "cal", "--measurements", path).returncode == 0
    records = [json.loads(line) for line in path.read_text().splitlines()]
    sha = simulation_sha256(load_hardware(str(profile)))
    # The node, and the profile by the sha256 of what its figures depend on (trial73 #1: not its stated error).
    assert records and all(r["study"]["hardware"] == "gh200" and r["source"] == "simulated" for r in records)
    assert all(r["study"]["profile"] == {"name": "gh200-cal", "sha256": sha, "hardware": str(profile)} for r in records)
    refused = _replay(tmp_path, path, "gh200")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and not (tmp_path / "replay").exists(), refused.stderr
    assert (f"measurements {path} line 1 holds figures simulated on hardware profile 'gh200-cal' (sha256 {sha[:12]}), "
            "not on this run's 'gh200' (sha256 ") in lines[0]
    assert lines[0].endswith(f"replay it with --hardware PROFILE.toml, where PROFILE.toml is the profile 'gh200-cal' its "
                             f"study gave as {profile}, or simulate this profile (--backend simulate)")
    replayed = _replay(tmp_path, path, profile)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads((tmp_path / "replay" / "pareto.json").read_text())["inputs"]["hardware_sha256"] == \
        json.loads((tmp_path / "cal" / "pareto.json").read_text())["inputs"]["hardware_sha256"]


def test_a_base_profile_s_simulation_is_refused_on_its_calibration_and_named_by_its_flag(tmp_path):
    record = measurement_record(KNOBS, {"status": "ok", "time_s": 800.0, "energy_kj": 1000.0, "source": "simulated"},
                                study_of(_candidate()))
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(record) + "\n")
    refused = _replay(tmp_path, path, _calibrated(tmp_path))
    assert refused.returncode == 2 and refused.stderr.strip().endswith(
        "replay it with --hardware gh200, or simulate this profile (--backend simulate)"), refused.stderr


def test_measured_records_name_the_node_alone_and_replay_on_its_calibrations(tmp_path):
    candidate = _candidate()
    measured = measurement_record(KNOBS, {"status": "ok", "time_s": 800.0, "energy_kj": 1000.0, "source": "measured"},
                                  study_of(candidate))
    estimated = measurement_record(KNOBS, {"status": "ok", "time_s": 800.0, "energy_kj": 1000.0, "source": "measured",
                                           "energy_source": "estimated"}, study_of(candidate))
    assert "profile" not in measured["study"] and estimated["study"]["profile"] == profile_of(candidate.hardware)
    for record, name in ((measured, "measured.jsonl"), (estimated, "estimated.jsonl")):
        path = tmp_path / name
        path.write_text(json.dumps(record) + "\n")
        replayed = _replay(tmp_path, path, _calibrated(tmp_path), out=f"replay-{name}")
        assert replayed.returncode == 0, replayed.stderr
        # Estimated energy is the other profile's power model's: replayed, and said.
        said = " ".join(replayed.stderr.split())
        assert (f"measurements {path}: 1 of its 1 record's energy was estimated by hardware profile 'gh200' (sha256 "
                in said) == (record is estimated), said


def test_a_simulation_on_another_profile_of_this_one_s_name_is_refused_as_that(tmp_path):
    """A built-in profile edited, or another autotune's: the name alone would have let its figures pass as this one's."""
    study = study_of(_candidate())
    edited = {**study, "profile": {**study["profile"], "sha256": "0" * 64}}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"params": KNOBS, "status": "ok", "time_s": 800.0, "source": "simulated", "study": edited}) + "\n")
    refused = _replay(tmp_path, path, "gh200")
    assert refused.returncode == 2 and refused.stderr.strip().endswith(
        "it is another profile of that name (edited since, or another autotune's; its study gave --hardware gh200): "
        "replay it with the profile file it was simulated on, or simulate this profile (--backend simulate)"), refused.stderr


@pytest.mark.parametrize("profile, words", [
    ("gh200", 'study.profile = "gh200" is not an object of name, sha256, hardware'),
    ({"name": "gh200", "sha256": "ab"}, "study.profile lacks hardware"),
    ({"name": "gh200", "sha256": "AB" * 32, "hardware": "gh200"}, "study.profile.sha256 = \"ABAB"),
    ({"name": "", "sha256": "ab" * 32, "hardware": "gh200"}, 'study.profile.name = "" is not a name'),
])
def test_a_records_profile_is_checked(tmp_path, profile, words):
    study = {**study_of(_candidate()), "profile": profile}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"params": KNOBS, "status": "ok", "time_s": 800.0, "source": "simulated", "study": study}) + "\n")
    with pytest.raises(ConfigError, match=f"line 1: {words}".replace("(", r"\(").replace(")", r"\)")):
        load_measurements(path)


def test_a_sensorless_study_s_estimated_and_measured_records_are_one_study(tmp_path):
    """Only the estimated records carry the profile: the file is still one study's, not "mixes the records of 2"."""
    study = study_of(_candidate())
    records = [measurement_record(KNOBS, {"status": "ok", "time_s": 800.0, "energy_kj": 1000.0, "energy_source": "estimated"}, study),
               measurement_record({**KNOBS, "micro_batch": 2}, {"status": "ok", "time_s": 800.0, "energy_kj": 1000.0}, study)]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    replayed = _replay(tmp_path, path, "gh200")
    assert replayed.returncode == 0 and "mixes" not in replayed.stderr, replayed.stderr


def test_a_builtins_older_version_whose_stated_error_alone_changed_replays_its_figures(tmp_path):
    """trial73 #1: the built-in gh200 changed between versions in its stated error alone (tflops_pct 4.1 -> 4.5, an
    [error_measured_on] added); the older autotune's export named it by a hash of its whole content, and the upgrade
    refused its figures as another profile's, naming a profile file the upgrade removed. A profile is now named by
    what its figures depend on, and an older record whose hash differs replays where this profile simulates its
    figures again; other figures under the name are still refused."""
    from autotune.hardware import hardware_to_dict
    from autotune.report.inputs import content_sha256
    from autotune.simulator import simulate

    candidate = _candidate()
    older = replace(candidate.hardware, simulator_error={**candidate.hardware.simulator_error, "tflops_pct": 4.1},
                    error_measured_on={})
    assert simulation_sha256(older) == simulation_sha256(candidate.hardware)
    assert simulation_sha256(with_simulator_constants(older, {"step_overhead_s": 0.5})) != simulation_sha256(older)
    study = study_of(candidate)
    study["profile"] = {**study["profile"], "sha256": content_sha256(hardware_to_dict(older))}  # as the older one hashed
    step = simulate(candidate)
    for factor, out in ((1.0, "same"), (1.3, "other")):
        record = measurement_record(KNOBS, {"status": "ok", "time_s": step.time_s * factor, "energy_kj": step.energy_kj,
                                            "source": "simulated"}, study)
        path = tmp_path / f"{out}.jsonl"
        path.write_text(json.dumps(record) + "\n")
        done = _replay(tmp_path, path, "gh200", out=out)
        assert done.returncode == (0 if factor == 1.0 else 2), done.stderr
    assert "holds figures simulated on hardware profile 'gh200'" in done.stderr
