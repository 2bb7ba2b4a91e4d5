"""Stale build locks of DeepSpeed's JIT-compiled ops: found and removed before a probe builds (the probe
calls it on each node; the launch backend names what a timed-out probe may have waited on).

DeepSpeed builds its ops (cpu_adam for optimizer offload, shm_comm for CPU collectives, fused_adam)
through torch's cpp_extension, which guards each build directory with a `lock` file: the process that
creates it keeps it open for the whole build and removes it at the end; every other process waits
while the file exists, with no timeout. A probe killed during a build (its --probe-timeout, a user's
Ctrl-C) leaves the file behind, and every later probe on that node then waits on it until it is killed
in turn: one killed build fails the rest of the study (seen in a newcomer's trial).

A lock nobody holds open is stale. On a node-local file system every process that could hold it is on
this node, so a lock no process here has open is removed. On a shared one (home directories on NFS,
Lustre) the holder may be a build on another node, which this node cannot see: such a lock is removed
only once it is older than any build (`SHARED_STALE_AFTER_S`), and until then the probe's log names it,
so a timeout says what it waited on.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

LOCK_NAME = "lock"  # torch.utils.cpp_extension: FileBaton(os.path.join(build_directory, 'lock'))
# A DeepSpeed op build takes one to a few minutes; nothing builds for half an hour.
SHARED_STALE_AFTER_S = 30 * 60
# File systems of one machine: a process that holds a lock on them is a process of this node.
NODE_LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs",
                                    "jfs", "reiserfs", "ramfs"})


def extensions_root(environ: dict | None = None) -> Path:
    """Where torch builds extensions: TORCH_EXTENSIONS_DIR, else its per-user cache folder."""
    environ = os.environ if environ is None else environ
    given = environ.get("TORCH_EXTENSIONS_DIR")
    if given:
        return Path(given)
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "torch_extensions"


def install_extensions_dir(environ: dict | None = None, prefix: str = sys.prefix) -> Path:
    """Where this Python install's probes build DeepSpeed's ops: TORCH_EXTENSIONS_DIR where it is set, else a
    folder of its own under torch's per-user one (`autotune-` and a digest of the install's path).

    torch keys its build folders by op name only, and an op built by another install (a second checkout,
    the training venv beside the tuner's, one home directory shared by a cluster's nodes) has other include
    paths, so each install found the other's build stale and rebuilt it, 50-135 s a probe, inside the
    probe's --probe-timeout (a newcomer's trial: tiny probes went from 10 s to over 500 s). Every process
    that builds for a probe (the probe on each node, scripts/test's prebuild) asks here, so they agree."""
    environ = os.environ if environ is None else environ
    if environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(environ["TORCH_EXTENSIONS_DIR"])
    install = hashlib.sha1(os.path.realpath(prefix).encode()).hexdigest()[:10]
    return extensions_root(environ) / f"autotune-py{sys.version_info.major}{sys.version_info.minor}-{install}"


def use_install_extensions_dir() -> Path:
    """Point torch's builds of this process (and its children) at `install_extensions_dir`."""
    folder = install_extensions_dir()
    os.environ["TORCH_EXTENSIONS_DIR"] = str(folder)
    return folder


def build_locks(root: Path) -> list[Path]:
    """The lock files of root's build directories (root/<python-and-device>/<op>/lock, or root/<op>/lock)."""
    found = []
    for depth_pattern in (f"*/{LOCK_NAME}", f"*/*/{LOCK_NAME}"):
        found.extend(path for path in root.glob(depth_pattern) if path.is_file())
    return sorted(found)


def held_open(paths: list[Path], proc: Path = Path("/proc")) -> set[Path]:
    """Which of `paths` a process on this node has open (only processes whose fds we may read)."""
    wanted = {}
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        wanted[(stat.st_dev, stat.st_ino)] = path
    held = set()
    for fd_dir in proc.glob("[0-9]*/fd"):
        try:
            fds = list(fd_dir.iterdir())
        except OSError:  # another user's process, or one that just ended
            continue
        for fd in fds:
            try:
                stat = fd.stat()
            except OSError:
                continue
            path = wanted.get((stat.st_dev, stat.st_ino))
            if path is not None:
                held.add(path)
    return held


def filesystem_type(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> str | None:
    """The type of the file system `path` lies on (the longest mount point that contains it)."""
    try:
        # Mount points as Python names files (os.fsdecode), to compare with the path: decoded by the locale, one
        # with a non-ASCII name failed under an ASCII one (trial 45 §5).
        lines = os.fsdecode(mountinfo.read_bytes()).splitlines()
    except OSError:
        return None
    resolved = str(path.resolve())
    best, best_type = "", None
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        mount_point = fields[4].replace("\\040", " ")
        fs_type = line.split(" - ", 1)[1].split()[0]
        inside = resolved == mount_point or resolved.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, fs_type
    return best_type


def clear_stale_build_locks(root: Path | None = None, *, proc: Path = Path("/proc"),
                            mountinfo: Path = Path("/proc/self/mountinfo"), now: float | None = None) -> list[str]:
    """Remove the stale locks under `root` (this user's only; by default this install's build folder, where
    its probes build: another install's locks are that install's to judge); returns one line per lock it
    removed or could not judge, for the probe's log."""
    root = install_extensions_dir() if root is None else root
    locks = [path for path in build_locks(root) if _owned_by_me(path)]
    if not locks:
        return []
    if not proc.is_dir():
        return [f"build lock {path} exists and this system has no {proc} to tell whether a build holds it; "
                "if no build is running, delete it" for path in locks]
    held = held_open(locks, proc)
    node_local = filesystem_type(root, mountinfo) in NODE_LOCAL_FILESYSTEMS
    now = time.time() if now is None else now
    lines = []
    for path in locks:
        if path in held:
            continue
        try:
            age_s = now - path.stat().st_mtime
        except OSError:
            continue  # released meanwhile
        if node_local or age_s > SHARED_STALE_AFTER_S:
            try:
                path.unlink()
            except FileNotFoundError:
                continue  # another rank of this node removed it first
            except OSError as exc:
                lines.append(f"build lock {path} is stale (no process holds it) but could not be removed: {exc}; "
                             "delete it, or every probe on this node waits on it")
                continue
            lines.append(f"removed stale build lock {path} ({age_s:.0f} s old, held by no process"
                         f"{' on this node' if node_local else ''}: a build killed midway left it)")
        else:
            lines.append(f"build lock {path} ({age_s:.0f} s old) is held by no process on this node, on a shared "
                         f"file system: a build on another node may hold it; if none does, delete it (it is "
                         f"removed once {SHARED_STALE_AFTER_S // 60} minutes old)")
    return lines


def _owned_by_me(path: Path) -> bool:
    try:
        return path.stat().st_uid == os.geteuid()
    except OSError:
        return False
