"""Two workers' probes on the same devices take turns; on other devices they do not wait."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from autotune.backends.device_turns import LOCK_DIR_ENV, probe_devices, taking_turns

HOLD_S = 2.0


def _held_elsewhere(devices: str, environ: dict[str, str], run_dir=None, trial_number=None) -> subprocess.Popen:
    """Another process (another worker) holding the lock of `devices` for HOLD_S seconds; returns once it holds it.
    `run_dir`, `trial_number`: the holder's, as a launch backend's probe gives them."""
    code = ("import sys, time; from autotune.backends.device_turns import taking_turns\n"
            f"with taking_turns({devices!r}, {environ!r}, on_wait=print, run_dir={str(run_dir) if run_dir else None!r}, "
            f"trial_number={trial_number!r}):\n"
            f"    print('held', flush=True); time.sleep({HOLD_S})\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_probe_waits_for_another_workers_probe_on_the_same_devices_only(tmp_path):
    environ = {LOCK_DIR_ENV: str(tmp_path / "locks")}
    holder = _held_elsewhere("the GPUs 0,1 of node1", environ)
    said = []
    started = time.monotonic()
    with taking_turns("the GPUs 2,3 of node1", environ, on_wait=said.append) as waited_s:  # other devices: no wait
        assert waited_s < 0.5 and said == []
    with taking_turns("the GPUs 0,1 of node1", environ, on_wait=said.append) as waited_s:
        pass
    assert waited_s >= HOLD_S - 0.5 and time.monotonic() - started >= HOLD_S - 0.5
    # Which process holds it (trial 43 F7: a worker stopped by Ctrl-Z held the devices with no word of which).
    assert len(said) == 1 and re.fullmatch(rf"another worker's probe runs on the GPUs 0,1 of node1 \(process {holder.pid}, "
                                           r"since \d\d:\d\d:\d\d\): this one starts when it ends", said[0]), said
    holder.wait(timeout=10)


def test_a_probe_of_another_run_directory_is_named_by_it_not_as_another_worker(tmp_path):
    """Trial 61 #12: the lock is the user's, so the probes of another study on the machine (another session's run)
    held it too, and a run with no other worker said "another worker's probe runs on the devices of vm"."""
    environ = {LOCK_DIR_ENV: str(tmp_path / "locks")}
    other, mine = tmp_path / "other run", tmp_path / "mine"
    for holder_dir, words in ((other, rf"the probe of trial 3 of {re.escape(str(other))} runs on the devices of node1 "
                                      r"\(process {pid}, since \d\d:\d\d:\d\d\)"),
                              (mine, r"another worker's probe runs on the devices of node1 \(trial 3, process {pid}, "
                                     r"since \d\d:\d\d:\d\d\)")):
        holder = _held_elsewhere("the devices of node1", environ, run_dir=holder_dir, trial_number=3)
        said = []
        with taking_turns("the devices of node1", environ, on_wait=said.append, run_dir=mine, trial_number=5):
            pass
        holder.wait(timeout=10)
        assert len(said) == 1 and re.fullmatch(words.format(pid=holder.pid) + ": this one starts when it ends", said[0]), said


def test_a_stop_while_waiting_gives_up_the_wait(tmp_path):
    environ = {LOCK_DIR_ENV: str(tmp_path / "locks")}
    holder = _held_elsewhere("the devices of node1", environ)

    def stopped():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with taking_turns("the devices of node1", environ, on_wait=lambda line: None, stopped=stopped):
            pytest.fail("the block ran while another probe held the devices")
    holder.wait(timeout=10)


def test_what_a_probe_runs_on_is_named_by_its_launcher(tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("node2 slots=4\nnode1 slots=4\n")
    assert probe_devices("srun", {"SLURM_JOB_ID": "77"}, None) == "the nodes of SLURM allocation 77"
    assert probe_devices("deepspeed", {}, hostfile) == "the hosts of node1, node2"
    assert probe_devices("torchrun", {"CUDA_VISIBLE_DEVICES": "2,3"}, None).startswith("the GPUs 2,3 of ")
    assert probe_devices("torchrun", {}, None).startswith("the devices of ")


def test_the_launch_backend_starts_no_probe_while_another_workers_runs_on_its_devices(
        tmp_path, make_launch_backend, make_candidate, capfd):
    """The probe (here a stand-in `python` that fails at once) starts only once the other worker's ends, and
    says so on the console and in its log."""
    fake_python = tmp_path / "python"
    fake_python.write_text(f"#!/bin/sh\necho started at $(date +%s.%N) >> {tmp_path / 'starts'}\nexit 3\n")
    fake_python.chmod(0o755)
    locks = {LOCK_DIR_ENV: str(tmp_path / "locks")}
    backend = make_launch_backend(env_extra=locks, python=str(fake_python))
    environ = backend._environ()
    holder = _held_elsewhere(probe_devices("torchrun", environ, None), locks)
    released_at = time.time() + HOLD_S
    result = backend.evaluate(make_candidate(gpus_per_node=1), trial_number=7)
    assert result.status == "failed"
    started_at = float((tmp_path / "starts").read_text().split()[-1])
    assert started_at >= released_at - 0.5  # not while the other probe held the devices
    log = (backend.run_dir / "trials" / "0007" / "log.txt").read_text()
    assert "another worker's probe runs on the devices of" in log and "== autotune: waited " in log
    err = capfd.readouterr().err
    assert "trial 7: another worker's probe runs on the devices of" in err
    assert re.search(r"trial 7: waited \d+ s for the other probe on the same devices; probing from \d\d:\d\d:\d\d", err), err
    holder.wait(timeout=10)


@pytest.mark.parametrize("kind", ["a file", "under a file", "a name too long"])
def test_a_lock_folder_that_cannot_be_made_is_refused_when_the_backend_starts(tmp_path, kind):
    """Trial 37 F12: a file, or a folder that cannot be made, was a traceback at the first probe, its trial left FAIL."""
    from autotune.backends.launch import LaunchBackend
    from autotune.errors import UserError

    (tmp_path / "afile").write_text("")
    folder = {"a file": tmp_path / "afile", "under a file": tmp_path / "afile" / "sub",
              "a name too long": tmp_path / ("a" * 300)}[kind]
    with pytest.raises(UserError, match=rf"^{LOCK_DIR_ENV}='.*' is not a folder autotune can make and write \(.+\); "
                                        "point it at a folder you can write, or unset it$"):
        LaunchBackend(run_dir=tmp_path / "run", env={LOCK_DIR_ENV: str(folder)})
    assert not (tmp_path / "run").exists()


def test_after_a_wait_the_launch_backend_asks_again_whether_a_probe_may_start_and_starts_none_it_may_not(
        tmp_path, make_launch_backend, make_candidate, capfd):
    """The time limit was asked before the wait (study/loop.py), up to another worker's probe ago: a probe it no longer
    held started after the wait, and a SLURM job's end killed it half-way. Asked only after a wait: at the rule's edge
    an ask with no time passed since the loop's would leave an unstarted candidate's trial (trial 62 F12)."""
    from autotune.backends.base import ProbeHeldBack

    fake_python = tmp_path / "python"
    fake_python.write_text(f"#!/bin/sh\necho started >> {tmp_path / 'starts'}\nexit 3\n")
    fake_python.chmod(0o755)
    locks = {LOCK_DIR_ENV: str(tmp_path / "locks")}
    backend = make_launch_backend(env_extra=locks, python=str(fake_python))
    asked = []
    backend.probe_held_back = lambda: asked.append(time.monotonic()) or "too little time is left"
    assert backend.evaluate(make_candidate(gpus_per_node=1), trial_number=6).status == "failed"  # no wait: not asked
    assert asked == [] and (tmp_path / "starts").read_text().split() == ["started"]

    holder = _held_elsewhere(probe_devices("torchrun", backend._environ(), None), locks)
    released_at = time.monotonic() + HOLD_S
    with pytest.raises(ProbeHeldBack, match="^too little time is left$"):
        backend.evaluate(make_candidate(gpus_per_node=1), trial_number=7)
    assert len(asked) == 1 and asked[0] >= released_at - 0.5  # after the wait
    assert (tmp_path / "starts").read_text().split() == ["started"]  # no probe started
    log = (backend.run_dir / "trials" / "0007" / "log.txt").read_text()
    assert "== autotune: repeat" not in log and "== autotune: waited" not in log
    line = ("trial 7: not probed: too little time is left, after the wait for the other probe on the same devices; its "
            "candidate is probed when the study resumes")
    assert f"== autotune: {line.removeprefix('trial 7: ')}\n" in log and line in capfd.readouterr().err
    # The devices are free again: the next probe of this worker, or another's, takes them at once.
    holder.wait(timeout=10)
    backend.probe_held_back = lambda: None
    assert backend.evaluate(make_candidate(gpus_per_node=1), trial_number=8).status == "failed"
    assert (tmp_path / "starts").read_text().split() == ["started", "started"]
