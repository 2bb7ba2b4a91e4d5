"""A probe's result with figures out of range, in a study (trial79 #11): a failed trial of its candidate, counted by
--trials, never proposed again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.backends.conftest import REPO, probe_result

pytestmark = pytest.mark.slow


def test_a_doctored_result_is_a_failed_trial_and_the_study_keeps_to_its_budget(tmp_path):
    """The trial's own training script wrote negative figures: they were shown as "-4,000 ms (measured)", kept as
    Optuna values the study then left out as no probe of it, and the guided sampler proposed the same candidate 276
    times under --trials 11. Each probe is now a failed trial naming the field, and the run stops at its budget."""
    doctored = {**probe_result(), "step_time_s": {"mean": -0.5, "all": [-0.5]},
                "energy": {"provenance": "estimated", "energy_j": -100.0}}
    package = tmp_path / "own" / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"__path__.append({str(REPO / 'trainer')!r})\n")
    # The user's own training script as the probe (found first on PYTHONPATH): it writes the doctored result.
    (package / "probe.py").write_text(f"import json, sys\nout = sys.argv[sys.argv.index('--out') + 1]\n"
                                      f"json.dump(json.loads({json.dumps(doctored)!r}), open(out, 'w'))\n")
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "AUTOTUNE_PROBE_TEST_HOOK"}
    env.update(DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1", PYTHONPATH=f"{package.parent}:{REPO}")
    cmd = [sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1",
           "--gpus-per-node", "1", "--backend", "launch", "--allow-estimated-energy", "--warmup-steps", "1",
           "--probe-steps", "2", "--sampler", "guided", "--trials", "2", "--out", str(out)]
    try:  # two instant probes take seconds; without the check the run probed on and on
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    except subprocess.TimeoutExpired as running:
        pytest.fail(f"still probing after 120 s, {len(list((out / 'trials').iterdir()))} trials under --trials 2: "
                    f"{(running.stdout or b'')[-1500:]!r}")
    said = done.stdout + done.stderr
    trials = sorted(path.name for path in (out / "trials").iterdir())
    assert len(trials) == 2, said[-3000:]  # the budget: no candidate probed again
    assert "-4,000 ms" not in said and "refused the probe's result: " in said, said[-3000:]
    assert "has step_time_s.mean = -0.5, which is out of range; it must be a number > 0" in said, said[-3000:]
    candidates = {json.dumps(json.loads((out / "trials" / name / "candidate.json").read_text())["knobs"], sort_keys=True)
                  for name in trials}
    assert len(candidates) == 2
