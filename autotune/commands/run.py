"""`autotune run`: search, evaluate, report, export."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from pathlib import Path

from autotune.counted import agreeing, counted
from autotune.backends.probe_options import DEFAULT_LAUNCHER, LAUNCHERS, PROBE_OPTIONS, probe_bounds, probe_default
from autotune.commands.flags import (GivenOnce, add_output_flag, number_flag, path_flag, storage_shown, study_name_flag, text_flag,
                                     whole_number_flag)
from autotune.commands.options import (add_study_options, build_settings, fill_from_allocation, narrowed_for_backend,
                                       not_searched_lines, settings_warnings)
from autotune.commands.report import add_pick_options
from autotune.errors import UserError, signal_words, stop_signals
from autotune.shell import shell_path
from autotune.space import node_span
from autotune.space.unsearched import NOT_SEARCHED_ATTR
from autotune.study.stop_rule import stop_rule_help
from autotune.study.time_limit import (REPORT_MARGIN_S, TIME_LIMIT_TOO_SHORT_ATTR, TimeLimitError, parse_time_limit,
                                       run_exit_status, run_time_limit, stops_again, time_limit_line, time_stop_line)
from autotune.study.storage import STUDY_NAME, recorded_storage, stored_settings


NSGA2_POPULATION = 50  # optuna.samplers.NSGAIISampler's default population_size, which make_sampler keeps

SEED_ATTR = "seed"  # the --seed of the study's last run (the sampler's kind is kept as "sampler")

# The options only the launch backend reads (argparse names), with LaunchBackend's defaults: one given to
# another backend is said.
LAUNCH_ONLY = {"launcher": DEFAULT_LAUNCHER,
               **{flag[2:].replace("-", "_"): default for flag, default, _ in PROBE_OPTIONS.values()}}


def ignored_launch_options(args: argparse.Namespace, backend_name: str) -> str | None:
    """A line naming the launch options given to a backend that starts no probe, and
    --allow-estimated-energy given to the simulate backend, or None. (A replay reads that flag: it ranks
    a recorded estimate only with it.)"""
    said = []
    if backend_name != "launch":
        given = [f"--{name.replace('_', '-')}" for name, default in LAUNCH_ONLY.items() if getattr(args, name) != default]
        if given:
            said.append(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} read only by --backend launch: "
                        f"the {backend_name} backend starts no probe")
    if backend_name == "simulate" and args.allow_estimated_energy:
        said.append("--allow-estimated-energy is read only by --backend launch and replay: the simulate backend's "
                    "energy is simulated, never estimated from a probe")
    return "; ".join(said) or None


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="search DeepSpeed configurations for time and energy to solution",
        description="Run (or resume) a multi-objective study and write RUN_DIR/{study.db,pareto.json,configs/}.",
        epilog=stop_rule_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog's list keeps its lines
    )
    add_study_options(parser)
    study = parser.add_argument_group("study")
    study.add_argument(
        "--trials", type=whole_number_flag(low=1), default=30, metavar="N",
        help="budget: candidates to evaluate at most, earlier runs and every worker included (default: 30); "
        "the guided sampler stops earlier when it has converged (early stop, below)",
    )
    study.add_argument(
        "--time-limit", type=_time_limit_flag, default=None, metavar="TIME",
        help="no probe starts that cannot finish, the reports written, within this time of the run's start: the study "
        "stops there as at --trials (the same command resumes it). As sbatch --time takes it: MINUTES (a bare number "
        "is minutes, as in sbatch), MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES or "
        "DAYS-HOURS:MINUTES:SECONDS. A probe is taken to last as long as the longest of the study under these probe "
        "settings, at most --probe-timeout x --repeats (and the time to stop one), which it is taken to last where "
        f"none ran under them; {REPORT_MARGIN_S / 60:g} minutes are kept for the reports "
        "(default: inside a SLURM job, the job's end, SLURM_JOB_END_TIME, which also bounds a later --time-limit; else no "
        "limit)",
    )
    study.add_argument(
        "--sampler", choices=("guided", "tpe", "random", "nsga2"), default="guided",
        help="guided (default): simulator predictions corrected by the probes, probes next the candidate most likely to beat the front, "
        "early stop; tpe, random, nsga2: Optuna's, for comparison (they run the whole budget)",
    )
    study.add_argument("--seed", type=whole_number_flag(low=0, high=2**32 - 1), default=0, metavar="N", help="sampler seed: the same command and seed give the same study, run by one worker; the guided sampler "
                       "resumes as if never stopped, while tpe, random and nsga2 draw afresh on a resume or beside another "
                       "worker, each worker with a seed derived from this one and its first trial's number (tpe's random "
                       "start grows with --trials) (default: 0)")
    add_output_flag(study, "--out", aliases=("-o", "--output"), type=path_flag, metavar="DIR",
                    help=f"run directory: new, empty or an earlier run's (default: runs/<model>-<nodes>n, the model by its own "
                         f"name, never its path: {default_run_dir_examples()}; and -NAME with --study-name NAME)")
    study.add_argument(
        "--storage", type=text_flag, metavar="URL", action=GivenOnce, what="the storage", shown=storage_shown, help="an Optuna RDB storage URL (sqlite:///PATH, postgresql://USER@HOST/DB) instead of "
                                          "RUN_DIR/study.db; workers sharing one split the trials"
    )
    study.add_argument(
        "--study-name", type=study_name_flag, default=STUDY_NAME, metavar="NAME",
        help="the study's name in its storage (default: autotune); several studies share one --storage database "
        "under different names, as optuna-dashboard lists them",
    )
    study.add_argument("--objectives", type=_objectives_flag, choices=("time,energy", "time"), default="time,energy",
                       metavar="OBJECTIVES",
                       help="what to minimise: time,energy (the front of both, default; energy,time is the same) or time "
                       "(the fastest alone)")
    study.add_argument("-q", "--quiet", action="store_true",
                       help="no line or progress bar per trial (warnings, the stop and the report are still printed)")
    probe = parser.add_argument_group("evaluation")
    probe.add_argument(
        "--backend", choices=("auto", "simulate", "launch", "replay"), default="auto",
        help="launch: real probe runs; simulate: the analytic model; replay: recorded results (--measurements); "
        "auto (default): replay where --measurements is given, else launch when the GPUs are here, else simulate",
    )
    probe.add_argument(
        "--measurements", type=path_flag, metavar="FILE",
        help="recorded results for --backend replay: JSON lines, one record per candidate: params (a value for every "
        "knob), status ok|oom|failed (default: ok), time_s (s, to solution), energy_kj (kJ), tflops, peak_mem_gib (GiB), "
        "source measured|estimated|simulated (default: measured; estimated: measured time, energy from a power model); "
        "optional error (why it failed), probe_cost, noise, energy_not_measured, peak_mem_kind (what peak_mem_gib is), "
        "default_power_limit_w (W: the default limit NVML reported), study (docs/search.md: Replay) "
        "(as `autotune export RUN_DIR --measurements FILE` writes), or the list "
        "`autotune space --simulate --json` prints; the study searches the recorded candidates only",
    )
    probe.add_argument("--launcher", choices=LAUNCHERS, default=DEFAULT_LAUNCHER, help=f"how probes start (default: {DEFAULT_LAUNCHER})")
    probe.add_argument("--hostfile", type=path_flag, metavar="FILE", help="DeepSpeed hostfile for multi-node probes")
    for option, text in (("probe_timeout_s", "seconds from a probe's start (Python, torch and DeepSpeed included) before it is "
                                             "killed, at least 1"),
                         ("warmup_steps", "optimizer steps before the measured window"),
                         ("probe_steps", "measured optimizer steps, at least"),
                         ("probe_seconds", "measured window, at least this long"),
                         ("repeats", "probes per candidate, to measure noise")):
        probe.add_argument(PROBE_OPTIONS[option][0], type=number_flag(**probe_bounds(option)), default=probe_default(option),
                           metavar="SECONDS" if option in ("probe_timeout_s", "probe_seconds") else "N", help=f"{text} (default: {probe_default(option):g})")
    probe.add_argument(
        "--allow-estimated-energy", action="store_true",
        help="accept energy estimated from the hardware profile where no sensor exists (labelled estimated)",
    )
    add_pick_options(parser)
    parser.set_defaults(func=_run)


def _time_limit_flag(text: str) -> int:
    """--time-limit in seconds; a value sbatch would not take, or a likely typo, is one line and exit 2."""
    try:
        return parse_time_limit(text)
    except TimeLimitError as why:
        raise argparse.ArgumentTypeError(f"{text!r} {why}") from None


def _objectives_flag(text: str) -> str:
    """The objectives in the order the study keeps them: `energy,time` (or `time, energy`) is the front of both,
    as `time,energy` is (trial 48 §16 refused it); anything else is left to argparse's choices to refuse."""
    names = [name.strip() for name in text.split(",")]
    return "time,energy" if sorted(names) == ["energy", "time"] else text


