"""The probe's --out, --probe-seconds and --collective-timeout-s: a wrong value is one usage line and exit
status 2 while the command line is parsed, on every rank, before a process group or a model exists."""

from __future__ import annotations

import json
from pathlib import Path
import os
import subprocess
import sys

import pytest
import torch

from tests.trainer.conftest import REPO, cpu_env
from trainer.probe import main, parse_args

PREFIX = "python -m trainer.probe: error: argument "


def _refused(capsys, flags: list[str], run_main: bool = False) -> str:
    """The one error line of a refused command line (argparse prints the usage line before it)."""
    with pytest.raises(SystemExit) as exit_:
        (main if run_main else parse_args)(["--model", "tiny", *flags])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("usage: ") and lines[-1].startswith(PREFIX)
    assert len(lines[-1]) < 400
    return lines[-1].removeprefix(PREFIX)


@pytest.mark.parametrize("value, problem", [
    ("-1", "is out of range"), ("-0.5", "is out of range"), ("nan", "is not finite"), ("inf", "is not finite"),
    ("1e400", "is not finite"), ("ten", "is not a number"), ("", "is not a number"), ("5s", "is not a number"),
    ("1e9", "is out of range"), ("604801", "is out of range"),
])
def test_a_wrong_probe_seconds_is_one_line_that_says_what_is_allowed(capsys, value, problem):
    line = _refused(capsys, ["--probe-seconds", value])
    assert line == (f"--probe-seconds: {value!r} {problem}; it must be a number >= 0 and <= 604800 (the measured "
                    "window's minimum length: 0 for none, at most a week)")


@pytest.mark.parametrize("value, problem", [
    ("0", "is out of range"), ("-0", "is out of range"), ("-5", "is out of range"), ("nan", "is not finite"),
    ("inf", "is not finite"), ("1e400", "is not finite"), ("-1e400", "is not finite"), ("10m", "is not a number"),
    ("", "is not a number"), ("1e7", "is out of range"),
])
def test_a_wrong_collective_timeout_is_one_line_that_says_what_is_allowed(capsys, value, problem):
    line = _refused(capsys, [f"--collective-timeout-s={value}"])
    assert line == (f"--collective-timeout-s: {value!r} {problem}; it must be a number > 0 and <= 604800 (how long a "
                    "collective waits for a peer: more than 0, at most a week)")


@pytest.mark.parametrize("flags, seconds, timeout_s", [
    ([], 0.0, 600.0), (["--probe-seconds", "0", "--collective-timeout-s", "0.5"], 0.0, 0.5),
    (["--probe-seconds", "604800", "--collective-timeout-s", "604800"], 604800.0, 604800.0),
    (["--probe-seconds", " 2.5", "--collective-timeout-s", "1e3"], 2.5, 1000.0),
])
def test_durations_within_range_are_taken(flags, seconds, timeout_s):
    args = parse_args(["--model", "tiny", *flags])
    assert args.probe_seconds == seconds and args.collective_timeout_s == timeout_s


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder nobody may create a file in (tests/read_only.py)."""
    from tests.read_only import read_only_view

    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only_view(folder, tmp_path) as view:
        yield view


def test_an_out_in_a_read_only_folder_is_refused(capsys, read_only_folder):
    out = read_only_folder / "result.json"
    line = _refused(capsys, ["--out", str(out)])
    assert line.startswith(f"--out: '{out}': cannot create a file in {read_only_folder} (")
    assert line.endswith("); give a path in a folder you can write to")


def _out_cases(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"\x80\x02" + bytes(range(256)) * 64)
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps({"knobs": {"zero_stage": 3}}))
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    return [
        ("", "is empty; give the result file's path, e.g. --out result.json"),
        ("   ", "is empty; give the result file's path, e.g. --out result.json"),
        (str(tmp_path), f"{str(tmp_path)!r} is a folder; give a file path in it, e.g. --out {tmp_path / 'result.json'}"),
        (f"{tmp_path}/", f"{str(tmp_path) + '/'!r} is a folder; give a file path in it, e.g. --out {tmp_path / 'result.json'}"),
        (str(tmp_path / "missing" / "result.json"), f"{str(tmp_path / 'missing' / 'result.json')!r}: its folder "
         f"{tmp_path / 'missing'} does not exist; create it (on several nodes: on a file system they share) or give "
         "a path in an existing folder"),
        (str(notes / "result.json"), f"{str(notes / 'result.json')!r}: {notes} is a file, not a folder; give a path in a folder"),
        *[(str(path), f"{str(path)!r} is an existing file that is not a probe's result.json, and the probe replaces "
           f"--out; move it away or give another path, e.g. --out {tmp_path / 'result.json'}")
          for path in (notes, weights, candidate)],
        (str(fifo), f"{str(fifo)!r} is not a regular file (a device, pipe or socket) and the probe replaces --out; "
         "give a file path, e.g. --out result.json"),
        ("/dev/null", "'/dev/null' is not a regular file (a device, pipe or socket) and the probe replaces --out; "
         "give a file path, e.g. --out result.json"),
    ]


def test_a_wrong_out_is_one_line_and_nothing_is_touched(capsys, tmp_path):
    """Each was a traceback after the whole run (a folder, a file as folder, /sys), or worse: the probe
    deleted whatever file --out named (notes, weights, a candidate, /dev/null as root)."""
    cases = _out_cases(tmp_path)
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    for value, said in cases:
        assert _refused(capsys, ["--out", value]) == f"--out: {said}", value
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before
    assert not (tmp_path / "missing").exists()
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_a_refused_flag_stops_main_before_any_process_group(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    (tmp_path / "notes.txt").write_text("keep me")
    for flags in (["--out", str(tmp_path / "notes.txt")], ["--collective-timeout-s", "nan"], ["--probe-seconds", "-1"]):
        _refused(capsys, ["--out", str(tmp_path / "result.json"), *flags], run_main=True)
        assert not torch.distributed.is_initialized()
    assert (tmp_path / "notes.txt").read_text() == "keep me" and list(tmp_path.iterdir()) == [tmp_path / "notes.txt"]


def test_an_out_the_probe_may_replace_is_taken(tmp_path):
    """A new file, an earlier run's result (the tuner's retries, a user's re-run), an empty file."""
    from trainer import result as results

    earlier = tmp_path / "earlier.json"
    results.write_result(earlier, results.base_result(None, None, 1, "cpu"), overwrite=True)
    empty = tmp_path / "empty.json"
    empty.write_text("")
    for out in (tmp_path / "result.json", earlier, empty, tmp_path / "link-dir" / ".." / "result.json"):
        (tmp_path / "link-dir").mkdir(exist_ok=True)
        assert parse_args(["--model", "tiny", "--out", str(out)]).out == out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier.json", "empty.json", "link-dir"]  # no check file left


