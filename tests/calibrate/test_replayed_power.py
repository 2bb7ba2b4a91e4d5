"""A replay of measurements.jsonl (the route docs/calibration.md gives) calibrates as the study it came from: its
records carry no GPU power, which calibrate derives where the energy is the GPU's alone (labelled derived); where it
cannot, the power constants are held at the base profile's values and the report says no GPU power was seen
(trial64 #1: the replay fitted 20 of the study's 30 observations and "fitted" power constants to times alone)."""

import json
from types import SimpleNamespace

import pytest

from autotune.calibrate.measured import MeasuredRuns, _trial_observations
from autotune.calibrate.unseen_power import POWER_CONSTANTS
from tests.calibrate.test_measured import KNOBS, _settings
from tests.cli import autotune_main
from tests.report.test_unmeasured_floor import H100_STUDY, REPO

STUDY = REPO / "benchmarks" / "results" / "h100_power_study"


def _replayed(not_measured):
    """A replayed probe's result: energy and time, no per-part energy and no GPU power, and the parts it did not see."""
    result = {"status": "ok", "source": "measured", "energy_source": "measured", "time_s": 600.0, "tflops": 400.0,
              "energy_kj": 2000.0, "mean_power_w": None, "energy_components_kj": {},
              "details": {"energy": {"components": {"not_measured": not_measured}}}}
    return SimpleNamespace(number=3, user_attrs={"result": result, "candidate": {"knobs": KNOBS}})


def test_a_replayed_gpu_only_energy_gives_the_gpu_power_labelled_derived():
    runs = MeasuredRuns()
    _trial_observations("runs/x", _replayed(["cpu", "memory_interconnect"]), _settings(), False, False, runs)
    power = [o for o in runs.observations if o.metric == "power_w"]
    assert [o.value for o in power] == [pytest.approx(2000e3 / 600 / 8)] and power[0].derived
    assert not any(o.derived for o in runs.observations if o.metric != "power_w")
    assert runs.derived == ["runs/x trial 3: power_w derived as energy_kj / time_s / GPUs: the energy is the GPU's alone "
                            "(cpu, memory/interconnect not measured) and the result keeps no GPU figure of its own (a "
                            "replay's records carry none)"]


@pytest.mark.parametrize("not_measured", [["cpu"], [], ["gpu", "cpu", "memory_interconnect"]])
def test_an_energy_that_is_not_the_gpus_alone_gives_no_gpu_power(not_measured):
    runs = MeasuredRuns()
    _trial_observations("runs/x", _replayed(not_measured), _settings(), False, False, runs)
    assert "power_w" not in {o.metric for o in runs.observations} and not runs.derived


