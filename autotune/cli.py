"""Command line: parses, prints, and calls the layers below. Never imports torch or deepspeed.

Each subcommand lives in `autotune/commands/<name>.py` with `register(subparsers)`, which adds its
parser and sets `func(args) -> int`. A `UserError` anywhere becomes one line on stderr and exit 2,
prefixed as argparse prefixes a usage error of that subcommand (`autotune run: error: ...`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys

from autotune.commands.paths import undone_on_failure
from autotune.commands.reference import reference_text
from autotune.errors import UserError, stop_signals
from autotune.status_stream import fill_closed_descriptors, keep_going_without_stderr, write_stdout_whole
from autotune.usage_errors import OneLineParser, one_line

COMMANDS = ("run", "space", "report", "export", "sensors", "calibrate", "compare")
INTERRUPTED = 130  # the shell's status for a command ended by Ctrl-C (128 + SIGINT)
BROKEN_PIPE = 141  # the shell's status for a command ended by SIGPIPE (128 + 13)


class CommandParser(OneLineParser):
    """The parser of `autotune` and, as argparse makes subparsers of their parent's class, of its commands: one
    whose epilog may be built when --help asks for it (`autotune --help`'s exit statuses and environment variables,
    commands/reference.py), its values from modules no command should import at its start."""

    def __init__(self, *args, epilog_from=None, **kwargs):
        self.epilog_from = epilog_from
        super().__init__(*args, **kwargs)

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


class _VersionAction(argparse.Action):
    """`--version`, worked out when asked for: the version reads the source tree's commit (a `git status`,
    autotune.source_label), which argparse's own version action, given its text when the parser is built, ran at
    the start of every command."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0,
                         help="show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        import autotune

        print(f"autotune {autotune.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="autotune",
        description="Energy-aware DeepSpeed configuration autotuner for multimodal training.",
        epilog_from=reference_text,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog's lines stay one a status or variable
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"autotune.commands.{name}").register(subparsers)
    parser.set_defaults(command_parsers=subparsers.choices)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit status. Ctrl-C (KeyboardInterrupt) is left to the caller: the console
    script turns it into status 130 (`console_main`)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown and _takes_several_positionals(args.command_parsers.get(args.command)):
        args, unknown = _parse_intermixed(args, argv), []
    if unknown:
        # What the subcommand did not take is its usage error ("see `autotune space --help`"), where parse_args
        # would name the top-level parser, whose --help does not list the subcommand's options.
        command_parser = args.command_parsers.get(args.command) or parser
        command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        # A usage error, one line on stderr as every other (the whole help on stdout made `autotune > out` look
        # like a success; a usage line before it was the first line a log scanner took for the error: trial71 #6).
        parser.error(f"the following arguments are required: COMMAND (one of {', '.join(COMMANDS)})")
    with undone_on_failure() as outcome:
        status = _run_command(args)
        outcome.succeeded = status == 0
        return status


def _takes_several_positionals(command_parser: argparse.ArgumentParser | None) -> bool:
    """Whether a command takes a list of positionals (`calibrate RUN_DIR ...`). argparse takes such a list
    where it first meets it and calls what follows an option an unrecognized argument (`calibrate runs/a
    --no-loo runs/b`), where GNU tools take operands on both sides of options."""
    return command_parser is not None and any(
        not action.option_strings and action.nargs in ("*", "+") for action in command_parser._actions)


def _parse_intermixed(args: argparse.Namespace, argv: list[str]) -> argparse.Namespace:
    """The command's arguments parsed again with its positionals on both sides of its options. The top-level
    parser has no option that takes a value, so the command's name is the first word of its own."""
    command_parser = args.command_parsers[args.command]
    rest = argv[argv.index(args.command) + 1:]
    namespace = argparse.Namespace(command=args.command, command_parsers=args.command_parsers)
    return command_parser.parse_intermixed_args(rest, namespace)


