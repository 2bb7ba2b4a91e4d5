"""A folder nobody may write in, for the tests of what a command does where it cannot write."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


@contextlib.contextmanager
def read_only_view(folder: Path, scratch: Path, also: tuple[Path, ...] = ()):
    """`folder` without write permission (and `also`, folders inside it), or, for root (who writes anyway),
    a read-only bind mount of it in `scratch`; skips the test where root cannot mount."""
    if os.geteuid() != 0:
        for path in (folder, *also):
            path.chmod(0o555)
        try:
            yield folder
        finally:
            for path in (folder, *also):
                path.chmod(0o755)
        return
    view = scratch / "view"
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True).returncode == 0
    if not mounted or subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True).returncode:
        if mounted:
            subprocess.run(["umount", str(view)])
        pytest.skip("root here cannot make a read-only mount")
    try:
        yield view
    finally:
        subprocess.run(["umount", "--lazy", str(view)], check=True)  # an in-process study may hold study.db open


@contextlib.contextmanager
def read_only_file(path: Path):
    """`path` (a file) without write permission, its folder left writable; for root, the file bind-mounted
    read-only over itself. Skips the test where root cannot mount."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield path
        finally:
            path.chmod(mode)
        return
    if subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True).returncode:
        pytest.skip("root here cannot make a read-only mount")
    if subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], capture_output=True).returncode:
        subprocess.run(["umount", str(path)])
        pytest.skip("root here cannot make a read-only mount")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)


# The capabilities by which root reads and writes whatever the modes say.
_OVERRIDES = "-dac_override,-dac_read_search,-fowner"


def where_modes_apply(argv: list[str]) -> list[str]:
    """`argv` as a command that file modes bind: as it is for a user; for root, under setpriv without the capabilities
    that override them (as trial69 ran its permission cases). Skips the test where setpriv cannot drop them."""
    if os.geteuid() != 0:
        return argv
    prefix = ["setpriv", f"--inh-caps={_OVERRIDES}", f"--bounding-set={_OVERRIDES}"]
    try:
        works = subprocess.run([*prefix, "true"], capture_output=True).returncode == 0
    except OSError:
        works = False
    if not works:
        pytest.skip("root here cannot drop the capabilities that override file modes (setpriv)")
    return [*prefix, *argv]


def autotune_as_a_user(*args) -> subprocess.CompletedProcess:
    """`autotune ARGS` in a process file modes apply to (where_modes_apply)."""
    import sys

    return subprocess.run(where_modes_apply([sys.executable, "-m", "autotune.cli", *map(str, args)]), capture_output=True,
                          text=True, timeout=120)