def default_run_dir(args: argparse.Namespace, model, nodes) -> Path:
    """runs/<model>-<nodes>n, from the model's own name (a preset's, a model file's `name`, a Hugging Face
    checkpoint's), never its path: a path would put the run beside or inside the checkpoint, and every
    `.../config.json` would share `config`. From the node counts the study holds (a --space file's `nodes`
    too), and -<study name> when one is given: two studies must not share a run directory's reports."""
    return _default_run_dirs(args, model, nodes)[0]


def _default_run_dirs(args: argparse.Namespace, model, nodes) -> tuple[Path, Path]:
    """The run directory of this study, and the one this version names it (another where an older autotune's name
    for it holds the study)."""
    from autotune.models_hf import TOWER

    # The tower an HF checkpoint's name adds ("Qwen2.5-7B + SigLIP so400m/14") is the same for all of them.
    own_name = model.name.removesuffix(f" + {TOWER}")
    model_name = _directory_name(own_name)[:64] or "model"
    # Where cleaning changed the name ('a/b', 'a b' and 'a_b' were all a_b; 'Qwén' and 'Qwèn' both Qw_n; two cut at 64),
    # a digest keeps them apart, while a name safe as it is (every preset's) keeps the directory its runs resume in.
    cleaned = model_name
    if model_name != own_name:
        model_name += _digest(own_name)
    nodes = sorted(nodes)
    span = node_span(nodes)
    counts = str(nodes[0]) if len(nodes) == 1 else f"{span[0]}to{span[1]}" if span else "_".join(map(str, nodes))
    # A study name may hold any printable character: only what is safe in a directory name, and not too long.
    # Where that changed the name ('a/b' and 'a_b', any two non-ASCII names, two cut at 64), a hash of the
    # whole name keeps their directories apart; '+' never survives the cleaning, so no name kept as given
    # ends like that.
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", args.study_name)[:64]
    name = "" if args.study_name == STUDY_NAME else "-" + safe
    digested = name + _digest(args.study_name) if name and safe != args.study_name else name
    run_dir = Path("runs") / f"{model_name}-{counts}n{digested}"
    # Before the digests (the study name's first, the model name's later), such a study's runs went to the cleaned
    # names' directory: the same command resumes the study there, as README's "Upgrading" promises, and no other.
    for before in (Path("runs") / f"{cleaned}-{counts}n{digested}", Path("runs") / f"{cleaned}-{counts}n{name}"):
        if before != run_dir and not run_dir.exists() and _holds_study(before, args.study_name, model.name):
            return before, run_dir
    return run_dir, run_dir


