"""`autotune space`: every candidate of the space, valid or not, with its memory estimate and reason."""

from __future__ import annotations

import json
import sys

# More candidates than this are not tabled whole (a table row costs about a millisecond to lay out, and no reader
# scrolls 100,000 lines): the valid ones are, and --json gives every one.
TABLE_ROWS_MAX = 20_000


def register(subparsers) -> None:
    from autotune.commands.flags import path_flag
    from autotune.commands.options import add_study_options

    parser = subparsers.add_parser(
        "space", help="list every candidate with its validity and memory estimate",
        description="List every candidate of the space `autotune run` would search, valid or not, with its memory "
                    "estimate and why an invalid one is; writes no file.")
    add_study_options(parser)
    # The space `autotune run` would search: its shape defaults come from these as run's do (--nodes help).
    where = parser.add_argument_group("where the previewed run's probes would start (the default nodes and GPUs per node)")
    where.add_argument("--backend", choices=("auto", "simulate", "launch"), default="auto",
                       help="the backend of the run to preview: with launch, and no SLURM allocation or --hostfile, "
                       "one node of this machine, and the power limits and SM clocks its probes cannot set (no NVML, no "
                       "root) listed as not searched, as run leaves them out; simulate adds the simulated figures, as "
                       "--simulate does (default: auto)")
    where.add_argument("--hostfile", type=path_flag, metavar="FILE", help="DeepSpeed hostfile: its hosts and fewest slots, as for run")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--simulate", action="store_true",
                        help="add simulated time_s, energy_kj, tflops of valid ones, and the study they are for (model, hardware, workload)")
    parser.add_argument("--valid", action="store_true",
                        help=f"list only the valid candidates (those a study searches); a table of more than "
                             f"{TABLE_ROWS_MAX:,} candidates lists only these anyway (--json lists every one)")
    parser.set_defaults(func=_run)


def _rows(checks: list, simulate: bool, hardware) -> list[dict]:
    from autotune.backends.replay import study_of
    from autotune.report.error_bars import profile_error
    from autotune.report.error_scope import measured_scope, outside_scope, workload_values
    from autotune.simulator import simulate as simulate_candidate

    error = profile_error(hardware)
    measured_on = measured_scope(error)
    rows = []
    for check in checks:
        row = {
            "params": check.candidate.knobs.to_dict(),
            "valid": check.valid,
            "reason": check.reason,
            # Whole: a replay of this list reproduces the simulate run's pareto.json to the byte (trial 47 #9).
            "peak_mem_gib": check.memory.peak_mem_gib if check.memory else None,
        }
        if simulate and check.valid:
            step = simulate_candidate(check.candidate)
            row.update({"time_s": step.time_s, "energy_kj": step.energy_kj, "tflops": step.tflops, "source": "simulated",
                        "study": study_of(check.candidate)})  # what replay checks the figures are for
            # Each figure's error as the table's "+- 4.1%"; null where not known (the table's "+- ?%": an
            # uncalibrated profile, or a configuration outside what its error was measured on).
            unknown = measured_on and outside_scope(measured_on, check.candidate.model.name, row["params"],
                                                    hardware.gpu.max_sm_clock_mhz, check.candidate.gpus,
                                                    workload_values(check.candidate.workload, hardware.cuda))
            row["simulator_error_pct"] = {metric: None if unknown else error.get(f"{metric}_pct")
                                          for metric in ("time_s", "energy_kj", "tflops")}
        rows.append(row)
    return rows


def _narrowed_as_run_would(args, settings) -> tuple:
    """(the settings `autotune run` with these flags would search, its backend, what of the file's power limits and
    clocks it would leave out: options.narrowed_for_backend). With --backend launch the probes' NVML is asked as run
    asks it, where the preview listed as valid the limits and clocks run then pinned (trial75 #14); the backend is
    the run's with its default probe options, and writes nothing (its run directory is a temporary one, never made)."""
    import tempfile
    from argparse import Namespace
    from pathlib import Path

    from autotune.backends.select import choose_backend
    from autotune.backends.simulate import SimulateBackend
    from autotune.commands.options import narrowed_for_backend
    from autotune.commands.run import LAUNCH_ONLY

    if args.backend != "launch":  # auto asks no node (a hostfile's first over ssh): the preview stays a pure one
        backend = SimulateBackend("the preview of a run")
        return (*narrowed_for_backend(settings, backend), backend)
    flags = Namespace(**{**LAUNCH_ONLY, **vars(args), "measurements": None, "allow_estimated_energy": False})
    with tempfile.TemporaryDirectory(prefix="autotune-space-") as scratch:
        backend = choose_backend(flags, Path(scratch) / "preview", max(settings.space.nodes), settings.gpus_per_node,
                                 settings.hardware)
        narrowed, not_searched = narrowed_for_backend(settings, backend)
    return narrowed, not_searched, backend


def _not_searched_as_invalid(checks: list, space, not_searched: list[dict]) -> list:
    """`checks` with each candidate whose power limit or clock the run would not search (the probes cannot set it)
    made invalid, its reason saying why, as the rules' own refusals are listed."""
    from autotune.space import CandidateCheck

    why = {e["knob"]: e["why"] for e in not_searched if e["fix"]}
    if not why:
        return checks
    out = []
    for check in checks:
        knobs = check.candidate.knobs
        unset = next((knob for knob in why if getattr(knobs, knob) not in space.values(knob)), None)
        out.append(CandidateCheck(check.candidate, f"not searched: {why[unset]}", check.memory)
                   if check.valid and unset else check)
    return out


