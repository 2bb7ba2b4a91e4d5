"""A launch study stopped during repeat k of a trial resumes with the finished repeats taken over: the
retry (study/retries.py) tells the backend which trials it repeats, and only repeats k ... N run. Fast:
the stand-in probe of tests/backends/test_repeat_takeover.py plays the trainer."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from optuna.trial import TrialState

from autotune.backends.launch import LaunchBackend, ProbeInterrupted
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.retries import retry_lineage, trials_by_number
from tests.backends.test_repeat_takeover import FAKE_PROBE

SETTINGS = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "cpu")


def fake_probe_backend(tmp_path, repeats: int = 3, probe_timeout_s: float = 60.0, kill_grace_s: float = 5.0,
                       **env: str) -> LaunchBackend:
    """A launch backend whose probe is FAKE_PROBE (its calls counted in calls.txt)."""
    script = tmp_path / "fake-python"
    if not script.exists():
        script.write_text(FAKE_PROBE)
        script.chmod(0o755)
    return LaunchBackend(run_dir=tmp_path / "run", launcher="torchrun", python=str(script), repeats=repeats,
                         warmup_steps=1, probe_steps=2, probe_seconds=0.0, probe_timeout_s=probe_timeout_s,
                         kill_grace_s=kill_grace_s, env={"FAKE_CALLS": str(tmp_path / "calls.txt"), **env})




def _abort_when(backend: LaunchBackend, log, text: str) -> threading.Thread:
    """SIGTERM's way: abort() once the log shows `text` (the stand-in then sleeps)."""
    def watch():
        deadline = time.time() + 30
        while time.time() < deadline and text not in (log.read_text() if log.exists() else ""):
            time.sleep(0.02)
        time.sleep(0.2)
        backend.abort()

    thread = threading.Thread(target=watch)
    thread.start()
    return thread


def test_a_resumed_study_runs_only_the_repeats_its_interrupted_trial_left(tmp_path):
    settings = settings_for(*SETTINGS)
    study = open_study(tmp_path / "run", None, make_sampler(0, 1))
    first = fake_probe_backend(tmp_path, FAKE_HANG_ON="0000/result-3.json")
    watcher = _abort_when(first, first.trial_dir(0) / "log.txt", "repeat 3/3")
    with pytest.raises(ProbeInterrupted):
        run_study(study, settings, first, 1)
    watcher.join()
    assert study.trials[0].user_attrs.get("interrupted")
    (tmp_path / "calls.txt").unlink()

    second = fake_probe_backend(tmp_path)
    study = open_study(tmp_path / "run", None, make_sampler(0, 1))
    assert run_study(study, settings, second, 1) == 1
    retry = study.trials[1]
    assert retry.state == TrialState.COMPLETE and retry.user_attrs["retry_of"] == 0
    assert (tmp_path / "calls.txt").read_text().split() == [str(second.trial_dir(1).resolve() / "result-3.json")]
    log = (second.trial_dir(1) / "log.txt").read_text()
    assert f"== autotune: took over repeats 1, 2 of 3 from trial 0 ({second.trial_dir(0).resolve()})" in log
    cost = retry.user_attrs["result"]["details"]["probe_cost"]
    assert cost["parts"]["runs"] == 3 and [t["repeat"] for t in cost["parts"]["taken_over"]] == [1, 2]
    assert len(retry.user_attrs["result"]["details"]["repeats"]) == 3


def _trial(number: int, retry_of: int | None = None, failed_trial: int | None = None):
    return SimpleNamespace(number=number, user_attrs={} if retry_of is None else {"retry_of": retry_of},
                           system_attrs={} if failed_trial is None else {"failed_trial": failed_trial})


def test_the_lineage_follows_our_retries_and_optuna_s_heartbeat_retries_nearest_first():
    # 0 interrupted; 2 retries it (ours) and dies; 5 is Optuna's heartbeat retry of 2, which copied 2's retry_of.
    trials = trials_by_number([_trial(0), _trial(1), _trial(2, retry_of=0), _trial(3), _trial(4), _trial(5, retry_of=0, failed_trial=2)])
    assert retry_lineage(trials, 5) == [2, 0]
    assert retry_lineage(trials, 2) == [0]
    assert retry_lineage(trials, 3) == []
