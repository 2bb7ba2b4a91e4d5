"""`autotune compare RUN_DIR RUN_DIR [RUN_DIR ...]`: two or more studies side by side from their pareto.json
files (4 against 8 nodes, with and without power limits, two seeds, simulated against measured): what differs
in their inputs, each pick's configuration and figures against the first study's, and the configurations on
more than one front. Reads only; writes nothing (report.compare holds the comparison, and its JSON's keys)."""

from __future__ import annotations

import json
import sys

_DESCRIPTION = """\
Compare two or more studies from their run directories' pareto.json, or those files alone (written by
`autotune run` and `autotune report`; nothing is written, study.db is not read). Prints:
  1. the inputs that differ (model, hardware and its profile's hash, the default power limit a fraction is
     of, node counts, GPUs, workload, each knob's searched values, backend and where the figures came from,
     sampler and seed, replayed file),
     and briefly those that are the same;
  2. each pick (fastest, min-energy, knee, max-slowdown, cost-weighted) side by side: each study's
     configuration, time and energy with where they came from (measured, estimated, simulated), and the
     change against the first study in percent; a pick is compared by its configuration, not its trial
     number, which is each study's own;
  3. the configurations on more than one study's front, matched by their knobs (per pair of studies: on the
     node count too where the two share one; at each one's own count where they do not, as for 4 against 8
     nodes), with each study's figures.
Studies that are not like-for-like (another model or workload; simulated against measured figures,
whose difference includes the simulator's error) are compared all the same, and said to be so."""

_JSON_HELP = ("print the comparison as JSON: studies, inputs (differ, same, not_recorded), caveats, picks and "
              "shared_front, figures in time_s and energy_kj, changes in *_change_pct (every key: "
              "docs/commands.md, autotune compare)")


def register(subparsers) -> None:
    import argparse

    from autotune.commands.flags import path_flag

    parser = subparsers.add_parser("compare", help="compare the picks and fronts of two or more run directories",
                                   description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=path_flag, nargs="+", metavar="RUN_DIR",
                        help="the --out directories of `autotune run`s, each holding its pareto.json, or the pareto.json "
                             "files themselves; the first is the reference every change is against")
    parser.add_argument("--json", action="store_true", help=_JSON_HELP)
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from autotune.errors import UserError
    from autotune.report.compare import compare_document
    from autotune.report.compare_study import pareto_file, read_study

    if len(args.run_dirs) < 2:
        raise UserError(f"compare takes two or more run directories, and got one ({args.run_dirs[0]}); add the run "
                        f"directory to compare it with, or see one study with `autotune report {args.run_dirs[0]}`")
    seen = {}
    for run_dir in args.run_dirs:
        twin = seen.setdefault(pareto_file(run_dir).resolve(), run_dir)  # a run directory and its pareto.json: one study
        if twin is not run_dir:  # every change against itself would read 0%: a slip, not a comparison
            same = "" if str(twin) == str(run_dir) else f" (also as {twin})"
            raise UserError(f"{run_dir} is given twice{same}; pass each run directory (or pareto.json) once")
    studies = [read_study(run_dir) for run_dir in args.run_dirs]
    document = compare_document(studies)
    if args.json:
        # allow_nan=False: a figure that slipped past the checks fails here, never prints JSON's invalid NaN or Infinity.
        sys.stdout.write(json.dumps(document, indent=2, allow_nan=False) + "\n")
    else:
        from autotune.report.compare_table import print_comparison

        print_comparison(studies, document)
    return 0
