"""Is a change to the study layer better? Two sets of benchmarks/search_efficiency.py results, study by study.

A change to the guided sampler moves each study's (a) (probes until every true-front point is reached
within 1%) by chance as much as by design: on truths with interactions one probe that holds a pair
earlier or later moves (a) by 10-20 probes, and levers measured on one sample of seeds have turned
round on the next (docs/benchmarks.md, sessions 14-18). So this compares the studies both files hold
(same case, truth, seed and sampler) one against the other, and says how likely as lopsided a count of
better and worse studies would be if the change did nothing (a two-sided sign test): a p-value of
0.5 is a coin toss, whatever the sums say.

    python benchmarks/compare_runs.py --before benchmarks/results/search_efficiency_guided.json more.json \\
        --after new.json new_more.json

Prints the studies whose (a) or gap at the stop changed, then per case and truth the median (a) before
and after, and a summary: better, worse, the sign test, (a) summed (a study that never reached it
counts as the budget + 1), probes run, probes that ran out of memory, studies that stopped more than
1% short of the true front, and the cases whose median (a) is within the goal's 8 probes. --out
writes the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_efficiency import _results_file, _table_order  # noqa: E402

from autotune.study.loop import SAMPLERS  # noqa: E402

GOAL_PROBES = 8  # issue 9: guided median <= 8 probes for (a) in every case
SHORT = 1.01  # a study that stops with its epsilon indicator above this stopped short of the front


def _runs(parser: argparse.ArgumentParser, paths: list[Path], sampler: str, flag: str) -> tuple[set[int], dict[tuple, dict]]:
    """The budgets of the files and their `sampler`'s studies by case, truth and seed."""
    budgets, runs = set(), {}
    for path in paths:
        budget, file_runs = _results_file(parser, path, flag)
        budgets.add(budget)
        for r in file_runs:
            if r["sampler"] == sampler:
                runs[(r["model"], r["nodes"], r["family"], r["seed"])] = r
    return budgets, runs


def sign_test(better: int, worse: int) -> float:
    """Two-sided p-value of `better` against `worse` studies when each is a fair coin (ties dropped)."""
    from scipy.stats import binomtest

    n = better + worse
    return 1.0 if n == 0 else float(binomtest(better, n, 0.5).pvalue)


def compare(before: dict[tuple, dict], after: dict[tuple, dict], budget: int) -> dict:
    """Study-by-study comparison of the studies both sets hold (see the module's docstring)."""
    keys = sorted(set(before) & set(after), key=lambda k: _table_order(before[k]))
    cap = lambda v: budget + 1 if v == math.inf else v  # noqa: E731  (not reached: past the budget)
    changed, groups = [], {}
    better = worse = 0
    for k in keys:
        x, y = before[k]["to_epsilon_1pct"], after[k]["to_epsilon_1pct"]
        better += y < x
        worse += y > x
        groups.setdefault(k[:3], ([], []))
        groups[k[:3]][0].append(x)
        groups[k[:3]][1].append(y)
        gap = (before[k].get("epsilon_at_stop"), after[k].get("epsilon_at_stop"))
        if x != y or gap[0] != gap[1]:
            changed.append({"study": list(k), "a": [x, y], "probes": [before[k]["probes"], after[k]["probes"]], "epsilon_at_stop": list(gap)})

    def side(runs: dict[tuple, dict], at: int) -> dict:
        return {"a_sum": sum(cap(runs[k]["to_epsilon_1pct"]) for k in keys),
                "probes": sum(runs[k]["probes"] for k in keys),
                "out_of_memory": sum(runs[k].get("out_of_memory", 0) for k in keys),
                "short": sum(runs[k].get("epsilon_at_stop", 1.0) > SHORT for k in keys),
                "cases_within_goal": sum(statistics.median(g[at]) <= GOAL_PROBES for g in groups.values())}

    return {"studies": len(keys), "better": better, "worse": worse, "sign_test_p": sign_test(better, worse),
            "before": side(before, 0), "after": side(after, 1),
            "medians": [{"case": f"{m} on {n}", "truth": f, "a_median": [statistics.median(xs), statistics.median(ys)]}
                        for (m, n, f), (xs, ys) in groups.items()],
            "changed": changed}


def _probes(v) -> str:
    return "not reached" if v == math.inf else f"{v:g}"


def report(result: dict, budget: int) -> str:
    lines = []
    for c in result["changed"]:
        m, n, f, s = c["study"]
        gap = " -> ".join("n/a" if g is None else f"{100 * (g - 1):.1f}%" for g in c["epsilon_at_stop"])
        lines.append(f"{m} on {n} {f} seed {s}: (a) {_probes(c['a'][0])} -> {_probes(c['a'][1])}, "
                     f"probes run {c['probes'][0]} -> {c['probes'][1]}, short at stop {gap}")
    lines += ["", "| case | truth | (a) median before | after |", "|---|---|---|---|"]
    lines += [f"| {g['case']} | {g['truth']} | {_probes(g['a_median'][0])} | {_probes(g['a_median'][1])} |" for g in result["medians"]]
    b, a = result["before"], result["after"]
    lines += ["", f"{result['studies']} studies: (a) better in {result['better']}, worse in {result['worse']} "
              f"(sign test p = {result['sign_test_p']:.2f}); (a) summed {b['a_sum']} -> {a['a_sum']} (not reached: {budget + 1}); "
              f"probes run {b['probes']} -> {a['probes']}, out of memory {b['out_of_memory']} -> {a['out_of_memory']}; "
              f"stopped more than 1% short {b['short']} -> {a['short']}; cases with median (a) <= {GOAL_PROBES}: "
              f"{b['cases_within_goal']} -> {a['cases_within_goal']} of {len(result['medians'])}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", nargs="+", type=Path, required=True, metavar="JSON", help="results of the kept state")
    parser.add_argument("--after", nargs="+", type=Path, required=True, metavar="JSON", help="results of the change")
    parser.add_argument("--sampler", default="guided", choices=SAMPLERS, help="the sampler whose studies are compared (default: guided)")
    parser.add_argument("--out", type=Path, help="also write the comparison as JSON")
    args = parser.parse_args()
    (budgets_before, before), (budgets_after, after) = (_runs(parser, args.before, args.sampler, "--before"),
                                                        _runs(parser, args.after, args.sampler, "--after"))
    if not set(before) & set(after):
        parser.error(f"no {args.sampler} study is in both --before and --after (same case, truth and seed); "
                     "pass results of the same studies")
    budgets = budgets_before | budgets_after
    if len(budgets) != 1:
        parser.error(f"the files were run with different budgets ({sorted(budgets)}); compare runs of one --budget")
    budget = budgets.pop()
    result = compare(before, after, budget)
    print(report(result, budget))
    if args.out:
        try:
            args.out.write_text(json.dumps(_encoded(result), indent=1) + "\n")
        except OSError as exc:
            parser.error(f"--out {args.out}: cannot write it ({exc.strerror}); pass a file in a folder that exists")


def _encoded(value):
    """JSON has no infinity: null is "not reached", as in search_efficiency.py's files."""
    if isinstance(value, dict):
        return {k: _encoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encoded(v) for v in value]
    return None if value == math.inf else value


if __name__ == "__main__":
    main()
