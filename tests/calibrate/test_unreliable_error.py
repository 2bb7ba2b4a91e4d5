"""A left-out error calibrate's own warning calls unreliable is not written to [simulator_error]: a study
on the profile shows +- ?% and says it was calibrated and why its error is not known (trial 33: 3
configurations for 13 constants gave a profile whose runs printed "+- 2%", ties included, on power limits
and offload nothing measured; the header had no trace of the warning)."""

import json
from pathlib import Path

import pytest

from tests import cli

REPO = Path(__file__).resolve().parents[2]
autotune = cli.autotune_main

_WORKLOAD = {"frames": 60, "text_tokens": 256, "global_batch": 64, "samples": 2048}


def _knobs(micro_batch: int, nodes: int) -> dict:
    return {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
            "micro_batch": micro_batch, "nodes": nodes}


# Hand-measured figures of three configurations, in the reference schema, as trial 33 wrote them.
_FIGURES = {
    "name": "h100-hand",
    "hardware": "h100-sxm",
    "configurations": {
        "8n": {"model": "32b", "knobs": _knobs(1, 8), "workload": _WORKLOAD},
        "2n": {"model": "32b", "knobs": _knobs(2, 2), "workload": _WORKLOAD},
        "4n": {"model": "32b", "knobs": _knobs(2, 4), "workload": _WORKLOAD},
    },
    "figures": [
        {"id": "8n-time", "configuration": "8n", "metric": "time_s", "value": 280.0},
        {"id": "8n-tflops", "configuration": "8n", "metric": "tflops", "value": 340.0},
        {"id": "8n-power", "configuration": "8n", "metric": "power_w", "value": 530.0},
        {"id": "2n-time", "configuration": "2n", "metric": "time_s", "value": 950.0},
        {"id": "2n-power", "configuration": "2n", "metric": "power_w", "value": 570.0},
        {"id": "4n-time", "configuration": "4n", "metric": "time_s", "value": 475.0},
    ],
}


@pytest.fixture(scope="module")
def few(tmp_path_factory):
    """(the reference file, the --json document of its calibration, the text calibration with -o, the profile)."""
    where = tmp_path_factory.mktemp("few")
    reference = where / "h100-figures.json"
    reference.write_text(json.dumps(_FIGURES))
    profile = where / "h100-cal.toml"
    text = autotune("calibrate", "--reference", reference, "-o", profile)
    assert text.returncode == 0, text.stderr
    as_json = autotune("calibrate", "--reference", reference, "--json")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)  # stdout the document alone: the warning is on stderr
    assert as_json.stderr == f"warning: {document['reliability_warning']}\n"
    return reference, document, text, profile


def test_the_warning_says_the_error_is_not_written_and_the_file_has_none(few):
    _, document, text, profile = few
    fitted = len(document["fitted"])
    assert document["configurations"] == 3 < fitted and not document["at_bound"]
    warning = (f"3 configurations with figures for {fitted} constants fitted: the left-out error is not reliable, so -o "
               "does not write it to [simulator_error] (a study on the profile shows +- ?%); measure more configurations "
               "(at least as many as the constants fitted) and calibrate again.")
    assert document["reliability_warning"] == warning
    # On stderr, as every other warning (trial 48 F18: it was the only one on stdout).
    assert text.stderr.splitlines() == [f"warning: {warning}"] and "warning:" not in text.stdout
    lines = text.stdout.splitlines()
    assert f"{fitted} of 26 constants fitted, from 3 configurations: too few for a reliable left-out error, which needs at " \
           "least as many configurations as constants fitted" in lines
    assert lines[-1] == (f"wrote {profile}, profile 'h100-cal' calibrated from 'h100-sxm' without [simulator_error] (its "
                         f"left-out error is not reliable: see the warning): use it with --hardware {profile}")
    text = profile.read_text()
    assert "[simulator_error]\n" not in text and "time_s_pct =" not in text  # was written: time_s_pct = 2.0, ...


def test_the_header_keeps_the_left_out_figures_and_the_warning_and_the_description_says_why(few):
    from autotune.calibrate.report import profile_error
    from autotune.hardware import load_hardware

    _, document, _, profile = few
    header = profile.read_text().splitlines()
    assert header[1] == f"# Leave-one-out mean absolute error (%), not written to [simulator_error]: {profile_error(document)}"
    assert header[2].startswith("# Worst left-out error (%): time_s ")
    assert header[3] == f"# Warning: {document['reliability_warning']}"
    loaded = load_hardware(str(profile))
    assert loaded.simulator_error == {} and loaded.calibrated_from == "h100-sxm"
    assert loaded.description == (f"{load_hardware('h100-sxm').description}; calibrated (from 3 configurations for "
                                  f"{len(document['fitted'])} constants), error not known reliably")


