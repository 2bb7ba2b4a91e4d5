"""Two `autotune run` workers on one run directory's SQLite study: every valid candidate is evaluated
exactly once, none is lost to a race, and neither worker disturbs the other's running trial."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import optuna
import pytest

from autotune.candidate import params_key
from autotune.study.retries import is_evaluated

pytestmark = pytest.mark.slow

# 7B on one GH200 node over a small space (48 candidates): a budget of 200 asks for all of them, and
# the samplers of both workers keep proposing the same few as the space runs out.
SPACE = Path(__file__).with_name("small_7b_space.toml")


# `autotune run` with each simulated probe taking PROBE_S, so that the two workers' studies overlap: at
# simulation speed the first could evaluate all 26 candidates before the second had started on a loaded
# machine (then nothing was shared, and the test failed on what each said).
PROBE_S = 0.2
SLOW_CLI = ("import time; from autotune.backends.simulate import SimulateBackend as B; fast = B.evaluate; "
            f"B.evaluate = lambda self, *a, **k: (time.sleep({PROBE_S}), fast(self, *a, **k))[1]; "
            "from autotune.cli import console_main; console_main()")


def _worker(out: Path, space: Path, seed: int, storage: str | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-c", SLOW_CLI, "run", "--model", "7b", "--nodes", "1", "--space", str(space),
           "--trials", "200", "--seed", str(seed), "--backend", "simulate", "--out", str(out),
           "--sampler", "tpe"]  # runs the whole space; the guided sampler would converge first (its own test: test_guided.py)
    cmd += ["--storage", storage] if storage else []
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_two_workers_and_check(tmp_path, storage: str | None = None) -> None:
    """Two workers on one study (the run directory's SQLite file, or `storage`), started together, each
    probing while the other is mid-trial; every valid candidate of the small space is evaluated exactly once.
    (A second worker started once the first had evaluated two joined, on a loaded machine, after the first had
    evaluated all 26 in about 2 s: then nothing was shared.)"""
    from autotune.commands.options import settings_for
    from autotune.study.valid import valid_checks

    out = tmp_path / "run"
    url = storage or f"sqlite:///{out / 'study.db'}"
    first = _worker(out, SPACE, 0, storage)
    second = _worker(tmp_path / "run2" if storage else out, SPACE, 1, storage)
    counts, said = [], []
    for worker in (first, second):
        _, stderr = worker.communicate(timeout=600)
        assert worker.returncode == 0, stderr[-3000:]
        counts.append([int(k) for k in re.findall(r"^trial \d+ \((\d+)/\d+\)", stderr, re.MULTILINE)])
        said.append(re.findall(r"^all (\d+) valid candidates are evaluated: (\d+) of them evaluated by this run", stderr, re.MULTILINE))

    settings = settings_for("--model", "7b", "--nodes", "1", "--space", str(SPACE))
    valid = {params_key(c.candidate.knobs.to_dict()) for c in valid_checks(settings) if c.valid}
    study = optuna.load_study(study_name="autotune", storage=url)
    evaluated = Counter(params_key(t.user_attrs["candidate"]["knobs"]) for t in study.trials if is_evaluated(t))
    assert set(evaluated) == valid  # none lost
    # Each worker's "(k/N)" counts the shared study's trials, not its own: whichever finishes last says N/N.
    assert all(mine == sorted(mine) for mine in counts) and max(counts[0] + counts[1]) == len(valid), counts
    # And each says how the space was shared: its own probes and the others'.
    assert [len(lines) for lines in said] == [1, 1] and {int(lines[0][0]) for lines in said} == {len(valid)}, said
    assert sum(int(lines[0][1]) for lines in said) == len(valid), said
    assert max(evaluated.values()) == 1  # none evaluated twice
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
    for t in study.trials:  # a duplicate always defers to an earlier trial, never the reverse
        if "duplicate_of" in t.user_attrs:
            assert t.user_attrs["duplicate_of"] < t.number


def test_two_sqlite_workers_evaluate_every_valid_candidate_exactly_once(tmp_path):
    run_two_workers_and_check(tmp_path)
