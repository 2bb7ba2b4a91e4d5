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


SEE_HELP = " (see `python -m trainer.probe --help`)"


def _refused(capsys, flags: list[str], run_main: bool = False) -> str:
    """The one error line of a refused command line, without its prefix and its pointer to --help."""
    with pytest.raises(SystemExit) as exit_:
        (main if run_main else parse_args)(["--model", "tiny", *flags])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX) and lines[0].endswith(SEE_HELP), lines
    assert len(lines[0].removesuffix(SEE_HELP)) < 400
    return lines[0].removeprefix(PREFIX).removesuffix(SEE_HELP)


@pytest.mark.parametrize("value, problem", [
    ("-1", "is out of range"), ("-0.5", "is out of range"), ("nan", "is not finite"), ("inf", "is not finite"),
    ("1e400", "is out of range"), ("ten", "is not a number"), ("", "is not a number"), ("5s", "is not a number"),
    ("1e9", "is out of range"), ("604801", "is out of range"),
    # read by Python as 10 and 5, but written so by no script: the tuner's flags refuse them too (flag_number)
    ("1_0", "has an underscore, which a number here does not take: write the number without it"),
    ("\uff15", "has characters other than ASCII: write the number in ASCII digits (0-9)"),
])
def test_a_wrong_probe_seconds_is_one_line_that_says_what_is_allowed(capsys, value, problem):
    line = _refused(capsys, ["--probe-seconds", value])
    assert line == (f"--probe-seconds: {value!r} {problem}; it must be a number >= 0 and <= 604800 (the measured "
                    "window's minimum length: 0 for none, at most a week)")


@pytest.mark.parametrize("value, problem", [
    ("0", "is out of range"), ("-0", "is out of range"), ("-5", "is out of range"), ("nan", "is not finite"),
    ("inf", "is not finite"), ("1e400", "is out of range"), ("-1e400", "is out of range"), ("10m", "is not a number"),
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
    for flags in (["--out", str(tmp_path / "notes.txt")], ["--collective-timeout-s", "nan"], ["--probe-seconds", "-1"],
                  ["--gpus-per-node", "0"], ["--frames", "0"], ["--model", "nope"], ["--steps", "0"]):
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
    assert done.stderr.strip().splitlines() == [f"{PREFIX}--out: {str(tmp_path)!r} is a folder; give a file path "
                                                 f"in it, e.g. --out {tmp_path / 'result.json'}{SEE_HELP}"]


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


def _write_input(path, content) -> None:
    """An input file as a parametrized case gives it: "DIR" a folder, bytes or text its content, None no file."""
    if content == "DIR":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)


@pytest.mark.parametrize("flag, name, content, said", [
    ("--candidate", "absent.json", None, "'{path}' is missing; give the path of a candidate JSON file"),
    ("--candidate", "folder", "DIR", "'{path}' is a folder; give the path of a candidate JSON file"),
    ("--candidate", "notes.txt", "not json", "'{path}' is not a readable JSON file (Expecting value: line 1 column 1 "
                                             "(char 0)); give the candidate file `autotune export` wrote"),
    ("--candidate", "latin.json", b'{"\xe9": 1}', "'{path}' is not a readable JSON file ("),
    ("--candidate", "list.json", "[1, 2]", "'{path}' holds a JSON list, not an object; give the candidate file"),
    ("--candidate", "other.json", '{"zero_stage": 1}', "'{path}' is not a candidate file (the file: unknown key "
                                                       "zero_stage; allowed: gpus_per_node, hardware, hardware_profile, "
                                                       "knobs, model, workload; its keys are those `autotune export` "
                                                       "writes); correct it, or give the <pick>.candidate.json "
                                                       "`autotune export` wrote, or the knob flags"),
    ("--deepspeed-config", "folder", "DIR", "'{path}' is a folder; give the path of a DeepSpeed config JSON file"),
    ("--deepspeed-config", "empty.json", "", "'{path}' is not a readable JSON file ("),
    ("--deepspeed-config", "null.json", "null", "'{path}' holds JSON null, not an object"),
])
def test_a_wrong_input_file_is_one_usage_line_not_a_failed_probe(capsys, tmp_path, flag, name, content, said):
    """Seen in a newcomer's trial: a missing or non-JSON --candidate, or a folder as --deepspeed-config, was a raw
    FileNotFoundError / JSONDecodeError / IsADirectoryError in a failed result.json, exit 1."""
    path = tmp_path / name
    _write_input(path, content)
    with pytest.raises(SystemExit) as exit_:
        parse_args([flag, str(path)] if flag == "--candidate" else ["--model", "tiny", flag, str(path)])
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"{PREFIX}{flag}: {said.format(path=path)}"), line


