"""What a file the tuner writes whole (atomic_write) says where the system refuses it: the fix of its own cause, not
"move what is in its way" for a full disk, a quota or a file-size limit (trial69 #5)."""

from __future__ import annotations

import errno
import os
import resource

import pytest

from autotune import atomic_write
from autotune.atomic_write import FileNotWritten, write_text_atomic


def test_a_file_size_limit_is_said_with_its_value_and_the_fix(tmp_path):
    """`ulimit -f 4`: Python ignores SIGXFSZ, so the limit shows as EFBIG ("File too large") alone."""
    path = tmp_path / "report.html"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(FileNotWritten) as err:
            write_text_atomic(path, "x" * 10_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    said = str(err.value)
    assert said == (f"cannot write {path} (File too large: this process may write files of at most 4 KiB (ulimit -f)); "
                    "raise the limit (ulimit -f unlimited), and run the command again (what the study measured is kept "
                    "in its database)")
    assert not path.exists() and list(tmp_path.iterdir()) == []  # no partial file, no temporary one


@pytest.mark.parametrize(("code", "fix"), [
    (errno.ENOSPC, "free space on its file system (df -h), or choose another path"),
    (errno.EDQUOT, "free space in your disk quota (quota -s), or choose another path"),
    (errno.EACCES, "have its folder (and the file) made writable for you, or choose another path"),
    (errno.EPERM, "have its folder (and the file) made writable for you, or choose another path"),
    (errno.EROFS, "choose a path on a writable file system"),
    (errno.EISDIR, "move what is in its way or choose another path"),
])
def test_each_cause_names_its_own_fix(tmp_path, monkeypatch, code, fix):
    def refused(path):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(atomic_write, "temp_file_beside", refused)
    path = tmp_path / "pareto.json"
    with pytest.raises(FileNotWritten) as err:
        write_text_atomic(path, "{}", kept="nothing is lost")
    assert str(err.value) == f"cannot write {path} ({os.strerror(code)}); {fix}, and run the command again (nothing is lost)"
    assert (err.value.problem, err.value.fix) == (f"cannot write {path} ({os.strerror(code)})", fix)


def test_a_study_database_under_a_file_size_limit_names_the_limit_not_the_file_system():
    """SQLite says "disk I/O error" of EFBIG too: under `ulimit -f 125` the run ended "the file system under it?"."""
    import sqlite3

    from autotune.study.storage_failure import storage_failure_line

    failure = sqlite3.OperationalError("disk I/O error")
    assert "the file system under it?" in storage_failure_line(failure)  # no limit: the file system it may be
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (125 * 1024, hard))
    try:
        said = storage_failure_line(failure)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert said == ("the study's database failed to read or write (disk I/O error, where this process may write files "
                    "of at most 125 KiB: ulimit -f); what was evaluated before is kept in it: raise the limit (ulimit -f "
                    "unlimited), then run the same command again")