def _holds_study(run_dir: Path, study_name: str, model_name: str) -> bool:
    """Whether the run directory holds the study of that name of the model named so: by its study.db (a run stopped
    before its first report has no pareto.json), else by its pareto.json (a --storage study's reports). Anything
    unreadable: no."""
    held = stored_settings(run_dir, study_name)
    if held is not None:
        return isinstance(held.get("model"), dict) and held["model"].get("name") == model_name
    try:
        report = json.loads((run_dir / "pareto.json").read_text(encoding="utf-8"))
        return report.get("model") == model_name and report.get("study_name", study_name) == study_name
    except (OSError, ValueError, AttributeError):
        return False


def default_run_dir_examples() -> str:
    """What default_run_dir makes of a node count, a range and a list, for --help: a newcomer could not tell
    from runs/<model>-<nodes>n alone where `--nodes 1-2` had put the run."""
    from argparse import Namespace

    from autotune.models import PRESETS

    plain = Namespace(study_name=STUDY_NAME)
    return ", ".join(f"{default_run_dir(plain, PRESETS[model], nodes)}{given}" for model, nodes, given in (
        ("32b", [4], ""), ("7b", [1, 2], " for --nodes 1-2"), ("7b", [1, 2, 4], " for --nodes 1,2,4")))


def _digest(name: str) -> str:
    """'+' and 10 hex digits of the name's SHA-256: what keeps apart directory names that cleaning made alike."""
    return "+" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:10]


def _directory_name(text: str) -> str:
    """`text` as one safe path component: letters, digits, '.', '_' and '-' (runs of others become one
    '_'), and no leading '.' or '-' (a hidden directory, '..', or a name read as an option)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip(".-")


# What makes a directory a run directory: a study's storage, or the reports of one (a --storage study's).
RUN_DIR_MARKS = ("study.db", "pareto.json")


def check_not_inside_run(run_dir: Path, out_flag: str) -> None:
    """A run directory inside another (`--out OTHER_RUN/trials`) would put a study among that run's probe
    folders and configs, where its reports and `export` would be taken for the other run's: refused."""
    for parent in Path(run_dir).resolve().parents:
        mark = next((name for name in RUN_DIR_MARKS if (parent / name).is_file()), None)
        if mark:
            raise UserError(f"{out_flag} {run_dir} is inside the run directory {parent} (it holds {mark}); a study "
                            f"there would mix with that run's files: pass --out a directory outside it, such as "
                            f"{parent.with_name(parent.name + '-2')}")


# What a run writes in its run directory: a folder holding one of these is a run's, however far it got.
RUN_DIR_FILES = (*RUN_DIR_MARKS, "report.html", "configs", "trials", ".workers.lock", ".reports.lock")


def check_not_a_foreign_folder(run_dir: Path, out_flag: str) -> None:
    """A folder of other files (a project, a home, `/`) given as the run directory would get a study's
    files among its own, and `report`/`export` would read it as a run: refused, as Hugging Face's Trainer
    refuses a non-empty output_dir. An empty folder (mkdir -p beforehand) and a run's own are fine."""
    run_dir = Path(run_dir)
    try:
        names = sorted(entry.name for entry in run_dir.iterdir())
    except OSError:  # missing (made later), a file or unreadable: writable_directory says which
        return
    if not names or any(name in RUN_DIR_FILES for name in names):
        return
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    raise UserError(f"{out_flag} {run_dir} is a folder of other files ({shown}) and no autotune run (no study.db or "
                    f"pareto.json): a study's files would mix with them; pass --out a new or empty directory, such as "
                    f"{run_dir / 'autotune-run'}")


def _report_command(run_dir: Path, args: argparse.Namespace, html: bool = False) -> str:
    """The `autotune report` that shows this run's study, as messages suggest it. `html`: with --html, where it stands
    for the reports the run would have written (report writes report.html only when asked or already there)."""
    from autotune.study.storage import storage_flags

    return f"autotune report {shell_path(run_dir)}{' --html' if html else ''}" + storage_flags(args.storage, args.study_name)


def check_resumable_device_knobs(stored: dict, file_space, space, not_searched: list[dict], where: str, again: str) -> None:
    """A study that searched power limits or clocks, resumed where the probes cannot set them: the space file is the
    same, and the tuner's own narrowing made the spaces differ. Refused naming that cause and its fixes; the refusal
    of a changed --space ("repeat the original options") could not be followed, and a new --out would leave the
    measured study behind (trial75 #10)."""
    held = stored.get("space") if isinstance(stored, dict) else None
    if not isinstance(held, dict):
        return
    unsettable = [e for e in not_searched if e["fix"]]
    lost = [e["knob"] for e in unsettable
            if held.get(e["knob"]) == list(file_space.values(e["knob"])) != list(space.values(e["knob"]))]
    if not lost:
        return
    searched = " and ".join(f"{knob} {'/'.join(map(str, held[knob]))}" for knob in lost)
    first = next(e for e in unsettable if e["knob"] in lost)
    raise UserError(f"{where} holds a study that searched {searched}, which the probes cannot set here ({first['why']}): "
                    f"resume it with the same command where they can ({first['fix']}); `{again}` reads what it measured")


def _check_same_backend(study, backend, evaluated: list, where: str, again: str) -> None:
    """A study evaluated by one backend resumes only with it: a probe's measured seconds and the
    simulator's, or a replayed file's, are not figures of one front (the default `--backend auto`
    simulates on a machine without GPUs, where a measured run directory may have been copied)."""
    used = (study.user_attrs.get("backend") or {}).get("name")
    if used in (None, backend.name) or not evaluated:
        return
    flags = "--backend replay --measurements FILE" if used == "replay" else f"--backend {used}"
    figures = {"simulate": "simulated", "launch": "probed", "replay": "replayed"}
    raise UserError(
        f"{where} holds a study evaluated by the {used} backend; resuming it with the {backend.name} backend would put "
        f"{figures.get(backend.name, backend.name)} figures on one front with its {figures.get(used, used)} ones: "
        f"pass {flags} to resume (`{again}` shows it as it is), "
        "or --out NEW_DIR (in a shared --storage, --study-name NEW) to start a new study"
    )