def _run_command(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        # The subcommand's prefix, as argparse's own errors have it ("autotune report: error: ..."): one
        # wording for every bad input of a command, whichever layer found it.
        print(f"autotune {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        from autotune.study.storage_failure import storage_failure_line

        line = storage_failure_line(exc)
        if line is None:
            raise
        print(f"autotune {args.command}: error: {line}", file=sys.stderr)
        return 2


def console_main() -> None:
    """The `autotune` command (and `python -m autotune.cli`): main(), then exit with its status.

    After Ctrl-C everything is saved (each layer cleans up on its way out): a second Ctrl-C, or the
    SIGINT that `timeout` and some launchers send to the whole process group right after the first,
    must not interrupt this message or kill the interpreter's shutdown by the default action (exit
    status -2 instead of 130, a traceback mid-cleanup). So the process ignores SIGINT and SIGTERM from
    then on. That is the process's business, not main()'s: a caller of main() in its own process gets
    the KeyboardInterrupt and keeps its signal handling.

    A stderr that stops taking output is the process's business too: from then on its lines are dropped
    and the command goes on, its status what the command did (status_stream)."""
    fill_closed_descriptors()
    if sys.argv[1:2] and sys.argv[1] in COMMANDS:
        _stop_from_the_start()
    keep_going_without_stderr()
    _forget_sizes_of_nothing()
    if sys.stdout is None:  # started with stdout closed (`>&-`): what the command prints has nowhere to go
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's stdout, open until it exits
        print("autotune: standard output is closed: nothing is printed there (the files a command writes, a run "
              "directory's, are written as ever)", file=sys.stderr)
    write_stdout_whole()
    _replace_what_stdout_cannot_encode()
    try:
        status = main()
        # The command's work is done: a stop signal from here on (a job's SIGTERM a moment late) must not turn a
        # finished command into a silent 143 with no line (trial 56 #2); the output below is all that is left.
        for signum in stop_signals():
            signal.signal(signum, signal.SIG_IGN)
        # Output a pipe has not taken yet is written here, where a reader gone away is still said as below
        # (at exit, Python would print "Exception ignored ... BrokenPipeError" and end with status 120).
        sys.stdout.flush()
    except KeyboardInterrupt as stop:
        for signum in stop_signals():
            signal.signal(signum, signal.SIG_IGN)
        if not getattr(stop, "said", False):  # the command said what its stop kept (export: its files, written whole)
            with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                print(_interrupted_line(sys.argv[1:]), file=sys.stderr)
        status = getattr(stop, "status", INTERRUPTED)
    except BrokenPipeError:
        # The reader of stdout went away (`autotune space --json | head`): what it read is all it wanted.
        # Python would still flush stdout at exit and print a second traceback; point stdout at devnull
        # and end as a tool killed by SIGPIPE does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = BROKEN_PIPE
    except OSError as exc:
        if exc.errno not in _OUTPUT_FULL:
            raise
        # stdout on a full disk or quota (a SLURM job's output file): what ran is in the study and its files,
        # written before the report is printed; one line, not a traceback, and nothing flushed again at exit.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"autotune: cannot write its output ({exc.strerror}){_what_is_kept(sys.argv[1:])}", file=sys.stderr)
        status = 1
    sys.exit(status)


def _stop_from_the_start() -> None:
    """Every command stops on SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 as on Ctrl-C, with the interrupted line and exit
    128 + the signal, from its first moment. `run`: until its study's handlers were set (imports, the space, the
    storage: seconds), SIGTERM ended it by the default action, with no word (trial 51 #7); it sets its own handlers
    later (commands/run.py). report, export, calibrate, space, compare, sensors ended by it silent (143, an empty log)
    where Ctrl-C said what was kept; each file they write is replaced whole (atomic_write), whichever stops them. A
    signal the process was started ignoring (nohup's SIGHUP) stays ignored here."""
    def raiser(kind):
        def handle(signum, frame):
            raise kind()
        return handle

    for signum, kind in stop_signals().items():
        if signum != signal.SIGINT and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, raiser(kind))


def _forget_sizes_of_nothing() -> None:
    """COLUMNS=0, which some wrappers and CI runners export, made rich draw every console 0 columns wide: on a
    terminal every command printed nothing (run: no backend line, no progress, no report). LINES=0 filled a run's
    progress with "..." lines. A size that is not a positive number is no size: rich takes the terminal's, or its
    80 columns; and so do the probes' processes, which inherit the environment."""
    for name in ("COLUMNS", "LINES"):
        size = os.environ.get(name, "").strip()
        if name in os.environ and not (size.isdigit() and int(size) > 0):
            del os.environ[name]


def _replace_what_stdout_cannot_encode() -> None:
    """Reports write "±" and "…". A stdout whose encoding lacks them (an ASCII locale with Python's UTF-8
    mode turned off, `LC_ALL=C PYTHONUTF8=0`) ended the command in UnicodeEncodeError after the study had
    run; such characters print as "?" instead, on stdout and stderr. A name Python could not decode (a path
    typed in UTF-8 there: its surrogate escapes) goes out as the bytes the user typed, not as '\\udcc3\\udca9'
    (stderr's backslashreplace; trial 45)."""
    from autotune.os_text import ERRORS

    for stream in (sys.stdout, sys.stderr):
        try:
            "±…".encode(stream.encoding or "ascii")
        except (UnicodeEncodeError, LookupError):
            with contextlib.suppress(AttributeError, ValueError):  # a stream that is not a text stream
                stream.reconfigure(errors=ERRORS)
        except AttributeError:  # None (closed at start) or a stand-in without an encoding
            pass


# The commands that only print: no study keeps what they found.
_WITHOUT_STUDY = ("space", "sensors", "compare")


def _what_is_kept(arguments: list[str]) -> str:
    """After the output filled up, what the user still has. `arguments`: the command line's, the first the
    subcommand's name (the top-level parser has no option that lets a command run)."""
    if arguments[:1] and arguments[0] in _WITHOUT_STUDY:
        return ": run it again with its output where there is room"
    return "; the study and its run directory keep what was evaluated: `autotune report RUN_DIR` prints it again"


def _interrupted_line(arguments: list[str]) -> str:
    """What Ctrl-C, SIGTERM or SIGHUP left of the command it stopped (`arguments` as _what_is_kept's). Only `run` has
    trials to keep and resume; `space` or `calibrate` said so too, and a user waited for a resume that never comes."""
    command = arguments[0] if arguments else None
    if command == "run":
        return "autotune: interrupted; completed trials are kept, run the same command again to resume"
    if command in _WITHOUT_STUDY:
        return "autotune: interrupted; nothing was written"
    if command in COMMANDS:  # report, export, calibrate: every file they write is replaced whole (atomic_write)
        return "autotune: interrupted; no file is left half-written: each is as before, or written whole"
    return "autotune: interrupted"


# The errors of an output that cannot take more: a full disk, a quota, a file past its size limit.
_OUTPUT_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


if __name__ == "__main__":
    console_main()
