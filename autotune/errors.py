"""User-facing errors: each message names the problem and the fix; the CLI prints it and exits 2."""


class UserError(Exception):
    """Bad input from the user (unknown model, malformed file, impossible space, ...)."""


class ConfigError(UserError):
    """A model, hardware, workload or search-space file that cannot be used as written."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (scancel, kill, a job's time limit): the run stops as after Ctrl-C, and exits with 143."""
