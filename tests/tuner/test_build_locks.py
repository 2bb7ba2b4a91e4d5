"""Stale torch-extension build locks: which are stale, which are held, which only named (autotune/build_locks.py).

Real lock files in a temporary extensions folder, a real process holding one open, fake mountinfo files
for the file-system type.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autotune.build_locks import (SHARED_STALE_AFTER_S, build_locks, clear_stale_build_locks, extensions_root,
                                  filesystem_type)


def _mountinfo(tmp_path: Path, fs_type: str, mount_point: str = "/") -> Path:
    path = tmp_path / f"mountinfo-{fs_type}"
    path.write_text(f"22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                    f"40 22 0:40 / {mount_point} rw,relatime shared:9 - {fs_type} server:/home rw\n")
    return path


def _lock(root: Path, *parts: str, age_s: float = 0.0) -> Path:
    lock = root.joinpath(*parts, "lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


def test_the_root_is_torchs_own():
    assert extensions_root({"TORCH_EXTENSIONS_DIR": "/scratch/ext", "XDG_CACHE_HOME": "/c"}) == Path("/scratch/ext")
    assert extensions_root({"XDG_CACHE_HOME": "/c"}) == Path("/c/torch_extensions")
    assert extensions_root({}) == Path.home() / ".cache" / "torch_extensions"


def test_locks_are_found_at_both_depths_torch_builds_at(tmp_path):
    # TORCH_EXTENSIONS_DIR/<op>/lock, and ~/.cache/torch_extensions/py311_cpu/<op>/lock
    flat = _lock(tmp_path, "deepspeed_shm_comm")
    nested = _lock(tmp_path, "py311_cpu", "cpu_adam")
    (tmp_path / "py311_cpu" / "cpu_adam" / "cpu_adam.so").write_text("")
    (tmp_path / "lock").write_text("")  # not a build directory's
    assert build_locks(tmp_path) == sorted([flat, nested])
    assert build_locks(tmp_path / "absent") == []


def test_a_lock_nobody_holds_on_a_local_file_system_is_removed(tmp_path):
    lock = _lock(tmp_path, "py311_cpu", "deepspeed_shm_comm", age_s=5)
    said = clear_stale_build_locks(tmp_path, mountinfo=_mountinfo(tmp_path, "xfs", str(tmp_path)))
    assert not lock.exists()
    assert len(said) == 1 and said[0].startswith(f"removed stale build lock {lock} (5 s old, held by no process on "
                                                 "this node")
    assert clear_stale_build_locks(tmp_path) == []  # nothing left to say


def test_a_lock_a_running_build_holds_is_kept(tmp_path):
    lock = _lock(tmp_path, "deepspeed_shm_comm", age_s=3600)
    # What torch's FileBaton does: the builder keeps the lock open until it removes it.
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); "
                               "print('open', flush=True); time.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert clear_stale_build_locks(tmp_path, mountinfo=_mountinfo(tmp_path, "ext4", str(tmp_path))) == []
        assert lock.exists()
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert len(clear_stale_build_locks(tmp_path, mountinfo=_mountinfo(tmp_path, "ext4", str(tmp_path)))) == 1
    assert not lock.exists()  # the holder died without releasing it: stale now


def test_on_a_shared_file_system_a_young_lock_is_named_and_an_old_one_removed(tmp_path):
    """Another node's build may hold it, and this node cannot see that node's processes."""
    nfs = _mountinfo(tmp_path, "nfs4", str(tmp_path))
    young = _lock(tmp_path, "cpu_adam", age_s=120)
    said = clear_stale_build_locks(tmp_path, mountinfo=nfs)
    assert young.exists()
    assert said == [f"build lock {young} (120 s old) is held by no process on this node, on a shared file system: a "
                    "build on another node may hold it; if none does, delete it (it is removed once 30 minutes old)"]
    old = _lock(tmp_path, "fused_adam", age_s=SHARED_STALE_AFTER_S + 60)
    said = clear_stale_build_locks(tmp_path, mountinfo=nfs)
    assert young.exists() and not old.exists()
    assert [line.split(" (")[0] for line in said] == [f"build lock {young}", f"removed stale build lock {old}"]


def test_an_unknown_file_system_counts_as_shared(tmp_path):
    lock = _lock(tmp_path, "cpu_adam", age_s=10)
    assert "on a shared file system" in clear_stale_build_locks(tmp_path, mountinfo=tmp_path / "no-mountinfo")[0]
    assert lock.exists()


def test_the_longest_mount_point_decides(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("22 1 0:21 / / rw - ext4 /dev/vda rw\n"
                         "40 22 0:40 / /home rw - nfs4 server:/home rw\n"
                         "41 40 0:41 / /home/me/local\\040disk rw - xfs /dev/sdb rw\n"
                         "not a mountinfo line\n")
    assert filesystem_type(Path("/home/me/.cache"), mountinfo) == "nfs4"
    assert filesystem_type(Path("/home/me/local disk/ext"), mountinfo) == "xfs"
    assert filesystem_type(Path("/homework"), mountinfo) == "ext4"  # /home is not a prefix of /homework
    assert filesystem_type(Path("/"), mountinfo) == "ext4"
    assert filesystem_type(Path("/x"), tmp_path / "absent") is None


def test_another_users_lock_is_left_alone(tmp_path, monkeypatch):
    lock = _lock(tmp_path, "cpu_adam", age_s=SHARED_STALE_AFTER_S + 60)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(lock).st_uid + 1)
    assert clear_stale_build_locks(tmp_path, mountinfo=_mountinfo(tmp_path, "ext4", str(tmp_path))) == []
    assert lock.exists()


def test_without_proc_a_lock_is_named_not_removed(tmp_path):
    lock = _lock(tmp_path, "cpu_adam", age_s=SHARED_STALE_AFTER_S + 60)
    said = clear_stale_build_locks(tmp_path, proc=tmp_path / "no-proc")
    assert lock.exists() and said == [f"build lock {lock} exists and this system has no {tmp_path / 'no-proc'} to "
                                      "tell whether a build holds it; if no build is running, delete it"]


def test_a_lock_that_cannot_be_removed_is_named(tmp_path, monkeypatch):
    lock = _lock(tmp_path, "cpu_adam")

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refuse)
    said = clear_stale_build_locks(tmp_path, mountinfo=_mountinfo(tmp_path, "ext4", str(tmp_path)))
    assert lock.exists()
    assert said == [f"build lock {lock} is stale (no process holds it) but could not be removed: [Errno 13] Permission "
                    "denied; delete it, or every probe on this node waits on it"]


@pytest.mark.parametrize("fs_type", ["nfs", "lustre", "gpfs", "fuse.sshfs", "cifs"])
def test_network_file_systems_are_not_node_local(tmp_path, fs_type):
    lock = _lock(tmp_path, "cpu_adam", age_s=60)
    assert "shared file system" in clear_stale_build_locks(tmp_path, mountinfo=_mountinfo(tmp_path, fs_type,
                                                                                         str(tmp_path)))[0]
    assert lock.exists()


def test_by_default_only_this_installs_folder_is_cleaned(tmp_path, monkeypatch):
    """Another install's locks are that install's probes' to judge: its builds run in its own folder."""
    from autotune.build_locks import install_extensions_dir

    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    others = _lock(tmp_path, "torch_extensions", "autotune-py311-0therinst", "cpu_adam", age_s=3600)
    mine = _lock(install_extensions_dir(), "cpu_adam", age_s=3600)
    said = clear_stale_build_locks(mountinfo=_mountinfo(tmp_path, "ext4", str(tmp_path)))
    assert not mine.exists() and others.exists()
    assert len(said) == 1 and said[0].startswith(f"removed stale build lock {mine} ")
