"""How far the guided sampler could get on the interaction truths if it knew what no sampler can know:
the headroom left to a better search, per case (benchmarks/search_efficiency.py, the `interactions`,
`combined` and `one_pair` truths).

Four oracles, each the guided sampler (study/guided.py) told something about the truth:
- `pairs`: which value pairs carry the interactions that make a true-front candidate faster or cheaper
  (not by how much). Before anything else but the seed probes, it probes the most promising runnable
  candidate holding each such pair no ok probe has held, and does not stop while one is owed. Its
  (a) is what the search could reach if finding the pairs cost nothing beyond one probe each: the
  rest is the model's (learning the interaction from the probe, then the front's points).
- `attribution`: of each value pair a probe holds, whether it carries one of the truth's interactions
  (not how much): the correction fits its pair variances on those pairs only (correction.py,
  `_pair_variances`), so a probe's miss goes to the pair that carries it, not to its twenty-odd pairs.
- `pairs+attribution`: both.
- `interactions`: the simulator with the truth's interactions in it (each candidate's mechanisms,
  time and energy, times the factors of the pairs it holds): what is left unknown is what the other
  families hold (perturbed mechanisms, the memory wall, noise), which the guided sampler meets in 4-8
  probes there (docs/benchmarks.md).
The gap between the guided sampler and `pairs` is what finding the pairs costs, the one to
`attribution` what sharing a miss among a probe's pairs costs; what `pairs+attribution` leaves to
`interactions` is the model's learning the interaction's size and the front from the probes.
Same truths, seeds and budget as search_efficiency.py; the same counts ((a): probes until every true-front
point has a probed point within 1%).

    python benchmarks/oracle_headroom.py                          # table + results/oracle_headroom.json
    python benchmarks/oracle_headroom.py --cases 32b:4 --seeds 1 --oracles pairs attribution --out /tmp/o.json
    python benchmarks/oracle_headroom.py --cases --merge a.json b.json    # one table of earlier runs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_runs import sign_test  # noqa: E402
from ground_truths import holds_term  # noqa: E402
from search_efficiency import (CASES, TARGET_EPSILON, Truth, case_settings, _case_flag, _cell, cover_ratios, epsilon_at_stop,  # noqa: E402
                               fewest_probes_to_cover, making_terms, probes_to_targets, run_with, truths)

from autotune.commands.flags import whole_number_flag  # noqa: E402
from autotune.study import correction  # noqa: E402
from autotune.study.guided import GuidedSampler  # noqa: E402
from autotune.study.loop import valid_checks  # noqa: E402
from autotune.study.valid import usable_values
from autotune.space import baseline  # noqa: E402
from autotune.candidate import params_key  # noqa: E402

FAMILIES = ("interactions", "combined", "one_pair")
ORACLES = ("pairs", "attribution", "pairs+attribution", "interactions")
RESULTS = Path(__file__).resolve().parent / "results" / "oracle_headroom.json"
GUIDED = Path(__file__).resolve().parent / "results" / "search_efficiency_guided.json"
GUIDED_MORE = Path(__file__).resolve().parent / "results" / "search_efficiency_guided_seeds_3_5.json"


class PairOracleSampler(GuidedSampler):
    """The guided sampler told which value pairs carry the front's interactions (`terms`)."""

    def __init__(self, checks: list, choices: dict, seed: int, terms: list[tuple]):
        super().__init__(checks, choices, seed)
        self._terms = terms

    def _owed_holders(self, view) -> list[np.ndarray]:
        """Per term no ok probe holds and no trial is probing: the free runnable candidates holding it."""
        params = self.predictions.params
        held = [params[i] for i in sorted(set(view.observations.ok) | view.observations.busy)]
        runnable = view.free & (view.chance_to_run > 0.5)
        owed = []
        for term in self._terms:
            if any(holds_term(p, term) for p in held):
                continue
            holders = runnable & np.array([holds_term(p, term) for p in params])
            if holders.any():
                owed.append(holders)
        return owed

    def next_candidate(self, study: optuna.Study, current_trial: int | None) -> int | None:
        view = self.outlook(study, current_trial)
        seeds_left = [i for i in self.seed_indices(len(study.directions)) if view.free[i] and view.chance_to_run[i] > 0.5]
        owed = self._owed_holders(view)
        if seeds_left or not owed:
            return super().next_candidate(study, current_trial)
        return self._most_promising(view, owed[0])

    def converged(self, study: optuna.Study) -> bool:
        return not self._owed_holders(self.outlook(study)) and super().converged(study)


