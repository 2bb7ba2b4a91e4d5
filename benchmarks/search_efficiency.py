"""How many probes each sampler needs to find the true time-energy front, on truths that are not the
simulator (benchmarks/ground_truths.py: perturbed constants, unmodelled interactions, a lower memory
wall, noise, all combined, one unmodelled pair), for 7b on 1 node, 32b on 4, 72b on 8 and 32b on 2-8 nodes.

For each study (the real study loop, `run_study`, with an in-process table backend and in-memory
storage) it counts probes (evaluated candidates, out-of-memory and failed ones included; a proposal
refused as invalid costs nothing and is not counted) until
  (a) every true-front point has a probed point within 1% (multiplicative epsilon indicator <= 1.01),
  (b) the probed front holds 95% of the true front's hypervolume (reference: 1.1 x the true front's
      worst time and worst energy).
A study that stops (guided's early stop, or the budget) before reaching a target counts as "not
reached": medians and worst cases treat it as infinite and the table prints ">budget".
"fewest" is the least number of probes that can reach (a) at all, for a sampler that knew the truth
(an exact minimum set cover of the true front; the baseline probe every study starts with aside): a
front whose points are more than 1% apart needs a probe per point, so no sampler can beat it.
Where the truth has interactions the simulator lacks, each study also records the first probe that held
each pair making a true-front point faster or cheaper ("front_pairs_held_at" in the JSON): before a
probe holds such a pair no model can know it (benchmarks/pair_cover.py: how many probes holding pairs
takes), and (a) minus that probe is the rest of the search.

    python benchmarks/search_efficiency.py --quick          # 1 seed per family (a few minutes)
    python benchmarks/search_efficiency.py --seeds 3        # the table in docs/benchmarks.md
    python benchmarks/search_efficiency.py --samplers tpe random nsga2 --no-docs --out base.json
    python benchmarks/search_efficiency.py --samplers guided --merge base.json   # one table of both
    python benchmarks/search_efficiency.py --cases --merge base.json guided.json  # a table, no new run
    python benchmarks/search_efficiency.py --samplers guided --first-seed 3 --no-docs --out more.json
    python benchmarks/compare_runs.py --before guided.json --after new.json  # a change, study by study
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Iterator, NamedTuple

import numpy as np
import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ground_truths import FAMILIES, TableBackend, holds_term, truth_table  # noqa: E402

from autotune.commands.flags import whole_number_flag  # noqa: E402
from autotune.commands.options import settings_for  # noqa: E402
from autotune.errors import UserError  # noqa: E402
from autotune.report.hypervolume import hypervolume_2d  # noqa: E402
from autotune.study import run_study  # noqa: E402
from autotune.pareto import front_indices  # noqa: E402
from autotune.study.loop import CONVERGED_ATTR, SAMPLERS, make_sampler, valid_checks  # noqa: E402
from autotune.study.retries import is_evaluated
from autotune.study.settings import StudySettings  # noqa: E402
from autotune.candidate import params_key  # noqa: E402

CASES = (("7b", "1"), ("32b", "4"), ("72b", "8"), ("32b", "2-8"))
RESULTS = Path(__file__).resolve().parent / "results" / "search_efficiency.json"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
DOC_START, DOC_END = "<!-- search_efficiency:start -->", "<!-- search_efficiency:end -->"


def case_settings(model: str, nodes: str) -> StudySettings:
    """The study `autotune run --model MODEL --nodes NODES` runs (gh200, the whole node, default space)."""
    return settings_for("--model", model, "--nodes", nodes)


TARGET_EPSILON = 1.01  # target (a): every true-front point has a probed point within 1%


def cover_ratios(found: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(len(truth), len(found)): by how much each found point falls short of each true-front point in
    its worse objective (<= TARGET_EPSILON: it covers that point)."""
    return np.maximum(found[None, :, 0] / truth[:, None, 0], found[None, :, 1] / truth[:, None, 1])


