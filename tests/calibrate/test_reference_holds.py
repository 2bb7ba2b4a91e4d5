"""A reference names the constants its figures cannot pin (`hold`): calibrated against it alone they keep
the base profile's value, with the reason in the report, instead of ending on a bound and warning that the
error of the project's own shipped profile is not reliable. Figures of the user's own still warn."""

import json
import re

import pytest

from autotune.calibrate import load_reference
from autotune.calibrate.reference import REFERENCE_DIR, reference_holds
from autotune.hardware import load_hardware
from tests import cli

autotune = cli.autotune_main


def test_gh200_study_holds_the_per_step_overhead_for_a_reason_its_configurations_show():
    holds = reference_holds("gh200-study")
    assert list(holds) == ["step_overhead_s"]
    assert "one micro-step per optimizer step" in holds["step_overhead_s"]
    # The reason must stay true of the figures: a configuration with gradient accumulation would
    # separate the per-step cost from ZeRO-3's per-block one, and the hold should then go.
    observations = load_reference("gh200-study", load_hardware("gh200"))
    assert {o.candidate.grad_accum for o in observations} == {1}


def test_the_shipped_reference_calibrates_without_a_bound_or_a_warning_and_names_its_worst():
    result = autotune("calibrate", "--reference", "gh200-study", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["held"] == ["step_overhead_s"] and "step_overhead_s" not in document["fitted"]
    assert document["held_by_reference"] == reference_holds("gh200-study")
    assert document["at_bound"] == [] and document["reliability_warning"] is None
    assert document["constants"]["step_overhead_s"] == pytest.approx(load_hardware("gh200").simulator["step_overhead_s"])
    assert set(document["loo_worst"]) == set(document["loo_mape"])
    for metric, worst in document["loo_worst"].items():
        errors = {row["id"]: row["error_loo_pct"] for row in document["per_observation"] if row["metric"] == metric}
        assert worst["error_pct"] == errors[worst["id"]] and abs(worst["error_pct"]) == max(map(abs, errors.values()))


def test_the_report_says_what_is_held_why_and_how_to_fit_it_anyway():
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo")
    assert result.returncode == 0, result.stderr
    reason = reference_holds("gh200-study")["step_overhead_s"]
    assert ("\nstep_overhead_s held at the base profile's value: gh200-study cannot pin it "
            f"(--fit step_overhead_s fits it anyway):\n  {reason}\n") in result.stdout
    assert re.search(r"\nstep_overhead_s +\S+ +\(held\)", result.stdout)
    assert "warning:" not in result.stdout and "at its bound" not in result.stdout


def test_fit_lifts_the_hold_and_the_constant_then_ends_on_its_floor_with_the_warning():
    """The evidence behind the hold: fitted, the per-step overhead goes to its lower bound 0."""
    result = autotune("calibrate", "--reference", "gh200-study", "--fit", "step_overhead_s", "--no-loo", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert "step_overhead_s" in document["fitted"] and document["held"] == [] and document["held_by_reference"] == {}
    assert document["at_bound"] == ["step_overhead_s"] and document["constants"]["step_overhead_s"] < 1e-3
    assert "1 constant ended on a bound" in document["reliability_warning"]


def test_with_measured_runs_the_reference_holds_nothing(simulated_run):
    """Figures of the user's own may pin what the reference cannot, and must warn if they push it onto a bound."""
    result = autotune("calibrate", simulated_run, "--reference", "gh200-study", "--allow-simulated", "--no-loo", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["held"] == [] and document["held_by_reference"] == {}
    assert "step_overhead_s" in document["fitted"]


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    return cli.simulated_run(tmp_path_factory, nodes=1, trials=4)


@pytest.mark.parametrize("flags, words", [
    (["--fit", "no_such"], "--fit no_such: no such simulator constant"),
    (["--fit", "comm_overlap"], "--fit comm_overlap: the reference holds only step_overhead_s"),
    (["--hold", "step_overhead_s", "--fit", "step_overhead_s"], "--hold and --fit both name step_overhead_s"),
])
def test_fit_flags_that_would_change_nothing_or_contradict_are_refused(flags, words):
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", *flags)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert words in result.stderr


@pytest.mark.parametrize("hold, words", [
    ({"step_overhead": "why"}, "hold names 'step_overhead', no simulator constant"),
    ({"step_overhead_s": ""}, "hold step_overhead_s = \"\": give the reason"),
    (["step_overhead_s"], "hold must be an object of simulator constant: reason"),
])
def test_a_broken_hold_in_a_reference_file_is_one_line(tmp_path, hold, words):
    data = json.loads((REFERENCE_DIR / "gh200-study.json").read_text())
    data["hold"] = hold
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(data))
    result = autotune("calibrate", "--reference", path, "--no-loo")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert words in result.stderr


def test_a_reference_file_without_hold_holds_nothing_and_still_warns(tmp_path):
    """A user's own figures hold nothing they do not state: the warning is not silenced for them."""
    data = json.loads((REFERENCE_DIR / "gh200-study.json").read_text())
    del data["hold"]
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(data))
    result = autotune("calibrate", "--reference", path, "--no-loo", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["held_by_reference"] == {} and document["at_bound"] == ["step_overhead_s"]
    assert document["reliability_warning"] is not None


@pytest.mark.parametrize("flags, said", [
    (["--hold", "step_overhead_s,zero3_block_overhead_s"],
     "--hold step_overhead_s,zero3_block_overhead_s: --hold takes one constant, not a list; repeat the flag, once for "
     "each: --hold step_overhead_s --hold zero3_block_overhead_s"),
    (["--fit", "step_overhead_s, comm_overlap"],
     "--fit step_overhead_s, comm_overlap: --fit takes one constant, not a list; repeat the flag, once for each: "
     "--fit step_overhead_s --fit comm_overlap"),
    (["--hold", "comm_overlap,"], "--hold comm_overlap,: --hold takes one constant, not a list; drop the comma: "
                                  "--hold comm_overlap"),
    (["--exclude", "7b-baseline-time,7b-baseline-energy"],
     "--exclude 7b-baseline-time,7b-baseline-energy names no observation, and --exclude takes one, not a list; repeat "
     "the flag, once for each: --exclude 7b-baseline-time --exclude 7b-baseline-energy"),
    (["--hold", ""], "argument --hold: is empty; give a value"),
])
def test_a_comma_list_given_a_repeatable_flag_says_to_repeat_it(flags, said):
    """Trial 48 F16: `--hold a,b` said "no such simulator constant", which did not say that --hold repeats."""
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", *flags)
    assert result.returncode == 2 and result.stderr.startswith(f"autotune calibrate: error: {said}"), result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_commas_alone_are_the_unknown_name_they_are():
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "--hold", ",")
    assert result.returncode == 2 and "--hold ,: no such simulator constant; one of " in result.stderr