class InteractionOracleSampler(GuidedSampler):
    """The guided sampler whose simulator holds the truth's interactions (`terms`, all of them)."""

    def __init__(self, checks: list, choices: dict, seed: int, terms: list[tuple]):
        super().__init__(checks, choices, seed)
        pred = self.predictions
        for i, p in enumerate(pred.params):
            for term in terms:
                if holds_term(p, term):
                    pred.log_values[i] += (term[4], term[5])
                    pred.time_parts[i] *= math.exp(term[4])
                    pred.energy_parts[i] *= math.exp(term[5])


def carrying_pairs(predictions, terms: list[tuple]) -> np.ndarray:
    """(P,) whether each value pair of the correction's kernel (a column of the features' `pairs`) is a
    pair one of `terms` is on."""
    params, pairs = predictions.params, predictions.features.pairs > 0
    carries = np.zeros(pairs.shape[1], dtype=bool)
    for term in terms:
        holders = np.array([holds_term(p, term) for p in params])
        carries |= (pairs == holders[:, None]).all(axis=0)
    return carries


class AttributionOracleSampler(GuidedSampler):
    """The guided sampler told, of each value pair an ok probe holds, whether it carries one of the
    truth's interactions (`terms`), not how much: the correction's pair variances (correction.py,
    `_pair_variances`) are fitted on those pairs only, so a probe's miss is put on the pair that
    carries it. Pairs no probe holds keep the even fit's share, as in the guided sampler."""

    def __init__(self, checks: list, choices: dict, seed: int, terms: list[tuple]):
        super().__init__(checks, choices, seed)
        self._carries = carrying_pairs(self.predictions, terms)

    def outlook(self, study: optuna.Study, current_trial: int | None = None):
        fit, carries = correction._pair_variances, self._carries

        def told(kernel, theta, at, parts, y, gamma):
            # Pairs that carry nothing are left out of the fit and, once a probe holds them, cleared.
            only = correction.Kernel(dataclasses.replace(kernel.f, pairs=kernel.f.pairs * carries))
            cleared = kernel.f.pairs[at].any(axis=0) & ~carries
            return np.where(cleared, 0.0, fit(only, theta, at, parts, y, gamma))

        correction._pair_variances = told
        try:
            return super().outlook(study, current_trial)
        finally:
            correction._pair_variances = fit


class BothOracleSampler(AttributionOracleSampler, PairOracleSampler):
    """`pairs` and `attribution` together: the front's pairs probed first, each miss put on its pair."""

    def __init__(self, checks: list, choices: dict, seed: int, terms: list[tuple], front_terms: list[tuple]):
        PairOracleSampler.__init__(self, checks, choices, seed, front_terms)
        self._carries = carrying_pairs(self.predictions, terms)


def least_with_baseline(values: np.ndarray, truth: np.ndarray, baseline_values: tuple | None) -> int:
    """The least (a) any sampler can reach in a study that probes the baseline first (the study loop
    does): the baseline, then an exact minimum cover of the true-front points it is not within 1% of."""
    if baseline_values is None:  # the baseline ran out of memory: it covers nothing
        return 1 + fewest_probes_to_cover(values, truth)
    left = cover_ratios(np.array([baseline_values]), truth)[:, 0] > TARGET_EPSILON
    return 1 + (fewest_probes_to_cover(values, truth[left]) if left.any() else 0)


def run_oracle(settings, checks, t: Truth, front_terms: list[tuple], oracle: str, budget: int) -> tuple[list, bool]:
    """The noise-free figures of the study's probes of truth `t` in order (None: ran out of memory), and
    whether it stopped on its own. `front_terms`: the truth's `making_terms`."""
    choices = usable_values(checks)
    sampler = {"pairs": lambda: PairOracleSampler(checks, choices, t.seed, front_terms),
               "attribution": lambda: AttributionOracleSampler(checks, choices, t.seed, t.terms),
               "pairs+attribution": lambda: BothOracleSampler(checks, choices, t.seed, t.terms, front_terms),
               "interactions": lambda: InteractionOracleSampler(checks, choices, t.seed, t.terms)}[oracle]()
    run = run_with(sampler, settings, checks, t.table, t.clean, budget)
    return run["sequence"], run["converged"]


