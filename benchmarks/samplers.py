"""Which sampler finds the time-energy front fastest on our own problem? (Optuna's advice: measure.)

Runs the study loop with the simulate backend for several seeds and budgets, with our sampler
(multivariate TPE, short random start, baseline enqueued) against plain random sampling, and reports
the hypervolume reached as a fraction of the true front's (every valid candidate simulated).

    python benchmarks/samplers.py --model 32b --nodes 2-8 --budgets 10 20 40 --seeds 5 --out samplers.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import optuna

from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import add_study_options, build_settings
from autotune.report.hypervolume import hypervolume_2d
from autotune.simulator import simulate
from autotune.space import enumerate_space
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler


def true_front(settings):
    points = []
    for check in enumerate_space(settings.space, settings.model, settings.hardware, settings.workload, settings.gpus_per_node):
        if check.valid:
            s = simulate(check.candidate)
            points.append((s.time_s, s.energy_kj / 1000.0))
    return points


def study_points(study):
    return [
        (t.values[0], t.values[1] / 1000.0)
        for t in study.trials
        if t.state == optuna.trial.TrialState.COMPLETE and all(v <= 0 for v in t.constraints.values())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_options(parser)
    parser.add_argument("--budgets", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("samplers.json"))
    args = parser.parse_args()
    settings = build_settings(args)
    everything = true_front(settings)
    reference = (max(p[0] for p in everything) * 1.01, max(p[1] for p in everything) * 1.01)
    best = hypervolume_2d(everything, reference)
    samplers = {
        "tpe": lambda seed, n: make_sampler(seed, n),  # --sampler tpe: the default before the guided sampler
        "random": lambda seed, n: optuna.samplers.RandomSampler(seed=seed),
    }
    rows = []
    for budget in args.budgets:
        for name, factory in samplers.items():
            fractions, seconds = [], []
            for seed in range(args.seeds):
                with tempfile.TemporaryDirectory() as tmp:
                    start = time.perf_counter()
                    study = open_study(Path(tmp), None, factory(seed, budget))
                    run_study(study, settings, SimulateBackend(), budget)
                    seconds.append(time.perf_counter() - start)
                    fractions.append(hypervolume_2d(study_points(study), reference) / best)
            rows.append(
                {
                    "sampler": name,
                    "trials": budget,
                    "hypervolume_fraction_mean": statistics.mean(fractions),
                    "hypervolume_fraction_min": min(fractions),
                    "seconds_mean": statistics.mean(seconds),
                }
            )
    print(f"{settings.model.name} on {args.nodes} node(s) of {settings.hardware.name}: {len(everything)} valid candidates")
    print(f"{'sampler':<16}{'trials':>7}{'HV mean':>10}{'HV min':>9}{'s/study':>9}")
    for r in rows:
        print(
            f"{r['sampler']:<16}{r['trials']:>7}{r['hypervolume_fraction_mean']:>10.3f}"
            f"{r['hypervolume_fraction_min']:>9.3f}{r['seconds_mean']:>9.1f}"
        )
    args.out.write_text(json.dumps({"settings": settings.to_dict(), "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
