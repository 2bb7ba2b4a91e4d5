"""The guided sampler computes with one BLAS thread: its matrices are small, and OpenBLAS's threads
spun against any other process on the cores (a test's guided study: 41 s with them, 8 s without)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info

import autotune.study.guided as guided
from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.valid import valid_checks


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_the_model_is_fitted_with_one_blas_thread_and_the_rest_of_the_process_keeps_its_own(tmp_path, monkeypatch):
    import scipy.linalg  # noqa: F401 - scipy's own BLAS is loaded as the correction loads it

    before = _blas_threads()
    if not before or max(before) < 2:
        pytest.skip(f"BLAS runs {before or 'no'} thread(s) here already: nothing to limit")
    seen = []
    fit = guided.outlook
    monkeypatch.setattr(guided, "outlook", lambda *a, **k: seen.append(_blas_threads()) or fit(*a, **k))
    settings = settings_for("--model", "7b", "--nodes", "1")
    checks = valid_checks(settings)
    study = open_study(tmp_path, None, make_sampler(0, 8, "guided", checks))
    run_study(study, settings, SimulateBackend(), 8, checks=checks)
    assert seen and all(threads == {1} for threads in seen), seen
    assert _blas_threads() == before  # the limit ends with the fit: the caller's threads are its own again
