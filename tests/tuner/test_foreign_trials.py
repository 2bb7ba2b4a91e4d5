"""Trials that hold an autotune record, but that autotune did not probe in this study (study/foreign.py, trial74 #2):
left out of the probe counts, the guided model, the front and the picks, and named in one line by run and report."""

from __future__ import annotations

import json

import optuna
import pytest

from autotune.study.foreign import foreign_trials
from autotune.study.retries import evaluated_count
from tests.cli import autotune_main

RUN = ("run", "--model", "7b", "--nodes", "2", "--backend", "simulate", "-q")
NOT_HERE = "not probed in this study, but added to it by hand"


def _study(out) -> optuna.Study:
    return optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """A 3-trial study of the default workload, and one of 16 frames, to copy trials from."""
    root = tmp_path_factory.mktemp("foreign")
    for name, extra in (("own", ()), ("frames16", ("--frames", "16"))):
        done = autotune_main(*RUN, "--trials", "3", *extra, "--out", root / name)
        assert done.returncode == 0, done.stderr
    return root


def _copy(studies, tmp_path):
    import shutil

    shutil.copytree(studies / "own", tmp_path / "run")
    return tmp_path / "run"


def _picked_trials(out) -> set[int]:
    document = json.loads((out / "pareto.json").read_text())
    return {p["trial"] for p in document["front"]} | set(document["recommendations"].values())


