"""One launcher process in a session of its own, so that it and every rank it starts can be killed together.

A launcher (torchrun, the deepspeed runner, srun) starts ranks that start helper processes of their
own; killing the launcher alone would leave ranks spinning on a GPU. Signalling the launcher's process
group reaches what stays in it, but not all of a probe: torchrun (torch 2.13's elastic agent) starts each
rank in a session of its own, and a torchrun the kernel's OOM killer ended left its ranks running for
good, holding memory beside the next probes (trial 43 F3). So every process a probe starts on this
machine also carries the probe's own mark in its environment (PROBE_ID_ENV, inherited whatever the
session), and the probe's processes are its group's and those holding its mark. Remote ranks are the
remote launchers' business: the deepspeed runner (pdsh) and srun tear their nodes down on SIGTERM, which
is why SIGTERM comes first and SIGKILL only after a grace.

A tuner killed outright (SIGKILL, the OOM killer) cannot do any of that, and a probe in its own
session would outlive it and train beside the probes of the resumed study. On Linux the launcher
therefore asks for SIGTERM when the tuner dies (prctl PR_SET_PDEATHSIG), which it passes on to its ranks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

_POLL_S = 0.1
_SIGKILL_WAIT_S = 5.0
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# A timed-out probe's `details["timeout_cause"]` where the time went to a torch extension build's lock older
# than the probe (backends/launch.py), not to the candidate: study/retries.py reads it without loading launch.py.
TIMEOUT_ON_BUILD_LOCK = "build_lock"
PROBE_ID_ENV = "AUTOTUNE_PROBE_ID"  # the mark in the environment of every local process of one probe


def _term_when_parent_dies():
    """A preexec_fn for Linux: SIGTERM to the child when the process that started it dies; None elsewhere.
    The C function is looked up here, in the parent: the child only calls it (no import, no lock)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the tuner died before the request was made: no signal will come
            os._exit(143)

    return in_child


def probe_members(pgid: int, probe_id: str) -> tuple[list[int], list[int]]:
    """A probe's live (not zombie) processes on this machine, in one pass over /proc: those of its process group,
    and the others whose environment holds its mark (PROBE_ID_ENV=probe_id: ranks in sessions of their own), this
    process aside. Without /proc, the group alone, as killpg sees it. A process of another user's (its environment
    unreadable) is none of ours."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return [], []
        except PermissionError:
            pass
        return [pgid], []
    mark = f"{PROBE_ID_ENV}={probe_id}".encode()
    grouped, marked = [], []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            # Fields after the parenthesised command name: state ppid pgrp ...
            state, _ppid, pgrp = (entry / "stat").read_text(encoding="utf-8", errors="replace").rsplit(")", 1)[1].split()[:3]
            if state in ("Z", "X"):
                continue
            if int(pgrp) == pgid:
                grouped.append(int(entry.name))
            elif mark in (entry / "environ").read_bytes().split(b"\0"):
                marked.append(int(entry.name))
        except (OSError, ValueError):
            continue  # exited while we looked, or not ours to read
    return grouped, marked


def outlived_words(pids: list[int]) -> str:
    """What a stopped tuner says of the processes of its probe that no signal ended (a process stuck in the kernel
    outlives SIGKILL): it exits without them, and the next probe on those devices could run beside them unwarned."""
    listed = ", ".join(map(str, pids))
    return (f"its {'process' if len(pids) == 1 else 'processes'} {listed} {'was' if len(pids) == 1 else 'were'} still "
            f"there {_SIGKILL_WAIT_S:g} s after SIGKILL (stuck in the kernel: a hung file system or device driver?); the "
            f"tuner exits without waiting longer: `ps -p {listed.replace(', ', ',')}` shows whether they are gone before "
            "the next probe on these devices")


class ProbeProcess:
    """A started launcher: wait for it with a deadline, or kill every process of the probe (its group's and those
    holding its mark)."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str], log_path: Path):
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in _close once the group is gone
        self.probe_id = uuid.uuid4().hex
        try:
            self.popen = subprocess.Popen(
                command, cwd=cwd, env={**env, PROBE_ID_ENV: self.probe_id}, stdin=subprocess.DEVNULL,
                stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_term_when_parent_dies(),
            )
        except BaseException:
            self._log.close()
            raise
        self.pgid = self.popen.pid  # a session leader's group id is its pid

    def members(self) -> list[int]:
        """The probe's live processes on this machine."""
        grouped, marked = probe_members(self.pgid, self.probe_id)
        return grouped + marked

    def wait(self, timeout_s: float) -> int | None:
        """The launcher's exit status, or None when it is still running after timeout_s."""
        try:
            return self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill_group(self, grace_s: float) -> list[int]:
        """SIGTERM the group, SIGKILL whatever is left after grace_s; returns the probe's processes still there
        _SIGKILL_WAIT_S after SIGKILL ([] once all are gone: `outlived_words` says it otherwise). Idempotent.

        Safe from a signal handler that interrupted `wait()`: it never blocks on the launcher's
        wait lock (poll only), and a second Ctrl-C during the grace still ends in SIGKILL.
        """
        self._signal(signal.SIGTERM)
        try:
            self._wait_until_gone(grace_s)
        finally:
            self._signal(signal.SIGKILL)
            self._wait_until_gone(_SIGKILL_WAIT_S)
            self.popen.poll()  # reap the launcher last: until then its pid (the group id) cannot be reused
            self._close()
        return self.members()

    def _wait_until_gone(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.members() and time.monotonic() < deadline:
            time.sleep(_POLL_S)

    def finish(self, grace_s: float) -> None:
        """After the launcher exited: ranks it left behind (a dead agent's workers) go too."""
        if self.members():
            self.kill_group(grace_s)
        self._close()

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass  # the group is already gone
        # Ranks in sessions of their own (torchrun's): a live launcher passes SIGTERM on to them and stops them its
        # way (signalled twice, each rank's traceback pushed the log's last lines out of its tail); the ranks of a
        # launcher that is gone, and whatever is left for SIGKILL, are signalled here.
        if signum == signal.SIGKILL or self.popen.poll() is not None:
            for pid in probe_members(self.pgid, self.probe_id)[1]:
                try:
                    os.kill(pid, signum)
                except (ProcessLookupError, PermissionError):
                    pass

    def _close(self) -> None:
        if not self._log.closed:
            self._log.close()
