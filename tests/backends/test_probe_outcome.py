"""result.json -> ProbeResult: scaling to the fixed workload, energy provenance, repeats."""

from __future__ import annotations

import pytest

from autotune.backends.probe_outcome import measured_figures, ok_result
from tests.backends.conftest import probe_result


def gh200_block(energy_j: float = 4000.0, provenance: str = "measured") -> dict:
    return {
        "provenance": provenance, "energy_j": energy_j, "mean_power_w": 8000.0, "window_s": 2.0,
        "components": {"module_j": energy_j, "within_module": {"grace_j": 500.0}},
        "phases": {"backward": {"energy_j": 1000.0}}, "timeline": [{"t_s": 0.1, "power_w": 8000.0}],
    }


@pytest.fixture
def two_gh200_nodes(make_candidate):
    # 8 GPUs; workload: samples / global batch = 64 / 2 = 32 steps
    return make_candidate(gpus_per_node=4, hardware="gh200", nodes=2)


def test_time_and_energy_are_scaled_from_measured_steps_to_the_workload(two_gh200_nodes, tmp_path):
    assert two_gh200_nodes.workload.samples / two_gh200_nodes.workload.global_batch == 32
    figures = measured_figures(probe_result(0.5, gh200_block(4000.0)), two_gh200_nodes, tmp_path / "result.json")
    result = ok_result([figures], tmp_path)
    assert result.time_s == pytest.approx(0.5 * 32)
    assert result.energy_kj == pytest.approx(4000.0 / 4 * 32 / 1000)  # per measured step x workload steps
    assert result.energy_components_kj == {"module": pytest.approx(32.0)}  # within_module is never added
    assert result.mean_power_w == pytest.approx(8000.0 / 8)  # per GPU module
    assert result.energy_source == "measured" and result.source == "measured"
    assert result.tflops == 100.0 and result.peak_mem_gib == 60.0
    assert result.details["phases_s"] == {"backward": pytest.approx(0.25)}
    assert result.details["energy"]["timeline"]  # the block is kept whole for the report


def test_an_absent_energy_block_is_unavailable_never_zero(two_gh200_nodes, tmp_path):
    result = ok_result([measured_figures(probe_result(), two_gh200_nodes, tmp_path / "r.json")], tmp_path)
    assert result.energy_kj is None and result.energy_source == "unavailable"
    assert result.energy_components_kj == {} and result.mean_power_w is None
    assert result.time_s == pytest.approx(16.0)


def test_repeats_average_and_the_weakest_provenance_labels_the_mean(two_gh200_nodes, tmp_path):
    first = measured_figures(probe_result(0.4, gh200_block(4000.0)), two_gh200_nodes, tmp_path / "result-1.json")
    second = measured_figures(probe_result(0.6, gh200_block(6000.0, "estimated")), two_gh200_nodes, tmp_path / "result-2.json")
    result = ok_result([first, second], tmp_path)
    assert result.time_s == pytest.approx(0.5 * 32)
    assert result.energy_kj == pytest.approx(5000.0 / 4 * 32 / 1000)
    assert result.energy_source == "estimated"
    files = [r["result_file"] for r in result.details["repeats"]]
    assert files == [str(tmp_path / "result-1.json"), str(tmp_path / "result-2.json")]
    assert result.details["cv"]["time"] == pytest.approx(0.1 * 2**0.5 / 0.5)  # sample stdev / mean
    assert result.details["cv"]["energy"] == pytest.approx(1000.0 * 2**0.5 / 5000.0)


def test_one_repeat_without_energy_makes_the_mean_energy_unavailable(two_gh200_nodes, tmp_path):
    first = measured_figures(probe_result(0.4, gh200_block()), two_gh200_nodes, tmp_path / "result-1.json")
    second = measured_figures(probe_result(0.6), two_gh200_nodes, tmp_path / "result-2.json")
    result = ok_result([first, second], tmp_path)
    assert result.energy_kj is None and result.energy_source == "unavailable"
    assert result.details["cv"]["energy"] is None and result.details["cv"]["time"] > 0


