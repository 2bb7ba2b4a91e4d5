"""The whole suite's environment."""

from __future__ import annotations

import os


def pytest_configure(config):
    # Inside a SLURM job (a cluster user running the suite) autotune studies the allocation it runs in:
    # its variables would change the defaults the tests ask for. Tests that want one set their own.
    for name in [name for name in os.environ if name.startswith("SLURM_")]:
        del os.environ[name]
