"""The worst left-out error per metric: which figure, which configuration, how far off, in the console
table, in --json (`loo_worst`) and in the header of the profile -o writes. A trial's CPU study had a
42.8% mean left-out error and no way to see that one configuration was off by far more."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from autotune.calibrate import Calibration, load_reference, worst_by_metric
from autotune.calibrate.report import calibration_document, report_text, worst_text
from autotune.candidate import configuration_text
from autotune.hardware import load_hardware
from tests import cli

REPO = Path(__file__).resolve().parents[2]
autotune = cli.autotune_main


@pytest.fixture(scope="module")
def cal():
    base = load_hardware("gh200")
    return Calibration(load_reference("gh200-study", base), base)


def _index(cal, figure_id):
    return next(i for i, o in enumerate(cal.observations) if o.id == figure_id)


def _left_out(cal, misses):
    """Left-out 'predictions' that miss the named figures by the given ratios and hit every other exactly."""
    predictions = cal.values.copy()
    for figure_id, ratio in misses.items():
        predictions[_index(cal, figure_id)] *= ratio
    return predictions


def test_the_worst_is_the_largest_miss_either_way_per_metric(cal):
    errors = cal.pct_errors(_left_out(cal, {"7b-baseline-time": 1.20, "72b-baseline-time": 0.70, "7b-baseline-tflops": 1.05}))
    worst = worst_by_metric(cal.observations, errors)
    assert set(worst) == {o.metric for o in cal.observations}
    assert cal.observations[worst["time_s"]].id == "72b-baseline-time"  # -30% beats +20%
    assert cal.observations[worst["tflops"]].id == "7b-baseline-tflops"


def test_the_document_and_the_table_name_the_worst_figure_its_configuration_and_its_error(cal):
    fit = cal.fit(())
    loo = _left_out(cal, {"7b-baseline-time": 1.20, "72b-baseline-time": 0.70})
    document = calibration_document(cal, fit, loo, {"loo_by": "configuration"})
    assert document["loo_worst"]["time_s"] == {
        "error_pct": -30.0,
        "id": "72b-baseline-time",
        "source": "gh200-study",
        "configuration": "72b: ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, micro-batch 1, 8 nodes",
        "relative_to_baseline": False,
    }
    assert document["loo_worst"]["energy_kj"]["relative_to_baseline"] in (True, False)
    text = report_text(document)
    assert "\nworst left out, per metric (the figure furthest off; +: predicted too high)\n" in text
    assert ("\n  time_s            -30.0%  72b-baseline-time  (72b: ZeRO-3 optimizer offload none, checkpointing "
            "recompute, SP 1, micro-batch 1, 8 nodes)\n") in text
    # Under the means, before the constants.
    assert text.index("left out, by configuration") < text.index("worst left out") < text.index("constant  ")
    assert worst_text(document).startswith("\nWorst left-out error (%): ")
    assert "time_s -30.0 (72b-baseline-time)" in worst_text(document)


def test_without_leave_one_out_there_is_no_worst(cal):
    document = calibration_document(cal, cal.fit(()), None, {"loo_by": None})
    assert document["loo_worst"] is None
    assert "worst left out" not in report_text(document) and worst_text(document) == ""


def test_a_configuration_names_its_device_settings_where_they_were_set(cal):
    candidate = cal.observations[_index(cal, "7b-baseline-time")].candidate
    assert configuration_text(candidate) == ("7b: ZeRO-3 optimizer offload none, checkpointing recompute, SP 1, "
                                             "micro-batch 4, 1 node")
    limited = replace(candidate, knobs=replace(candidate.knobs, power_limit=0.7, sm_clock_mhz=1500))
    assert configuration_text(limited).endswith(", 1 node, power limit 0.7 x default, SM clock cap 1500 MHz")


def test_the_measured_h100_study_gives_its_worst_left_out_error_as_docs_benchmarks_quotes_it(tmp_path):
    """The committed real study, as a user runs it: --json names the worst figure per metric, it is the
    largest left-out error among the observations, and docs/benchmarks.md quotes the command's figures."""
    study = REPO / "benchmarks" / "results" / "h100_power_study"
    profile = tmp_path / "h100-mine.toml"
    result = autotune("calibrate", study, "--hardware", "h100-sxm", "--json", "-o", profile)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document["loo_worst"]) == {"time_s", "tflops", "power_w"}
    for metric, worst in document["loo_worst"].items():
        errors = [row["error_loo_pct"] for row in document["per_observation"] if row["metric"] == metric]
        assert abs(worst["error_pct"]) == max(abs(e) for e in errors) >= document["loo_mape"][metric]
        assert worst["source"] == str(study) and worst["configuration"].startswith("1.5b: ZeRO-")
    header = profile.read_text().splitlines()[2]
    assert header.startswith("# Worst left-out error (%): time_s ")
    assert f"time_s {document['loo_worst']['time_s']['error_pct']:+.1f} ({document['loo_worst']['time_s']['id']})" in header
    docs = (REPO / "docs" / "benchmarks.md").read_text()
    worst = document["loo_worst"]
    row = "| left out, worst | " + " | ".join(
        f"{worst[m]['error_pct']:+.1f}% (trial {worst[m]['id'].rsplit('#', 1)[1]})" for m in ("time_s", "tflops", "power_w")) + " |"
    assert row in docs
    mean = document["loo_mape"]
    assert f"| left out, by configuration | {mean['time_s']:.1f}% | {mean['tflops']:.1f}% | {mean['power_w']:.1f}% |" in docs
