"""`autotune export` to configs/ keeps a pick's files a user edited there, as `run` and `report` do (trial 37 F6:
it replaced a tuned lr without a word, exit 0)."""

import json
import shutil
from pathlib import Path

import pytest

from autotune.cli import main


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("edited") / "run"
    assert main(["run", "--model", "32b", "--nodes", "4", "--out", str(run_dir)]) == 0
    return run_dir


def test_an_edited_config_is_refused_and_kept(finished, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(finished, run_dir)
    config = run_dir / "configs" / "knee.json"
    tuned = {**json.loads(config.read_text()), "lr": 1e-4}
    config.write_text(json.dumps(tuned))
    capsys.readouterr()
    assert main(["export", str(run_dir), "--pick", "knee"]) == 2
    err = capsys.readouterr().err
    assert f"{config} differs from what autotune last wrote there" in err and "pass -o FILE" in err
    assert json.loads(config.read_text())["lr"] == 1e-4  # kept
    script = run_dir / "configs" / "fastest.launch.sh"
    script.write_text(script.read_text() + "# my site line\n")
    assert main(["export", str(run_dir), "--pick", "fastest"]) == 2
    assert script.read_text().endswith("# my site line\n")


def test_without_the_record_an_edited_config_is_refused_as_report_keeps_it(finished, tmp_path, capsys):
    """Trial76 #9: with configs/.written.json missing (copied with `cp configs/*`), export replaced an edited lr
    without a word, where report kept the same edit. Both judge it alike now (finish.edited_since_written): a file
    that differs from what export writes, whatever its time (trial78 #8: a copy's time is no edit's)."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished, run_dir)
    (run_dir / "configs" / ".written.json").unlink()
    config = run_dir / "configs" / "knee.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "lr": 7e-4}))
    capsys.readouterr()
    assert main(["export", str(run_dir), "--pick", "knee"]) == 2
    err = capsys.readouterr().err
    assert (f"{config} differs from what export writes there now, and {config.parent / '.written.json'} is missing (a "
            "copy made without it, such as `cp configs/*`): edited since, and export would replace it; move it away to export the pick there, or pass -o FILE"
            ) in err, err
    assert json.loads(config.read_text())["lr"] == 7e-4  # kept
    # An unedited pick is what export writes: replaced, and recorded.
    assert main(["export", str(run_dir), "--pick", "fastest"]) == 0
    assert "fastest.json" in json.loads((run_dir / "configs" / ".written.json").read_text())


def test_what_export_writes_to_configs_is_recorded_as_autotune_s(finished, tmp_path, capsys):
    """An unedited pick is exported again, and the report that follows takes export's files for its own."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished, run_dir)
    trial = json.loads((run_dir / "pareto.json").read_text())["recommendations"]["fastest"]
    capsys.readouterr()
    assert main(["export", str(run_dir), "--pick", "knee"]) == 0
    assert main(["export", str(run_dir), "--trial", str(trial)]) == 0
    written = [line for line in capsys.readouterr().out.splitlines() if line]  # stdout: the paths alone
    record = json.loads((run_dir / "configs" / ".written.json").read_text())
    assert len(written) == 6 and all(record[Path(path).name] for path in written)
    assert main(["report", str(run_dir)]) == 0
    assert "kept" not in capsys.readouterr().out


def test_measurements_go_to_standard_output_with_a_dash(finished, tmp_path, capsys, monkeypatch):
    """Trial 37 F10: `--measurements -` wrote a file named "-" in the working directory."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["export", str(finished), "--measurements", "-"]) == 0
    said = capsys.readouterr()
    records = [json.loads(line) for line in said.out.splitlines()]
    assert records and all({"params", "status"} <= record.keys() for record in records)
    assert "simulated results on standard output" in said.err and not (tmp_path / "-").exists()


def test_measurements_to_a_closed_standard_output_are_refused_not_said_written(finished, tmp_path):
    """Trial 45: `export RUN --measurements - >&-` warned that stdout was closed, then said "N probe results on
    standard output", exit 0: the records went nowhere."""
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "autotune.cli", "export", str(finished), "--measurements", "-"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                            preexec_fn=lambda: os.close(1), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "--measurements -: standard output is closed, so the records would be lost; pass a file name" in result.stderr
    assert "results on standard output" not in result.stderr


def test_an_edited_config_outside_configs_is_refused_and_kept(finished, tmp_path, capsys):
    """Trial76 #5: outside configs/ no record says what export wrote, and a second export to the user's own job folder
    replaced their tuned lr without a word. What export wrote is deepspeed_config of the candidate file beside it."""
    config = tmp_path / "job" / "ds.json"
    config.parent.mkdir()
    assert main(["export", str(finished), "--pick", "fastest", "-o", str(config)]) == 0
    assert main(["export", str(finished), "--pick", "knee", "-o", str(config)]) == 0  # unedited: replaced
    tuned = json.loads(config.read_text())
    tuned["optimizer"]["params"]["lr"] = 5e-4
    config.write_text(json.dumps(tuned, indent=2))
    capsys.readouterr()
    assert main(["export", str(finished), "--pick", "fastest", "-o", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"autotune export: error: -o {config}: optimizer.params.lr 0.0005 (export wrote 0.0001): edited since an "
        "earlier export wrote it, and export would replace it; move it away to export there, or choose another -o")
    assert json.loads(config.read_text())["optimizer"]["params"]["lr"] == 5e-4  # kept


@pytest.mark.parametrize("suffix", [".launch.sh", ".candidate.json"])
def test_an_edited_launch_sh_or_candidate_file_outside_configs_is_refused_and_kept(finished, tmp_path, capsys, suffix):
    """Trial78 #9: a second export to the same -o replaced a site line added to NAME.launch.sh, or an edited
    NAME.candidate.json, without a word, where the config's tuned lr was refused. What export wrote beside the config
    is kept in it (autotune.written_beside)."""
    config = tmp_path / "job" / "knee.json"
    config.parent.mkdir()
    assert main(["export", str(finished), "--pick", "knee", "-o", str(config)]) == 0
    beside = config.with_name("knee" + suffix)
    if suffix == ".launch.sh":
        edited = beside.read_text().replace("bash\n", "bash\nmodule load site-nccl  # a site line\n", 1)
    else:
        candidate = json.loads(beside.read_text())
        candidate["workload"]["samples"] *= 2
        edited = json.dumps(candidate, indent=2)
    assert edited != beside.read_text()
    beside.write_text(edited)
    capsys.readouterr()
    assert main(["export", str(finished), "--pick", "knee", "-o", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"autotune export: error: -o {config}: knee{suffix} beside it differs from what that export wrote there (its "
        "SHA-256 in knee.json, autotune.written_beside): edited since, and export would replace it; move it away to "
        "export there, or choose another -o")
    assert beside.read_text() == edited  # kept
    beside.unlink()  # moved away: exported again
    assert main(["export", str(finished), "--pick", "knee", "-o", str(config)]) == 0


def test_export_into_another_run_directory_s_configs_is_refused(finished, tmp_path, capsys):
    """Trial76 #5: `export A --pick fastest -o B/configs/knee.json` replaced B's own knee pick with A's, and B's next
    report kept A's files for good as a user's edits."""
    other = tmp_path / "other"
    shutil.copytree(finished, other)
    knee = (other / "configs" / "knee.json").read_bytes()
    capsys.readouterr()
    assert main(["export", str(finished), "--pick", "fastest", "-o", str(other / "configs" / "knee.json")]) == 2
    err = capsys.readouterr().err
    assert (f"-o {other / 'configs' / 'knee.json'}: that is the configs/ folder of another run directory, {other}, "
            f"whose reports keep that study's picks there; export into {finished / 'configs'} (no -o)") in err, err
    assert (other / "configs" / "knee.json").read_bytes() == knee
    # Its own configs/ is taken, as the default is.
    assert main(["export", str(other), "--pick", "fastest", "-o", str(other / "configs" / "mine.json")]) == 0


def test_an_output_that_is_a_link_is_refused(finished, tmp_path, capsys):
    """Trial76 #11: `-o link.json` (a link to an earlier export so.json) wrote the knee config through the link into
    so.json, and its candidate.json and launch.sh beside the link: so.launch.sh then ran the fastest pick's candidate
    with the knee's config. A dangling link wrote outside the folder named."""
    first = tmp_path / "so.json"
    assert main(["export", str(finished), "--pick", "fastest", "-o", str(first)]) == 0
    written = {path: path.read_bytes() for path in tmp_path.iterdir()}
    link, dangling = tmp_path / "link.json", tmp_path / "dangling.json"
    link.symlink_to(first)
    dangling.symlink_to(tmp_path / "elsewhere" / "nowhere.json")
    capsys.readouterr()
    assert main(["export", str(finished), "--pick", "knee", "-o", str(link)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"autotune export: error: -o {link} is a link to {first}, and export writes a config, its candidate.json and "
        f"launch.sh as one, beside each other; pass -o {first} (the file it points to), or remove the link")
    assert main(["export", str(finished), "--pick", "knee", "-o", str(dangling)]) == 2
    assert "which does not exist" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in written} == written and not (tmp_path / "elsewhere").exists()
    assert sorted(tmp_path.iterdir()) == sorted([*written, link, dangling])


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_measurements_to_a_full_standard_output_are_not_said_written(finished):
    """Trial76 #12: `export --measurements - > /dev/full` said "N probe results on standard output", then, at exit,
    the generic line whose fix was `autotune report RUN_DIR`, which prints no records."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "autotune.cli", "export", str(finished), "--measurements", "-"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        "autotune export: --measurements -: the records were not written whole (No space left on device on standard "
        f"output); run `autotune export {finished} --measurements FILE` to write them to a file, or again with room on "
        "standard output\n")


def test_a_trial_s_default_file_is_named_where_the_default_is(finished, tmp_path, capsys):
    """Trial76 #6: `export RUN_DIR --trial 3` wrote configs/trial-3.json, which neither --help nor commands.md named."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished, run_dir)
    capsys.readouterr()
    assert main(["export", str(run_dir), "--trial", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == str(run_dir / "configs" / "trial-0.json")
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert "or trial-N.json for --trial N" in " ".join(capsys.readouterr().out.split())
    commands_md = (Path(__file__).parents[2] / "docs" / "commands.md").read_text()
    assert "`RUN_DIR/configs/trial-N.json` for `--trial N`" in commands_md


def test_the_config_says_what_its_figures_and_memory_fit_hold_for(finished, tmp_path):
    """Trial76 #10: a config taken into another job named neither the model, the hardware nor the workload its
    time_to_solution_s and its micro-batch's memory fit were for (they lived in the candidate file alone)."""
    config = tmp_path / "ds.json"
    assert main(["export", str(finished), "--pick", "fastest", "-o", str(config)]) == 0
    section = json.loads(config.read_text())["autotune"]
    candidate = json.loads((tmp_path / "ds.candidate.json").read_text())
    held = section["figures_for"]
    assert (held["model"], held["hardware"]) == ("32b", "gh200")
    workload = candidate["workload"]
    assert (held["samples"], held["global_batch"], held["frames_per_sample"], held["text_tokens_per_sample"]) == (
        workload["samples"], workload["global_batch"], workload["frames"], workload["text_tokens"])
    assert held["note"].startswith(f"time_to_solution_s and energy_to_solution_kj are for training {workload['samples']} "
                                   f"samples of 32b on the gh200 profile, and micro-batch "
                                   f"{section['candidate']['micro_batch']} was judged to fit at "
                                   f"{held['tokens_per_sample']} tokens per sample ({workload['frames']} frames x ")
