"""What a study keeps in its user attrs (settings, pick_parameters) is read as a file is: the Optuna API edits them
(study.set_user_attr), and an edited value was a traceback in report and export (trial 66 #5)."""

from __future__ import annotations

import shutil

import optuna
import pytest

from tests.cli import autotune_main


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "run"
    result = autotune_main("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2", "--backend", "simulate",
                           "--trials", "2", "--out", out)
    assert result.returncode == 0, result.stderr
    return out


def _settings(edit):
    def apply(study):
        settings = study.user_attrs["settings"]
        edit(settings)
        study.set_user_attr("settings", settings)
    return apply


def _picks(kept):
    return lambda study: study.set_user_attr("pick_parameters", kept)


@pytest.mark.parametrize("edit, said", [
    (_picks({"max_slowdown": 1.05, "eta": 7}), "the study's pick_parameters: eta = 7 is out of range; it must be a number "
     ">= 0 and <= 1; it was edited since a run kept it (study.set_user_attr): "),
    (_picks({"max_slowdown": 1.05, "eta": "abc"}), "the study's pick_parameters: eta = \"abc\" is not a number"),
    (_picks({"max_slowdown": 0.5, "eta": 0.5}), "pick_parameters: max_slowdown = 0.5 is out of range"),
    # Trial 68 #4: a wrong shape, or a key gone, was taken for the defaults without a word (another pick).
    (_picks([1, 2]), "the study's pick_parameters = [1, 2] is not an object of max_slowdown, eta; it was edited since a "
     "run kept it (study.set_user_attr): "),
    (_picks(None), "the study's pick_parameters = null is not an object of max_slowdown, eta"),
    (_picks({"max_slowdown": 1.05}), "the study's pick_parameters lacks eta; it was edited since a run kept it "
     "(study.set_user_attr): "),
    (_settings(lambda s: s["workload"].update(samples=-5)), "the study's settings: workload.samples = -5 is out of range; "
     "it must be a whole number >= 1; the study's settings were edited since the run kept them (study.set_user_attr)"),
    (_settings(lambda s: s["workload"].update(samples="abc")), "workload.samples = \"abc\" is not a whole number"),
    (_settings(lambda s: s.pop("workload")), "the study's settings are not as autotune kept them (KeyError: 'workload')"),
    (_settings(lambda s: s.update(gpus_per_node=0)), "the study's settings: gpus_per_node = 0 is out of range"),
    # Trial 68 #5: the kept space was read unchecked (reported as the space searched), and 64.0 taken as whole.
    (_settings(lambda s: s["space"].update(zero_stage=[1.5, "x"])), "the study's settings: space.zero_stage holds 1.5, "
     "which is not one of the allowed values 0, 1, 2, 3; the study's settings were edited since the run kept them"),
    (_settings(lambda s: s["space"].update(micro_batch=[])), "the study's settings: space.micro_batch = [] is not a "
     "non-empty list"),
    (_settings(lambda s: s["space"].update(zero_stag=[1])), "the study's settings: space: unknown key zero_stag"),
    (_settings(lambda s: s["workload"].update(global_batch=64.0)), "the study's settings: workload.global_batch = 64.0 "
     "is not a whole number"),
    # Trial 68 #16: "fix the file" for a study of --model 7b (no file), and no fix at all for its profile.
    (_settings(lambda s: s["model"]["llm"].update(layers=-5)), "the study's settings: model: llm.layers = -5 is out of "
     "range; it must be a whole number >= 1 and <= 1000000000000; the study's settings were edited since the run kept "
     "them (study.set_user_attr)"),
    (_settings(lambda s: s["hardware_profile"].update(gpus_per_node=0)), "the study's hardware profile 'gh200': "
     "gpus_per_node = 0 is out of range; it must be a whole number >= 1 and <= 1024; the study's "
     "settings were edited since the run kept them"),
])
def test_an_edited_user_attr_of_the_study_is_one_line_naming_it(finished_run, tmp_path, edit, said):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    edit(optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}"))
    for command in (("report", out), ("export", out, "--pick", "cost-weighted", "-o", tmp_path / "pick.json")):
        result = autotune_main(*command)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert said in result.stderr, result.stderr