def test_a_trial_copied_from_a_study_of_another_workload_is_left_out_and_named(studies, tmp_path):
    """A 16-frame study's trial, copied with add_trial, was the 60-frame study's fastest pick, and its `baseline` mark
    moved the baseline to a candidate invalid at 60 frames."""
    out = _copy(studies, tmp_path)
    study = _study(out)
    own = {t.number for t in study.trials}
    for t in _study(studies / "frames16").trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            study.add_trial(t)
    copied = sorted({t.number for t in study.trials} - own)
    assert copied and set(foreign_trials(study)) == set(copied)
    assert evaluated_count(study) == len(own)

    reported = autotune_main("report", out)
    assert reported.returncode == 0, reported.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert _picked_trials(out).isdisjoint(copied)
    assert document["baseline"] == 0
    assert document["trials_by_status"]["invalid"] >= len(copied)
    shown = " ".join(reported.stdout.split())  # rich wraps the sentence
    numbers = ", ".join(map(str, copied))
    assert (f"Left out of the search, the front and the picks as no probe of this study: trials {numbers} (its "
            f"candidate is of workload frames 16, this study's 60: {NOT_HERE}") in shown
    resumed = autotune_main(*RUN, "--trials", "3", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    assert f"warning: {len(copied)} trials were {NOT_HERE}" in resumed.stderr
    assert f"trials {numbers} (its candidate is of workload frames 16, this study's 60)" in " ".join(resumed.stderr.split())


def test_measured_figures_added_to_a_simulated_study_and_a_re_added_trial_are_left_out(studies, tmp_path):
    """A made-up `measured` result in a study whose backend only simulates was its fastest pick, labelled measured; a
    study's own trials added again counted as two more probes, and the copy of the baseline became the baseline."""
    out = _copy(studies, tmp_path)
    study = _study(out)
    first, baseline = study.trials[1], study.trials[0]
    made_up = json.loads(json.dumps(first.user_attrs))
    made_up["result"].update(source="measured", energy_source="measured", time_s=1.0, energy_kj=1.0)
    study.add_trial(optuna.trial.create_trial(params=first.params, distributions=first.distributions, values=[1.0, 1.0],
                                              user_attrs=made_up))
    study.add_trial(baseline)
    measured, again = study.trials[-2].number, study.trials[-1].number
    assert foreign_trials(study) == {
        measured: "its result's source is measured, which this study's backend (simulate) never gives",
        again: "its candidate is trial 0's, which this study evaluated already"}

    assert autotune_main("report", out).returncode == 0
    document = json.loads((out / "pareto.json").read_text())
    assert _picked_trials(out).isdisjoint({measured, again})
    assert document["baseline"] == 0 and document["source"] == "simulated"
    assert sum(who["evaluated"] for who in document["inputs"]["proposed_by"]) == 3


def test_export_measurements_names_the_trials_it_leaves_out_as_no_probe_of_this_study(studies, tmp_path):
    """`export --measurements` left a copied trial, made-up figures and a second record of one probe out without a word,
    and called a trial added by hand with values of its own "study.db is damaged there": one line names them all, each
    in the run's and the report's words (outside.outside_reason)."""
    out = _copy(studies, tmp_path)
    study = _study(out)
    copied = next(t for t in _study(studies / "frames16").trials if t.state == optuna.trial.TrialState.COMPLETE)
    study.add_trial(copied)
    first = study.trials[1]
    study.add_trial(optuna.trial.create_trial(params=first.params, distributions=first.distributions, values=[50.0, 50.0],
                                              user_attrs=dict(first.user_attrs)))
    study.add_trial(study.trials[0])
    records = tmp_path / "m.jsonl"
    exported = autotune_main("export", out, "--measurements", records)
    assert exported.returncode == 0, exported.stderr
    assert len(records.read_text().splitlines()) == 3  # the study's own three probes
    assert exported.stderr.count("\n") == 1 and "study.db is damaged" not in exported.stderr, exported.stderr
    assert exported.stderr.startswith("3 trials left out of the measurements as no probe of this study (as of the "
                                      "search, the front and the picks): trial 3 (its candidate is of workload frames "
                                      f"16, this study's 60: {NOT_HERE}")
    assert "trial 4 (its Optuna value 50 is not its result.time_s = " in exported.stderr
    assert ": added or edited by hand); trial 5 (its candidate is trial 0's, which this study evaluated already: " in (
        exported.stderr)


def test_a_study_whose_only_records_are_copies_resumes_with_another_backend(studies, tmp_path):
    """A study that had probed nothing, only holding trials copied from a simulated study, was refused with `--backend
    replay` as one "evaluated by the simulate backend": a copy is no probe of this study (foreign.py)."""
    own = _study(studies / "own")
    out = tmp_path / "run"
    out.mkdir()
    study = optuna.create_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}", directions=own.directions)
    for key, value in own.user_attrs.items():
        study.set_user_attr(key, value)
    copied = [t for t in _study(studies / "frames16").trials if t.state == optuna.trial.TrialState.COMPLETE]
    for t in copied:
        study.add_trial(t)
    listed = autotune_main("space", "--model", "7b", "--nodes", "2", "--simulate", "--json")
    assert listed.returncode == 0, listed.stderr
    (tmp_path / "m.json").write_text(listed.stdout)
    resumed = autotune_main("run", "--model", "7b", "--nodes", "2", "-q", "--backend", "replay", "--measurements",
                            tmp_path / "m.json", "--trials", "1", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    assert evaluated_count(_study(out)) == 1 and set(foreign_trials(_study(out))) == {t.number for t in copied}


def _in_memory(studies, numbers=None) -> optuna.Study:
    """The 3-trial study again, in memory (its trials `numbers` only, in that order): a study one test may add to."""
    own = _study(studies / "own")
    study = optuna.create_study(directions=own.directions)
    for key, value in own.user_attrs.items():
        study.set_user_attr(key, value)
    for number in numbers if numbers is not None else range(len(own.trials)):
        study.add_trial(own.trials[number])
    return study


def test_a_copied_trial_is_proposed_by_no_proposer_of_the_study(studies):
    """A copy keeps the proposer that proposed it in its own study: pareto.json's inputs listed it among this study's
    proposer's trials ("trials proposed by guided seed 0 (--trials 3, ...): 3 evaluated of 4 trials")."""
    from autotune.report.inputs import study_inputs
    from autotune.study.settings import StudySettings

    study = _in_memory(studies)
    own = [t.number for t in study.trials]
    copied = next(t for t in _study(studies / "frames16").trials if t.state == optuna.trial.TrialState.COMPLETE)
    assert isinstance(copied.user_attrs.get("proposed_by"), dict)
    study.add_trial(copied)
    inputs = study_inputs(study, StudySettings.from_dict(study.user_attrs["settings"]))
    assert sorted(n for who in inputs["proposed_by"] for n in who["trials"]) == own
    assert inputs["proposer_not_recorded"] == 0


def test_each_count_of_the_evaluated_trials_reads_only_the_trials_finished_since_the_last(studies, monkeypatch):
    """The stop callback, the budget, the progress line and the sampler count the study's evaluated trials on every
    trial, and each count read every trial's record again (foreign_trials, kept_result_fault): a simulated study's cost
    per trial grew with its trials (0.2 s a trial at 200 trials, 0.58 s at 1,400). A count now reads the trials finished
    since the last one, and says what a first read of every trial says; so does the list of evaluated trials by
    candidate."""
    import copy

    from autotune.study import foreign, outside, retries

    study = _in_memory(studies)
    evaluated = evaluated_count(study)
    for t in _study(studies / "frames16").trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            study.add_trial(t)
            break
    study.add_trial(study.trials[0])
    read = {"records": 0, "results": 0}
    for name, module, key in (("_other_setting", foreign, "records"), ("_kept_result_fault", outside, "results")):
        def counted(*args, _real=getattr(module, name, None), _key=key):
            read[_key] += 1
            return _real(*args)
        monkeypatch.setattr(module, name, counted, raising=False)
    assert evaluated_count(study) == evaluated and evaluated_count(study) == evaluated
    assert read == {"records": 2, "results": 2}  # the two trials added, once
    copied, again = (t.number for t in study.trials[-2:])
    assert set(foreign_trials(study)) == {copied, again}
    assert foreign_trials(study) == foreign_trials(study, copy.deepcopy(study.get_trials()))  # other objects: read anew
    first_read = retries.evaluated_trials(study)
    keyed = []
    monkeypatch.setattr(retries, "params_key", lambda knobs, _real=retries.params_key: keyed.append(knobs) or _real(knobs))
    assert retries.evaluated_trials(study) == first_read and not keyed  # the trial loop asks it on every trial


def test_a_trial_that_finishes_after_a_later_numbered_one_is_read_in_its_place(studies):
    """Two workers: trial 2 still runs when trial 3 (its candidate) finishes; once trial 2 finishes with its record,
    trial 2 is the probe and trial 3 the second record of it, as a first read of the study says."""
    own = _study(studies / "own")
    done = next(t for t in own.trials if t.state == optuna.trial.TrialState.COMPLETE and not t.user_attrs.get("baseline"))
    study = _in_memory(studies, [t.number for t in own.trials if t.number != done.number])
    running = study.ask()
    study.add_trial(done)
    assert running.number not in foreign_trials(study) and running.number + 1 not in foreign_trials(study)
    for key in ("candidate", "result"):
        running.set_user_attr(key, done.user_attrs[key])
    study.tell(running, done.values)
    assert foreign_trials(study) == {
        running.number + 1: f"its candidate is trial {running.number}'s, which this study evaluated already"}