@pytest.mark.parametrize("key, value, said", [
    ("knobs.zero_stage", 1.5, "knobs.zero_stage = 1.5 is not one of the allowed values 0, 1, 2, 3"),
    ("knobs.zero_stage", "1", 'knobs.zero_stage = "1" is not one of the allowed values 0, 1, 2, 3'),
    ("knobs.zero_stage", True, "knobs.zero_stage = true is not one of the allowed values 0, 1, 2, 3"),
    ("knobs.zero_stage", 1.0, "knobs.zero_stage = 1.0 is not a whole number; write it without a decimal point or an "
                              "exponent (1)"),
    ("knobs.zero_stage", 7, "knobs.zero_stage = 7 is not one of the allowed values 0, 1, 2, 3"),
    ("knobs.micro_batch", -3, "knobs.micro_batch = -3 is not a whole number >= 1 and <= 1000000000000"),
    ("knobs.optimizer_offload", "on", 'knobs.optimizer_offload = "on" is not one of the allowed values "none", "sync"'),
    ("knobs.power_limit", 1.5, "knobs.power_limit = 1.5 is not a fraction of the default power limit in (0, 1]"),
    ("knobs.zero", 1, "knobs: unknown key zero; allowed: activation_checkpointing, micro_batch, "),
    ("knobs.zero_stage", None, "knobs lacks zero_stage; every knob but power_limit and sm_clock_mhz (left out: "
                               "untouched) needs a value"),
    ("workload.frames", 0, "workload.frames = 0 is out of range; it must be a whole number >= 1"),
    ("workload.precision", "fp16", 'workload.precision = "fp16" is not one of bf16, fp32'),
    ("gpus_per_node", 2.0, "gpus_per_node = 2.0 is not a whole number; write it without a decimal point or an exponent (2)"),
    # Trial 68 #6: a missing workload was "(KeyError: 'workload')", an unknown top-level key passed.
    ("workload", None, "the file lacks workload; `autotune export` writes each"),
    ("bogus_top", 1, "the file: unknown key bogus_top; allowed: gpus_per_node, hardware, hardware_profile, knobs, model, "
                     "workload; its keys are those `autotune export` writes"),
])
def test_a_candidate_file_edited_to_a_wrong_value_is_one_usage_line(capsys, tmp_path, key, value, said):
    """Trial 66 #11: the knob flags' check was not applied to the file's knobs, which is edited by hand and probed
    again: zero_stage 1.5 started the ranks and failed inside DeepSpeed, `true` ran as ZeRO-1, micro_batch -3
    reached the batch arithmetic. Every value is checked as its flag is, before any rank starts (None: left out)."""
    path = Path(_candidate_file(tmp_path))
    data = json.loads(path.read_text())
    *tables, name = key.split(".")
    table = data[tables[0]] if tables else data
    if value is None:
        del table[name]
    else:
        table[name] = value
    path.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--candidate", str(path)])
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"{PREFIX}--candidate: '{path}' is not a candidate file ({said}"), line


def test_a_candidate_file_autotune_wrote_is_taken(tmp_path):
    path = _candidate_file(tmp_path)
    # Read once, where it is checked: the probe trains the candidate the file holds.
    assert parse_args(["--candidate", path]).candidate.to_dict() == json.loads(Path(path).read_text())


# A dozen wrong values for a number (a newcomer's trial: --gpus-per-node 0 ran a full probe as if not given, and
# -1, --frames 0 were failed result.json files, exit 1). Whole numbers: which problem number_problem names.
_WRONG_WHOLE_NUMBERS = [
    ("0", "is out of range"), ("-1", "is out of range"), ("1.5", "is not a whole number"),
    ("nan", "is not a whole number"), ("inf", "is not a whole number"), ("-inf", "is not a whole number"),
    ("", "is not a whole number"), ("99999999999999999999", "is out of range"),
    # an exponent as 1e3 is, and too large (trial 63 #22: 'is out of range' alone)
    ("1e400", "is not a whole number; write it without a decimal point or an exponent, and it is too large:"),
    ("1_0", "has an underscore, which a number here does not take: write the number without it"),
    ("\uff14", "has characters other than ASCII: write the number in ASCII digits (0-9)"),
    ("ten", "is not a whole number"), ("0x10", "is not a whole number"), ("2,5", "is not a whole number"),
]
_COUNT_FLAGS = {"--gpus-per-node": 1, "--frames": 1, "--text-tokens": 1, "--global-batch": 1, "--samples": 1,
                "--steps": 1, "--warmup-steps": 0, "--local_rank": 0}  # flag: its least value