def test_the_probe_command_refuses_a_wrong_value_with_exit_status_2(tmp_path):
    """As a user or a launcher runs it: `python -m trainer.probe`, one error line, status 2."""
    done = subprocess.run([sys.executable, "-m", "trainer.probe", "--model", "tiny", "--out", str(tmp_path),
                           "--collective-timeout-s", "600"], cwd=REPO, env=cpu_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (f"{PREFIX}--out: {str(tmp_path)!r} is a folder; give a file path "
                                                    f"in it, e.g. --out {tmp_path / 'result.json'}")


def _candidate_file(tmp_path) -> str:
    from autotune.candidate import Candidate, Knobs
    from autotune.hardware import load_hardware
    from autotune.models import load_model
    from autotune.workload import make_workload

    spec = load_model("tiny")
    candidate = Candidate(Knobs(), spec, load_hardware("cpu"), make_workload(spec, global_batch=2), gpus_per_node=1)
    path = tmp_path / "knee.candidate.json"
    path.write_text(json.dumps(candidate.to_dict()))
    return str(path)


@pytest.mark.parametrize("flag, name, content, said", [
    ("--candidate", "absent.json", None, "'{path}' is missing; give the path of a candidate JSON file"),
    ("--candidate", "folder", "DIR", "'{path}' is a folder; give the path of a candidate JSON file"),
    ("--candidate", "notes.txt", "not json", "'{path}' is not a readable JSON file (Expecting value: line 1 column 1 "
                                             "(char 0)); give the candidate file `autotune export` wrote"),
    ("--candidate", "latin.json", b'{"\xe9": 1}', "'{path}' is not a readable JSON file ("),
    ("--candidate", "list.json", "[1, 2]", "'{path}' holds a JSON list, not an object; give the candidate file"),
    ("--candidate", "other.json", '{"zero_stage": 1}', "'{path}' is not a candidate file (KeyError: 'knobs'); give "
                                                       "the <pick>.candidate.json `autotune export` wrote, or the knob flags"),
    ("--deepspeed-config", "folder", "DIR", "'{path}' is a folder; give the path of a DeepSpeed config JSON file"),
    ("--deepspeed-config", "empty.json", "", "'{path}' is not a readable JSON file ("),
    ("--deepspeed-config", "null.json", "null", "'{path}' holds JSON null, not an object"),
])
def test_a_wrong_input_file_is_one_usage_line_not_a_failed_probe(capsys, tmp_path, flag, name, content, said):
    """Seen in a newcomer's trial: a missing or non-JSON --candidate, or a folder as --deepspeed-config, was a raw
    FileNotFoundError / JSONDecodeError / IsADirectoryError in a failed result.json, exit 1."""
    path = tmp_path / name
    if content == "DIR":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exit_:
        parse_args([flag, str(path)] if flag == "--candidate" else ["--model", "tiny", flag, str(path)])
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"{PREFIX}{flag}: {said.format(path=path)}"), line


def test_a_candidate_file_autotune_wrote_is_taken(tmp_path):
    path = _candidate_file(tmp_path)
    # Read once, where it is checked: the probe trains the candidate the file holds.
    assert parse_args(["--candidate", path]).candidate.to_dict() == json.loads(Path(path).read_text())
