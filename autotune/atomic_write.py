"""Files other tools (and browsers) read while we may be rewriting them are written whole: to a
temporary name beside the target first, then renamed over it, so a reader sees the old file or the
new one, never half of one; a crash leaves the old file in place. A symbolic link is written through
(the file it names is replaced, the link stays), and a path that cannot take the file (a directory
in its place, a file where its directory should be, a full disk, a file-size limit) is one line whose fix is that
of its cause: clear the way, free space, raise the limit (`ulimit -f`), or choose another path. The line ends on
what the failure leaves safe, which only the caller knows: most callers write what a study already holds
(STUDY_KEPT); device_cli's first write of its record comes before any GPU is changed.

The file gets the permissions a plain open(path, "w") would leave: a new file the process umask's
(0644 under the usual 022, not tempfile.mkstemp's 0600, which no teammate or job under another
account could read), an existing one its own."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from autotune.errors import UserError

_NEW_FILE_MODE = 0o666  # what open() asks for; the kernel takes the umask off
NAME_MAX_BYTES = 255  # the longest file name ext4, xfs and most file systems take
PATH_MAX_BYTES = 4096  # Linux's longest path, its final NUL included
# What a failed write leaves safe, for most callers: they write what a study already holds.
STUDY_KEPT = "what the study measured is kept in its database"


def process_umask() -> int:
    """This process's umask, read without changing it (/proc), else by setting it and back."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The permissions open(path, "w") gives a new file here: 0644 under umask 022, 0664 under 002."""
    return _NEW_FILE_MODE & ~process_umask()


def temp_file_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file in `path`'s folder, opened for writing (fd, its path), with the mode a
    plain open(path, "w") would give `path`. Raises OSError; the caller renames or removes it.

    An existing target keeps its mode, as open() would keep it: someone who narrowed a file
    (chmod 600) or widened it for a group expects a rewrite to leave that alone. The name is unique
    per call: ranks and workers writing the same file at once never share a temporary file."""
    path = Path(path)
    try:
        target = os.stat(path)
    except OSError:
        target = None  # a new file (or one we cannot stat: the rename decides)
    # Permission bits only: a setuid bit is not something a rewrite should hand on.
    kept_mode = stat.S_IMODE(target.st_mode) & 0o777 if target is not None and stat.S_ISREG(target.st_mode) else None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    name = path.name
    while len(os.fsencode(f".{name}.{os.getpid()}.12345678.tmp")) > NAME_MAX_BYTES:
        name = name[:-1]  # a legal 241-byte name made a temporary one past the file system's 255 (trial 43 F9)
    while True:
        tmp = path.with_name(f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, _NEW_FILE_MODE)
            break
        except FileExistsError:  # a temporary file a killed writer left under this name
            continue
    if kept_mode is not None:
        try:
            os.fchmod(fd, kept_mode)
        except OSError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
    return fd, tmp


class FileNotWritten(UserError):
    """A file write_text_atomic could not write: `problem` ("cannot write X (why)"), `fix` and the OSError's `errno`
    apart, for a caller that says them in its own line (a report shown without its files: commands/finish.py)."""

    def __init__(self, problem: str, fix: str, kept: str, cause: int | None = None):
        super().__init__(f"{problem}; {fix}, and run the command again ({kept})")
        self.problem, self.fix, self.errno = problem, fix, cause


def file_size_limit_kib() -> int | None:
    """This process's file-size limit (`ulimit -f`, RLIMIT_FSIZE) in KiB, as the shell sets it; None where unlimited."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if limit == resource.RLIM_INFINITY else limit // 1024


def write_failure(exc: OSError) -> str:
    """Why a write failed, in the system's words, and a file-size limit's value where it is that: Python ignores
    SIGXFSZ, so `ulimit -f` shows only as EFBIG, "File too large", of a file the file system would take whole."""
    words = exc.strerror or str(exc)
    limit_kib = file_size_limit_kib() if exc.errno == errno.EFBIG else None
    return f"{words}: this process may write files of at most {limit_kib} KiB (ulimit -f)" if limit_kib is not None else words


def write_fix(exc: OSError) -> str:
    """The fix of a failed write by its cause: "move what is in its way" was said of a full disk, a quota and a
    file-size limit too (trial69 #5), where nothing is in the way."""
    if exc.errno == errno.EFBIG:
        limited = file_size_limit_kib() is not None
        return "raise the limit (ulimit -f unlimited)" if limited else "choose a path on a file system that takes larger files"
    if exc.errno == errno.ENOSPC:
        return "free space on its file system (df -h), or choose another path"
    if exc.errno == errno.EDQUOT:
        return "free space in your disk quota (quota -s), or choose another path"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "have its folder (and the file) made writable for you, or choose another path"
    if exc.errno == errno.EROFS:
        return "choose a path on a writable file system"
    return "move what is in its way or choose another path"


def write_text_atomic(path: Path, text: str, mode: int | None = None, kept: str = STUDY_KEPT) -> Path:
    """Write `text` (UTF-8) to `path` in one rename; `mode` sets the permissions (e.g. 0o755). A failure is a
    UserError of one line ending on `kept` in parentheses: what the failure leaves safe, which the caller knows."""
    path = link = Path(path)
    if path.is_symlink():
        try:
            path = path.resolve()  # the rename would replace the link itself with a file
        except (OSError, RuntimeError):  # a loop of links: RuntimeError before Python 3.13, OSError (ELOOP) since
            raise UserError(f"cannot write {link}: it is a link that leads back to itself (a loop of symbolic links); "
                            f"remove the link, and run the command again ({kept})") from None
    # A link whose file cannot be written (dangling: its folder gone) is named too: it is what is in the way.
    through = f" (through the link {link})" if path != link else ""
    tmp = None
    try:
        fd, tmp = temp_file_beside(path)
        # surrogateescape: a file name Python could not decode (a path typed under an ASCII locale, LC_ALL=C
        # PYTHONUTF8=0) is written as the bytes it is, which a launch.sh needs back; "strict" ended the command in
        # UnicodeEncodeError after the study had run (trial 45).
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):  # a read-only file system refuses the clean-up too
                tmp.unlink(missing_ok=True)
        raise FileNotWritten(f"cannot write {path}{through} ({write_failure(exc)})", write_fix(exc), kept, exc.errno) from None
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    return path