@pytest.mark.parametrize("flag", _COUNT_FLAGS)
def test_a_wrong_count_is_one_line_that_says_what_is_allowed(capsys, flag):
    low = _COUNT_FLAGS[flag]
    for value, problem in _WRONG_WHOLE_NUMBERS:
        if value == "0" and low == 0:
            continue
        line = _refused(capsys, [f"{flag}={value}"])
        shown_flag = "--local_rank/--local-rank" if flag == "--local_rank" else flag
        joined = " " if problem.endswith(":") else "; "
        assert line == f"{shown_flag}: {value!r} {problem}{joined}it must be a whole number >= {low} and <= 1000000000000", value


@pytest.mark.parametrize("flag, taken", [
    ("--zero-stage", {"0"}), ("--sp-degree", set()), ("--micro-batch", set()), ("--nodes", set()),
    ("--power-limit", set()), ("--sm-clock-mhz", set()), ("--threads-per-rank", set()),
    ("--probe-seconds", {"0", "1.5"}), ("--collective-timeout-s", {"1.5"}),
])
def test_every_other_number_flag_refuses_the_same_dozen_wrong_values(capsys, flag, taken):
    """The knob flags (checked as a candidate file's values), threads and durations: each wrong value one line
    naming the flag and the value, while the command line is parsed."""
    for value, _ in _WRONG_WHOLE_NUMBERS:
        if value in taken:
            assert parse_args(["--model", "tiny", f"{flag}={value}"]) is not None
            continue
        assert _refused(capsys, [f"{flag}={value}"]).startswith(f"{flag}: {value!r} "), value


@pytest.mark.parametrize("flags, said", [
    (["--model", "nope"], "--model: unknown model 'nope': use one of tiny, 7b, 32b, 72b, the path of a JSON model file (schema: "),
    (["--model", " "], "--model: is empty; give a preset (tiny, 7b, 32b, 72b), a model JSON file or a checkpoint's "
                       "config.json"),
    (["--hardware", "nope"], "--hardware: unknown hardware 'nope': use one of cpu, gh200, h100-sxm or the path"),
])
def test_an_unknown_model_or_hardware_is_one_usage_line(capsys, flags, said):
    assert _refused(capsys, flags).startswith(said)


def test_workload_flags_that_contradict_each_other_are_one_usage_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--model", "tiny", "--samples", "2", "--global-batch", "4"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "python -m trainer.probe: error: --samples 2 is less than one global batch, --global-batch 4: the job must "
        f"run at least one optimizer step; pass --samples 4 or more, or a smaller --global-batch{SEE_HELP}")


def test_counts_within_range_are_taken_as_given():
    args = parse_args(["--model", "tiny", "--gpus-per-node", " 2", "--frames", "1", "--warmup-steps", "0",
                       "--steps", "1", "--global-batch", "2", "--samples", "4", "--text-tokens", "8"])
    assert (args.gpus_per_node, args.frames, args.warmup_steps, args.steps) == (2, 1, 0, 1)
    assert (args.workload.frames, args.workload.global_batch, args.workload.samples, args.workload.text_tokens) == (1, 2, 4, 8)