TORCHRUN_TAIL = """\
== autotune: repeat 1/1, torchrun: python -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=2 -m trainer.probe
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/trainer/probe.py", line 12, in <module>
    import deepspeed
ModuleNotFoundError: No module named 'deepspeed'
E1124 10:01:02.000000 123 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 0
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 8, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
trainer.probe FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  exitcode  : 1 (pid: 124)
============================================================"""


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (TORCHRUN_TAIL, "ModuleNotFoundError: No module named 'deepspeed'"),  # not torchrun's own ChildFailedError
        ("python3: Error while finding module specification for 'torch.distributed.run' (ModuleNotFoundError: No module"
         " named 'torch')", "ModuleNotFoundError: No module named 'torch'"),
        ("RuntimeError: Using hostfile at hf but host=nid001 was not reachable via ssh.",
         "RuntimeError: Using hostfile at hf but host=nid001 was not reachable via ssh."),
        ("srun: error: Unable to allocate resources: Requested node configuration is not available\n",
         "srun: error: Unable to allocate resources: Requested node configuration is not available"),
        ("ValueError: bad\nsrun: error: nid001: task 0: Exited with exit code 1", "ValueError: bad"),  # Python's first
        ("== autotune: repeat 1/1\nSegmentation fault (core dumped)", None),  # no exception line: nothing claimed
        ("", None),
    ],
)
def test_the_last_exception_of_a_probe_log_names_why_it_wrote_no_result(tail, expected):
    from autotune.backends.probe_outcome import last_exception_line

    assert last_exception_line(tail) == expected


def test_the_tuners_own_log_lines_are_never_the_probes_exception():
    """Trial79 #3: a probe killed by SIGKILL was told with "JSONDecodeError", from the tuner's note about another
    trial's result file at the top of its log."""
    from autotune.backends.probe_outcome import last_exception_line

    tail = ("== autotune: did not take over /run/trials/0006/result.json: unreadable or partial (JSONDecodeError)\n"
            "== autotune: repeat 1/1, torchrun: python -m torch.distributed.run -m trainer.probe\n"
            "DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully\n")
    assert last_exception_line(tail) is None
    assert last_exception_line(tail + "ValueError: bad\n") == "ValueError: bad"


# torchrun's teardown after rank 0 raised (a status, no signal line): it stopped rank 1 itself (trial79 #1).
TORCHRUN_SIBLING_STOPPED = """\
KeyError: 'missing_key'
W1128 09:50:19.113000 30159 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 30201 closing signal SIGTERM
E1128 09:50:19.200000 30159 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Failures:
[1]:
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 30201)  (SIGTERM)
  traceback : Signal 15 (SIGTERM) received by PID 30201
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-28_09:50:19
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 30200)
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================"""


def test_a_rank_its_launcher_stopped_after_another_crashed_is_no_stop_from_outside():
    """Trial79 #1: the sibling's SIGTERM, sent by torchrun once rank 0 crashed, was taken for a SLURM stop: the study
    stopped (143) and every resume probed the crashing candidate again, and stopped again."""
    from autotune.backends.probe_outcome import stopped_from_outside

    assert stopped_from_outside(1, TORCHRUN_SIBLING_STOPPED) is None
    # The same table where no launcher stopped it (SLURM signalled the ranks itself) stays a stop from outside.
    signalled = TORCHRUN_SIBLING_STOPPED.replace("Sending process 30201 closing signal SIGTERM", "rank 1 stopped")
    assert stopped_from_outside(1, signalled) == (15, "Signal 15 (SIGTERM) received by PID 30201")


def test_a_rank_a_signal_ended_is_read_from_torchruns_root_cause():
    """Trial79 #6: torchrun exits 1 when the OOM killer's SIGKILL ends a rank; its table's root cause says which."""
    from autotune.backends.probe_outcome import rank_signal

    killed = TORCHRUN_SIBLING_STOPPED.replace("rank      : 1 (local_rank: 1)", "rank      : 0 (local_rank: 0)").replace(
        "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 30200)",
        "  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 30200)  (SIGKILL)")
    assert rank_signal(killed) == (1, 9)
    assert rank_signal(TORCHRUN_SIBLING_STOPPED) is None  # the root cause exited with a status
    assert rank_signal("Segmentation fault (core dumped)") is None


@pytest.mark.parametrize(("text", "said"), [
    (None, None),
    ('{"status": "ok", "step_time_s": ', "JSONDecodeError: Expecting value: line 1 column 33 (char 32)"),
    ("[1, 2]", "a JSON value without a status, not a probe's result"),
    ('{"status": "ok"}', None),
])
def test_an_unreadable_result_file_says_why(tmp_path, text, said):
    from autotune.backends.probe_outcome import unreadable_result

    path = tmp_path / "result.json"
    if text is not None:
        path.write_text(text)
    assert unreadable_result(path) == said