@pytest.mark.parametrize("kept, said, flags", [
    ({"max_slowdown": 1.05, "eta": 7}, "eta = 7 is out of range; it must be a number >= 0 and <= 1; it was", "--eta"),
    ([1, 2], "= [1, 2] is not an object of max_slowdown, eta; it was", "--max-slowdown and --eta"),
    ({"max_slowdown": -3, "eta": "x"}, "max_slowdown = -3 is out of range; it must be a number >= 1; the study's "
     "pick_parameters: eta = \"x\" is not a number; it must be a number >= 0 and <= 1; they were", "--max-slowdown and --eta"),
])
def test_edited_pick_parameters_are_named_at_once_with_each_command_s_own_fix(finished_run, tmp_path, kept, said, flags):
    """Trial76 #8: export's line said "pass --max-slowdown to replace it", a flag export refuses, and named one bad
    value per run. Report names its flags; export the report that replaces them."""
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    _picks(kept)(optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}"))
    report = autotune_main("report", out)
    assert report.returncode == 2 and said in report.stderr, report.stderr
    them = "them" if " and " in flags else "it"
    assert report.stderr.rstrip().endswith(f"(study.set_user_attr): pass {flags} to replace {them}"), report.stderr
    export = autotune_main("export", out, "--trial", "0", "-o", tmp_path / "t0.json")
    assert export.returncode == 2 and said in export.stderr, export.stderr
    assert export.stderr.rstrip().endswith(
        f"(study.set_user_attr): `autotune report {out} --max-slowdown 1.05 --eta 0.5` (the defaults, or your own; "
        "export takes neither flag) replaces them; then export again"), export.stderr
    fixed = autotune_main("report", out, "--max-slowdown", "1.05", "--eta", "0.5")
    assert fixed.returncode == 0, fixed.stderr
    assert autotune_main("export", out, "--trial", "0", "-o", tmp_path / "t0.json").returncode == 0


def test_a_resume_names_an_edited_space_as_an_edit_not_as_the_command_line(finished_run, tmp_path):
    """Trial 68 #5: run blamed the command line ("holds a study of --space zero_stage = [1.5, 'x'] ... repeat the
    original options"), which no options could match."""
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    _settings(lambda s: s["space"].update(zero_stage=[1.5, "x"]))(
        optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}"))
    result = autotune_main("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2", "--backend", "simulate",
                           "--trials", "3", "--out", out)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "the study's settings: space.zero_stage holds 1.5" in result.stderr, result.stderr


@pytest.mark.parametrize("key, value, said", [
    ("converged", {"probes": "abc", "rule": "r"}, "the study's converged: probes = \"abc\" is not a whole number"),
    ("converged", {"probes": -3, "rule": "r"}, "the study's converged: probes = -3 is out of range; it must be a whole "
                                               "number >= 0"),
    ("converged", "x", "the study's converged = \"x\" is not an object of probes, trials and rule, or null; it was "
                       "edited since a run kept it (study.set_user_attr)"),
    ("backend", "x", "the study's backend = \"x\" is not an object"),
])
def test_an_edited_record_of_the_study_is_one_line_in_report_and_run(finished_run, tmp_path, key, value, said):
    """Trial 68 #18: the records beside the settings ended report (and run) in a traceback, for good, or were printed
    as found ("converged after -3 simulated probes")."""
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}").set_user_attr(key, value)
    run = ("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2", "--backend", "simulate", "--trials", "3",
           "--out", out)
    for command in (("report", out), run):
        result = autotune_main(*command)
        errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]  # run says its backend first
        assert result.returncode == 2 and len(errors) == 1 and said in errors[0], result.stderr
