"""Paths in the commands autotune prints for the user to copy and run (`bash PATH`, `autotune report RUN_DIR`)."""

from __future__ import annotations

import os

from autotune.os_text import shell_text


def shell_path(path) -> str:
    """`path` as one shell word naming it: quoted where it holds spaces or quotes, and after ./ where (relative) it
    starts with '-'. Printed as given, `bash w/my dir/x.launch.sh` ran `w/my`, and `bash -dash/knee.launch.sh` read
    the path as options (trial 45 §11). A newline or other control character is written as bash's $'\\n' (shell_text):
    a terminal showed it as a space, and the path pasted back named no file (trial 63 #23)."""
    text = os.fspath(path)
    return shell_text(f"./{text}" if text.startswith("-") else text)
