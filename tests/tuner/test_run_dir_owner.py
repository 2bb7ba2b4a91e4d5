"""A run directory holds one study's reports: a --storage study is told from another of the same name by
its trials, not its name; a read command writes no database into a run directory; a report keeps the
files of configs/ a user edited (trial30, items 1, 4 and 14)."""

from __future__ import annotations

import json
import os
import shutil

import optuna
import pytest

from autotune.cli import main

RUN_32B = ("run", "--model", "32b", "--nodes", "4", "--trials", "4")
RUN_TINY = ("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "3")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three finished studies, each named `autotune` (the default): 32b, tiny on cpu, and 32b again with
    another sampler (the same model and hardware, other trials)."""
    base = tmp_path_factory.mktemp("owner")
    assert main([*RUN_32B, "--out", str(base / "32b")]) == 0
    assert main([*RUN_TINY, "--out", str(base / "tiny")]) == 0
    assert main([*RUN_32B, "--sampler", "random", "--seed", "7", "--out", str(base / "32b-random")]) == 0
    return base


def _files(run_dir) -> dict:
    return {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def _copy(runs, name, tmp_path):
    return shutil.copytree(runs / name, tmp_path / name)


def _url(path) -> str:
    return f"sqlite:///{path}"


@pytest.mark.parametrize(("other", "reason"), [
    ("tiny", "its pareto.json is of model 32b on gh200, this study of tiny on cpu"),
    ("32b-random", "with other knobs or figures than this study's"),
])
def test_another_study_of_the_same_name_is_refused_in_a_run_directory_and_nothing_is_written(tmp_path, runs, capsys,
                                                                                              other, reason):
    run = _copy(runs, "32b", tmp_path)
    before = _files(run)
    for command in (["report", str(run)], ["report", str(run), "--format", "json", "--eta", "1"],
                    ["export", str(run), "--pick", "knee"]):
        assert main([*command, "--storage", _url(runs / other / "study.db")]) == 2, command
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1, err
        if command[0] == "report":  # RUN_DIR's own study.db is said first, before --storage is opened
            assert lines[0].startswith(f"autotune report: error: RUN_DIR {run} keeps its study in its own study.db")
            continue
        assert f"RUN_DIR {run} holds the reports of another study than 'autotune'" in lines[0] and reason in lines[0]
        assert "pass that study's run directory" in lines[0]
    assert _files(run) == before  # the 32b pareto.json and configs/ only, as before


def test_a_run_into_another_study_s_run_directory_is_refused_before_a_study_is_made(tmp_path, runs, capsys):
    run = _copy(runs, "32b", tmp_path)
    before = _files(run)
    shared = _url(tmp_path / "shared.db")
    assert main([*RUN_32B, "--storage", shared, "--out", str(run)]) == 2
    err = capsys.readouterr().err  # its own study.db is said first, as `report` says it (trial74 #9)
    assert f"--out {run} keeps its study in its own study.db" in err and "(--out NEW_DIR)" in err
    assert optuna.get_all_study_names(shared) == [] and _files(run) == before
    (run / "study.db").unlink()  # a --storage run's directory: its reports alone
    before = _files(run)
    assert main([*RUN_32B, "--storage", shared, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"--out {run} holds the reports of another study than 'autotune'" in err and "pass --out NEW_DIR" in err
    assert "the study is not there yet" in err
    assert optuna.get_all_study_names(shared) == [] and _files(run) == before


def test_the_run_directory_of_a_shared_storage_study_is_still_reported(tmp_path, capsys):
    """What the check must let through: the study's own storage, a copy of it, a second worker's trials
    added since the directory's report, and a resume with other options."""
    shared = _url(tmp_path / "shared.db")
    first, second = tmp_path / "first", tmp_path / "second"
    assert main([*RUN_32B, "--storage", shared, "--out", str(first)]) == 0
    shutil.copy(tmp_path / "shared.db", tmp_path / "copy.db")
    assert main(["report", str(first), "--storage", _url(tmp_path / "copy.db")]) == 0
    # A second worker with a run directory of its own, and other pick options: more trials.
    assert main([*RUN_32B[:-1], "8", "--storage", shared, "--out", str(second), "--eta", "1"]) == 0
    trials = len(optuna.load_study(study_name="autotune", storage=shared).trials)
    assert trials > 4
    capsys.readouterr()
    assert main(["report", str(first), "--storage", shared]) == 0  # its pareto.json lists only the first 4 trials
    assert "was out of date: rewrote" in capsys.readouterr().err
    assert json.loads((first / "pareto.json").read_text())["trials"] == trials
    assert main(["export", str(second), "--storage", shared, "--pick", "knee"]) == 0
    assert main([*RUN_32B[:-1], "9", "--storage", shared, "--out", str(first), "--seed", "3"]) == 0  # resumed there


def test_a_read_command_writes_no_database_into_an_empty_study_db(tmp_path, capsys):
    (tmp_path / "study.db").touch()
    for command in (["report", str(tmp_path)], ["export", str(tmp_path), "--pick", "knee"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"{tmp_path / 'study.db'} holds no Optuna study (an empty or foreign SQLite file; left as it was)" in err
        assert (tmp_path / "study.db").stat().st_size == 0
    assert not (tmp_path / "pareto.json").exists() and not (tmp_path / "configs").exists()


def test_a_refused_run_writes_no_database_into_an_empty_study_db(tmp_path, runs, capsys):
    """Trial 43 F9: the reports of a study whose study.db was emptied were refused, but only after Optuna's tables
    had been written into the empty file."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(runs / "32b" / "pareto.json", run / "pareto.json")
    (run / "study.db").touch()
    assert main([*RUN_32B, "--out", str(run)]) == 2
    assert "holds the reports of a study its study.db does not hold" in capsys.readouterr().err
    assert (run / "study.db").stat().st_size == 0


def test_a_damaged_study_db_is_named_without_a_storage_flag_nobody_gave(tmp_path, runs, capsys):
    (tmp_path / "study.db").write_bytes((runs / "32b" / "study.db").read_bytes()[:5000])
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"cannot open the study database {tmp_path / 'study.db'} (" in err and "malformed" in err
    assert "--storage" not in err and "restore it from a copy" in err



def test_a_damaged_study_db_refusal_says_where_the_probes_results_are_kept(tmp_path, runs, capsys):
    """Trial 61 #24: "start a new study with --out NEW_DIR" alone read as if the measured probes were lost with the
    database; each probe's result is in trials/ (result-N.json with repeats), and every command's refusal says so."""
    (tmp_path / "study.db").write_bytes((runs / "32b" / "study.db").read_bytes()[:5000])
    for number, name in (("0000", "result.json"), ("0001", "result-1.json"), ("0002", None)):  # 0002: no result
        (tmp_path / "trials" / number).mkdir(parents=True)
        if name:
            (tmp_path / "trials" / number / name).write_text("{}")
    kept = (f"; the results of its 2 probes are kept in {tmp_path / 'trials'}/*/result.json: `autotune export {tmp_path} "
            f"--measurements {tmp_path.name}.jsonl` reads them back for `autotune run --backend replay --measurements "
            f"{tmp_path.name}.jsonl` (the study's flags, a new --out), which rebuilds the study without probing")
    for command in (["report", str(tmp_path)], ["export", str(tmp_path), "--pick", "knee"],
                    ["calibrate", str(tmp_path), "--hardware", "cpu"], [*RUN_TINY, "--out", str(tmp_path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.strip().endswith(f"start a new study with --out NEW_DIR{kept}") and err.count("\n") == 1, (command, err)
    # --measurements reads those results back (trial69 #14): these hold no probe's figures ("{}"), and it says so.
    assert main(["export", str(tmp_path), "--measurements", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and (f"and no probe in {tmp_path / 'trials'} left a result a replay can take (trial 0: "
                                     "it holds no candidate.json; trial 1: it holds no candidate.json)") in err, err
    assert not (tmp_path / "m.json").exists()


def test_a_damaged_study_db_without_probe_results_names_none(tmp_path, runs, capsys):
    (tmp_path / "study.db").write_bytes((runs / "32b" / "study.db").read_bytes()[:5000])
    (tmp_path / "trials" / "0000").mkdir(parents=True)  # a probe that wrote no result
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("start a new study with --out NEW_DIR")

def _edit(configs) -> dict:
    """What a user does to the knee pick: a tuned learning rate, a site line in launch.sh."""
    config = json.loads((configs / "knee.json").read_text())
    config["optimizer"]["params"]["lr"] = 3e-5
    (configs / "knee.json").write_text(json.dumps(config, indent=2))
    with open(configs / "knee.launch.sh", "a") as script:
        script.write("module load site-nccl  # added by hand\n")
    return {name: (configs / name).read_bytes() for name in ("knee.json", "knee.launch.sh")}


def test_a_report_keeps_hand_edited_configs_and_writes_the_pick_beside_them(tmp_path, runs, capsys):
    run = _copy(runs, "32b", tmp_path)
    configs = run / "configs"
    edited = _edit(configs)
    assert main(["report", str(run), "--eta", "1"]) == 0  # the cost-weighted pick follows: its files are replaced
    lines = [line for line in capsys.readouterr().err.splitlines() if "configs" in line and "kept" in line]
    assert len(lines) == 1 and "kept knee.json, knee.launch.sh, which differ from what autotune's reports last wrote there" in lines[0]
    assert "knee.new.*" in lines[0]
    assert {name: (configs / name).read_bytes() for name in edited} == edited
    picks = json.loads((run / "pareto.json").read_text())["recommendations"]
    assert json.loads((configs / "knee.new.json").read_text())["autotune"]["trial"] == picks["knee"]
    assert "--deepspeed-config knee.new.json" in (configs / "knee.new.launch.sh").read_text()
    assert json.loads((configs / "cost-weighted.json").read_text())["autotune"]["trial"] == picks["cost_weighted"]
    assert main(["report", str(run)]) == 0 and "kept knee.json" in capsys.readouterr().err  # still the user's
    assert {name: (configs / name).read_bytes() for name in edited} == edited
    # Moved away by the user: the next report writes the pick in their place, and the .new.* files go.
    for name in edited:
        (configs / name).rename(tmp_path / name)
    assert main(["report", str(run), "--eta", "0.5"]) == 0 and "kept" not in capsys.readouterr().err
    assert json.loads((configs / "knee.json").read_text())["autotune"]["trial"] == picks["knee"]
    assert not list(configs.glob("*.new.*")) and not list(configs.glob(".export-*"))


def test_a_run_directory_without_the_record_keeps_files_that_differ_from_what_autotune_writes_now(tmp_path, runs, capsys):
    """Trial78 #8: a copy made without the hidden record (`cp configs/*`) gives every file the copy's time, and a
    file no newer than pareto.json was taken for autotune's: a tuned lr replaced without a word. With no record to
    vouch for it, a file that differs from what autotune writes now is kept, and the line says why; one that is
    what autotune writes now is its own."""
    run = _copy(runs, "32b", tmp_path)
    configs = run / "configs"
    (configs / ".written.json").unlink()
    edited = _edit(configs)
    reports_at = (run / "pareto.json").stat().st_mtime
    for name in edited:  # edited, then copied: the copy's time, that of pareto.json
        os.utime(configs / name, (reports_at, reports_at))
    unedited = (configs / "fastest.json").read_bytes()
    assert main(["report", str(run)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "kept" in line]
    assert lines == [f"{configs}: kept knee.json, knee.launch.sh, which differ from what autotune writes there now and "
                     f"may be your edits: {configs / '.written.json'}, the record of what autotune wrote there, is "
                     "missing (a copy made without it, such as `cp configs/*`); the study's picks are beside them as "
                     "knee.new.* (move the kept files away to have them written in their place)"], lines
    assert {name: (configs / name).read_bytes() for name in edited} == edited
    assert (configs / "fastest.json").read_bytes() == unedited and not list(configs.glob("fastest.new.*"))
    # The record the report wrote names what it wrote, not the kept files: the next report keeps them too.
    assert main(["report", str(run)]) == 0
    assert "kept knee.json, knee.launch.sh" in capsys.readouterr().err
    assert {name: (configs / name).read_bytes() for name in edited} == edited


@pytest.mark.parametrize(("record", "said"), [
    ("{}", "names no file"), ("[]", "is damaged (a JSON list, not an object of file names)"),
    ('"x"', "is damaged (a JSON str, not an object of file names)"), ("", "is empty"),
    ("not json", "is damaged (not JSON)"),
])
def test_a_damaged_record_is_said_and_vouches_for_no_file(tmp_path, runs, capsys, record, said):
    """Trial78 #8: a damaged or emptied record was read as an empty one without a word, and an edit within 10 s of
    pareto.json's time was replaced."""
    run = _copy(runs, "32b", tmp_path)
    configs = run / "configs"
    (configs / ".written.json").write_text(record)
    edited = _edit(configs)
    assert main(["report", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"{configs / '.written.json'}, the record of what autotune wrote there, {said}; " in err, err
    assert {name: (configs / name).read_bytes() for name in edited} == edited
    assert main(["export", str(run), "--pick", "knee"]) == 2  # export refuses them alike
    assert f"{configs / 'knee.json'} differs from what export writes there now, and " in capsys.readouterr().err


def test_a_report_stopped_between_a_pick_s_files_is_made_whole_by_the_next(tmp_path, runs, capsys, monkeypatch):
    """Trial 43 F2: a pass stopped (SIGTERM, SIGKILL) after a pick's config was renamed into place and before its
    candidate file left two trials' files side by side, which every later report kept as the user's edits. Its
    scratch folder and temporary files stayed for good too."""
    from autotune.commands import finish

    run = _copy(runs, "32b", tmp_path)
    configs = run / "configs"
    before = json.loads((run / "pareto.json").read_text())["recommendations"]
    writes = []
    write = finish.write_text_atomic

    def stopped_after_the_config(path, text, **kwargs):
        write(path, text, **kwargs)
        writes.append(path.name)
        if path.name.endswith(".json") and not path.name.endswith(".candidate.json") and path.name != ".written.json":
            if json.loads(text)["autotune"]["trial"] != before[path.name.removesuffix(".json").replace("-", "_")]:
                raise KeyboardInterrupt  # a pick's new config is in place, its candidate file is the old one's

    monkeypatch.setattr(finish, "write_text_atomic", stopped_after_the_config)
    with pytest.raises(KeyboardInterrupt):
        main(["report", str(run), "--eta", "1"])
    monkeypatch.undo()
    assert any(name.endswith(".json") for name in writes)  # it stopped midway, as a kill would
    (configs / ".export-left-by-a-killed-pass").mkdir()
    (configs / ".knee.json.4242.0a1b2c3d.tmp").write_text("{")
    for litter in (configs / ".export-left-by-a-killed-pass", configs / ".knee.json.4242.0a1b2c3d.tmp"):
        os.utime(litter, (0, 0))  # older than any pass
    capsys.readouterr()
    assert main(["report", str(run), "--eta", "0.5"]) == 0  # another pick than the one half written
    assert "kept" not in capsys.readouterr().err
    picks = json.loads((run / "pareto.json").read_text())["recommendations"]
    for pick, stem in (("cost_weighted", "cost-weighted"), ("knee", "knee"), ("fastest", "fastest")):
        config = json.loads((configs / f"{stem}.json").read_text())
        candidate = json.loads((configs / f"{stem}.candidate.json").read_text())
        assert config["autotune"]["trial"] == picks[pick] and candidate["knobs"] == {
            k: v for k, v in config["autotune"]["candidate"].items()}, pick
    assert not list(configs.glob(".export-*")) and not list(configs.glob(".*.tmp"))
