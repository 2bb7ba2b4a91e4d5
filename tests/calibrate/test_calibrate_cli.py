"""`autotune calibrate` as a user runs it (its main() in this process: the messages, exit codes, the profile it writes)."""

import json
import re
import sqlite3
from pathlib import Path

import pytest

from autotune.counted import counted
from tests import cli

autotune = cli.autotune_main  # in this process: calibration computes for seconds, the interpreter need not start again


@pytest.mark.slow
def test_reference_calibration_writes_a_profile_a_study_can_use(tmp_path):
    from autotune.hardware import SIMULATOR_CONSTANTS, dump_hardware, load_hardware, with_simulator_constants

    # From the specs' defaults: the shipped gh200 profile is already this fit, so it could not improve on it.
    defaults = tmp_path / "gh200-defaults.toml"
    defaults.write_text(dump_hardware(with_simulator_constants(
        load_hardware("gh200"), {spec.name: spec.default for spec in SIMULATOR_CONSTANTS})))
    profile = tmp_path / "gh200-calibrated.toml"
    result = autotune("calibrate", "--reference", "gh200-study", "--hardware", defaults, "-o", profile, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for key in ("loo_mape", "fit_mape", "before_mape"):
        assert set(report[key]) >= {"time_s", "energy_kj", "tflops", "power_w"}
    assert report["fit_mape"]["time_s"] < report["before_mape"]["time_s"]
    assert report["fit_mape"]["time_s"] <= report["loo_mape"]["time_s"] + 1e-9
    assert "[simulator_error]" in profile.read_text() and f"time_s_pct = {round(report['loo_mape']['time_s'], 1)}" in profile.read_text()
    run = autotune("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--backend", "simulate",
                   "--hardware", profile, "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    pareto = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert pareto["hardware"] == "gh200-calibrated" and pareto["front"]  # its own name, not its base's


def test_quick_calibration_prints_the_error_tables(tmp_path):
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo")
    assert result.returncode == 0, result.stderr
    assert "mean absolute percentage error" in result.stdout and "after the fit" in result.stdout
    assert "7b-baseline-time" in result.stdout


def test_out_of_bound_constants_are_refused(tmp_path):
    from autotune.hardware import PROFILE_DIR

    text = (PROFILE_DIR / "gh200.toml").read_text()
    assert "max_compute_efficiency" in text
    bad = tmp_path / "bad.toml"
    bad.write_text("\n".join(
        "max_compute_efficiency = 5.0" if line.startswith("max_compute_efficiency") else line for line in text.splitlines()
    ))
    result = autotune("calibrate", "--reference", "gh200-study", "--hardware", bad, "--no-loo")
    assert result.returncode == 2
    assert "max_compute_efficiency" in result.stderr and "out of range" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_corrupt_reference_file_is_refused_with_one_line(tmp_path):
    from autotune.calibrate.reference import REFERENCE_DIR

    data = json.loads((REFERENCE_DIR / "gh200-study.json").read_text())
    data["figures"][3]["value"] = "n/a"
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(data))
    result = autotune("calibrate", "--reference", path, "--no-loo")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "is not a number" in result.stderr and data["figures"][3]["id"] in result.stderr


def test_a_reference_that_is_a_directory_says_so():
    """Trial 37 F18: "unknown reference 'adir'" read as a misspelt name."""
    from autotune.calibrate.reference import reference_path
    from autotune.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^--reference .* is a directory; give a JSON file of figures"):
        reference_path(str(Path(__file__).parent))


def test_nothing_to_calibrate_against_is_refused():
    result = autotune("calibrate")
    assert result.returncode == 2 and "--reference gh200-study" in result.stderr


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    return cli.simulated_run(tmp_path_factory, nodes=1, trials=6)


def test_simulated_studies_are_not_observations_unless_allowed(simulated_run):
    refused = autotune("calibrate", simulated_run, "--no-loo")
    assert refused.returncode == 2 and "no usable observation" in refused.stderr
    allowed = autotune("calibrate", simulated_run, "--no-loo", "--json", "--allow-simulated")
    assert allowed.returncode == 0, allowed.stderr
    report = json.loads(allowed.stdout)
    assert report["observations"] >= 6 and report["sources"] == [str(simulated_run)]
    assert report["simulated"] == [str(simulated_run)]  # -o writes no error from it (test_simulated_calibration.py)
    # The simulator against its own output with its own constants: nothing to correct.
    assert all(value < 0.5 for value in report["before_mape"].values())


def test_a_run_directory_given_twice_is_refused(simulated_run):
    # Its probes would weigh twice in the fit and in the leave-one-out error.
    twice = autotune("calibrate", simulated_run, simulated_run.parent / ".." / simulated_run.parent.name / simulated_run.name,
                     "--no-loo", "--allow-simulated")
    assert twice.returncode == 2 and twice.stderr.strip().count("\n") == 0
    assert "is given twice" in twice.stderr and "pass each run directory once" in twice.stderr


def test_a_study_of_other_hardware_names_its_profile_as_a_flag(simulated_run):
    other = autotune("calibrate", simulated_run, "--hardware", "h100-sxm", "--no-loo", "--allow-simulated")
    assert other.returncode == 2 and other.stderr.strip().count("\n") == 0
    # A built-in profile by its name, not by the path it was installed at.
    assert "was measured on hardware 'gh200'" in other.stderr and "pass --hardware gh200 (" in other.stderr


def _copy_changing_results(run_dir, out, change, limit: int = -1, key: str = "result"):
    """A copy of a run directory whose stored probe results (or other trial attribute `key`) `change`
    edited (the first `limit`, or all)."""
    import shutil

    shutil.copytree(run_dir, out)
    with sqlite3.connect(out / "study.db") as db:
        rows = db.execute("SELECT trial_user_attribute_id, value_json FROM trial_user_attributes WHERE key = ? "
                          "ORDER BY trial_id LIMIT ?", (key, limit)).fetchall()
        for row_id, value in rows:
            result = json.loads(value)
            change(result)
            db.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_user_attribute_id = ?", (json.dumps(result), row_id))
    return out


def test_a_corrupt_measured_result_is_refused_with_one_line(simulated_run, tmp_path):
    run = _copy_changing_results(simulated_run, tmp_path / "run", lambda r: r.update(time_s=-3.0), limit=1)
    refused = autotune("calibrate", run, "--no-loo", "--allow-simulated")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "time_s" in refused.stderr and "out of range" in refused.stderr


def test_probes_of_candidates_outside_the_study_space_are_left_out_in_one_line(simulated_run, tmp_path):
    """Before, their figures were fitted (a knob value the space does not list passed every check)."""
    outside = _copy_changing_results(simulated_run, tmp_path / "outside", lambda c: c["knobs"].update(power_limit=0.5),
                                     limit=2, key="candidate")
    result = autotune("calibrate", outside, "--no-loo", "--allow-simulated", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["left_out"] == [f"{outside}: 2 probes of candidates outside the study's space, neither fitted nor "
                                  "counted: trials 0-1 (power_limit = 0.5, not among the space's [1.0, 0.9, 0.8, 0.7])"]
    assert not {row["id"] for row in report["per_observation"]} & {f"{outside.name}#0", f"{outside.name}#1"}
    text = autotune("calibrate", outside, "--no-loo", "--allow-simulated")
    assert f"  left out: {report['left_out'][0]}\n" in text.stdout
    every = _copy_changing_results(simulated_run, tmp_path / "every", lambda c: c["knobs"].update(power_limit=0.5),
                                   key="candidate")
    refused = autotune("calibrate", every, "--no-loo", "--allow-simulated")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"no usable observation: {every}: " in refused.stderr and "probes of candidates outside the study's space" in refused.stderr


@pytest.mark.slow
def test_the_shipped_gh200_error_is_what_calibration_measures():
    """The default profile's [simulator_error] is not stale: recalibrating it as its header says gives the same error."""
    from autotune.hardware import load_hardware

    result = autotune("calibrate", "--reference", "gh200-study", "--json")
    assert result.returncode == 0, result.stderr
    loo = json.loads(result.stdout)["loo_mape"]
    shipped = load_hardware("gh200").simulator_error
    for metric in ("time_s", "energy_kj", "tflops", "power_w"):
        assert shipped[f"{metric}_pct"] == pytest.approx(loo[metric], abs=0.3), metric


def test_studies_of_one_profile_calibrate_it_whatever_its_description_says(tmp_path):
    """A profile file whose description was edited between two studies is still their profile: calibrate
    takes it as the base without --hardware (before, it fell back to gh200 and refused both studies)."""
    from autotune.hardware import PROFILE_DIR

    text = (PROFILE_DIR / "gh200.toml").read_text().replace('name = "gh200"', 'name = "my-cluster"', 1)
    profile = tmp_path / "my-cluster.toml"
    runs = []
    for description in ("first rack", "second rack"):
        profile.write_text(text.replace('description = "', f'description = "{description}: ', 1))
        out = tmp_path / description.replace(" ", "-")
        result = autotune("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--backend", "simulate",
                          "--hardware", profile, "--out", out)
        assert result.returncode == 0, result.stderr
        runs.append(out)
    profile.unlink()  # the studies keep their profile
    both = autotune("calibrate", *runs, "--no-loo", "--allow-simulated", "--json")
    assert both.returncode == 0, both.stderr
    assert json.loads(both.stdout)["sources"] == [str(run) for run in runs]


def test_two_runs_that_measured_one_candidate_30_percent_apart_are_refused(simulated_run, tmp_path):
    slower = _copy_changing_results(simulated_run, tmp_path / "slower", lambda r: r.update(time_s=r["time_s"] * 1.3))
    refused = autotune("calibrate", simulated_run, slower, "--no-loo", "--allow-simulated")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"from {simulated_run} and " in refused.stderr and f"from {slower} give the time_s of one configuration" in refused.stderr
    assert "30% apart" in refused.stderr


def test_two_runs_that_agree_are_fitted_as_repeats_with_a_line_saying_so(simulated_run, tmp_path):
    again = _copy_changing_results(simulated_run, tmp_path / "again", lambda r: r.update(time_s=r["time_s"] * 1.02))
    result = autotune("calibrate", simulated_run, again, "--no-loo", "--allow-simulated")
    assert result.returncode == 0, result.stderr
    assert f"repeated: {simulated_run} and {again}: " in result.stdout and "at most 2.0% apart" in result.stdout


def test_run_directories_on_both_sides_of_an_option_are_all_calibrated(simulated_run, tmp_path):
    """Trial 48 F15: `calibrate runs/a --allow-simulated runs/b` said "unrecognized arguments: runs/b"."""
    again = _copy_changing_results(simulated_run, tmp_path / "again", lambda r: r.update(time_s=r["time_s"] * 1.02))
    result = autotune("calibrate", simulated_run, "--allow-simulated", again, "--no-loo", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["sources"] == [str(simulated_run), str(again)]
    # Still refused as before: an unknown option (with what follows it) and an option's missing value.
    unknown = autotune("calibrate", simulated_run, "--no-loo", "--bogus", again)
    assert unknown.returncode == 2
    assert unknown.stderr == (f"autotune calibrate: error: unrecognized arguments: --bogus {again} "
                              "(see `autotune calibrate --help`)\n")
    missing = autotune("calibrate", simulated_run, "--hardware")
    assert missing.stderr.startswith("autotune calibrate: error: argument --hardware: expected one argument")


def test_commands_of_one_run_directory_still_refuse_a_second(simulated_run, tmp_path):
    second = autotune("report", simulated_run, "--json", tmp_path)
    assert second.returncode == 2
    assert second.stderr == f"autotune report: error: unrecognized arguments: {tmp_path} (see `autotune report --help`)\n"


def test_a_run_whose_every_probe_failed_says_how_many_and_why(simulated_run, tmp_path):
    failed = _copy_changing_results(simulated_run, tmp_path / "failed", lambda r: r.update(status="oom"))
    refused = autotune("calibrate", failed, "--no-loo")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert re.search(r"no usable observation: probes without figures \([1-9]\d* oom\);", refused.stderr)  # was "()"


@pytest.mark.parametrize("change, words", [
    (lambda text: text.replace('"gh200-study"', '"\u00e9tude"', 1).encode("latin-1"), "is not UTF-8 text (byte 0xe9"),
    (lambda text: text.replace('"hardware": "gh200"', '"hardware": ["gh200"]', 1).encode(), 'hardware = ["gh200"] is not a name'),
    (lambda text: text.replace('"hardware": "gh200"', '"hardware": "gh300"', 1).encode(),
     'figures.json (gh200-study): hardware "gh300" is no built-in profile; pass --hardware with the profile file'),
    # Trial 41: a path, which load_hardware's message offered, never matched the profile's name, nor did --hardware PATH.
    (lambda text: text.replace('"hardware": "gh200"', '"hardware": "hw/mine.toml"', 1).encode(),
     'hardware = "hw/mine.toml" is a path; write the name of the profile the figures were measured on'),
    (lambda text: text.replace('"micro_batch": 4,', '"micro_batch": 8,', 1).encode(), "does not divide the global batch 16"),
])
def test_a_reference_the_command_cannot_use_is_one_line_not_a_traceback(tmp_path, change, words):
    from autotune.calibrate.reference import REFERENCE_DIR

    path = tmp_path / "figures.json"
    path.write_bytes(change((REFERENCE_DIR / "gh200-study.json").read_text()))
    result = autotune("calibrate", "--reference", path, "--no-loo")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert words in result.stderr


def test_a_built_in_profile_is_never_written_over():
    """Checked before any fit (here in-process: a failing check must not rewrite the shipped file)."""
    from autotune.commands.calibrate import _check_output
    from autotune.errors import UserError
    from autotune.hardware import PROFILE_DIR

    shipped = PROFILE_DIR / "gh200.toml"
    before = shipped.read_bytes()
    with pytest.raises(UserError) as err:
        _check_output(shipped)
    message = str(err.value)
    assert "\n" not in message and "is the built-in profile `--hardware gh200`" in message
    assert "such as gh200-calibrated.toml" in message and shipped.read_bytes() == before


def test_calibrate_replaces_only_a_profile_it_wrote_and_never_the_one_it_calibrates(tmp_path):
    from autotune.hardware import PROFILE_DIR

    mine = tmp_path / "my-node.toml"  # a hand-written profile: its comments say where its figures come from
    mine.write_text((PROFILE_DIR / "gh200.toml").read_text())
    refused = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "-o", mine)
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "is an existing file, not a profile an earlier `autotune calibrate` wrote" in refused.stderr
    assert mine.read_text() == (PROFILE_DIR / "gh200.toml").read_text()
    calibrated = tmp_path / "calibrated.toml"
    for replacing in (False, True):  # a new file, then the file an earlier calibrate wrote: said
        done = autotune("calibrate", "--reference", "gh200-study", "--hardware", mine, "--no-loo", "-o", calibrated)
        assert done.returncode == 0, done.stderr
        assert ("(replacing the profile an earlier calibrate wrote there: studies made on it keep their copy of it)"
                in done.stdout) == replacing
    kept = calibrated.read_text()
    refused = autotune("calibrate", "--reference", "gh200-study", "--hardware", calibrated, "--no-loo", "-o", calibrated)
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "is the profile being calibrated" in refused.stderr and "calibrated-calibrated.toml" in refused.stderr
    assert calibrated.read_text() == kept


@pytest.mark.parametrize("name, suggested", [("m1.md", "m1.toml"), ("cpu", "cpu.toml"), ("-x", "x.toml"),
                                             ("-", "my-cluster.toml")])
def test_an_output_not_named_toml_is_refused_for_a_true_reason(tmp_path, name, suggested):
    """The refusal said "`--hardware` reads only .toml paths", untrue since --hardware reads a file under any name."""
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "-o", tmp_path / name)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "reads only" not in result.stderr
    assert f"the profile is written as TOML; give it a .toml name such as {suggested}" in result.stderr
    assert not (tmp_path / name).exists()


def test_standard_output_is_refused_without_suggesting_a_dash_name(tmp_path):
    """Trial 45 §4: `-o -` suggested `-.toml`, which `--hardware -.toml` reads as an option."""
    result = autotune("calibrate", "--reference", "gh200-study", "--no-loo", "-o", "-", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "written as TOML to a file, not standard output; give it a .toml name such as my-cluster.toml" in result.stderr
    assert list(tmp_path.iterdir()) == []


def _as_replay(run_dir, out):
    """A copy of a run directory whose study reads as a replay (of its own recorded figures)."""
    import shutil

    shutil.copytree(run_dir, out)
    with sqlite3.connect(out / "study.db") as db:
        db.execute("UPDATE study_user_attributes SET value_json = ? WHERE key = 'backend'",
                   (json.dumps({"name": "replay", "reason": "chosen with --backend replay"}),))
    return out


def test_a_replay_of_a_run_is_fitted_once_not_as_its_repeats(simulated_run, tmp_path):
    """Its figures are the run's own, looked up: before, they were fitted as repeats (double weight)."""
    alone = json.loads(autotune("calibrate", simulated_run, "--no-loo", "--allow-simulated", "--json").stdout)
    replay = _as_replay(simulated_run, tmp_path / "replay")
    for order in ((replay, simulated_run), (simulated_run, replay)):
        result = autotune("calibrate", *order, "--no-loo", "--allow-simulated", "--json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["observations"] == alone["observations"] and report["sources"] == [str(simulated_run)]
        assert report["repeated"] == []
        assert report["copies"] == [f"{replay} (a replay of recorded figures): {counted(len({o['id'] for o in alone['per_observation']}), 'configuration')} "
                                    f"with the figures of {simulated_run}, copies of those measurements, "
                                    "not repeats: fitted once"]
    text = autotune("calibrate", simulated_run, replay, "--no-loo", "--allow-simulated").stdout
    assert f"  copies: {replay} (a replay" in text and "repeated:" not in text
    # Without the run it replays, a replay's figures are measurements all the same: fitted once.
    only = json.loads(autotune("calibrate", replay, "--no-loo", "--allow-simulated", "--json").stdout)
    assert only["observations"] == alone["observations"] and only["copies"] == []


def test_a_failed_calibration_leaves_no_folder_its_output_path_made(tmp_path):
    """The -o check creates the file's missing folders (as `mkdir -p`); a calibration that then fails (no such
    run directory) left them behind, empty."""
    from tests.cli import autotune_main

    result = autotune_main("calibrate", tmp_path / "no-such-run", "-o", tmp_path / "new" / "deeper" / "mine.toml")
    assert result.returncode == 2 and "no-such-run does not exist; pass the --out directory" in result.stderr, result.stderr
    assert not (tmp_path / "new").exists()


def test_one_configuration_has_no_left_out_error_and_says_why(tmp_path):
    """Trial 54 F8: with one configuration its left-out fold saw no figure, and the 'left out' error printed (527.8%)
    and written into the profile's header was the full fit refitted a few steps: no prediction."""
    space = tmp_path / "one.toml"
    space.write_text('zero_stage = [3]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["recompute"]\n'
                     'sp_degree = [1]\nmicro_batch = [1]\npower_limit = [1.0]\nsm_clock_mhz = ["max"]\n')
    run = tmp_path / "r"
    assert autotune("run", "--model", "32b", "--nodes", "4", "--space", space, "--out", run, "-q").returncode == 0
    done = autotune("calibrate", run, "--allow-simulated", "-o", tmp_path / "one-cal.toml")
    assert done.returncode == 0, done.stderr
    why = "one configuration only: leaving it out leaves nothing to fit on"
    assert f"left out                   (not computed: {why})" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("r#")]
    assert rows and all(line.rstrip().endswith("n/a") for line in rows), done.stdout
    header = (tmp_path / "one-cal.toml").read_text().splitlines()[1]
    assert header == f"# Leave-one-out mean absolute error (%): not computed: {why}", header
    report = json.loads(autotune("calibrate", run, "--allow-simulated", "--json").stdout)
    assert report["loo_mape"] is None and report["loo_skipped"] == why


def test_a_reference_file_is_read_whatever_its_name_ends_in(tmp_path):
    """trial78 #4: `--reference ref_noext`, a copy of gh200-study.json, was "unknown reference": use ... the path of a
    JSON file of figures, what the user had given. Any existing file is read as JSON; one that is not JSON says so,
    and a name that is neither a file nor a built-in reference says both."""
    from autotune.calibrate.reference import REFERENCE_DIR, read_reference
    from autotune.errors import ConfigError

    copy = tmp_path / "ref_noext"
    copy.write_bytes((REFERENCE_DIR / "gh200-study.json").read_bytes())
    assert read_reference(str(copy))[0] == read_reference("gh200-study")[0]
    (tmp_path / "afile").write_text("hello\n")
    with pytest.raises(ConfigError, match=r"^reference .*afile: not valid JSON"):
        read_reference(str(tmp_path / "afile"))
    with pytest.raises(ConfigError, match="no built-in reference has that name and no file is there"):
        read_reference(str(tmp_path / "nothere.json"))