def test_help_gives_every_default(capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for said in ("optimizer steps before the window (default: 2)", "measured optimizer steps (default: 5)",
                 "in an existing folder (default: result.json)", "a checkpoint's Hugging Face config.json or its directory"):
        assert said in text, said


@pytest.mark.parametrize("flags, said", [
    (["--gpus-per-node", "0"], "--gpus-per-node: '0' is out of range"),
    (["--gpus-per-node", "-1"], "--gpus-per-node: '-1' is out of range"),
    (["--frames", "0"], "--frames: '0' is out of range"),
    (["--model", "nope"], "--model: unknown model 'nope'"),
])
def test_the_trials_wrong_values_stop_the_probe_command_before_anything_starts(tmp_path, capsys, flags, said):
    """As the trial ran them: one usage line and exit status 2, no result.json (it was a full probe, or a failed
    result with exit status 1). The probe's main() in this process (a probe command per value cost seconds each;
    the command's own exit status: test_the_probe_command_refuses_a_wrong_value_with_exit_status_2)."""
    out = tmp_path / "result.json"
    with pytest.raises(SystemExit) as refused:
        main(["--model", "tiny", *flags, "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert refused.value.code == 2
    assert len(lines) == 1 and lines[0].startswith(f"{PREFIX}{said}"), lines
    assert not out.exists()


ENTRY = {"id": "v", "video": "v.mp4", "conversations": [{"from": "human", "value": "<image>\nQ"},
                                                         {"from": "gpt", "value": "A"}]}


@pytest.mark.parametrize("name, content, said", [
    ("nosuch.json", None, "--data: annotation file {path} not found; pass the path of a LLaVA-Video JSON file"),
    ("folder", "DIR", "--data: annotation file {path} is a folder; pass the path of a LLaVA-Video JSON file"),
    ("empty.json", "", "--data: annotation file {path} is empty; pass a LLaVA-Video JSON file with samples"),
    ("blank.jsonl", "\n  \n", "--data: annotation file {path} is empty; pass a LLaVA-Video JSON file with samples"),
    ("latin.json", b'[{"\xe9": 1}]', "--data: annotation file {path} cannot be read ("),
    ("list.json", "[]", "--data: annotation file {path}: expected a non-empty JSON list of samples"),
    ("notes.json", "not json", "--data: annotation file {path}: not valid JSON ("),
])
def test_a_wrong_data_file_stops_the_probe_before_anything_starts(tmp_path, capsys, name, content, said):
    """Trial77 #2: `--data nosuch.json` started the process group and built DeepSpeed's op (13 s), then wrote a
    failed result.json that took the missing file for the candidate's own failure (`setup_failure: false`), exit 1.
    Every rank refuses it as it refuses a wrong --out: one usage line, exit status 2, no result.json."""
    path = tmp_path / name
    _write_input(path, content)
    out = tmp_path / "result.json"
    with pytest.raises(SystemExit) as refused:
        main(["--model", "tiny", "--data", str(path), "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert refused.value.code == 2
    assert len(lines) == 1 and lines[0].startswith(f"{PREFIX}{said.format(path=path)}"), lines
    assert not out.exists() and not torch.distributed.is_initialized()


def test_an_unreadable_data_file_is_one_usage_line(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permission bits")
    path = tmp_path / "ann.json"
    path.write_text(json.dumps([ENTRY]))
    path.chmod(0)
    line = _refused(capsys, ["--data", str(path)])
    assert line == f"--data: annotation file {path} cannot be read (Permission denied); pass a readable UTF-8 " \
                   "LLaVA-Video JSON file"


def test_a_wrong_video_root_or_one_without_data_is_one_usage_line(tmp_path, capsys):
    (tmp_path / "ann.json").write_text(json.dumps([ENTRY]))
    missing = tmp_path / "videos"
    assert _refused(capsys, ["--data", str(tmp_path / "ann.json"), "--video-root", str(missing)]) == (
        f"--video-root: video root {missing} is not a folder; pass the folder the annotation's video paths are under")
    assert _refused(capsys, ["--video-root", str(tmp_path)]) == (
        "--video-root: given without --data, so no video is read; add --data FILE or drop it")
    assert _refused(capsys, ["--data", ""]) == (
        "--data: is empty; give the path of a LLaVA-Video JSON file (docs/data.md)")


def test_a_data_file_the_dataset_reads_is_taken_as_given(tmp_path):
    """Its videos are not opened here (the workload decides which the probe reads): a missing one is the dataset's."""
    pytest.importorskip("av")
    (tmp_path / "ann.jsonl").write_text(json.dumps(ENTRY) + "\n")
    args = parse_args(["--model", "tiny", "--data", str(tmp_path / "ann.jsonl"), "--video-root", str(tmp_path)])
    assert (args.data, args.video_root) == (str(tmp_path / "ann.jsonl"), str(tmp_path))
