"""The sysfs root and small readers for sensor files.

The root is passed in (never patched): `sysfs_root()` reads AUTOTUNE_SYSFS_ROOT (default /sys) so a
container with a remapped sysfs, and the tests with trees they write, point the library elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from autotune.measure.errors import translate_os_error, translate_value_error

SYSFS_ROOT_ENV = "AUTOTUNE_SYSFS_ROOT"
DEFAULT_SYSFS_ROOT = "/sys"


def sysfs_root(root: str | os.PathLike | None = None) -> Path:
    """The root to read sensors under: an explicit argument, else $AUTOTUNE_SYSFS_ROOT, else /sys."""
    if root is not None:
        return Path(root)
    return Path(os.environ.get(SYSFS_ROOT_ENV) or DEFAULT_SYSFS_ROOT)


def missing_root_note(root: Path) -> str:
    """" (AUTOTUNE_SYSFS_ROOT=/x does not exist)" where the root itself is missing: a mistyped root read as a
    node without the driver, and a study fell back to estimated energy without a word of why."""
    if root.is_dir():
        return ""
    missing = "is not a directory" if root.exists() else "does not exist"
    return f" ({SYSFS_ROOT_ENV}={root} {missing})" if os.environ.get(SYSFS_ROOT_ENV) else f" ({root} {missing})"


def read_text(path: Path) -> str:
    """The stripped content of a sensor file; raises SourceUnavailable with the reason."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError as exc:
        raise translate_os_error(exc, path) from None


def read_int(path: Path) -> int:
    text = read_text(path)
    try:
        return int(text)
    except ValueError as exc:
        raise translate_value_error(exc, path) from None


class SensorFile:
    """A sensor file kept open and re-read with pread: the sampler polls it every few milliseconds,
    and open/close per read would cost more than the read itself.

    os.pread releases the GIL. In a busy Python process the sampler may then wait for the GIL after
    each read (timing jitter, visible as fewer samples per second at 10 ms), but every sample carries
    its own timestamp, so integration stays right; holding the GIL instead would stall the trainer for
    as long as a slow sensor takes (GH200's ACPI power meter evaluates firmware on each read).
    """

    _READ_BYTES = 64

    def __init__(self, path: Path):
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDONLY)
            self.read_int()  # fail now (directory, garbage), not in the sampler thread
        except OSError as exc:
            self.close()
            raise translate_os_error(exc, path) from None

    def _pread(self) -> bytes:
        return os.pread(self._fd, self._READ_BYTES, 0)

    def read_int(self) -> int:
        try:
            raw = self._pread()
        except OSError as exc:
            raise translate_os_error(exc, self.path) from None
        try:
            return int(raw)
        except ValueError as exc:
            raise translate_value_error(exc, self.path) from None

    def close(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    def __del__(self):
        self.close()
