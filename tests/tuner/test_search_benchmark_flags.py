"""benchmarks/search_efficiency.py refuses bad flags in one line, exit 2, before any study runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "search_efficiency.py"


@pytest.mark.parametrize("flags, words", [
    (["--cases", "7b"], "is not MODEL:NODES"),
    (["--cases", "7b:0"], "must be at least 1"),
    (["--cases", ":4"], "argument --model: is empty"),  # settings_for's own flag check, as the CLI's
    (["--cases", "zz:4"], "unknown model 'zz'"),
    (["--seeds", "0"], "out of range"),
    (["--first-seed", "-1"], "out of range"),
    (["--first-seed", "1.5"], "not a whole number"),
    (["--budget", "x"], "not a whole number"),
    (["--merge", "README.md"], "not a results file of this benchmark"),
])
def test_bad_flags_get_one_line_and_exit_2(tmp_path, flags, words):
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(SCRIPT), *flags, "--no-docs", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=SCRIPT.parents[1])
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert words in last and "Traceback" not in done.stderr
    assert not out.exists()


def test_first_seed_runs_the_seeds_after_it(tmp_path):
    # A second sample of the same truths, to merge with the first: seeds 5 and 6, not 0 and 1.
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--cases", "72b:8", "--families", "one_pair", "--samplers", "random",
                           "--seeds", "2", "--first-seed", "5", "--budget", "3", "--no-docs", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=SCRIPT.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads(out.read_text())["runs"]
    assert sorted(r["seed"] for r in runs) == [5, 6] and all(r["probes"] == 3 for r in runs)


def test_a_merged_file_with_a_bad_out_of_memory_count_is_refused_and_a_good_one_tabled(tmp_path):
    # A study on a truth with a memory wall: the probes that ran out of memory are counted, and tabled.
    good = tmp_path / "good.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--cases", "72b:8", "--families", "memory_wall", "--samplers", "guided",
                           "--seeds", "1", "--budget", "12", "--no-docs", "--out", str(good)],
                          capture_output=True, text=True, timeout=300, cwd=SCRIPT.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads(good.read_text())["runs"][0]
    assert 0 < run["out_of_memory"] < run["probes"] == 12
    row = next(line for line in done.stdout.splitlines() if "| guided |" in line)
    assert f"| {run['probes']} | {run['out_of_memory']} |" in row
    for wrong in ("many", -1, 13, 2.5, None, True):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"budget": 12, "runs": [{**run, "out_of_memory": wrong}]}))
        done = subprocess.run([sys.executable, str(SCRIPT), "--cases", "--merge", str(bad), "--budget", "12", "--no-docs", "--out", str(tmp_path / "o.json")],
                              capture_output=True, text=True, timeout=120, cwd=SCRIPT.parents[1])
        assert done.returncode == 2, wrong
        assert "is not a count of the run's 12 probes" in done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("budget, words", [
    (40, "its studies had a budget of 40 probes, this table's is 60"),  # ">60" would be wrong for them
    ("60", "budget '60' is not a whole number"),
    (0, "budget 0 is not a whole number"),
    (None, "budget None is not a whole number"),
])
def test_a_merged_file_of_another_budget_is_refused(tmp_path, budget, words):
    merged = tmp_path / "other.json"
    merged.write_text(json.dumps({"budget": budget, "runs": []}))
    out = tmp_path / "o.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--cases", "--merge", str(merged), "--no-docs", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=SCRIPT.parents[1])
    assert done.returncode == 2
    assert words in done.stderr.strip().splitlines()[-1] and "Traceback" not in done.stderr
    assert not out.exists()