def run_case(model: str, nodes: str, families, seeds: range, oracles, budget: int) -> list[dict]:
    settings = case_settings(model, nodes)
    checks = valid_checks(settings)
    base = baseline(checks)  # None: no candidate of the baseline's shape fits, and no baseline is probed
    base_key = None if base is None else params_key(base.candidate.knobs.to_dict())
    rows = []
    for t in truths(checks, families, seeds):
        least = t.fewest if base_key is None else least_with_baseline(t.values, t.front, t.clean.get(base_key))
        front_terms = making_terms(t.terms, t.front_knobs)
        for oracle in oracles:
            sequence, converged = run_oracle(settings, checks, t, front_terms, oracle, budget)
            reach_a, _ = probes_to_targets(sequence, t.front)
            rows.append({"model": model, "nodes": nodes, "family": t.family, "seed": t.seed, "oracle": oracle,
                         "true_front": len(t.front), "fewest": t.fewest, "least_with_baseline": least,
                         "front_pairs": len(front_terms), "probes": len(sequence),
                         "converged": converged, "to_epsilon_1pct": reach_a,
                         "epsilon_at_stop": round(epsilon_at_stop(sequence, t.front), 4)})
            print(f"{model}/{nodes} {t.family:<13} seed {t.seed} oracle {oracle:<12}: (a) {reach_a:>4} probes {len(sequence):>3} "
                  f"epsilon at stop {rows[-1]['epsilon_at_stop']:.3f}", file=sys.stderr, flush=True)
    return rows


def _merged_runs(parser: argparse.ArgumentParser, path: Path, budget: int) -> list[dict]:
    """The runs of a results file this script wrote, checked; one line and exit 2 for anything else."""
    try:
        data = json.loads(path.read_text())
        if data["budget"] != budget:
            raise ValueError(f"its budget is {data['budget']!r}, this table's {budget} (--budget)")
        runs = []
        for r in data["runs"]:
            if r["family"] not in FAMILIES or r["oracle"] not in ORACLES or not isinstance(r["model"], str) or not isinstance(r["nodes"], str):
                raise ValueError(f"a run of {r['model']!r}/{r['nodes']!r} {r['family']!r} {r['oracle']!r}: not a case, truth and oracle of this script")
            for key, low in (("seed", 0), ("true_front", 1), ("fewest", 1), ("least_with_baseline", 1), ("front_pairs", 0), ("probes", 0)):
                if type(r[key]) is not int or r[key] < low:
                    raise ValueError(f"{key} {r[key]!r} is not a whole number of at least {low}")
            a = r["to_epsilon_1pct"]
            if a is not None and not (type(a) is int and 1 <= a <= r["probes"]):
                raise ValueError(f"to_epsilon_1pct {a!r} is neither null (not reached) nor a count of the run's {r['probes']} probes")
            runs.append({**r, "to_epsilon_1pct": math.inf if a is None else a})
        return runs
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        parser.error(f"--merge {path}: not a results file of this benchmark ({type(exc).__name__}: {exc}); pass one its --out wrote")


def guided_runs(paths: list[Path]) -> dict[tuple, float]:
    """(model, nodes, family, seed) -> the kept guided sampler's (a), from the committed results."""
    out = {}
    for path in paths:
        if path.exists():
            for r in json.loads(path.read_text())["runs"]:
                if r["sampler"] == "guided":
                    a = r["to_epsilon_1pct"]
                    out[(r["model"], r["nodes"], r["family"], r["seed"])] = math.inf if a is None else a
    return out


