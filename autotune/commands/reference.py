"""The exit statuses of every command and the environment variables autotune reads, one line each: the epilog of
`autotune --help` and the README's "Exit status and environment" section (a test keeps the two the same). A newcomer
found them scattered over the README and docs/, some written nowhere (trial 48 #9, #13).

Built only when `autotune --help` asks (cli.TopLevelParser): the values come from the constants the code uses, and
some of those sit in modules that import Optuna, which no other command should wait for at its start."""

from __future__ import annotations

# (status, what it means); as a shell reports it: 128 + N for a command signal N ended (Python sees -N).
EXIT_STATUSES = (
    ("0", "done (a run: its study ended and its reports are written)"),
    ("1", "standard output could not be written (a full disk or quota: one line says what is kept), or an unexpected "
          "error (a traceback: a bug to report)"),
    ("2", "a usage error or bad input (one line `autotune CMD: error: ...` naming the fix); a run whose first probes "
          "all failed on the set-up, or that ended with no probe succeeded (its reports written), or that the time limit "
          "stopped before any probe could start, where a job as long stops in the same place (its last line says what "
          "fits)"),
    # study/time_limit.TIME_LIMIT_EXIT_STATUS, written here: that module's package imports Optuna.
    ("75", "`run` stopped by the time limit (--time-limit, or the SLURM job's end) before its study ended, its reports "
           "written: the same command in a new job resumes it (sysexits.h's EX_TEMPFAIL, 'try again later')"),
    ("129", "SIGHUP (a closed ssh session): every command stops as after SIGTERM"),
    ("130", "Ctrl-C (SIGINT): `run` keeps its finished trials, and the same command resumes; one line says what is kept"),
    ("138", "SIGUSR1 (`#SBATCH --signal=B:USR1@...`, as many site templates ask): every command stops as after SIGTERM"),
    ("140", "SIGUSR2: as SIGUSR1"),
    ("141", "the reader of standard output went away (`autotune space --json | head`), with no traceback"),
    ("143", "SIGTERM (kill, scancel, a job's time limit): every command stops as after Ctrl-C, one line saying what is "
            "kept"),
)


def sensor_environment() -> tuple[tuple[str, str], ...]:
    """(variable, what it changes) of what `autotune sensors` lists, with the defaults the code reads."""
    from autotune.measure.discover import SOURCE_KINDS, SOURCES_ENV
    from autotune.measure.sysfs import DEFAULT_SYSFS_ROOT, SYSFS_ROOT_ENV

    return (
        (SYSFS_ROOT_ENV, f"the sysfs tree hwmon and RAPL are read from (default: {DEFAULT_SYSFS_ROOT}): a container's "
                         "remapped sysfs"),
        (SOURCES_ENV, f"the energy source kinds looked for, a comma list of {', '.join(SOURCE_KINDS)} (default: all)"),
    )


def environment() -> tuple[tuple[str, str], ...]:
    """(variable, what it changes) of every command, with the defaults the code reads."""
    from autotune.backends.device_turns import LOCK_DIR_ENV
    from autotune.backends.launchers import SM_CLOCK_SET_BY_ENV
    from autotune.backends.probe_process import PROBE_ID_ENV
    from autotune.measure.device_control import NVML_API_ENV
    from autotune.study.storage import GRACE_PERIOD_ENV, GRACE_PERIOD_S, HEARTBEAT_INTERVAL_ENV, HEARTBEAT_INTERVAL_S

    return (
        *sensor_environment(),
        (HEARTBEAT_INTERVAL_ENV, f"seconds between a --storage worker's heartbeats (default: {HEARTBEAT_INTERVAL_S})"),
        (GRACE_PERIOD_ENV, f"seconds a worker's heartbeat may be stale before its trial is retried (default: "
                           f"{GRACE_PERIOD_S}; longer than the interval)"),
        (LOCK_DIR_ENV, "the folder of the locks by which workers' probes take turns on shared devices (default: a "
                       "per-user folder of the temporary folder)"),
        ("SLURM_JOB_ID, SLURM_JOB_NUM_NODES, SLURM_GPUS_ON_NODE, ...", "inside an allocation: the default --nodes and "
                                                                       "--gpus-per-node, and srun for --launcher auto"),
        ("SLURM_JOB_END_TIME", "inside an allocation: the job's end; no probe starts that could not finish before it "
                               "(an earlier --time-limit replaces it)"),
        ("CUDA_VISIBLE_DEVICES", "the GPUs this machine's probes run on (workers' probes take turns per set of GPUs)"),
        ("TORCH_EXTENSIONS_DIR, XDG_CACHE_HOME", "where the probes build DeepSpeed's ops (default: a folder per "
                                                 "Python install under ~/.cache/torch_extensions)"),
        ("COLUMNS, LINES", "the terminal's size for tables and progress (0 or not a number: ignored); output that is "
                           "not a terminal is 160 columns wide whatever COLUMNS says"),
        ("LC_ALL, LANG (and Python's PYTHONUTF8)", "under an ASCII locale a non-ASCII name typed or found on disk (a "
         "--study-name, a model file's or checkpoint folder's name) is read as the UTF-8 it is, so a study is the same "
         "in every locale (bytes that are not UTF-8 in a --study-name: one line, exit 2); a character the output "
         "cannot show prints as ?, a path as the bytes typed"),
        ("NO_COLOR, TERM=dumb", "NO_COLOR: no colours (bold and dim stay); TERM=dumb: plain text (no colour, bold or "
                                "dim); output that is not a terminal has none at all"),
        (f"{SM_CLOCK_SET_BY_ENV}, {PROBE_ID_ENV}", "set by autotune in a probe's environment (srun set the SM clock; "
                                                   "the mark that finds its processes): not to set by hand"),
        (f"{NVML_API_ENV}, AUTOTUNE_PROBE_TEST_HOOK[_RANK]", "for tests: a stand-in for NVML; a probe that hangs, "
                                                             "crashes or runs out of memory"),
    )


def _lines(variables) -> str:
    return "\n".join(f"  {name}: {meaning}" for name, meaning in variables)


def reference_text() -> str:
    """The epilog of `autotune --help`: one line a status or variable, as grep finds it (not wrapped)."""
    statuses = "\n".join(f"  {status:<4} {meaning}" for status, meaning in EXIT_STATUSES)
    return f"exit status:\n{statuses}\n\nenvironment:\n{_lines(environment())}"


def sensors_text() -> str:
    """The epilog of `autotune sensors --help`: the variables that change what it lists."""
    return f"environment:\n{_lines(sensor_environment())}"
