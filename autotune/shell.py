"""Paths in the commands autotune prints for the user to copy and run (`bash PATH`, `autotune report RUN_DIR`)."""

from __future__ import annotations

import os
import shlex


def shell_path(path) -> str:
    """`path` as one shell word naming it: quoted where it holds spaces or quotes, and after ./ where (relative) it
    starts with '-'. Printed as given, `bash w/my dir/x.launch.sh` ran `w/my`, and `bash -dash/knee.launch.sh` read
    the path as options (trial 45 §11)."""
    text = os.fspath(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)
