"""`autotune run` into a job's output file or a pipe: each message on one line, as printed. rich broke
them at 80 columns mid-phrase ("timeout 900\\ns", a file path split in two), where grep and the eye look
for them whole."""

from __future__ import annotations

import json

from tests.cli import autotune_main


def test_a_long_message_stays_on_one_line_in_a_pipe(tmp_path):
    folder = tmp_path / ("a-folder-name-long-enough-to-push-the-line-past-eighty-columns" * 2)
    folder.mkdir()
    records = folder / "recorded.jsonl"
    knobs = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
             "micro_batch": 1, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}
    # 100 kJ over 100 s: 250 W per GH200 module, above what it draws at rest.
    records.write_text(json.dumps({"params": knobs, "status": "ok", "time_s": 100.0, "energy_kj": 100.0}) + "\n")
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", records,
                         "--trials", "1", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    backend = [line for line in done.stderr.splitlines() if line.startswith("backend: replay")]
    assert len(backend) == 1 and len(backend[0]) > 160, done.stderr
    assert f"from {records}" in backend[0] and backend[0].endswith("chosen with --backend replay"), backend[0]
