"""A study never writes its probes over results in RUN_DIR/trials that none of its trials made (trial 63 #1):
a study.db emptied by a crash (or removed, or replaced) beside the measured results of the study it held is
refused at start, and every result file stays byte for byte; the study's own trials/ resume as before. Fast:
the stand-in probe of tests/backends/test_repeat_takeover.py plays the trainer."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from autotune.backends.launch import LaunchBackend
from autotune.cli import main
from autotune.commands.options import settings_for
from autotune.errors import UserError
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.storage_failure import unrecorded_probe_results
from tests.backends.test_repeat_takeover import FAKE_PROBE

SETTINGS = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu")
RUN_TINY = ("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "3")


def _refusal(run_dir, probes: int, where) -> str:
    return (f"{run_dir / 'trials'} holds the results of {probes} probes that no study in {where} records (a damaged or "
            "replaced study.db?): they are kept; start the study in another --out, or move trials/ aside")


def _results(run_dir) -> dict:
    return {p.relative_to(run_dir): p.read_bytes() for p in (run_dir / "trials").rglob("result*.json")}


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """The run directory of a finished launch study of 2 probes (stand-in probe, 2 repeats each)."""
    base = tmp_path_factory.mktemp("launched")
    script = base / "fake-python"
    script.write_text(FAKE_PROBE)
    script.chmod(0o755)
    backend = LaunchBackend(run_dir=base / "run", launcher="torchrun", python=str(script), repeats=2, warmup_steps=1,
                            probe_steps=2, probe_seconds=0.0, probe_timeout_s=60.0, kill_grace_s=5.0,
                            env={"FAKE_CALLS": str(base / "calls.txt")})
    study = open_study(base / "run", None, make_sampler(0, 2))
    assert run_study(study, settings_for(*SETTINGS), backend, 2) == 2
    return base / "run"


def test_the_study_s_own_trials_resume(launched, tmp_path):
    run = shutil.copytree(launched, tmp_path / "run")
    study = open_study(run, None, make_sampler(0, 2))
    assert len(study.trials) == 2


@pytest.mark.parametrize("lost", ["emptied", "removed"])
def test_a_new_study_beside_a_lost_study_s_measured_results_is_refused_and_they_stay(launched, tmp_path, lost):
    run = shutil.copytree(launched, tmp_path / "run")
    before = _results(run)
    assert len(before) == 4  # 2 probes of 2 repeats
    if lost == "emptied":
        (run / "study.db").write_bytes(b"")  # what a crash or a full disk leaves
    else:
        (run / "study.db").unlink()
    with pytest.raises(UserError) as refused:
        open_study(run, None, make_sampler(0, 2))
    assert str(refused.value) == _refusal(run, 2, run / "study.db")
    assert _results(run) == before
    assert not (run / "study.db").exists() or (run / "study.db").stat().st_size == 0  # no tables written into it


def test_a_folder_of_another_study_s_candidate_is_not_this_study_s_trial(tmp_path):
    """A study.db replaced by another study's: trial 0 is there, but trials/0000 probed another candidate."""
    folder = tmp_path / "trials" / "0000"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text("{}")
    (folder / "candidate.json").write_text(json.dumps({"knobs": {"zero_stage": 3, "micro_batch": 2}}))
    def study(number: int, **knobs):
        trial = SimpleNamespace(number=number, user_attrs={"candidate": {"knobs": knobs}} if knobs else {})
        return SimpleNamespace(get_trials=lambda deepcopy: [trial])

    assert unrecorded_probe_results(tmp_path, study(0, zero_stage=3, micro_batch=2)) == 0
    assert unrecorded_probe_results(tmp_path, study(0, zero_stage=1, micro_batch=2)) == 1
    assert unrecorded_probe_results(tmp_path, study(1)) == 1
    assert unrecorded_probe_results(tmp_path, None) == 1


