"""Which failures of a probe are its set-up's (result.json's `setup_failure`, trainer/setup_fault.py), so that the
tuner probes their candidate again on resume: trial 69 #7, where an unwritable ~/.cache failed DeepSpeed's shm_comm
build as the process group started, the result named rank 0, and the baseline's failure was kept as final."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

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
    (OSError(errno.EFBIG, "File too large"), False, True),  # a job's `ulimit -f` (trial79 #5)
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


def test_a_result_over_the_file_size_limit_names_the_file_and_the_limit_and_leaves_no_temporary_file(tmp_path):
    """`ulimit -f` (RLIMIT_FSIZE) under the probe: "[Errno 27] File too large" named neither the file nor the limit, and
    the temporary file stayed in the trial folder (trial79 #5). The errno stays: setup_fault reads it."""
    script = (
        "import errno, resource, sys\n"
        "from pathlib import Path\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
        "from trainer.result import write_result\n"
        "from trainer.setup_fault import setup_fault\n"
        "try:\n"
        "    write_result(Path(sys.argv[1]), {'status': 'ok', 'padding': 'x' * 10000}, overwrite=True)\n"
        "except OSError as exc:\n"
        "    print(exc.errno == errno.EFBIG, setup_fault(exc, before_candidate=False), exc.strerror, sep='|')\n"
    )
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"True|True|cannot write {out}: File too large: this process may write files of at "
                                   "most 4 KiB (ulimit -f); raise the limit (ulimit -f unlimited)")
    assert list(tmp_path.iterdir()) == []
