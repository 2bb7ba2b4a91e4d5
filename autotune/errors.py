"""User-facing errors: each message names the problem and the fix; the CLI prints it and exits 2."""


class UserError(Exception):
    """Bad input from the user (unknown model, malformed file, impossible space, ...)."""


class ConfigError(UserError):
    """A model, hardware, workload or search-space file that cannot be used as written."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (scancel, kill, a job's time limit): the run stops as after Ctrl-C, and exits with 143."""

    status = 143  # 128 + SIGTERM, as the shell reports a command SIGTERM ended
    signal_name = "SIGTERM"


class HungUp(Terminated):
    """SIGHUP (the ssh session or terminal of a run started without nohup closed): it stops as after SIGTERM,
    its probe killed and its trial retried on resume; by its default action it left the trial RUNNING, unsaid."""

    status = 129  # 128 + SIGHUP
    signal_name = "SIGHUP"


class UserSignal1(Terminated):
    """SIGUSR1, which many SLURM site templates ask for before the time limit (`#SBATCH --signal=B:USR1@120`): it
    stops as SIGTERM does; by its default action the tuner died at once, silent, with no report (trial 51 #3)."""

    status = 138  # 128 + SIGUSR1 (Linux)
    signal_name = "SIGUSR1"


class UserSignal2(Terminated):
    """SIGUSR2, as SIGUSR1."""

    status = 140  # 128 + SIGUSR2 (Linux)
    signal_name = "SIGUSR2"


# The signals that stop a run cleanly, and what each raises (SIGINT: KeyboardInterrupt, exit 130).
STOP_SIGNALS = {"SIGINT": KeyboardInterrupt, "SIGTERM": Terminated, "SIGHUP": HungUp, "SIGUSR1": UserSignal1,
                "SIGUSR2": UserSignal2}


def stop_signals() -> dict:
    """{signal number: what it raises} for the stop signals this system has (Windows has no SIGHUP)."""
    import signal

    return {getattr(signal, name): kind for name, kind in STOP_SIGNALS.items() if hasattr(signal, name)}


def signal_words(stop: BaseException) -> str:
    """The signal a stop came by, for a log line: "SIGTERM", "SIGINT (Ctrl-C)"; else the error's type."""
    if isinstance(stop, KeyboardInterrupt):
        return getattr(stop, "signal_name", "SIGINT (Ctrl-C)")
    return type(stop).__name__
