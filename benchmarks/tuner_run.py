"""How long `autotune run` takes on the simulate backend (target: 30 trials of 32b on 4 nodes in
under a minute on a 2-core machine), and how many Optuna trials it spent for its evaluated
candidates (every trial should be a new candidate: evaluated, or an invalid one pruned once).
Each case runs the real CLI in a fresh run directory.

    python benchmarks/tuner_run.py --out tuner_run.json
    python benchmarks/tuner_run.py --only 32b:2-8:200 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = [
    ("32b", "4", 30),
    ("32b", "2-8", 30),
    ("72b", "8", 60),
    ("32b", "2-8", 200),
]


def _optuna_trials(study_db: Path) -> int:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return len(optuna.load_study(study_name="autotune", storage=f"sqlite:///{study_db}").trials)


def time_run(model: str, nodes: str, trials: int) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "autotune.cli", "run", "--model", model, "--nodes", nodes, "--trials", str(trials),
             "--backend", "simulate", "--out", str(out)],
            check=True, capture_output=True, timeout=600,
        )
        seconds = time.perf_counter() - start
        pareto = json.loads((out / "pareto.json").read_text())
        pareto["optuna_trials"] = _optuna_trials(out / "study.db")
    return seconds, pareto


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("tuner_run.json"))
    parser.add_argument("--only", help="one case, MODEL:NODES:TRIALS (e.g. 32b:2-8:200)")
    args = parser.parse_args()
    cases = CASES
    if args.only:
        model, nodes, trials = args.only.split(":")
        cases = [(model, nodes, int(trials))]
    rows = []
    for model, nodes, trials in cases:
        runs = [time_run(model, nodes, trials) for _ in range(args.repeats)]
        seconds = [s for s, _ in runs]
        pareto = runs[0][1]
        rows.append({
            "model": model, "nodes": nodes, "trials": trials,
            "seconds_median": statistics.median(seconds), "seconds_max": max(seconds),
            "front_points": len(pareto["front"]), "feasible_points": len(pareto["feasible"]),
            "optuna_trials": pareto["optuna_trials"],
        })
    print(f"{os.cpu_count()} CPU cores; simulate backend; {args.repeats} runs per case")
    print(f"{'model':<6}{'nodes':>6}{'trials':>7}{'median s':>10}{'max s':>8}{'front':>7}{'feasible':>9}{'optuna':>8}")
    for r in rows:
        print(f"{r['model']:<6}{r['nodes']:>6}{r['trials']:>7}{r['seconds_median']:>10.1f}{r['seconds_max']:>8.1f}"
              f"{r['front_points']:>7}{r['feasible_points']:>9}{r['optuna_trials']:>8}")
    args.out.write_text(json.dumps({"cpu_cores": os.cpu_count(), "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
