"""The whole suite's environment."""

from __future__ import annotations

import os
import shutil
import tempfile

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
