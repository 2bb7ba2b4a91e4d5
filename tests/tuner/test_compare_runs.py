"""benchmarks/compare_runs.py: two sets of search-benchmark results compared study by study, with a sign test."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_runs.py"
sys.path.insert(0, str(SCRIPT.parent))
from compare_runs import compare, sign_test  # noqa: E402


def _run(family: str, seed: int, a, probes: int = 30, epsilon: float = 1.0, model: str = "32b", nodes: str = "4") -> dict:
    return {"model": model, "nodes": nodes, "family": family, "seed": seed, "sampler": "guided", "true_front": 5,
            "fewest": 4, "probes": probes, "out_of_memory": 0, "to_epsilon_1pct": a, "to_hv_95pct": a,
            "epsilon_at_stop": epsilon}


def _write(path: Path, runs: list[dict], budget: int = 60) -> Path:
    encode = lambda v: None if v == math.inf else v  # noqa: E731
    path.write_text(json.dumps({"budget": budget, "seeds": 3, "summary": [],
                                "runs": [{k: encode(v) for k, v in r.items()} for r in runs]}))
    return path


def test_sign_test_is_a_coin_toss_for_even_counts_and_small_for_lopsided_ones():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == pytest.approx(1.0)
    assert sign_test(10, 0) == pytest.approx(2 * 0.5**10)  # two-sided
    assert sign_test(14, 13) > 0.5


def test_studies_are_matched_by_case_truth_and_seed():
    before = {("32b", "4", "interactions", s): _run("interactions", s, a) for s, a in enumerate([10, 20, math.inf])}
    before[("32b", "4", "noise", 0)] = _run("noise", 0, 6)  # in one set only: not compared
    after = {("32b", "4", "interactions", s): _run("interactions", s, a, epsilon=e)
             for s, (a, e) in enumerate([(8, 1.0), (25, 1.0), (40, 1.0)])}
    after[("32b", "4", "interactions", 1)]["epsilon_at_stop"] = 1.02  # stopped 2% short
    result = compare(before, after, budget=60)
    assert result["studies"] == 3 and (result["better"], result["worse"]) == (2, 1)
    # Not reached counts as the budget + 1.
    assert result["before"]["a_sum"] == 10 + 20 + 61 and result["after"]["a_sum"] == 8 + 25 + 40
    assert (result["before"]["short"], result["after"]["short"]) == (0, 1)
    assert result["medians"] == [{"case": "32b on 4", "truth": "interactions", "a_median": [20, 25]}]
    assert (result["before"]["cases_within_goal"], result["after"]["cases_within_goal"]) == (0, 0)
    assert [c["study"][3] for c in result["changed"]] == [0, 1, 2]


def test_the_script_prints_the_comparison_and_writes_it(tmp_path):
    before = _write(tmp_path / "before.json", [_run("noise", s, a) for s, a in enumerate([5, 6, 9])])
    after = _write(tmp_path / "after.json", [_run("noise", s, a) for s, a in enumerate([5, 7, 8])])
    out = tmp_path / "comparison.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--before", str(before), "--after", str(after), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=SCRIPT.parents[1])
    assert done.returncode == 0, done.stderr
    assert "3 studies: (a) better in 1, worse in 1 (sign test p = 1.00)" in done.stdout
    assert "cases with median (a) <= 8: 1 -> 1 of 1" in done.stdout
    assert json.loads(out.read_text())["after"]["a_sum"] == 20


@pytest.mark.parametrize("setup, words", [
    ("not_json", "not a results file of this benchmark"),
    ("no_common", "no guided study is in both"),
    ("budgets", "different budgets ([40, 60])"),
    ("budget_text", "budget '60' is not a whole number"),
    ("missing", "not a results file of this benchmark"),
    ("reached_past_its_probes", "--after"),  # the flag named, and the field:
    ("seed_not_a_number", "seed '1' is not a whole number"),
])
def test_bad_input_gets_one_line_and_exit_2(tmp_path, setup, words):
    before = _write(tmp_path / "before.json", [_run("noise", 0, 5)])
    after = _write(tmp_path / "after.json", [_run("noise", 0, 6)])
    if setup == "not_json":
        after.write_text("{not json")
    elif setup == "no_common":
        _write(after, [_run("noise", 7, 6)])
    elif setup == "budgets":
        _write(after, [_run("noise", 0, 6)], budget=40)
    elif setup == "budget_text":
        _write(after, [_run("noise", 0, 6)], budget="60")
    elif setup == "missing":
        after = tmp_path / "absent.json"
    elif setup == "reached_past_its_probes":
        _write(after, [_run("noise", 0, 31, probes=30)])
    elif setup == "seed_not_a_number":
        _write(after, [{**_run("noise", 0, 6), "seed": "1"}])
    done = subprocess.run([sys.executable, str(SCRIPT), "--before", str(before), "--after", str(after)],
                          capture_output=True, text=True, timeout=120, cwd=SCRIPT.parents[1])
    assert done.returncode == 2
    assert words in done.stderr.strip().splitlines()[-1] and "Traceback" not in done.stderr
    if setup == "reached_past_its_probes":
        assert "to_epsilon_1pct 31 is neither null (not reached) nor a count of the run's 30 probes" in done.stderr