def _run(args) -> int:
    from autotune.backends.launchers import check_hostfile
    from autotune.commands.options import build_settings, fill_from_allocation, not_searched_lines, settings_warnings

    check_hostfile(args.hostfile)
    # The preview of a simulate run shows what that run would see: the simulated figures (trial 48 §4: `--backend
    # simulate` listed none, `--simulate` did).
    args.simulate = args.simulate or args.backend == "simulate"
    filled = fill_from_allocation(args)
    if filled.said:
        print(filled.said, file=sys.stderr)
    for line in filled.warnings:
        print(f"warning: {line}", file=sys.stderr)
    from autotune.space import enumerate_space
    from autotune.study.valid import node_counts_without_candidates, nothing_valid

    settings = build_settings(args)
    for line in settings_warnings(args, settings):
        print(f"warning: {line}", file=sys.stderr)
    narrowed, not_searched, backend = _narrowed_as_run_would(args, settings)
    for i, line in enumerate(not_searched_lines(not_searched, narrowed, backend)):
        print(f"{'warning: ' if i == 0 else ''}{line}", file=sys.stderr)  # as run says them, before its first probe
    checks = list(enumerate_space(settings.space, settings.model, settings.hardware, settings.workload, settings.gpus_per_node))
    checks = _not_searched_as_invalid(checks, narrowed.space, not_searched)
    # What `autotune run` would refuse or leave out, said here too (on stderr: the listing stays data).
    nothing = nothing_valid(checks)
    for line in [nothing] if nothing else node_counts_without_candidates(checks):
        print(f"warning: {line}", file=sys.stderr)  # as run says them
    rows = _rows(checks, args.simulate, settings.hardware)
    valid, total = sum(r["valid"] for r in rows), len(rows)
    listed_valid = args.valid
    if not args.json and not args.valid and total > TABLE_ROWS_MAX:
        # --nodes 1-64 of 72b made a 310,000-line table after 4 minutes, 99% of it invalid rows (trial 46).
        listed_valid = True
        print(f"autotune space: {total:,} candidates are too many for a table: listing the {valid:,} valid ones (as "
              "--valid); --json lists every candidate with its reason", file=sys.stderr)
    if listed_valid:
        rows = [r for r in rows if r["valid"]]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from rich.table import Table

    from autotune.report.fitted_table import print_table
    from autotune.report.table import knob_columns, stdout_console
    from autotune.report.units import energy_unit, figure, time_unit

    # The report's knob columns, the SM clock cap among them where a candidate has one.
    columns = knob_columns((r["params"] for r in rows), settings.hardware)  # "power limit (x 680 W)", as the run's tables
    # The parameters of the model as autotune builds it: a config read otherwise than its checkpoint shows at a
    # glance (trial 44: a 21.8B mixture of experts listed as a dense 3.3B model, with no count anywhere).
    model = settings.model
    from autotune.models import params_text

    built = (f"; as built: {params_text(model.params())} parameters (decoder {params_text(model.llm.params())}, vision "
             f"tower and projector {params_text(model.params() - model.llm.params())})")
    table = Table(title=f"{model.name} on {settings.hardware.name}: {valid} of {total} valid"
                        f"{' (listed: the valid ones)' if listed_valid else ''}{built}")
    for _, title in columns:
        table.add_column(title)
    table.add_column("mem GiB (estimated)")  # the memory estimate that judges a candidate valid
    table.add_column("valid / reason")
    if args.simulate:
        from autotune.report.error_bars import error_sentence, error_suffix, profile_error
        from autotune.report.error_scope import measured_scope, outside_scope, scope_sentence, workload_values

        error = profile_error(settings.hardware)  # the profile's leave-one-out error: "+- 9%", or "+- ?%"
        scope = scope_sentence(error)  # where the headers' "+- 3.4%" was measured
        measured_on = measured_scope(error)
        if not any(key.endswith("_pct") for key in error):
            # What the columns' "+- ?%" means (not calibrated, or calibrated without an error it can vouch for),
            # said once beside the table as the study report says it; a stated error is in the headers.
            print(f"autotune space: {error_sentence(error)}", file=sys.stderr)
        elif scope:
            print(f"autotune space: the simulated columns' error is the profile's leave-one-out mean.{scope}"
                  f"{' The rows outside it show +- ?%: their error is not known.' if measured_on else ''}", file=sys.stderr)
        simulated = [r for r in rows if r["valid"]]
        t_unit, t_div = time_unit([r["time_s"] for r in simulated])
        e_unit, e_div = energy_unit([r["energy_kj"] for r in simulated])
        for column in (f"time {t_unit} (sim{error_suffix(error, 'time_s')})", f"energy {e_unit} (sim{error_suffix(error, 'energy_kj')})",
                       f"TFLOP/s (sim{error_suffix(error, 'tflops')})"):
            table.add_column(column, justify="right")
    for r in rows:
        p = r["params"]
        cells = [str(p[knob]) for knob, _ in columns]
        cells += ["-" if r["peak_mem_gib"] is None else f"{r['peak_mem_gib']:.1f}", "valid" if r["valid"] else r["reason"]]
        if args.simulate:
            # The header's error holds where it was measured; elsewhere a figure's error is not known.
            top_clock = settings.hardware.gpu.max_sm_clock_mhz
            bar = " +- ?%" if measured_on and outside_scope(measured_on, settings.model.name, p, top_clock,
                                                            p["nodes"] * settings.gpus_per_node,
                                                            workload_values(settings.workload, settings.hardware.cuda)) else ""
            cells += ([figure(r["time_s"], t_div) + bar, figure(r["energy_kj"], e_div) + bar, figure(r["tflops"]) + bar]
                      if r["valid"] else ["", "", ""])
        table.add_row(*cells)
    print_table(stdout_console(), table, keys=None)  # no column names a candidate: a split table numbers them
    return 0
