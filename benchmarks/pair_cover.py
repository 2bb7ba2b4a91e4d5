"""How many probes it takes to hold every pair of knob values, for a sampler that does not know which
pairs carry an interaction the simulator lacks (benchmarks/search_efficiency.py: the `interactions`,
`combined` and `one_pair` truths).

An interaction is a pair of knob values ("SP 4 with power limit 1.0") whose candidates run faster or
slower than the simulator says. No probe shows it until one holds the pair, and nothing tells which of
the many pairs it is, so finding it is covering pairs: each probe holds one pair per two varying knobs.
For each case this prints the valid candidates' value pairs, the most one candidate holds, the least
number of probes that could hold them all (pairs / pairs per probe, rounded up), a greedy cover's size
(each probe the candidate holding the most pairs not held yet), and, following that greedy order, the
mean number of covering probes until one, two and three pairs drawn at random are all held. Those
means count covering probes only: a study also spends its first probes (the baseline, the predicted
front's ends and knee) and a probe per point of the front, which the search benchmark's "fewest" counts.

    python benchmarks/pair_cover.py          # the table in docs/benchmarks.md, and results/pair_cover.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_efficiency import CASES, case_settings  # noqa: E402

from autotune.study.knob_kernel import knob_features  # noqa: E402
from autotune.study.loop import valid_checks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "pair_cover.json"
PAIRS_DRAWN = (1, 2, 3)


def greedy_cover(pairs: np.ndarray) -> list[int]:
    """For `pairs` (candidates, value pairs; True where the candidate holds the pair): how many pairs not
    held yet each probe of the greedy cover adds, in order."""
    left = np.ones(pairs.shape[1], dtype=bool)
    added = []
    while left.any():
        gain = (pairs & left).sum(axis=1)
        best = int(gain.argmax())
        added.append(int(gain[best]))
        left &= ~pairs[best]
    return added


def mean_probes_to_hold(added: list[int], drawn: int) -> float:
    """The mean number of probes, in the cover's order, until `drawn` pairs drawn at random (with
    replacement) are all held: the sum over n of the chance that they are not all held after n - 1."""
    held = np.cumsum(added) / sum(added)
    before = np.r_[0.0, held[:-1]]
    return float(np.sum(1.0 - before**drawn))


def cover_row(model: str, nodes: str) -> dict:
    # The knob values alone (as the guided sampler's features hold them): nothing here needs the simulator.
    params = [c.candidate.knobs.to_dict() for c in valid_checks(case_settings(model, nodes)) if c.valid]
    pairs = knob_features(params).pairs > 0
    added = greedy_cover(pairs)
    per_probe = int(pairs.sum(axis=1).max())
    return {"model": model, "nodes": nodes, "candidates": len(params), "value_pairs": int(pairs.shape[1]),
            "pairs_per_probe": per_probe, "least_probes": math.ceil(pairs.shape[1] / per_probe),
            "greedy_cover": len(added),
            **{f"mean_probes_to_hold_{k}": round(mean_probes_to_hold(added, k), 1) for k in PAIRS_DRAWN}}


def table_markdown(rows: list[dict]) -> str:
    head = ("| case | valid candidates | value pairs | pairs per probe | probes to hold all, at least | greedy cover | "
            + " | ".join(f"mean probes to hold {k} random pair{'s' if k > 1 else ''}" for k in PAIRS_DRAWN) + " |")
    lines = [head, "|" + "---|" * (6 + len(PAIRS_DRAWN))]
    for r in rows:
        lines.append(f"| {r['model']} on {r['nodes']} | {r['candidates']} | {r['value_pairs']} | {r['pairs_per_probe']} | "
                     f"{r['least_probes']} | {r['greedy_cover']} | "
                     + " | ".join(f"{r[f'mean_probes_to_hold_{k}']:.1f}" for k in PAIRS_DRAWN) + " |")
    return "\n".join(lines)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rows = [cover_row(model, nodes) for model, nodes in CASES]
    print(table_markdown(rows))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