def epsilon_indicator(found: np.ndarray, truth: np.ndarray) -> float:
    if not len(found):
        return math.inf
    return float(cover_ratios(found, truth).min(axis=1).max())


def probes_to_targets(sequence: list, truth_front: np.ndarray) -> tuple[float, float]:
    """Probes until (a) epsilon <= 1.01 and (b) 95% hypervolume; inf where the study never got there."""
    reference = 1.1 * truth_front.max(axis=0)
    best_hv = hypervolume_2d([tuple(p) for p in truth_front], tuple(reference))
    reach_a = reach_b = math.inf
    found = []
    for n, values in enumerate(sequence, start=1):
        if values is not None:
            found.append(values)
        points = np.array(found).reshape(-1, 2)
        if reach_a == math.inf and epsilon_indicator(points, truth_front) <= TARGET_EPSILON:
            reach_a = n
        if reach_b == math.inf and hypervolume_2d([tuple(p) for p in points], tuple(reference)) >= 0.95 * best_hv:
            reach_b = n
        if reach_a < math.inf and reach_b < math.inf:
            break
    return reach_a, reach_b


def fewest_probes_to_cover(candidates: np.ndarray, truth_front: np.ndarray) -> int:
    """The least number of candidates (rows of `candidates`, noise-free figures) with a point within 1%
    of every true-front point: breadth-first over the subsets of the front covered so far."""
    bits = 1 << np.arange(len(truth_front))
    covers = {int(bits[column].sum()) for column in (cover_ratios(candidates, truth_front) <= TARGET_EPSILON).T}
    covers.discard(0)
    full = (1 << len(truth_front)) - 1
    reached, layer, probes = {0}, {0}, 0
    while full not in reached:
        probes += 1
        layer = {m | c for m in layer for c in covers} - reached
        reached |= layer
    return probes


def run_one(settings, checks, table, clean, sampler: str, seed: int, budget: int) -> dict:
    return run_with(make_sampler(seed, budget, sampler, checks), settings, checks, table, clean, budget)


def run_with(sampler: optuna.samplers.BaseSampler, settings, checks, table, clean, budget: int) -> dict:
    """One study of the truth `table` with this sampler object: its probes' noise-free figures in order
    (None: ran out of memory), their knobs, whether it stopped on its own, and its wall time."""
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    start = time.perf_counter()
    run_study(study, settings, TableBackend(table), budget, checks=checks)
    seconds = time.perf_counter() - start
    sequence, knobs = [], []
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        if is_evaluated(t):
            knobs.append(t.user_attrs["candidate"]["knobs"])
            sequence.append(clean[params_key(knobs[-1])])  # noise-free figures
    return {"sequence": sequence, "knobs": knobs, "probes": len(sequence),
            "converged": CONVERGED_ATTR in study.user_attrs, "seconds": seconds}


def making_terms(terms: list[tuple], front_knobs: list[dict]) -> list[tuple]:
    """The interactions of the truth (`terms`) that make a candidate faster or cheaper and that a
    true-front candidate (`front_knobs`) holds: the pairs the front needs a probe to have held."""
    return [t for t in terms if min(t[4], t[5]) < 0 and any(holds_term(k, t) for k in front_knobs)]


def front_pairs_held_at(terms: list[tuple], front_knobs: list[dict], run: dict) -> list[int | None]:
    """For each of the front's interactions (`making_terms`): the first probe that held it and ran (None:
    none did). No sampler can know such a pair before a probe holds it; how long after it (a) takes is
    the rest of the search."""
    return [next((n for n, (k, v) in enumerate(zip(run["knobs"], run["sequence"]), start=1) if v is not None and holds_term(k, t)), None)
            for t in making_terms(terms, front_knobs)]


def _table_order(run: dict) -> tuple:
    case = f"{run['model']}:{run['nodes']}"
    cases = [f"{m}:{n}" for m, n in CASES]
    return (cases.index(case) if case in cases else len(cases), case, FAMILIES.index(run["family"]),
            SAMPLERS.index(run["sampler"]), run["seed"])