def test_a_user_s_own_folder_under_trials_is_no_probe_s_and_blocks_nothing(tmp_path):
    """trials/old/result.json (a user's earlier results kept there) blocked every new study as unrecorded probe
    results, though no trial writes there; only trials/NNNN, the folders a trial writes, count."""
    for folder in ("old", "7", "00007", "0003/older"):
        (tmp_path / "trials" / folder).mkdir(parents=True)
        (tmp_path / "trials" / folder / "result.json").write_text("{}")
    assert unrecorded_probe_results(tmp_path, None) == 0
    study = open_study(tmp_path, None, make_sampler(0, 2))  # a new study starts there, and leaves them as they were
    assert not study.trials and (tmp_path / "trials" / "old" / "result.json").read_text() == "{}"
    (tmp_path / "study.db").unlink()
    (tmp_path / "trials" / "0012").mkdir()
    (tmp_path / "trials" / "0012" / "result-1.json").write_text("{}")
    assert unrecorded_probe_results(tmp_path, None) == 1  # a trial's folder still counts
    with pytest.raises(UserError, match="holds the results of 1 probe that no study"):
        open_study(tmp_path, None, make_sampler(0, 2))


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """A finished simulated study's run directory (pareto.json, configs/)."""
    out = tmp_path_factory.mktemp("reported") / "run"
    assert main([*RUN_TINY, "--out", str(out)]) == 0
    return out


def _with_kept_results(reported, tmp_path):
    """The trial's directory: a run directory with pareto.json, probe results in trials/ and a 0-byte study.db."""
    run = shutil.copytree(reported, tmp_path / "run")
    for number, name in (("0000", "result.json"), ("0001", "result-1.json")):
        (run / "trials" / number).mkdir(parents=True)
        (run / "trials" / number / name).write_text(json.dumps({"status": "ok", "trial": number}))
    (run / "study.db").write_bytes(b"")
    return run


def test_run_is_refused_before_the_reports_advice_that_would_lose_the_results(reported, tmp_path, capsys):
    """The reports' refusal said "move pareto.json and configs/ out", after which the new study wrote over trials/."""
    run = _with_kept_results(reported, tmp_path)
    before = _results(run)
    assert main([*RUN_TINY, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith(_refusal(run, 2, run / "study.db")) and err.count("\n") == 1, err
    moved = tmp_path / "moved"  # the reports' advice, followed: still refused
    moved.mkdir()
    shutil.move(run / "pareto.json", moved)
    shutil.move(run / "configs", moved)
    assert main([*RUN_TINY, "--out", str(run)]) == 2
    assert _refusal(run, 2, run / "study.db") in capsys.readouterr().err
    assert _results(run) == before and (run / "study.db").stat().st_size == 0


def test_a_storage_study_is_refused_in_a_run_directory_of_results_it_does_not_record(reported, tmp_path, capsys):
    run = _with_kept_results(reported, tmp_path)
    (run / "study.db").unlink()
    before = _results(run)
    shared = f"sqlite:///{tmp_path / 'shared.db'}"
    assert main([*RUN_TINY, "--storage", shared, "--out", str(run)]) == 2
    assert (f"{run / 'trials'} holds the results of 2 probes that no study in {shared} records (another study's run "
            "directory?): they are kept") in capsys.readouterr().err
    assert _results(run) == before


def test_read_commands_on_an_emptied_study_db_count_the_kept_results(reported, tmp_path, capsys):
    """Trial 63 #8: "pass the --out directory of an `autotune run`" was the directory passed."""
    run = _with_kept_results(reported, tmp_path)
    kept = (f"; the results of its 2 probes are kept in {run / 'trials'}/*/result.json: `autotune export {run} "
            f"--measurements {run.name}.jsonl` reads them back for `autotune run --backend replay --measurements "
            f"{run.name}.jsonl` (the study's flags, a new --out), which rebuilds the study without probing")
    for command in (["report", str(run)], ["export", str(run), "--pick", "knee"],
                    ["calibrate", str(run), "--hardware", "cpu"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"{run / 'study.db'} holds no Optuna study (an empty or foreign SQLite file" in err, (command, err)
        assert err.strip().endswith(f"start a new study with --out NEW_DIR{kept}") and err.count("\n") == 1, err
        assert "pass the --out directory" not in err
    assert (run / "study.db").stat().st_size == 0
