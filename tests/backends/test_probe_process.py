"""A probe's launcher in a session of its own: it dies with the tuner even when the tuner is killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

TUNER = """
import sys, time
from pathlib import Path
from autotune.backends.probe_process import ProbeProcess
probe = ProbeProcess(["sleep", "120"], Path(sys.argv[1]), {}, Path(sys.argv[1]) / "log.txt")
print(probe.pgid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_probe_does_not_outlive_a_tuner_killed_outright(tmp_path):
    tuner = subprocess.Popen([sys.executable, "-c", TUNER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        probe = int(tuner.stdout.readline())
        assert _alive(probe)
        tuner.send_signal(signal.SIGKILL)  # no handler runs: only the kernel can tell the probe
        tuner.wait(10)
        deadline = time.monotonic() + 10
        while _alive(probe) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(probe), "the probe outlived the tuner"
    finally:
        tuner.kill()
        try:
            os.kill(probe, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass


def test_a_timeout_names_a_stale_extension_build_lock(tmp_path):
    """A build killed midway leaves its lock, and every later probe waits on it with an empty log."""
    from autotune.backends.launch import stale_build_locks

    environ = {"TORCH_EXTENSIONS_DIR": str(tmp_path)}
    assert stale_build_locks(60, environ) == ""
    lock = tmp_path / "py311_cpu" / "deepspeed_shm_comm" / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    assert stale_build_locks(60, environ) == ""  # a build running now holds a fresh one
    os.utime(lock, (time.time() - 600, time.time() - 600))
    said = stale_build_locks(60, environ)
    assert said == (f"; a torch extension build lock older than the probe is held ({lock}): if no build is running, "
                    "delete it, or every probe waits on it")


def test_a_timeout_weighs_only_the_locks_of_the_folder_the_probes_build_in(tmp_path):
    """Each install builds in a folder of its own: another install's lock (a live build of another venv, or
    one left there) is nothing this probe waited on, and naming it told the user to delete it (trial 67 §14)."""
    from autotune.backends.launch import old_build_locks
    from autotune.build_locks import install_extensions_dir

    environ = {"XDG_CACHE_HOME": str(tmp_path)}
    hour_ago = time.time() - 3600
    others = tmp_path / "torch_extensions" / "autotune-py311-0therinst" / "cpu_adam" / "lock"
    torchs_own = tmp_path / "torch_extensions" / "py311_cpu" / "cpu_adam" / "lock"  # a plain torch user's
    mine = install_extensions_dir(environ) / "deepspeed_shm_comm" / "lock"
    for lock in (others, torchs_own, mine):
        lock.parent.mkdir(parents=True)
        lock.write_text("")
        os.utime(lock, (hour_ago, hour_ago))
    assert old_build_locks(60, environ) == [str(mine)]
    # TORCH_EXTENSIONS_DIR set: the probes build there (DeepSpeed and torch read it), and only there
    given = {**environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "given")}
    assert old_build_locks(60, given) == []


RANK_IN_ITS_OWN_SESSION = """
import os, signal, subprocess
rank = subprocess.Popen(["sleep", "120"], start_new_session=True)  # as torch 2.13's elastic agent starts a rank
print(rank.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # the launcher ends outright (the kernel's OOM killer)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the probe's processes are found in /proc")
def test_a_rank_in_a_session_of_its_own_does_not_outlive_its_launcher(tmp_path):
    """Trial 43 F3: torchrun starts its ranks in sessions of their own; a torchrun killed outright left them
    running (257 MB each, 23 minutes on) beside the next probes, out of reach of the group kill."""
    from autotune.backends.probe_process import ProbeProcess

    probe = ProbeProcess([sys.executable, "-c", RANK_IN_ITS_OWN_SESSION], tmp_path, dict(os.environ), tmp_path / "log.txt")
    rank = None
    try:
        assert probe.wait(60) == -signal.SIGKILL
        rank = int((tmp_path / "log.txt").read_text().split()[0])
        assert _alive(rank) and rank in probe.members()
        probe.finish(grace_s=5)
        assert not _alive(rank), "the launcher's rank outlived it"
    finally:
        if rank is not None and _alive(rank):
            os.kill(rank, signal.SIGKILL)