def decode_run(run: dict) -> dict:
    """A run read back from a result file: null (JSON's "not reached") is infinite again."""
    return {k: math.inf if v is None and (k.startswith("to_") or k == "epsilon_at_stop") else v for k, v in run.items()}


def true_front(clean: dict[str, tuple | None]) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """From a truth's noise-free figures (`truth_table`): every candidate that runs' (time, energy), the
    true front's, and the knobs of the front's candidates."""
    ran = [(json.loads(key), v) for key, v in clean.items() if v is not None]
    values = np.array([v for _, v in ran])
    on_front = front_indices(values)
    return values, values[on_front], [ran[i][0] for i in on_front]


class Truth(NamedTuple):
    """One truth of a case (`truth_table`) and its true front (`true_front`)."""

    family: str
    seed: int
    table: dict
    clean: dict
    terms: list[tuple]
    values: np.ndarray  # every candidate that runs: noise-free (time, energy)
    front: np.ndarray
    front_knobs: list[dict]
    fewest: int  # fewest_probes_to_cover(values, front)


def truths(checks: list, families, seeds: range) -> Iterator[Truth]:
    """Each family's truth of the case's candidates (`checks`) for each seed, with its true front."""
    for family in families:
        for seed in seeds:
            table, clean, terms = truth_table(checks, family, seed)
            values, front, front_knobs = true_front(clean)
            yield Truth(family, seed, table, clean, terms, values, front, front_knobs, fewest_probes_to_cover(values, front))


def epsilon_at_stop(sequence: list, truth_front: np.ndarray) -> float:
    """The epsilon indicator of every point a study's probes found (`sequence`, None: out of memory)."""
    return epsilon_indicator(np.array([v for v in sequence if v is not None]).reshape(-1, 2), truth_front)


def run_case(model: str, nodes: str, families, seeds: range, samplers, budget: int) -> list[dict]:
    settings = case_settings(model, nodes)
    checks = valid_checks(settings)
    rows = []
    for t in truths(checks, families, seeds):
        for sampler in samplers:
            run = run_one(settings, checks, t.table, t.clean, sampler, t.seed, budget)
            reach_a, reach_b = probes_to_targets(run["sequence"], t.front)
            epsilon = epsilon_at_stop(run["sequence"], t.front)
            out_of_memory = sum(v is None for v in run["sequence"])
            pairs_at = front_pairs_held_at(t.terms, t.front_knobs, run)
            rows.append({"model": model, "nodes": nodes, "family": t.family, "seed": t.seed, "sampler": sampler,
                         "valid": len(t.table), "true_front": len(t.front), "fewest": t.fewest, "probes": run["probes"],
                         "out_of_memory": out_of_memory,
                         "converged": run["converged"], "to_epsilon_1pct": reach_a, "to_hv_95pct": reach_b,
                         "epsilon_at_stop": round(epsilon, 4),
                         "front_pairs_held_at": pairs_at,
                         "seconds": round(run["seconds"], 2)})
            print(f"{model}/{nodes} {t.family:<13} seed {t.seed} {sampler:<7} front {len(t.front):>2}: "
                  f"(a) {reach_a:>4} (b) {reach_b:>4} probes {run['probes']:>3} (out of memory {out_of_memory}){' converged' if run['converged'] else ''} "
                  f"epsilon at stop {epsilon:.3f}"
                  + (f"; the front's pairs first held at probes {pairs_at}" if pairs_at else ""),
                  file=sys.stderr, flush=True)
    return rows