def _calibrated(*run_dirs) -> dict:
    result = autotune_main("calibrate", *run_dirs, "--hardware", "h100-sxm", "--no-loo", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_replay_of_the_h100_study_fits_as_the_study_does(tmp_path):
    assert autotune_main(*H100_STUDY, "--out", tmp_path / "replayed").returncode == 0
    replay, study = _calibrated(tmp_path / "replayed"), _calibrated(STUDY)
    assert replay["observations"] == study["observations"] == 30
    assert replay["fitted"] == study["fitted"]
    assert replay["constants"] == pytest.approx(study["constants"], rel=1e-3)
    assert replay["fit_mape"] == pytest.approx(study["fit_mape"], abs=0.02)
    derived = [row for row in replay["per_observation"] if row["derived"]]
    assert len(derived) == 10 and {row["metric"] for row in derived} == {"power_w"}
    assert not any(row["derived"] for row in study["per_observation"])  # the study kept its GPU energy
    assert not replay["held_without_power"]
    text = autotune_main("calibrate", tmp_path / "replayed", "--hardware", "h100-sxm", "--no-loo").stdout
    assert "replayed#0                                     power_w derived      513.26" in text
    assert f"  derived: {tmp_path / 'replayed'} trials 0-9: power_w derived as energy_kj / time_s / GPUs" in text


def test_a_replay_without_gpu_power_holds_the_power_constants_and_says_so(tmp_path):
    """Records whose energy leaves out the CPU alone: the memory's share is in it, so no GPU power follows."""
    records = [json.loads(line) for line in (STUDY / "measurements.jsonl").read_text().splitlines() if line.strip()]
    measurements = tmp_path / "measurements.jsonl"
    measurements.write_text("".join(json.dumps({**r, "energy_not_measured": ["cpu"]}) + "\n" for r in records))
    replay = list(H100_STUDY)
    replay[replay.index("--measurements") + 1] = measurements
    assert autotune_main(*replay, "--out", tmp_path / "replayed").returncode == 0
    document = _calibrated(tmp_path / "replayed")
    held = document["held_without_power"]
    assert held and set(held) <= set(POWER_CONSTANTS) and "gpu_activity_optimizer" in held
    assert not set(held) & set(document["fitted"]) and set(held) <= set(document["held"])
    assert all(document["constants"][name] == document["defaults"][name] for name in held)
    text = autotune_main("calibrate", tmp_path / "replayed", "--hardware", "h100-sxm", "--no-loo").stdout
    assert "  no GPU power was seen: no observation gives power_w, module_power_w or energy_kj" in text
    assert "gpu_activity_optimizer                  0.5       (held)" in text
    # --fit still fits one, at the user's word.
    forced = autotune_main("calibrate", tmp_path / "replayed", "--hardware", "h100-sxm", "--no-loo", "--json",
                           "--fit", "gpu_activity_optimizer")
    assert forced.returncode == 0, forced.stderr
    assert "gpu_activity_optimizer" in json.loads(forced.stdout)["fitted"]


def _calibrate_replayed_with_tflops(tmp_path, monkeypatch, tflops_of):
    """Calibrate a study replayed, as replay was before it checked TFLOP/s, from the h100 study's records with the second
    record's TFLOP/s given by `tflops_of(its TFLOP/s)`: calibrate's own answer."""
    from autotune.backends import replay_figures

    records = (STUDY / "measurements.jsonl").read_text().splitlines()
    records[1] = json.dumps({**json.loads(records[1]), "tflops": tflops_of(json.loads(records[1])["tflops"])})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(records) + "\n")
    run = [*H100_STUDY, "--out", tmp_path / "replayed"]
    run[run.index("--measurements") + 1] = bad
    monkeypatch.setattr(replay_figures, "_impossible", lambda *args: None)  # as replay was before the check
    assert autotune_main(*run).returncode == 0
    monkeypatch.undo()
    return autotune_main("calibrate", tmp_path / "replayed", "--hardware", "h100-sxm", "--no-loo")


def test_a_study_replayed_from_a_tflops_above_the_peak_is_refused_not_fitted(tmp_path, monkeypatch):
    """Trial72 #4: a study replayed from a record of 5000 TFLOP/s per H100 (before replay refused one) was fitted, and
    its 93% "simulator error" reported; its figure is refused as a --reference file's is."""
    result = _calibrate_replayed_with_tflops(tmp_path, monkeypatch, lambda _: 5000.0)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr == (
        f"autotune calibrate: error: {tmp_path / 'replayed'}: replayed#1: tflops 5000 per GPU is above the dense peak of "
        "989 TFLOP/s of 'h100-sxm': a figure per node or in GFLOP/s? Give model TFLOP/s per GPU; a figure no run gives "
        "(a replay's record, or a damaged study): fix the measurements and replay again, or leave the run out; or, if the "
        "figure is right, the profile 'h100-sxm' is not the hardware it was measured on (pass --hardware)\n")


def test_a_study_replayed_from_a_tflops_its_time_does_not_give_is_refused_not_fitted(tmp_path, monkeypatch):
    """Trial72 #4: a record's TFLOP/s at 0.3x what its own time gives (under the peak, so not refused as above the peak),
    replayed before replay held the two together, would be fitted as a 70% simulator miss; refused without "the profile
    is not the hardware", which no profile would change."""
    result = _calibrate_replayed_with_tflops(tmp_path, monkeypatch, lambda tflops: 0.3 * tflops)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"autotune calibrate: error: {tmp_path / 'replayed'}: replayed#1: tflops 41.1015 per "
                                    "GPU is 1/3.35 of the 137.5 TFLOP/s that time_s 15.7424 "), result.stderr
    assert result.stderr.endswith("(64 samples on 1 GPU), more than the 2x another FLOP count explains: a TFLOP/s in "
                                  "PFLOP/s or of a share of the GPUs, or a time in minutes or of fewer samples? Give model "
                                  "TFLOP/s per GPU and seconds for the whole workload; a figure no run gives (a replay's "
                                  "record, or a damaged study): fix the measurements and replay again, or leave the run "
                                  "out\n"), result.stderr