def _rank_traceback(rank: int) -> str:
    return f"""\
fake probe: rank={rank}
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/home/u/mine/trainer/probe.py", line 26, in <module>
    deep()
  File "/home/u/mine/trainer/probe.py", line 25, in deep
    def deep(): return {{}}["missing_key"]
                       ~~^^^^^^^^^^^^^^^
KeyError: 'missing_key'
"""


def _failure_entry(rank: int) -> str:
    return f"""\
[{rank}]:
  time      : 2026-11-28_09:50:11
  host      : localhost
  rank      : {rank} (local_rank: {rank})
  exitcode  : 1 (pid: {30109 + rank})
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
"""


# torchrun's own end of a probe whose 2 ranks raised before writing a result (trial79 #2): 40 lines of it.
TORCHRUN_END = """\
E1128 09:50:11.493000 30064 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 30109) of binary: /venv/bin/python
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1032, in <module>
    main()
  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 367, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1028, in main
    run(args)
  File "/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1019, in run
    elastic_launch(
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 194, in __call__
    return launch_agent(
           ^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
trainer.probe FAILED
------------------------------------------------------------
Failures:
""" + _failure_entry(1) + """\
------------------------------------------------------------
Root Cause (first observed failure):
""" + _failure_entry(0) + "============================================================\n"


def _failed_without_result(tmp_path, log: str) -> str:
    from autotune.backends.probe_outcome import not_ok_result

    log_path = tmp_path / "log.txt"
    log_path.write_text(log, encoding="utf-8")
    return not_ok_result("failed", "the probe exited with status 1 without writing a result", tmp_path, log_path,
                         name_exception=True).error


@pytest.mark.parametrize("ranks", [2, 8])
def test_the_exception_of_ranks_under_torchrun_is_named_past_torchrun_s_own_traceback_and_table(tmp_path, ranks):
    """trial79 #2: with 2 ranks and more, torchrun's traceback and failure table filled the 40 lines searched."""
    assert TORCHRUN_END.count("\n") >= 40
    log = ("== autotune: did not take over /r/trials/0006/result.json: unreadable or partial (JSONDecodeError)\n"
           "== autotune: repeat 1/1, torchrun: python -m torch.distributed.run --nproc_per_node=2 -m trainer.probe\n"
           + "".join(_rank_traceback(rank) for rank in range(ranks)) + TORCHRUN_END)
    assert _failed_without_result(tmp_path, log) == ("the probe exited with status 1 without writing a result: "
                                                     "KeyError: 'missing_key'")


def test_an_exception_is_looked_for_in_the_last_launch_s_output_only(tmp_path):
    """Neither an earlier repeat's output nor the tuner's own notes (of another trial's file) are this launch's."""
    log = ("== autotune: repeat 1/2, torchrun: python -m torch.distributed.run -m trainer.probe\n"
           "ValueError: something repeat 1 printed\n"
           "== autotune: did not take over /r/trials/0006/result.json: unreadable or partial (JSONDecodeError)\n"
           "== autotune: repeat 2/2, torchrun: python -m torch.distributed.run -m trainer.probe\n"
           "Killed\n"
           "== autotune: note: JSONDecodeError in a note of the tuner\n")
    assert _failed_without_result(tmp_path, log) == "the probe exited with status 1 without writing a result"


@pytest.mark.parametrize(("last_line", "named"), [
    # torchrun refusing its own command line or environment (PET_MONITOR_INTERVAL=abc): trial79 #10
    ("run.py: error: argument --monitor-interval/--monitor_interval: invalid float value: 'abc'",
     "run.py: error: argument --monitor-interval/--monitor_interval: invalid float value: 'abc'"),
    ("python -m trainer.probe: error: argument --steps: '0' must be at least 1 (see --help)",
     "python -m trainer.probe: error: argument --steps: '0' must be at least 1 (see --help)"),
])
def test_a_launcher_s_usage_error_is_named(tmp_path, last_line, named):
    log = ("== autotune: repeat 1/1, torchrun: python -m torch.distributed.run --monitor-interval abc\n"
           "usage: run.py [-h] [--nnodes NNODES]\n"
           "              training_script ...\n" + last_line + "\n")
    assert _failed_without_result(tmp_path, log) == f"the probe exited with status 1 without writing a result: {named}"
