"""Which failures of a probe are its set-up's (result.json's `setup_failure`, trainer/setup_fault.py), so that the
tuner probes their candidate again on resume: trial 69 #7, where an unwritable ~/.cache failed DeepSpeed's shm_comm
build as the process group started, the result named rank 0, and the baseline's failure was kept as final."""

from __future__ import annotations

import errno
import json
import os

import pytest

import trainer.probe as probe
from trainer.setup_fault import setup_fault


def _raised_in(filename: str, exc: BaseException) -> BaseException:
    """`exc` as raised by code of the file `filename` (a frame of torch's cpp_extension, say)."""
    code = compile("raise exc", filename, "exec")
    try:
        exec(code, {"exc": exc})
    except BaseException as raised:  # noqa: BLE001 - the point of the helper
        return raised
    raise AssertionError("not raised")


BUILD = os.path.join("site-packages", "torch", "utils", "cpp_extension.py")
OP_BUILDER = os.path.join("site-packages", "deepspeed", "ops", "op_builder", "builder.py")


@pytest.mark.parametrize("exc, before_candidate, setup", [
    (RuntimeError("rendezvous failed"), True, True),  # before DeepSpeed saw the candidate: whatever it was
    (RuntimeError("shapes cannot be multiplied"), False, False),  # the candidate's own
    (PermissionError(errno.EACCES, "Permission denied", "/home/u/.cache"), False, True),  # an unwritable ~/.cache
    (OSError(errno.ENOSPC, "No space left on device"), False, True),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), False, True),
    (_raised_in(BUILD, RuntimeError("Error building extension 'cpu_adam'")), False, True),  # a compiler missing
    (_raised_in(OP_BUILDER, RuntimeError("Unable to JIT load the cpu_adam op")), False, True),
    (AssertionError("ZeRO-3 needs ..."), False, False),
])
def test_a_failure_is_the_setups_before_the_candidate_ran_or_in_the_op_build_or_the_file_system(exc, before_candidate, setup):
    assert setup_fault(exc, before_candidate) is setup


def test_an_error_raised_from_a_build_failure_is_the_setups():
    try:
        try:
            raise _raised_in(BUILD, OSError(errno.ENOENT, "ninja"))
        except OSError as build:
            raise RuntimeError("Ninja is required to load C++ extensions") from build
    except RuntimeError as exc:
        assert setup_fault(exc, before_candidate=False)


def _probe_failing(tmp_path, monkeypatch, where: str, exc: BaseException) -> dict:
    """The result.json of an in-process probe whose step `where` raises `exc` (1 rank, CPU, no process group)."""
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")

    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(probe, where, fail)
    if where != "init_process_group":
        monkeypatch.setattr(probe, "init_process_group", lambda *args, **kwargs: None)
    out = tmp_path / "result.json"
    assert probe.main(["--model", "tiny", "--hardware", "cpu", "--out", str(out)]) == 1
    return json.loads(out.read_text())


def test_a_probe_that_fails_as_its_process_group_starts_says_it_is_the_setups(tmp_path, monkeypatch):
    denied = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "home" / ".cache"))
    result = _probe_failing(tmp_path, monkeypatch, "init_process_group", denied)
    assert result["status"] == "failed" and result["failed_rank"] == 0 and result["setup_failure"] is True
    assert result["error"].startswith("PermissionError: [Errno 13] Permission denied")


def test_a_probe_whose_candidate_fails_says_it_is_not_the_setups(tmp_path, monkeypatch):
    """`setup_failure: false`, said: a result without the key is a trainer's older than it, which could not tell the
    two apart (study/failures.py says so of such a failure rather than call it the candidate's own)."""
    # run_test_hook stands where the candidate runs (AUTOTUNE_PROBE_TEST_HOOK=crash raises there)
    result = _probe_failing(tmp_path, monkeypatch, "run_test_hook", RuntimeError("shapes cannot be multiplied"))
    assert result["status"] == "failed" and result["failed_rank"] == 0 and result["setup_failure"] is False


def test_a_probe_whose_data_fails_once_the_candidate_runs_says_it_is_the_setups(tmp_path, monkeypatch):
    """Trial77 #2: the probe's own input, read where the candidate's engine is up (a video the annotation names is
    missing, or ffmpeg cannot decode it: docs/data.md), was written as the candidate's own failure."""
    from autotune.errors import ConfigError

    missing = ConfigError("video v.mp4 not found (1 of 1 used videos missing); check the video root (--video-root)")
    result = _probe_failing(tmp_path, monkeypatch, "run_test_hook", missing)
    assert result["status"] == "failed" and result["setup_failure"] is True
    assert setup_fault(missing, before_candidate=False)