def _proposals_settled(study) -> None:
    """Waits, up to PROPOSAL_WAIT_S as the samplers wait for them, while another worker's trial is being proposed (RUNNING,
    its probe not started): the closing report then finds each trial finished, and in it, or probing, and named as not
    in it. A guided worker that converged first read 5 trials while two proposals were under way on other workers, and
    they were neither in its report nor named (trial80 #3). A trial started longer ago is a dead worker's, not waited for."""
    import time
    from datetime import datetime

    from optuna.trial import TrialState

    from autotune.study.loop import PROBING_ATTR
    from autotune.study.unique import PROPOSAL_WAIT_S

    deadline = time.monotonic() + PROPOSAL_WAIT_S
    while time.monotonic() < deadline and any(
            not t.user_attrs.get(PROBING_ATTR) and t.datetime_start is not None
            and (datetime.now() - t.datetime_start).total_seconds() < PROPOSAL_WAIT_S
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))):
        time.sleep(0.05)


def _resume(study, settings, backend, args: argparse.Namespace, run_dir: Path, console) -> None:
    """A study already holds trials: refuse what would mix its figures with others (another backend,
    another file, another profile its figures came from), else say what changed since it began."""
    from rich.markup import escape

    from autotune.backends.base import setting_changes
    from autotune.study.loop import unranked_estimates
    from autotune.study.retries import evaluated_count, is_evaluated, queue_setup_retries, released_trials
    from autotune.study.run_dir_locks import sole_worker

    from autotune.study.kept_attrs import check_kept_attrs

    check_kept_attrs(study)  # an edited record is named as such, before anything reads it (trial 68 #18)
    where = recorded_storage(args.storage) if args.storage else str(run_dir)  # said in a log: no password
    released = released_trials(study)  # a copy of another study's trial (foreign.py) is no probe of this one's backend
    evaluated = [t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released)]
    _check_same_backend(study, backend, evaluated, where, _report_command(run_dir, args))
    backend.check_resumed(evaluated)
    # A replayed estimate was made where it was measured: only simulated and launch-estimated figures use this profile.
    figures_use_profile = backend.name == "simulate" or (backend.name == "launch" and backend.estimated_energy_only() is not None)
    changed = settings.check_same_as(study.user_attrs["settings"], where, figures_use_profile, evaluated)
    # Counted as --trials counts them; a study another worker created a moment ago has none yet (two workers
    # started at once: the second said "resuming ... (1 trials so far)" of a study nobody had run).
    evaluated_so_far = evaluated_count(study)
    console.print(f"resuming the study in {where} ({counted(evaluated_so_far, 'candidate')} evaluated so far)" if evaluated_so_far
                  else f"taking up the study in {where}, begun by an earlier or concurrent run (no candidate evaluated yet)")
    if changed:
        console.print(f"[yellow]{escape(changed)}[/]")  # escaped: "[simulator]" is not rich markup
        study.set_user_attr("settings", settings.to_dict())
    earlier = (study.user_attrs.get("backend") or {}).get("probe_settings") or {}
    changed_probe = setting_changes(earlier, backend.probe_settings(), recorded_only=True)
    if changed_probe:
        console.print(f"[yellow]the probes now measure otherwise than this study's earlier ones ({'; '.join(changed_probe)}): "
                      "their figures stay on the front beside the new ones (each trial's result.json has its steps and window)[/]")
    drawn = _changed_proposals(study, args)
    if drawn:
        console.print(f"[yellow]{drawn}[/]")
    timeout_settings = backend.timeout_settings()
    retried = queue_setup_retries(study, timeout_settings)
    with sole_worker(run_dir, args.storage) as alone:  # only then is a RUNNING trial a dead run's, probed again
        for line in probing_again_lines(study, timeout_settings, retried, include_running=alone):
            console.print(line)
    unranked = unranked_estimates(study) if args.allow_estimated_energy and "energy" in args.objectives else []
    if unranked:
        trial_count = len(unranked)
        console.print(f"[yellow]{agreeing(trial_count, 'trial', 'trials')} {', '.join(map(str, unranked))} failed earlier because "
                      f"{agreeing(trial_count, 'its', 'their')} energy was only estimated, and {agreeing(trial_count, 'stays', 'stay')} failed: a "
                      f"study probes no candidate twice ({agreeing(trial_count, 'its', 'their')} figures are in the report's "
                      f"trial table); to rank {agreeing(trial_count, 'it', 'them')}, start a new study with --allow-estimated-energy ({_new_study(args)})[/]")