def summarise(rows: list[dict], budget: int) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["nodes"], r["family"], r["sampler"]), []).append(r)
    out = []
    for (model, nodes, family, sampler), rs in groups.items():
        a = [r["to_epsilon_1pct"] for r in rs]
        b = [r["to_hv_95pct"] for r in rs]
        out.append({"model": model, "nodes": nodes, "family": family, "sampler": sampler, "seeds": len(rs),
                    "true_front": statistics.median(r["true_front"] for r in rs),
                    "fewest": statistics.median(r["fewest"] for r in rs),
                    "a_median": statistics.median(a), "a_worst": max(a),
                    "b_median": statistics.median(b), "b_worst": max(b),
                    "probes_median": statistics.median(r["probes"] for r in rs),
                    # Probes spent on candidates that ran out of memory (older files lack it).
                    "out_of_memory_median": (statistics.median(r["out_of_memory"] for r in rs)
                                             if all("out_of_memory" in r for r in rs) else None),
                    # How far the study's front fell short of the truth when it stopped (older files lack it).
                    "epsilon_at_stop_worst": max((r["epsilon_at_stop"] for r in rs if "epsilon_at_stop" in r), default=None)})
    return out


def _cell(value: float, budget: int) -> str:
    return f">{budget}" if value == math.inf else f"{value:g}"