def table_markdown(rows: list[dict], guided: dict, budget: int) -> str:
    oracles = [o for o in ORACLES if any(r["oracle"] == o for r in rows)]
    head = "| case | truth | seeds | fewest | least (a), baseline first | the front's pairs | guided (a) median | " + " | ".join(f"oracle `{o}` (a) median" for o in oracles) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["nodes"], r["family"]), []).append(r)
    for (model, nodes, family), rs in groups.items():
        seeds = sorted({r["seed"] for r in rs})
        known = [guided[(model, nodes, family, s)] for s in seeds if (model, nodes, family, s) in guided]
        by = {o: [r["to_epsilon_1pct"] for r in rs if r["oracle"] == o] for o in oracles}
        first = [r for r in rs if r["oracle"] == oracles[0]]
        cells = [_cell(statistics.median(by[o]), budget) if by[o] else "n/a" for o in oracles]
        lines.append(f"| {model} on {nodes} | {family} | {len(seeds)} | {statistics.median(r['fewest'] for r in first):g} | "
                     f"{statistics.median(r['least_with_baseline'] for r in first):g} | "
                     f"{statistics.median(r['front_pairs'] for r in first):g} | "
                     f"{_cell(statistics.median(known), budget) if len(known) == len(seeds) else 'n/a'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def against_guided(rows: list[dict], guided: dict, budget: int) -> str:
    """Per oracle, the studies whose (a) it reached in fewer probes than the kept guided sampler and in
    more (not reached counts as budget + 1), with the two-sided sign test (compare_runs.py)."""
    lines = []
    for oracle in ORACLES:
        matched = [(min(r["to_epsilon_1pct"], budget + 1), min(guided[key], budget + 1)) for r in rows if r["oracle"] == oracle
                   for key in [(r["model"], r["nodes"], r["family"], r["seed"])] if key in guided]
        if matched:
            better, worse = sum(o < g for o, g in matched), sum(o > g for o, g in matched)
            lines.append(f"oracle `{oracle}` against guided, {len(matched)} studies: (a) in fewer probes in {better}, in more in "
                         f"{worse} (sign test p {sign_test(better, worse):.2g}); summed {sum(o for o, _ in matched)} against {sum(g for _, g in matched)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=whole_number_flag(low=1), default=3)
    parser.add_argument("--first-seed", type=whole_number_flag(low=0, high=2**32 - 1), default=0)
    parser.add_argument("--budget", type=whole_number_flag(low=1), default=60, help="probes per study at most (default: 60)")
    parser.add_argument("--oracles", nargs="+", default=list(ORACLES), choices=ORACLES)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--cases", nargs="*", type=_case_flag, default=list(CASES), help="MODEL:NODES (none: only the --merge files)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--merge", nargs="+", type=Path, default=[], metavar="JSON",
                        help="add the runs of earlier result files of this script (other cases, other seeds) to the table")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    # Hours of studies must not end in a file that cannot be written: the folder is checked first.
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out {args.out}: cannot make its folder ({exc.strerror or exc}); choose a writable path")
    if args.out.is_dir() or not os.access(args.out.parent, os.W_OK):
        parser.error(f"--out {args.out}: not a writable file path; choose another")
    rows = [r for path in args.merge for r in _merged_runs(parser, path, args.budget)]
    rows += [r for model, nodes in args.cases for r in run_case(model, nodes, args.families, seeds, args.oracles, args.budget)]
    # A study run again here replaces its merged record (same case, truth, seed and oracle).
    rows = list({(r["model"], r["nodes"], r["family"], r["seed"], r["oracle"]): r for r in rows}.values())
    case_order = {case: n for n, case in enumerate(CASES)}  # the cases in search_efficiency.py's order, others after
    rows.sort(key=lambda r: (case_order.get((r["model"], r["nodes"]), len(CASES)), r["model"], r["nodes"],
                             FAMILIES.index(r["family"]), r["seed"], ORACLES.index(r["oracle"])))
    if not rows:
        parser.error("nothing to tabulate: give --cases MODEL:NODES ... or --merge JSON ...")
    guided = guided_runs([GUIDED, GUIDED_MORE])
    markdown = table_markdown(rows, guided, args.budget)
    print(markdown + "\n\n" + against_guided(rows, guided, args.budget))
    encode = lambda v: None if v == math.inf else v  # noqa: E731  (JSON has no infinity: null = not reached)
    try:
        args.out.write_text(json.dumps({"budget": args.budget, "runs": [{k: encode(v) for k, v in r.items()} for r in rows]}, indent=1) + "\n")
    except OSError as exc:
        parser.error(f"--out {args.out}: cannot write it ({exc.strerror or exc}); the table above is all this run kept")


if __name__ == "__main__":
    main()