def probing_again_lines(study, timeout_settings: dict, retried: list[int], include_running: bool) -> list[str]:
    """The resume's header: every trial whose candidate it probes again, by why. `retried`: the trials whose
    candidates this resume queued again (queue_setup_retries); with them, the retries an earlier run queued and no
    run took, and the trials a stopped run left unfinished (retry_interrupted's, queued when the study starts;
    `include_running`: a RUNNING trial is a dead run's): the header named the first alone, and trials probed again
    as the others were said only on their own start lines (trial79 #7)."""
    from autotune.backends.base import setting_changes
    from autotune.study.retries import (FAILING_START_ATTR, SETUP_FAILURE_ATTR, TIMED_OUT_UNDER_ATTR,
                                        interrupted_to_probe, retries_queued_earlier, timed_out_otherwise,
                                        trials_by_number)

    trials = trials_by_number(study.get_trials(deepcopy=False))
    earlier = [n for n in retries_queued_earlier(study) if n not in retried and n in trials]
    failing_start = set(study.user_attrs.get(FAILING_START_ATTR, []))
    # A retry queued earlier is said by why its trial is one, in the words of its start line (retries.retry_words).
    timed_out = ([n for n in retried if timed_out_otherwise(trials[n], timeout_settings)]
                 + [n for n in earlier if trials[n].user_attrs.get(TIMED_OUT_UNDER_ATTR)
                    and not trials[n].user_attrs.get(SETUP_FAILURE_ATTR)])
    setup_like = [n for n in [*earlier, *retried] if n not in timed_out]
    started_failing = [n for n in setup_like if n in failing_start and not trials[n].user_attrs.get(SETUP_FAILURE_ATTR)]
    on_setup = [n for n in setup_like if n not in started_failing
                and (n in retried or trials[n].user_attrs.get(SETUP_FAILURE_ATTR))]
    interrupted = ([n for n in setup_like if n not in started_failing and n not in on_setup]
                   + [n for n in interrupted_to_probe(study, include_running) if n not in earlier])
    lines = []
    if on_setup:
        count = len(on_setup)
        lines.append(f"probing again the {agreeing(count, 'candidate', 'candidates')} of {agreeing(count, 'trial', 'trials')} "
                     f"{', '.join(map(str, on_setup))}: {agreeing(count, 'its probe', 'their probes')} failed on "
                     f"the set-up (the launcher, the nodes or the trainer's own, before it ran {agreeing(count, 'it', 'them')}), "
                     f"not on the {agreeing(count, 'candidate', 'candidates')}")
    if started_failing:
        count = len(started_failing)
        lines.append(f"probing again the {agreeing(count, 'candidate', 'candidates')} of {agreeing(count, 'trial', 'trials')} "
                     f"{', '.join(map(str, started_failing))}: {agreeing(count, 'it', 'they')} failed "
                     "when no probe of the study had run yet (the run ended there, pointing at the set-up)")
    for number in timed_out:
        differ = setting_changes(trials[number].user_attrs[TIMED_OUT_UNDER_ATTR], timeout_settings, recorded_only=True)
        lines.append(f"probing again the candidate of trial {number}: its probe timed out under other probe "
                     f"settings ({'; '.join(differ) or 'other probe settings'}), which says nothing of the candidate "
                     "under these")
    if interrupted:
        count = len(interrupted)
        lines.append(f"probing again the {agreeing(count, 'candidate', 'candidates')} of interrupted "
                     f"{agreeing(count, 'trial', 'trials')} {', '.join(map(str, interrupted))}: a stopped run left "
                     f"{agreeing(count, 'it', 'them')} unfinished")
    return lines

def backend_attrs(study, backend, checks: list, restricted: bool) -> dict:
    """The study's `backend` record: name and reason; the probe settings the study's probes were last
    run with (kept from earlier runs: record_probe_settings writes them once a probe ran with them);
    on replay the keys of the candidates the file records (`evaluable`; None where `checks`, the
    candidates the backend can evaluate, are not `restricted` from the valid ones), so a report can say
    what a resume could still probe, and where it records them all, their front (search.recorded_front)."""
    from autotune.candidate import params_key

    earlier = study.user_attrs.get("backend") or {}
    attrs = {"name": backend.name, "reason": getattr(backend, "reason", "")}
    if earlier.get("probe_settings") is not None:
        attrs["probe_settings"] = earlier["probe_settings"]
    if run_settings := backend.run_settings():  # what pareto.json's inputs name beside the probe settings
        attrs["run_settings"] = run_settings
    if backend.name == "replay":
        attrs["evaluable"] = [params_key(c.candidate.knobs.to_dict()) for c in checks if c.valid] if restricted else None
        attrs["measurements"] = backend.measurements_record()
        if not restricted:  # every valid candidate recorded: its report can say whether the probes found their front
            from autotune.report.search import RECORDED_FRONT_KEY, recorded_front

            valid = {params_key(c.candidate.knobs.to_dict()) for c in checks if c.valid}
            attrs[RECORDED_FRONT_KEY] = recorded_front(backend.records, valid)
    return attrs


def probed_trials(study) -> set[int]:
    """The trials whose probe ran (evaluated, or interrupted while it ran)."""
    from autotune.study.retries import is_evaluated

    return {t.number for t in study.get_trials(deepcopy=False) if is_evaluated(t) or t.user_attrs.get("interrupted")}


def record_probe_settings(study, backend, done_before: set[int]) -> None:
    """Keeps how this run's probes measured, once one ran: a run that probed nothing (its budget already
    spent) must not make a later resume say the earlier probes measured as it would have."""
    if not backend.probe_settings() or not probed_trials(study) - done_before:
        return
    study.set_user_attr("backend", {**(study.user_attrs.get("backend") or {}), "probe_settings": backend.probe_settings()})


def _changed_proposals(study, args: argparse.Namespace) -> str | None:
    """A resume with another --seed or --sampler than the study's last run: said, and taken. Unlike the
    settings (the question) and the backend (where the figures came from), which are refused, these only
    choose which candidates are probed next, as --trials chooses how many: the figures so far stay
    comparable, but the study is no longer the one its first seed alone gives, and the user should know.
    The earlier values are every earlier run's, as pareto.json's inputs.proposed_by lists them: the last run's
    alone called a study of guided, then tpe trials "the study --sampler tpe alone gives" (trial74 #8)."""
    earlier, last = _earlier_proposers(study)
    now = {"--sampler": args.sampler, "--seed": args.seed}
    changed = [flag for flag in now if last is not None and last[flag] != now[flag]]
    if not changed:
        return None
    values = {flag: list(dict.fromkeys(who[flag] for who in earlier)) for flag in changed}
    alone = " alone" if all(len(values[flag]) == 1 for flag in changed) else ""
    then = (" " if alone else ", ").join(f"{flag} {', then '.join(map(str, values[flag]))}" for flag in changed)
    here = " ".join(f"{flag} {now[flag]}" for flag in changed)
    return (f"resuming with {here}, not the {then} of this study's earlier runs: its trials are kept and its next "
            f"candidates are proposed with {here}, so it is no longer the study {then}{alone} gives (pass {_new_study(args)} "
            f"to start a study with {here})")


