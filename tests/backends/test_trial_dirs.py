"""A trial directory or trials/ folder the tuner cannot write (trial 69 #8): one line naming the folder and the fix,
exit 2, every trial kept; and `run` says it before any probe where it can. Root ignores file modes, so the refusals
are made by the write itself (monkeypatched), as a colleague's folder, a quota or a read-only mount makes them."""

from __future__ import annotations

import errno
import pathlib

import pytest

from autotune.backends import trial_dirs
from autotune.errors import UserError
from tests.cli import autotune_main


def _refused_in(monkeypatch, *folders: pathlib.Path, code: int = errno.EACCES) -> None:
    """The write check of trial_dirs fails in `folders`, as without write permission there."""
    real = trial_dirs._write_check

    def check(folder):
        if pathlib.Path(folder) in folders:
            raise OSError(code, "Permission denied" if code == errno.EACCES else "Read-only file system",
                          str(pathlib.Path(folder) / ".write-check-x"))
        real(folder)

    monkeypatch.setattr(trial_dirs, "_write_check", check)


def test_a_trial_folder_the_probe_cannot_write_is_one_line_naming_it_not_a_traceback(
        make_launch_backend, make_candidate, monkeypatch):
    backend = make_launch_backend(python="/nonexistent/python")  # never started: the files come first
    trial_dir = backend.trial_dir(2).resolve()
    trial_dir.mkdir(parents=True)
    real_write = pathlib.Path.write_text

    def write_text(path, *args, **kwargs):
        if path.parent == trial_dir:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_write(path, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    with pytest.raises(UserError) as refused:
        backend.evaluate(make_candidate(), trial_number=2)
    assert str(refused.value) == (
        f"trial 2 was not probed: {trial_dir} cannot be written (Permission denied), and the probes write their files "
        f"there: make it writable (chmod u+rwx {trial_dir}, as its owner), or move it aside; what the study evaluated "
        "is kept, and the same command then probes this candidate again")


def test_a_trials_folder_in_which_no_trial_folder_can_be_made_names_trials(make_launch_backend, make_candidate, monkeypatch):
    backend = make_launch_backend(python="/nonexistent/python")
    trials = backend.trial_dir(0).resolve().parent
    trials.mkdir(parents=True)
    real_mkdir = pathlib.Path.mkdir

    def mkdir(path, *args, **kwargs):
        if path.parent == trials:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    with pytest.raises(UserError, match=f"^trial 0 was not probed: {trials} cannot be written \\(Permission denied\\)"):
        backend.evaluate(make_candidate(), trial_number=0)


def test_an_unwritable_trials_folder_is_refused_when_the_backend_starts(make_launch_backend, tmp_path, monkeypatch):
    trials = tmp_path / "run" / "trials"
    trials.mkdir(parents=True)
    _refused_in(monkeypatch, trials)
    with pytest.raises(UserError) as refused:
        make_launch_backend()
    assert str(refused.value) == (f"{trials} cannot be written (Permission denied), and the probes write their files "
                                  f"there: make it writable (chmod u+rwx {trials}, as its owner), or move it aside; "
                                  "nothing was probed")


def test_an_empty_trial_folder_made_ahead_is_refused_when_the_backend_starts_a_finished_one_is_not(
        make_launch_backend, tmp_path, monkeypatch):
    trials = tmp_path / "run" / "trials"
    finished, ahead = trials / "0000", trials / "0002"
    finished.mkdir(parents=True)
    (finished / "result.json").write_text("{}")
    ahead.mkdir()
    _refused_in(monkeypatch, finished)  # a colleague's finished trial: never written again
    make_launch_backend()
    _refused_in(monkeypatch, finished, ahead, code=errno.EROFS)
    with pytest.raises(UserError, match=f"^{ahead} cannot be written \\(Read-only file system\\), and the probes write "
                                        "their files there: copy the run directory to a writable file system"):
        make_launch_backend()


def test_run_refuses_an_unwritable_trials_folder_before_any_probe(tmp_path, monkeypatch):
    out = tmp_path / "run"
    (out / "trials").mkdir(parents=True)
    _refused_in(monkeypatch, out / "trials")
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu",
                         "--backend", "launch", "--allow-estimated-energy", "--trials", "2", "--out", out)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith(f"autotune run: error: {out / 'trials'} cannot be written (Permission denied)"), lines
    assert "Traceback" not in done.stderr and not (out / "study.db").exists()
