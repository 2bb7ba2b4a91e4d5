"""Files other tools (and browsers) read while we may be rewriting them are written whole: to a
temporary name beside the target first, then renamed over it, so a reader sees the old file or the
new one, never half of one; a crash leaves the old file in place. A symbolic link is written through
(the file it names is replaced, the link stays), and a path that cannot take the file (a directory
in its place, a file where its directory should be) is one line: every caller writes what a study
already holds, so nothing measured is lost and the fix is to clear the way and write it again."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from autotune.errors import UserError


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `text` (UTF-8) to `path` in one rename; `mode` sets the permissions (e.g. 0o755)."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()  # the rename would replace the link itself with a file
    # Per process: two workers finishing together must not write into one temporary file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # a read-only file system refuses the clean-up too
            tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path} ({exc.strerror or exc}); move what is in its way or choose another path, "
                        "and run the command again (what the study measured is kept in its database)") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