def _earlier_proposers(study) -> tuple[list[dict], dict | None]:
    """{"--sampler": ..., "--seed": ...} of each sampler and seed that proposed the study's trials, in the order of
    their first trial (inputs.proposed_by's; trials queued by hand have none), and of the last run's (the one that
    proposed the latest trial); else the study's `sampler` and `seed` attributes (a study older than that record);
    ([], None) where none is a value `run` takes. A value edited by hand (a sampler 'foo', a seed 'abc') was said
    back as this study's earlier run's (trial74 #8)."""
    from autotune.report.inputs import proposers
    from autotune.study.loop import SAMPLERS

    def taken(who) -> bool:
        seed = who.get("seed")
        return who.get("sampler") in SAMPLERS and type(seed) is int and 0 <= seed < 2**32

    recorded = [who for who in proposers(study.get_trials(deepcopy=False)) if taken(who)]
    if not recorded and taken(kept := {"sampler": study.user_attrs.get("sampler"), "seed": study.user_attrs.get(SEED_ATTR)}):
        recorded = [{**kept, "trials": []}]
    if not recorded:
        return [], None
    flags = [{"--sampler": who["sampler"], "--seed": who["seed"]} for who in recorded]
    return flags, flags[max(range(len(recorded)), key=lambda i: max(recorded[i]["trials"], default=-1))]


def _new_study(args: argparse.Namespace) -> str:
    """The flag that starts a new study rather than resuming this one: in a --storage database, another
    name (another --out resumed the same stored study, and said the same again)."""
    return "--study-name NEW" if args.storage else "--out NEW_DIR"


# Passes of a worker's study after its first, each for the trials of workers that died meanwhile (take_over_dead_workers).
_TAKE_OVER_PASSES = 3


def _took_over(study, alone: bool, run_dir: Path, console) -> bool:
    """After a pass of the study: the probing trials of dead workers, queued again for the next pass, said in a line."""
    from autotune.study.loop import take_over_dead_workers

    taken = take_over_dead_workers(study, alone)
    if taken:
        how = (f"no other worker holds {run_dir} any more" if alone
               else "their heartbeat is older than the grace")
        console.print(f"{agreeing(len(taken), 'trial', 'trials')} {', '.join(map(str, taken))} of a worker that is gone "
                      f"({how}): probing {agreeing(len(taken), 'its candidate', 'their candidates')} again here before this run ends", soft_wrap=True, highlight=False, markup=False)
    return bool(taken)


def _run(args: argparse.Namespace) -> int:
    """The stop signals stop a run from its start to its last report, with a line saying what is kept: before the
    first trial they ended it by their default action, silent (trial 51 #7), and between the study and its reports
    SIGTERM had no handler of ours (trial 51 #2)."""
    from autotune.study.loop import Interrupts

    with Interrupts().install(stop_signals()) as interrupts:
        return _run_installed(args, interrupts)


