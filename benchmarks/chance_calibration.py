"""How often the guided sampler's chances come true: each proposal's stated chance of beating the probed
front by more than 1% (`Outlook.chance_to_enter`, what the sampler ranks candidates by and the early stop
asks of every candidate), against whether the candidate's noise-free figure did beat the noise-free
figures of the probed front (benchmarks/ground_truths.py's truths, as in benchmarks/search_efficiency.py).

A calibrated model's proposals at 0.5 come true half the time. Below the stop's threshold (STOP_CHANCE)
they must come true rarely, or the study stops short. The table also gives, per bin, the proposed
candidates' miss in standard deviations (rms of (log true - log mean) / log std, time and energy): about
1 where the model's doubt is the size of its error. Proposals start once MIN_OK_PROBES probes ran (the
baseline and the predicted front's ends and knee come first, whatever their chance).

    python benchmarks/chance_calibration.py                   # interactions, combined: 3 seeds, 4 cases
    python benchmarks/chance_calibration.py --families noise --seeds 1 --cases 32b:4
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ground_truths import FAMILIES, TableBackend, truth_table  # noqa: E402
from search_efficiency import CASES, case_settings, _case_flag  # noqa: E402

from autotune.candidate import params_key  # noqa: E402
from autotune.commands.flags import whole_number_flag  # noqa: E402
from autotune.pareto import front_indices  # noqa: E402
from autotune.study import run_study  # noqa: E402
from autotune.study.acquisition import enters_front  # noqa: E402
from autotune.study.loop import make_sampler, valid_checks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "chance_calibration.json"
BINS = (0.0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0)
MIN_OK_PROBES = 4
BUDGET = 60


def proposal_record(view, i: int, probed: list[int], true_values: np.ndarray) -> dict | None:
    """The stated chance of proposal `i` and what came of it, judged on `true_values` (N, 2; NaN where
    the candidate runs out of memory): None where the proposal or the whole probed front has no figure."""
    if not np.isfinite(true_values[i]).all():
        return None
    front = true_values[probed]
    front = front[np.isfinite(front).all(axis=1)]
    if not len(front):
        return None
    front = front[front_indices(front)]
    came_true = bool(enters_front(true_values[i][None, None, :], front)[0, 0])
    miss = (np.log(true_values[i]) - np.log(view.mean[i])) / view.log_std[i]
    return {"chance": float(view.chance_to_enter[i]), "came_true": came_true, "miss_in_std": miss.tolist()}


def calibration_rows(records: list[dict]) -> list[dict]:
    """Per bin of stated chance (BINS; the last bin holds 1.0): proposals, their mean stated chance, the
    share that came true, and the rms of their miss in standard deviations per objective."""
    rows = []
    for low, high in zip(BINS[:-1], BINS[1:]):
        last = high == BINS[-1]
        inside = [r for r in records if low <= r["chance"] < high or (last and r["chance"] == high)]
        if not inside:
            continue
        miss = np.array([r["miss_in_std"] for r in inside])
        rows.append({"low": low, "high": high, "proposals": len(inside),
                     "stated": float(np.mean([r["chance"] for r in inside])),
                     "came_true": float(np.mean([r["came_true"] for r in inside])),
                     "miss_rms_std": np.sqrt((miss**2).mean(axis=0)).tolist()})
    return rows


def study_records(settings, checks: list, family: str, seed: int) -> list[dict]:
    table, clean, _terms = truth_table(checks, family, seed)
    sampler = make_sampler(seed, BUDGET, "guided", checks)
    keys = [params_key(p) for p in sampler.predictions.params]
    true_values = np.array([clean[k] if clean.get(k) is not None else (np.nan, np.nan) for k in keys], dtype=float)
    records = []
    propose = sampler.next_candidate

    def recording(study, current_trial):
        i = propose(study, current_trial)
        view = sampler.outlook(study, current_trial)
        probed = sorted(view.observations.ok)
        if i is not None and len(probed) >= MIN_OK_PROBES:
            record = proposal_record(view, i, probed, true_values)
            if record is not None:
                records.append(dict(record, family=family, seed=seed, probes=len(probed)))
        return i

    sampler.next_candidate = recording  # this sampler only: the study runs as it would
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    run_study(study, settings, TableBackend(table), BUDGET, checks=checks)
    return records


def table_markdown(rows: list[dict]) -> str:
    lines = ["| stated chance | proposals | mean stated | came true | miss in std, time (rms) | miss in std, energy (rms) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['low']:.2f}-{r['high']:.2f} | {r['proposals']} | {r['stated']:.2f} | {r['came_true']:.2f} "
                     f"| {r['miss_rms_std'][0]:.1f} | {r['miss_rms_std'][1]:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--seeds", type=whole_number_flag(low=1), default=3)
    parser.add_argument("--first-seed", type=whole_number_flag(low=0, high=2**32 - 1), default=0)
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=["interactions", "combined"])
    parser.add_argument("--cases", nargs="+", type=_case_flag, default=list(CASES), metavar="MODEL:NODES")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    records = []
    for model, nodes in args.cases:
        settings = case_settings(model, nodes)
        checks = valid_checks(settings)
        for family in args.families:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                found = [dict(r, case=f"{model}/{nodes}") for r in study_records(settings, checks, family, seed)]
                print(f"{model}/{nodes} {family} seed {seed}: {len(found)} proposals", flush=True)
                records += found
    rows = calibration_rows(records)
    print(table_markdown(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows, "records": records}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
