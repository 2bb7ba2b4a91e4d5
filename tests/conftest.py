"""The whole suite's environment."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile

import pytest

from autotune.backends.device_turns import LOCK_DIR_ENV

_locks: list[str] = []


def pytest_configure(config):
    # Inside a SLURM job (a cluster user running the suite) autotune studies the allocation it runs in:
    # its variables would change the defaults the tests ask for. Tests that want one set their own.
    for name in [name for name in os.environ if name.startswith("SLURM_")]:
        del os.environ[name]
    # Probes on one machine take turns (backends/device_turns.py): this session's probes (one xdist worker's)
    # take them among themselves, not with the other worker's or a study running beside the suite, whose
    # probe would hold the lock and put a wait line first in a log a test reads.
    _locks.append(tempfile.mkdtemp(prefix="autotune-test-probe-locks-"))
    os.environ[LOCK_DIR_ENV] = _locks[-1]


def pytest_unconfigure(config):
    for folder in _locks:
        shutil.rmtree(folder, ignore_errors=True)


_STOP_SIGNALS = {signal.SIGINT: signal.default_int_handler, signal.SIGHUP: signal.SIG_DFL, signal.SIGTERM: signal.SIG_DFL}


@pytest.fixture(autouse=True)
def _default_stop_signals():
    """Each test starts with the stop signals at their defaults, neither ignored nor blocked. A suite started under
    nohup ignores SIGHUP, one started in the background by a shell without job control ignores SIGINT, and an
    ignored or blocked signal stays so across exec: the commands the signal tests start then never stopped on the
    signal they sent themselves (they hung for 60 s, or exported whole where a Ctrl-C was meant to land), as they did
    in a whole suite run so. The tests ask how autotune meets each signal: they start from the defaults."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(_STOP_SIGNALS))
    for signum, default in _STOP_SIGNALS.items():
        if signal.getsignal(signum) is signal.SIG_IGN:
            signal.signal(signum, default)
    yield
