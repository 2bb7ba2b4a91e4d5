"""Files other tools (and browsers) read while we may be rewriting them are written whole: to a
temporary name beside the target first, then renamed over it, so a reader sees the old file or the
new one, never half of one; a crash leaves the old file in place."""

from __future__ import annotations

import os
from pathlib import Path


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `text` (UTF-8) to `path` in one rename; `mode` sets the permissions (e.g. 0o755)."""
    path = Path(path)
    # Per process: two workers finishing together must not write into one temporary file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