def test_a_study_on_the_profile_says_calibrated_and_error_not_known_reliably(few, tmp_path):
    _, document, _, profile = few
    out = tmp_path / "run"
    result = autotune("run", "--model", "32b", "--nodes", "2-8", "--hardware", profile, "--backend", "simulate",
                      "--trials", "6", "--out", out)
    assert result.returncode == 0, result.stderr
    why = (f"calibrated (from 3 configurations for {len(document['fitted'])} constants), error not known reliably: "
           f"see its header ({profile.resolve()})")
    # The report's console wraps long lines: compare the words.
    said = " ".join((result.stdout + result.stderr).split())
    assert f"Simulated figures carry an unknown error (+- ?%): this hardware profile was {why}." in said
    assert "not calibrated" not in said and "leave-one-out error" not in said  # was: "within about time +- 2%, ..."
    assert " +- ?%" in said and "tie with trial" not in said
    pareto = json.loads((out / "pareto.json").read_text())
    assert pareto["simulator_error"] == {"why_unknown": why}
    assert all(row["tied_with"] == [] for row in pareto["picks"])


def test_the_measured_h100_study_writes_no_error_it_warns_about(tmp_path):
    """The project's own measured study: 10 configurations for 13 constants and one on a bound."""
    from autotune.hardware import load_hardware

    profile = tmp_path / "h100-cal.toml"
    result = autotune("calibrate", REPO / "benchmarks" / "results" / "h100_power_study", "--hardware", "h100-sxm",
                      "--json", "-o", profile)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["reliability_warning"] and document["loo_mape"] and document["written_error"] == {}
    loaded = load_hardware(str(profile))
    assert loaded.simulator_error == {}  # was 13.1 / 12.8 / 8.9%
    fitted, bound = len(document["fitted"]), len(document["at_bound"])
    assert loaded.description.endswith(f"; calibrated (from {document['configurations']} configurations for {fitted} "
                                       f"constants, {bound} ended on a bound), error not known reliably")


def test_a_reliable_calibration_writes_its_error_and_drops_an_earlier_note(tmp_path):
    """A --no-loo calibration leaves a note ("error not computed"); calibrating it again with a left-out
    error the warning does not question writes [simulator_error] and the base's description alone."""
    from autotune.hardware import load_hardware
    from autotune.report.error_scope import with_scope_note

    quick = tmp_path / "quick.toml"
    done = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "-o", quick)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == (
        f"wrote {quick}, profile 'quick' calibrated from 'gh200' without [simulator_error] (--no-loo computed no "
        f"left-out error: a study on it shows +- ?%): use it with --hardware {quick}")
    described = load_hardware("gh200").description
    plain = with_scope_note(described, None)  # without what gh200's own error was measured on
    fitted = load_hardware(str(quick))
    assert fitted.simulator_error == {} and "error measured on" not in fitted.description  # no error: no scope of one
    assert fitted.description.startswith(f"{plain}; calibrated (from 21 configurations for ")
    assert fitted.description.endswith(" constants), error not computed (--no-loo)")
    again = tmp_path / "again.toml"
    result = autotune("calibrate", "--reference", "gh200-study", "--hardware", quick, "-o", again, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["reliability_warning"] is None and document["written_error"]
    loaded = load_hardware(str(again))
    assert loaded.simulator_error == document["written_error"] and loaded.description == f"{plain}; {document['measured_on']}"
    assert loaded.description == described  # the shipped profile's error was measured on the same reference
    # What the error vouches for reaches a study on the profile: its figures beyond it extrapolate.
    study = autotune("run", "--model", "7b", "--nodes", "1", "--hardware", again, "--trials", "2", "--out", tmp_path / "run")
    said = " ".join(study.stdout.split())
    assert study.returncode == 0 and (f"That error was measured on {document['measured_on'].removeprefix('error measured on ')}:"
                                      " other configurations' figures extrapolate it") in said, said
    assert "not written" not in again.read_text() and "# Warning" not in again.read_text()