def _count(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _shortfall(epsilon: float | None) -> str:
    """The epsilon indicator as a percentage a user reads: the worst true-front point's best probed
    match is this much slower or more energy-hungry."""
    if epsilon is None:
        return "n/a"
    return "inf" if epsilon == math.inf else f"{100 * (epsilon - 1):.1f}%"


def table_markdown(summary: list[dict], budget: int) -> str:
    lines = ["| case | truth | front | fewest | sampler | seeds | (a) median | (a) worst | (b) median | (b) worst | probes run | of them out of memory | short of the front at stop, worst |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['model']} on {s['nodes']} | {s['family']} | {s['true_front']:g} | {s['fewest']:g} | {s['sampler']} | {s['seeds']} | "
                     f"{_cell(s['a_median'], budget)} | {_cell(s['a_worst'], budget)} | {_cell(s['b_median'], budget)} | "
                     f"{_cell(s['b_worst'], budget)} | {s['probes_median']:g} | {_count(s.get('out_of_memory_median'))} | {_shortfall(s.get('epsilon_at_stop_worst'))} |")
    return "\n".join(lines)


def write_docs(markdown: str, command: str) -> None:
    text = DOCS.read_text()
    block = f"{DOC_START}\nCommand: `{command}`\n\n{markdown}\n{DOC_END}"
    if DOC_START in text:
        head, rest = text.split(DOC_START, 1)
        text = head + block + rest.split(DOC_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Search efficiency (`benchmarks/search_efficiency.py`)\n\n" + block + "\n"
    DOCS.write_text(text)


# What the table needs of a merged run (older runs have no epsilon_at_stop: their column says n/a).
_RUN_KEYS = ("model", "nodes", "family", "seed", "sampler", "true_front", "fewest", "probes",
             "to_epsilon_1pct", "to_hv_95pct")


def _case_flag(text: str) -> tuple[str, str]:
    """MODEL:NODES, checked as `autotune run --model --nodes` checks them."""
    model, colon, nodes = text.partition(":")
    if not colon:
        raise argparse.ArgumentTypeError(f"{text!r} is not MODEL:NODES; write e.g. 32b:4 or 32b:2-8")
    try:
        case_settings(model, nodes)
    except UserError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    return model, nodes


def _check_run(r: dict) -> None:
    """A merged run's fields, each of its type and range: a hand-edited or foreign file fails here, in one
    line, not in the middle of the table."""
    for key in ("model", "nodes", "family", "sampler"):
        if not isinstance(r[key], str):
            raise ValueError(f"{key} {r[key]!r} is not a string")
    for key, low in (("seed", 0), ("probes", 0), ("true_front", 1), ("fewest", 1)):
        if type(r[key]) is not int or r[key] < low:
            raise ValueError(f"{key} {r[key]!r} is not a whole number of at least {low}")
    for key in ("to_epsilon_1pct", "to_hv_95pct"):
        if r[key] != math.inf and not (type(r[key]) is int and 1 <= r[key] <= r["probes"]):
            raise ValueError(f"{key} {r[key]!r} is neither null (not reached) nor a count of the run's {r['probes']} probes")
    if "out_of_memory" in r and not (type(r["out_of_memory"]) is int and 0 <= r["out_of_memory"] <= r["probes"]):
        raise ValueError(f"out_of_memory {r['out_of_memory']!r} is not a count of the run's {r['probes']!r} probes")
    gap = r.get("epsilon_at_stop", 1.0)
    if type(gap) not in (int, float) or not gap >= 1.0:
        raise ValueError(f"epsilon_at_stop {gap!r} is not an epsilon indicator (a number of at least 1)")


def _results_file(parser: argparse.ArgumentParser, path: Path, flag: str = "--merge") -> tuple[int, list[dict]]:
    """The budget and the runs of a results file, decoded and checked; one line and exit 2 for anything else."""
    try:
        data = json.loads(path.read_text())
        budget = data["budget"]
        if type(budget) is not int or budget < 1:
            raise ValueError(f"budget {budget!r} is not a whole number of at least 1")
        runs = [decode_run(r) for r in data["runs"]]
        missing = sorted({key for r in runs for key in _RUN_KEYS if key not in r})
        if missing:
            raise KeyError(f"runs without {', '.join(missing)}: an older format")
        for r in runs:
            _check_run(r)
        return budget, runs
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        parser.error(f"{flag} {path}: not a results file of this benchmark ({type(exc).__name__}: {exc}); "
                     "pass one its --out wrote")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=whole_number_flag(low=1), default=3)
    parser.add_argument("--first-seed", type=whole_number_flag(low=0, high=2**32 - 1), default=0,
                        help="the seeds run are FIRST_SEED ... FIRST_SEED + SEEDS - 1 (default: 0): a second "
                        "sample of the same truth families, to merge with the first")
    parser.add_argument("--quick", action="store_true", help="1 seed per family")
    parser.add_argument("--budget", type=whole_number_flag(low=1), default=60, help="probes per study at most (default: 60)")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--cases", nargs="*", type=_case_flag, default=list(CASES),
                        help="MODEL:NODES (none: only the --merge files)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--merge", nargs="+", type=Path, default=[], metavar="JSON",
                        help="add the runs of earlier result files (other samplers, other seeds) to the table")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite the table in docs/benchmarks.md")
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + (1 if args.quick else args.seeds))
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rows = []
    for path in args.merge:
        budget, runs = _results_file(parser, path)
        # ">60" and "not reached" mean the budget the table is labelled with.
        if budget != args.budget:
            parser.error(f"--merge {path}: its studies had a budget of {budget} probes, this table's is {args.budget}; "
                         f"pass --budget {budget} or merge runs of the same budget")
        rows += runs
    for model, nodes in args.cases:
        rows += run_case(model, nodes, args.families, seeds, args.samplers, args.budget)
    # A study run again here replaces its merged record (same case, truth, seed and sampler).
    rows = list({(r["model"], r["nodes"], r["family"], r["seed"], r["sampler"]): r for r in rows}.values())
    rows.sort(key=_table_order)
    seeds = len({r["seed"] for r in rows})
    summary = summarise(rows, args.budget)
    markdown = table_markdown(summary, args.budget)
    print(markdown)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    encode = lambda v: None if v == math.inf else v  # noqa: E731  (JSON has no infinity: null = not reached)
    args.out.write_text(json.dumps({
        "budget": args.budget, "seeds": seeds,
        "summary": [{k: encode(v) for k, v in s.items()} for s in summary],
        "runs": [{k: encode(v) for k, v in r.items()} for r in rows],
    }, indent=1) + "\n")
    if not args.no_docs:
        write_docs(markdown, "python benchmarks/search_efficiency.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
