"""Standard error as the commands use it: the status lines (the backend, warnings, a run's progress, each
trial's figures). They inform; the study, its files and the report on stdout are what a command is for. So a
stderr that stops taking output, its reader gone (`autotune run ... 2>&1 | head -1`) or its disk or quota full
(a SLURM job's `-e` file), must not end a study: rich's stderr console ended the process with status 1 from
inside a trial's objective, which left the trial RUNNING ("still probing on other workers") and wrote no report.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys


class StatusStream:
    """A stream's writes until one fails; from then on they are dropped without a word (there is nowhere
    left to say it). Everything else (isatty, fileno, encoding) is the stream's own, so rich draws for it
    as before."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self._stream.write(text)
            except OSError:  # EPIPE, ENOSPC, EDQUOT, EFBIG, EIO (a terminal gone)
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self._stream.flush()
            except OSError:
                self._lose()

    def _lose(self) -> None:
        self.lost = True
        # The descriptor itself goes to devnull: what the stream still buffers is flushed there at exit (not
        # "Exception ignored ... BrokenPipeError"), and so is what a library or a probe's process started from
        # now on writes to it, which would fail as this did.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def keep_going_without_stderr() -> None:
    """The process's sys.stderr becomes a StatusStream: every `print(..., file=sys.stderr)` and every rich
    Console(stderr=True), which looks sys.stderr up at each write, survives its loss. A stderr closed at
    start (`2>&-`: Python makes sys.stderr None) writes to devnull: `print(..., file=None)` prints on stdout,
    which put warnings and errors into `--json` output and `export --measurements -`'s records (trial71 #1)."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's stderr, open until it exits
    if not isinstance(sys.stderr, StatusStream):
        sys.stderr = StatusStream(sys.stderr)


def fill_closed_descriptors() -> None:
    """Standard input, output and error closed at start (`<&-`, `>&-`, `2>&-`, a daemon's wrapper) are opened
    on devnull before anything else opens a file: the first file opened would otherwise take the free number,
    and a write meant for stdout or stderr (a probe's process, a library's C code) would land in it (study.db)."""
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, mode)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)


class _WholeWrites(io.RawIOBase):
    """A descriptor written until every byte is taken. Python's own stdout took a short write to a pipe whose
    reader went away mid-write as the whole text: `autotune space | head` printed its table in one write, lost
    the rest of it and exited 0, not 141 (trial71 #3). Here the next write of the rest fails as a broken pipe."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done


def write_stdout_whole() -> None:
    """sys.stdout, where it is no terminal (a pipe, a file), writes through _WholeWrites: its encoding and errors kept."""
    stream = sys.stdout
    try:
        if stream.isatty() or stream.fileno() != 1:
            return
    except (AttributeError, OSError, ValueError):  # a stand-in (tests), devnull opened for a closed stdout
        return
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_WholeWrites(1)), encoding=stream.encoding, errors=stream.errors,
                                  line_buffering=stream.line_buffering)