def _run_installed(args: argparse.Namespace, interrupts) -> int:
    import autotune
    from rich.console import Console
    from rich.markup import escape

    from autotune.backends.launchers import check_hostfile
    from autotune.backends.select import backend_line, check_energy_objective, choose_backend
    from autotune.commands.finish import check_configs_writable, finish_run
    from autotune.commands.paths import (
        CWD_GONE, check_run_outputs, current_directory_gone, study_db_problem, writable_directory,
    )
    from autotune.commands.held_lines import HeldLines
    from autotune.commands.progress import study_energy_unit, trial_progress
    from autotune.commands.report import (
        check_pick_options, drop_unread_pick_options, names_own_study_db, not_in_report_line, refuse_another_storage,
    )
    from autotune.study import open_study
    from autotune.study.run_dir_locks import check_workers_lock, sole_worker
    from autotune.study.failures import no_probe_succeeded
    from autotune.study.loop import CONVERGED_ATTR, make_sampler, probes_running_elsewhere, run_study
    from autotune.study.retries import evaluated_count, evaluated_trials
    from autotune.study.valid import node_counts_without_candidates, space_checks, valid_checks
    from autotune.report.study_points import MODEL_CAVEATS_ATTR

    # First: --time-limit counts from the run's start.
    time_limit, time_limit_warning = run_time_limit(args.time_limit, dict(os.environ))
    check_hostfile(args.hostfile)  # files are checked here; numbers while parsing (flags.py, probe_options.py)
    check_pick_options(args)
    # Its writes go to sys.stderr, the process's StatusStream (cli.console_main): losing it does not end the study.
    console = Console(stderr=True)
    # A job's output file or a pipe: one line per message, as printed (rich would break them at 80 columns,
    # mid-phrase, where grep and the eye look for them whole); a terminal keeps rich's wrapping.
    console.soft_wrap = not console.is_terminal
    console = HeldLines(console)  # until the inputs are checked: a refusal is the run's one line (held_lines.py)
    if time_limit_warning:
        console.print(f"[yellow]warning: {escape(time_limit_warning)}[/]")
    if time_limit.deadline is not None:
        console.print(time_limit_line(time_limit), soft_wrap=True, highlight=False, markup=False)
    filled = fill_from_allocation(args)
    if filled.said:
        console.print(filled.said)
    for line in filled.warnings:
        console.print(f"[yellow]warning: {escape(line)}[/]")  # escaped: a file's "nodes = [2, 3]" is no markup
    settings = build_settings(args)
    for line in settings_warnings(args, settings):
        console.print(f"[yellow]warning: {escape(line)}[/]")
    run_dir, named_now = (args.out, args.out) if args.out else _default_run_dirs(args, settings.model, settings.space.nodes)
    if run_dir != named_now:
        console.print(f"{run_dir} holds this study, as an older autotune named its run directory (this version names a "
                      f"new one {named_now}): it goes on there", soft_wrap=True, highlight=False, markup=False)
    if not run_dir.is_absolute() and current_directory_gone():  # only the default: path_flag refuses such an --out
        raise UserError(f"the run directory {run_dir} is relative, but {CWD_GONE} or pass --out an absolute path")
    if not args.storage:  # --out holding another study is said first, before this run's own space or files are judged
        held = stored_settings(run_dir, args.study_name)
        if held is not None:
            settings.check_same_question(held, str(run_dir), device_knobs=False)
    backend = choose_backend(args, run_dir, max(settings.space.nodes), settings.gpus_per_node, settings.hardware)
    file_space = settings.space
    settings, not_searched = narrowed_for_backend(settings, backend)
    if not args.storage and held is not None:  # before the line below: a refusal is the run's one line (trial75 #10)
        check_resumable_device_knobs(held, file_space, settings.space, not_searched, str(run_dir), _report_command(run_dir, args))
    for i, line in enumerate(not_searched_lines(not_searched, settings, backend)):
        console.print(f"[yellow]{'warning: ' if i == 0 else ''}{escape(line)}[/]")
    if settings.hardware.cuda and (off_default := backend.devices_off_default()):
        console.print(f"[yellow]warning: {escape(off_default)}[/]")
    if settings.hardware.cuda and (off_profile := backend.default_limit_off_profile(settings.hardware)):
        console.print(f"[yellow]warning: {escape(off_profile)}[/]")
    ignored = ignored_launch_options(args, backend.name)
    if ignored:
        console.print(f"[yellow]warning: {ignored}[/]")
    if unread := drop_unread_pick_options(args, time_only=args.objectives == "time"):
        console.print(f"[yellow]warning: {unread}[/]")
    if args.sampler == "nsga2" and args.trials <= NSGA2_POPULATION:
        console.print(f"[yellow]warning: NSGA-II draws its first generation ({NSGA2_POPULATION} trials) at random: with "
                      f"--trials {args.trials} it is --sampler random[/]")
    checks = space_checks(settings)
    # Before the space's own refusals: a replay of another study's records ("nothing fits in memory" for the default
    # --model 32b, "pass --global-batch 16") is refused naming the flags its records were measured with (trial64 #3).
    backend.check_candidates(checks)
    checks = valid_checks(settings, checks)
    for line in node_counts_without_candidates(checks):
        console.print(f"[yellow]warning: {line}[/]")
    evaluable = backend.evaluable(checks)
    dropped = [after.reason for before, after in zip(checks, evaluable) if before.valid and not after.valid]
    # Said once the study opens, not here: a refusal below (estimated energy, an --out that cannot be written) is its
    # one line alone, not under a line about a search that never starts (trial67 #5).
    searching = (f"searching the {sum(c.valid for c in evaluable)} of {sum(c.valid for c in checks)} valid candidates "
                 f"the {backend.name} backend can evaluate; the others: {escape(dropped[0])}") if dropped else None
    # And the other way round: recorded figures this study cannot use (another --space, --nodes) are said.
    for line in (backend.unused_records(checks), *backend.unchecked_records(checks)):
        if line:
            console.print(f"[yellow]warning: {escape(line)}[/]")
    checks = evaluable
    check_energy_objective(backend, args.objectives, args.allow_estimated_energy)
    # Before any study is opened or probe started: a path that cannot be written fails now, in one line.
    out_flag = "--out" if args.out else "run directory"
    check_not_inside_run(run_dir, out_flag)
    check_not_a_foreign_folder(run_dir, out_flag)
    # A storage that cannot be opened, a stored study refused (another model, backend): the run directory this
    # made is removed again (commands/paths.undone_on_failure), no empty --out left behind.
    writable_directory(run_dir, out_flag, fix="pass --out with a writable directory")
    check_run_outputs(run_dir, out_flag)
    if not args.storage and (problem := study_db_problem(run_dir)):  # as `report` names it, before SQLite opens it
        raise UserError(problem)
    if args.storage and (run_dir / "study.db").is_file() and not names_own_study_db(run_dir, args.storage):
        refuse_another_storage(run_dir, args.storage, "run")  # its reports are study.db's study's, as `report` holds
    check_workers_lock(run_dir, args.storage)
    check_configs_writable(run_dir, out_flag)  # not after the probes, in a traceback (trial69 #2)
    study = open_study(run_dir, args.storage, make_sampler(args.seed, args.trials, args.sampler, checks),
                       len(args.objectives.split(",")), cheap_figures=backend.name == "simulate", study_name=args.study_name)
    console.print(f"backend: {backend_line(backend, settings.space.nodes)}")
    if searching:
        console.print(searching)
    done_before = probed_trials(study)
    if "settings" in study.user_attrs:
        check_resumable_device_knobs(study.user_attrs["settings"], file_space, settings.space, not_searched,
                                     recorded_storage(args.storage) if args.storage else str(run_dir),
                                     _report_command(run_dir, args))
        _resume(study, settings, backend, args, run_dir, console.checked())
    console = console.release()
    study.set_user_attr(NOT_SEARCHED_ATTR, not_searched)  # this run's: the reports say what it left out, and why
    study.set_user_attr("backend", backend_attrs(study, backend, checks, restricted=bool(dropped)))
    study.set_user_attr("sampler", args.sampler)
    # Said with the figures in every report (report.study_points.MODEL_CAVEATS_ATTR), as warned above.
    if study.user_attrs.get(MODEL_CAVEATS_ATTR) != filled.model_caveats:
        study.set_user_attr(MODEL_CAVEATS_ATTR, filled.model_caveats)
    study.set_user_attr(SEED_ATTR, args.seed)
    try:
        done = evaluated_count(study)
        total = min(args.trials, sum(c.valid for c in checks))  # the loop stops when the space runs out
        # SIGTERM (scancel, kill), SIGHUP (a closed ssh session), SIGUSR1/2 stop a run like Ctrl-C (`interrupts`, _run):
        # the probe is killed, trials kept.
        ran = 0
        with trial_progress(console, total, done, announce_probes=backend.name == "launch",
                            study_count=lambda: evaluated_count(study, recording=True), quiet=args.quiet,
                            energy_unit=study_energy_unit(checks)) as progress:
            for attempt in range(_TAKE_OVER_PASSES + 1):
                with sole_worker(run_dir, args.storage) as alone:  # asked again on each pass: a worker may have died
                    if time_limit.stopped or (attempt and not _took_over(study, alone, run_dir, console)):
                        break
                    ran += run_study(
                        study, settings, backend, args.trials, progress, checks, args.objectives,
                        shared_storage=not alone, accept_estimated_energy=args.allow_estimated_energy,
                        interrupts=interrupts, proposed_by={"sampler": args.sampler, "seed": args.seed,
                                                            "trials_budget": args.trials,
                                                            "autotune_version": autotune.__version__},
                        time_limit=time_limit,
                    )
    except KeyboardInterrupt as stop:
        interrupts.stopping = True  # a second signal (SLURM's to the tuner after the probe's) must not cut these lines
        if getattr(stop, "reason", None):  # a probe a signal from outside stopped (launch.ProbeStoppedOutside)
            console.print(stop.reason, soft_wrap=True, highlight=False, markup=False)
        # A stop during a probe's repeat k: its finished repeats are not lost, which a scancelled job's user asks first.
        kept = backend.kept_after_interruption()
        if kept:
            console.print(kept, soft_wrap=True, highlight=False, markup=False)
        # The reports are written when a run ends, not after each trial: say whose they are, or that there are none.
        again = _report_command(run_dir, args, html=True)
        held = (f"the reports in {run_dir} are not this run's" if (Path(run_dir) / "pareto.json").is_file()
                else f"{run_dir} holds no report yet")
        # One line each, unwrapped: a job's output file is read by grep as much as by eye.
        console.print(f"{held}: `{again}` writes them for every finished trial", soft_wrap=True, highlight=False,
                      markup=False)
        raise
    finally:
        record_probe_settings(study, backend, done_before)
    # SIGTERM while the reports are written (a job's time limit just after its last trial) ended the run by its
    # default action, without a word of what was not written (trial 37 F13): it stops as Ctrl-C does here.
    try:
        # Its stop line: finish_run's, from the report's search block. Only a sampler with a stop rule stops there: one
        # without (--sampler random beside a guided worker) ran on to its budget, which it says (trial66 #13).
        stops_on_convergence = args.sampler == "guided"
        converged = study.user_attrs.get(CONVERGED_ATTR) if stops_on_convergence else None
        stop_line = time_stop_line(time_limit, backend.timeout_settings(), backend.kill_grace_s) if time_limit.stopped else None
        if stops_again(time_limit):  # for the report's search line: what resumes it is not the same command
            study.set_user_attr(TIME_LIMIT_TOO_SHORT_ATTR, True)
        elif stop_line:  # a stop that says what fits is the run's last line (below)
            console.print(stop_line, soft_wrap=True, highlight=False, markup=False)
        evaluated_now, elsewhere = evaluated_count(study), probes_running_elsewhere(study)
        if not converged and evaluated_now + elsewhere >= total and evaluated_now + elsewhere > done + ran:
            # A worker that stopped after two probes of ten said nothing of the other eight.
            spent = f"the --trials budget of {total} is spent" if total == args.trials else f"all {total} valid candidates are evaluated"
            running = f", and {elsewhere} still probing on other workers" if elsewhere else ""
            # The count before whom it names: "other runs of the study 1" read as a study numbered 1 (trial64 #15).
            console.print(f"{spent}: {ran} of them evaluated by this run, {evaluated_now - ran} by other runs of the study "
                          f"(earlier ones, or workers beside this one){running}")
        elif not converged and ran == 0 and done >= total == args.trials:
            # A resume whose budget the study had already spent probed nothing, and said nothing of why (trial 37 F14).
            console.print(f"the --trials budget of {total} is spent: the study already holds {done} evaluated candidates, so "
                          "this run probed none; a larger --trials probes more")
        # Counted from the report's own read of the study: counted before it, a probe that finished in between was
        # said to be missing from a report that held it (trial66 #10).
        not_in_report = []
        _proposals_settled(study)
        def said_first(view):
            not_in_report.extend(view.running_probes)
            return [not_in_report_line(len(view.running_probes), _report_command(run_dir, args))] if view.running_probes else []
        finish_run(study, run_dir, console, args.max_slowdown, args.eta, args.storage, args.study_name,
                   stop_line=stops_on_convergence, said_first=said_first)
    except KeyboardInterrupt:
        interrupts.stopping = True  # a second signal must not cut this line
        again = _report_command(run_dir, args, html=True)
        console.print(f"stopped while writing the reports of {run_dir}: `{again}` writes them for every finished trial",
                      soft_wrap=True, highlight=False, markup=False)
        raise
    if interrupts.received is not None:
        # Its raise was lost (in a garbage collector's callback: Python drops what is raised there) and the reports
        # went on to the end: they are whole, and the run still stops as the signal asked, not with status 0.
        console.print(f"{signal_words(interrupts.received)} came while the reports of {run_dir} were written; they are "
                      "written whole", soft_wrap=True, highlight=False, markup=False)
        interrupts.check()
    # The reports are written (their trial table names every failure); a study none of whose probes succeeded
    # is no success, whatever the budget: the failing-start stop's exit status. Not while other workers'
    # probes may still succeed: the last of them says it.
    others_left = sum(c.valid for c in checks) > len(evaluated_trials(study))
    nothing = None if not_in_report else no_probe_succeeded(study, others_left, replayed=backend.name == "replay",
                                                        unrecorded_left=bool(dropped))
    if nothing:
        raise UserError(nothing)
    if stops_again(time_limit):
        # Exit 2, a set-up error: what fits ends the run, as an `autotune run: error:` line does, where `tail -1` of a
        # job's log finds it; said before the report, it was 10 lines up, above the run directory (trial71 #5).
        console.print(stop_line, soft_wrap=True, highlight=False, markup=False)
    return run_exit_status(time_limit)  # a job chain submits the job again on 75, and only on 75
