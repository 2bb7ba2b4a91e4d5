"""The time limit of a run: a probe that cannot finish before it is not started, and the study stops there as at
its --trials budget (its reports written, nothing lost), instead of a job's end killing a probe half-way (its GPU
time spent for nothing) and the run with it, with no line saying where it stopped.

- The limit (`run_time_limit`): `autotune run --time-limit`, counted from the run's start, written as sbatch --time
  takes it (`parse_time_limit`); else, inside a SLURM job, the job's end (SLURM_JOB_END_TIME, set since Slurm
  23.02; `job_end_from_env`); else none. No squeue fallback for older SLURM: a call to the controller at every
  start, for what --time-limit gives, is not worth its failure modes (a hung controller holds up the run).
- The rule (`TimeLimit.held_back`): a probe starts only while the time left holds the next probe's expected wall
  time plus REPORT_MARGIN_S for the reports. That expected time is the longest probe of the study (every run's,
  every worker's) taken under this run's probe settings (`longest_probe_s`: the wall time the loop records on each
  trial, PROBE_WALL_ATTR, with the settings it ran under, PROBE_WALL_UNDER_ATTR: --probe-timeout, --warmup-steps,
  --probe-steps, --probe-seconds, --repeats), never more than the longest a probe may take now (`probe_bound_s`:
  --probe-timeout x --repeats, plus the backend's kill grace); with no probe under these settings, that bound.
  Probes under other settings say nothing of this run's: an old 900 s timeout blocked every probe of a resume with
  --probe-timeout 30, and old 20 s walls let a --probe-steps 2500 probe start into the reports' margin (trial 62
  F9, F11). The simulate and replay backends' probes take milliseconds and cannot time out: for them the rule asks
  for the margin alone.
- The lines `autotune run` prints: the limit in force as it starts (`time_limit_line`), and where it stopped the
  study, what was left and what would let a probe start (`time_stop_line`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable

from autotune.checks import flag_number, whole_literal_problem, written_whole

# Kept free after a probe for the reports (3 s for a 30-trial simulated study here; a minute for a large one) and
# for a job script's early SIGTERM: docs/launch.md's recipe asks for it 2 minutes before the end
# (`#SBATCH --signal=B:TERM@120`), and a probe that ends after it is stopped and lost.
REPORT_MARGIN_S = 180.0
# On each trial whose probe ran: its wall time in seconds, from the backend's start of it to its result; a wait for
# another worker's probe on the same devices (backends/device_turns.py) included, as the next probe may wait too.
PROBE_WALL_ATTR = "probe_wall_s"
# Beside it: the probe settings it ran under (Backend.timeout_settings()); a wall under others is not weighed.
PROBE_WALL_UNDER_ATTR = "probe_wall_under"
SLURM_END_ENV = "SLURM_JOB_END_TIME"
# Study attribute set when the time limit stopped the study (study/loop.py): "slurm" (the SLURM job's end) or "flag"
# (--time-limit); cleared when a later run starts or the study stops otherwise. The report reads it: "a larger
# --trials resumes the study" was said of a study whose budget was not spent.
TIME_LIMIT_STOP_ATTR = "stopped_by_time_limit"
# Set beside it where the stop came before any probe could start and a run as long stops in the same place
# (`stops_again`): the report then says what resumes the study (a longer limit, or a --probe-timeout that fits), not
# "the same command", which stops there again (trial 67 #3).
TIME_LIMIT_TOO_SHORT_ATTR = "time_limit_too_short"
# The exit status of a run the time limit stopped, its reports written: EX_TEMPFAIL of sysexits.h ("try again later"),
# so that a job chain tells "resubmit me" from a study that ended (0); the signals' 143, 138, 140 say a stop that
# wrote no reports (trial 62 F3).
TIME_LIMIT_EXIT_STATUS = 75
TIME_LIMIT_TOO_SHORT_EXIT_STATUS = 2  # errors.USAGE_EXIT_STATUS's value: the fix is in the job's set-up
# A year: a longer limit is a typo (SLURM's own "no limit" jobs end a year after their start, too).
MAX_TIME_LIMIT_S = 365 * 86_400
# The range of a job's end in the environment: from 2000-01-01 (0, or a count of minutes, is no job's end) to
# 9999-12-31T23:59:59Z, the last instant a date is written for.
_FIRST_EPOCH_S = 946_684_800
_LAST_EPOCH_S = 253_402_300_799
FORMS = ("MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS, "
         "as sbatch --time takes it (a bare number is minutes)")
# The fields of each form (sbatch's own parse, src/common/parse_time.c), and each field's largest value past the first.
_FIELDS = {(False, 1): ("minutes",), (False, 2): ("minutes", "seconds"), (False, 3): ("hours", "minutes", "seconds"),
           (True, 1): ("days", "hours"), (True, 2): ("days", "hours", "minutes"),
           (True, 3): ("days", "hours", "minutes", "seconds")}
_HIGHEST = {"hours": 23, "minutes": 59, "seconds": 59}
_SECONDS = {"days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# Units a time limit is written with elsewhere (`1h`, `120s`): sbatch takes none, and a bare number is minutes.
_UNITS_S = {**dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
            **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
            **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3_600), **dict.fromkeys(("d", "day", "days"), 86_400)}


class TimeLimitError(ValueError):
    """A --time-limit that is none of sbatch's forms, or out of range: its message names the problem and the fix."""


def parse_time_limit(text: str) -> int:
    """Seconds in `text`, a time limit as sbatch --time writes it. Stricter than sbatch where a value is more
    likely a typo than meant: a field past the first out of its clock's range (`1:60:00`, which SLURM reads as
    2 hours), 0 and -1 (SLURM's "no limit": here leave the flag out), non-ASCII digits, more than a year."""
    stripped = text.strip()
    if not stripped:
        raise TimeLimitError(f"is empty; write it as {FORMS}")
    if stripped == "-1" or stripped.upper() in ("INFINITE", "UNLIMITED"):
        raise TimeLimitError("is SLURM's no limit (as -1, INFINITE and UNLIMITED are): leave --time-limit out for no limit")
    if stripped.startswith("-"):
        raise TimeLimitError(f"starts with '-': a time limit is a length of time, of 1 second or more; write it as {FORMS}")
    unit = re.fullmatch(r"([0-9]+) ?([a-zA-Z]+)", stripped)
    if unit and unit[2].lower() in _UNITS_S:
        raise TimeLimitError(f"has a unit, which sbatch's forms take none of: {_without_unit(int(unit[1]) * _UNITS_S[unit[2].lower()])}")
    # A '-' after a ':' is no DAYS- ('1:-5': a negative field), nor is an exponent's ('1e-1' was "days '1e'"), which
    # the fields below say.
    after_colon = 0 <= stripped.find(":") < stripped.find("-")
    exponent = re.search(r"[0-9.][eE]-", stripped)
    days, dash, clock = (stripped, "", "") if after_colon or exponent else stripped.partition("-")
    clock = clock if dash else days
    parts = ([days] if dash else []) + clock.split(":")
    names = _FIELDS.get((bool(dash), len(parts) - bool(dash)))
    if names is None or (dash and "-" in clock):
        too_many = "more than one '-'" if dash and "-" in clock else "more than two ':'"
        raise TimeLimitError(f"has {too_many}; write it as {FORMS}")
    seconds = 0
    for index, (name, field) in enumerate(zip(names, parts)):
        seconds += _field(name, field, None if index == 0 else _HIGHEST[name], alone=len(parts) == 1) * _SECONDS[name]
    if seconds == 0:
        raise TimeLimitError("is 0 (SLURM's 0 is no limit): leave --time-limit out for no limit, or give one of at least "
                             "1 second")
    if seconds > MAX_TIME_LIMIT_S:
        raise TimeLimitError(f"is more than a year (a typo?); write it as {FORMS}")
    return seconds


def _field(name: str, field: str, highest: int | None, alone: bool = False) -> int:
    """One field of a time limit: ASCII digits (1.5, +5, ١٠ are not: one wording for them all) within its clock's
    range (checks.flag_number says why not). A whole number written as a float ('1e2', '2.0') is said as every
    whole-number flag says it (--trials 1e2), the value to write with it; `alone`: the field is the whole value
    (minutes), which needs no naming."""
    if not field:
        raise TimeLimitError(f"lacks its {name}; write it as {FORMS}")
    whole = None if field.startswith("-") else written_whole(field)
    if whole is not None:  # the first field's range: what a year holds of it (525600 minutes)
        most = MAX_TIME_LIMIT_S // _SECONDS[name] if highest is None else highest
        problem = whole_literal_problem(whole, 1 if alone else 0, most)
        raise TimeLimitError(problem if alone else f"has {name} {field!r}, which {problem}")
    if not re.fullmatch(r"[0-9]+", field):
        what = "is negative" if field.startswith("-") else "is not a whole number in digits 0-9"
        raise TimeLimitError(f"has {name} {field!r}, which {what}; write it as {FORMS}")
    value, problem = flag_number(field, low=0, high=highest, integer=True)
    if problem:
        raise TimeLimitError(f"has {name} {field!r}, which {problem}; write it as {FORMS}")
    return value


def sbatch_text(seconds: int) -> str:
    """Whole seconds as --time-limit and sbatch --time take them: MINUTES, or MINUTES:SECONDS."""
    minutes, second = divmod(seconds, 60)
    return f"{minutes}" if not second else f"{minutes}:{second:02d}"


def _without_unit(seconds: int) -> str:
    """A length written in sbatch's forms, as the advice to a value with a unit (`1h`: 60, or 1:00:00)."""
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    bare = sbatch_text(seconds)
    what = "MINUTES, a bare number" if not second else "MINUTES:SECONDS"
    return f"write it as {bare} ({what}) or {hours}:{minute:02d}:{second:02d} (HOURS:MINUTES:SECONDS)"


def job_end_from_env(environ: dict[str, str]) -> tuple[float | None, str | None]:
    """(the SLURM job's end, epoch seconds; a warning), from SLURM_JOB_END_TIME: (None, None) where it is not set, and
    (None, why) where it is no time of a job's end: a warning, never a stop (the run goes on without a limit). An end
    already past is one: the job is at its end (or in SLURM's OverTimeLimit grace), and no probe would finish."""
    raw = environ.get(SLURM_END_ENV, "").strip()
    if not raw:
        return None, None
    if not re.fullmatch(r"[0-9]+", raw) or not _FIRST_EPOCH_S <= int(raw) <= _LAST_EPOCH_S:
        return None, (f"{SLURM_END_ENV}={raw!r} in the environment is not a time (whole seconds since 1970, as SLURM sets "
                      "it): ignored, so a probe may still be started that the job's end kills; pass --time-limit with the "
                      "job's time left")
    return float(raw), None


def end_words(end_s: float, now_s: float) -> str:
    """When a limit ends, in local time: 14:02, with the date where it is not within a day."""
    form = "%H:%M" if 0 <= end_s - now_s < 86_400 else "%Y-%m-%d %H:%M"
    return time.strftime(form, time.localtime(end_s))


def probe_bound_s(timeout_settings: dict, kill_grace_s: float = 0.0) -> float | None:
    """The longest a probe may take under these settings (--probe-timeout x --repeats: the timeout is each run's, and
    the run that times out ends the probe, after the `kill_grace_s` its processes are given before SIGKILL), or None
    for a backend whose evaluations cannot time out (Backend.timeout_settings() is empty: simulate, replay)."""
    timeout_s = timeout_settings.get("--probe-timeout")
    return None if timeout_s is None else float(timeout_s) * int(timeout_settings.get("--repeats", 1)) + kill_grace_s


@dataclass(frozen=True)
class HeldBack:
    """Why a probe was not started: the time left, and what a probe takes (`measured`: the longest of the study under
    this run's probe settings; else the bound, `probe_bound_s`)."""

    left_s: float
    probe_s: float
    measured: bool


class TimeLimit:
    """A run's time limit, on a monotonic clock (a wall-clock step must not move it). `left_s`: the seconds left at its
    start (kept as `length_s`), None for no limit. `ends_s` (epoch) and `slurm` (the job's end, not --time-limit) say where it came from."""

    def __init__(self, left_s: float | None, ends_s: float | None = None, slurm: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.deadline = None if left_s is None else clock() + left_s
        self.length_s = left_s
        self.ends_s, self.slurm = ends_s, slurm
        self.stopped: HeldBack | None = None  # set when the rule held a probe back
        # Whether the rule let a probe of this run start: where none did, the same command with the same time left
        # stops in the same place (its stop line then says what would go on: time_stop_line).
        self.let_probe_start = False
        # Whether a probe of this run started (study/loop.py sets it): the rule may have let trials through that never
        # reached a probe (duplicates, pruned), and a run that started none needs what would let one start as much as
        # one the rule held back at once (its stop line said "run the same command again to resume").
        self.probe_started = False

    def held_back(self, longest_probe_s: float | None, bound_s: float | None) -> HeldBack | None:
        """The rule: a HeldBack where the time left cannot hold a probe and the reports, else None."""
        if self.deadline is None:
            return None
        left_s = self.deadline - self.clock()
        measured = longest_probe_s is not None and (bound_s is None or longest_probe_s < bound_s)
        probe_s = longest_probe_s if measured else (bound_s or 0.0)
        if left_s >= probe_s + REPORT_MARGIN_S:
            self.let_probe_start = True
            return None
        self.stopped = HeldBack(max(left_s, 0.0), probe_s, measured)
        return self.stopped



def fitting_probe_timeout_s(left_s: float, timeout_settings: dict, kill_grace_s: float = 0.0) -> int | None:
    """The largest whole --probe-timeout whose bound (`probe_bound_s`) and the reports' margin fit in `left_s`, or None
    where none of at least a second does (or the backend has no timeout)."""
    if "--probe-timeout" not in timeout_settings:
        return None
    fits_s = int((left_s - REPORT_MARGIN_S - kill_grace_s) // int(timeout_settings.get("--repeats", 1)))
    return fits_s if fits_s >= 1 else None


def time_limit_line(limit: TimeLimit) -> str:
    """The limit in force, said once as the run starts: which one it is and when it ends. One followed with tail -f
    learned whether any applied only when the study stopped (trial 62 F5)."""
    from autotune.report.units import time_text  # here, not above: autotune.report's package imports autotune.study

    now_s = time.time()
    which = "the SLURM job's end" if limit.slurm else "--time-limit"
    left_s = limit.ends_s - now_s
    left = f"{time_text(left_s)} from now" if left_s > 0 else "already past"
    return f"time limit: {which}, {end_words(limit.ends_s, now_s)} ({left})"


def stops_again(limit: TimeLimit) -> bool:
    """Whether the time limit stopped a run before the rule let any probe start, with time left: the same command given
    as much time stops in the same place. Its exit status is then no "try again later" (75): a job chain that submits
    the job again on 75 would submit, for ever, jobs that probe nothing (trial 67 #3); the stop line says what fits."""
    held = limit.stopped
    return held is not None and held.left_s > 0 and not limit.probe_started and not limit.let_probe_start


def run_exit_status(limit: TimeLimit) -> int:
    """A run's exit status where its study did not fail: 0 where the time limit did not stop it; 75 (EX_TEMPFAIL) where
    a new job resumes it; 2 where a job as long stops in the same place (a --probe-timeout that fits, or a longer job,
    is the fix: a set-up error, as the usage errors' status says)."""
    if not limit.stopped:
        return 0
    return TIME_LIMIT_TOO_SHORT_EXIT_STATUS if stops_again(limit) else TIME_LIMIT_EXIT_STATUS


def time_stop_line(limit: TimeLimit, timeout_settings: dict | None = None, kill_grace_s: float = 0.0) -> str:
    """The line of a study the time limit stopped: how much time was left of which limit, what a probe takes, and how
    to go on. Where no probe of this run started (the rule held back the first, or let through only trials that never
    reached one), the same command with as much time stops there again (trial 62 F2: a 15-minute job under the default
    --probe-timeout 900, every job): the line says what would go on, a --probe-timeout that fits (`timeout_settings`,
    the backend's, with its `kill_grace_s`) or a longer limit."""
    from autotune.report.units import time_text

    held = limit.stopped
    now_s = time.time()
    ends = end_words(limit.ends_s, now_s)
    of = f"the time limit (SLURM job ends {ends})" if limit.slurm else f"--time-limit (ends {ends})"
    margin = time_text(REPORT_MARGIN_S)
    if held.measured:
        need = f"and a probe of this study has taken up to {time_text(held.probe_s)} ({margin} more are kept for the reports)"
    elif held.probe_s:
        need = (f"and a probe may take up to {time_text(held.probe_s)} (--probe-timeout x --repeats and the time to stop "
                f"one: no shorter probe of this study ran under these probe settings; {margin} more are kept for the "
                "reports)")
    else:  # a backend whose evaluations take no time (simulate, replay)
        need = f"less than the {margin} kept for the reports"
    again = "resume with the same command in a new job" if limit.slurm else "run the same command again to resume"
    if stops_again(limit) or (not limit.probe_started and held.left_s > 0):
        # What the run spent before the stop (its start-up: the study opened, the space checked; trials that reached no
        # probe) is spent again: "a --time-limit longer than 3.00 min" was said to a run given 3:06.
        needed_s = limit.length_s - held.left_s + held.probe_s + REPORT_MARGIN_S
        # In the flag's own form, to the second: "longer than 3.02 min" was said to a run given 3:01, which is that
        # as printed (trial68 #9). The next whole second past what is needed.
        at_least = sbatch_text(int(needed_s) + 1)
        longer = f"a job of {at_least} or more (sbatch --time)" if limit.slurm else f"a --time-limit of {at_least} or more"
        fits_s = None if held.measured else fitting_probe_timeout_s(held.left_s, timeout_settings or {}, kill_grace_s)
        repeats = (timeout_settings or {}).get("--repeats", 1)
        fits = f"a --probe-timeout of {fits_s} s{f' (with --repeats {repeats})' if repeats > 1 else ''} fits the time left, or "
        # Where the rule let trials through, none reached its probe (duplicates, pruned, or held up by another worker
        # until the time was gone): a new run may reach one in time, or stop as this one did.
        stops = ("with this much time the same command stops here again" if stops_again(limit) else
                 "no probe of this run started; with this much time the same command may stop here again")
        again = f"{stops}: {fits if fits_s else ''}{longer} lets a probe start"
    elif limit.slurm and limit.ends_s <= now_s:
        # An end already past: the job is in SLURM's grace (OverTimeLimit), or its limit was raised since it started
        # (scontrol update), which the variable does not follow.
        again += " (where this job's limit was raised since it started, pass --time-limit with its time left)"
    left = time_text(held.left_s) if held.left_s > 0 else "no time"
    if left == time_text(held.probe_s + REPORT_MARGIN_S):  # "3.00 min left ..., less than the 3.00 min kept" (179.8 s)
        left = f"{held.left_s:.1f} s"
    return f"stopped: {left} left of {of}, {need}; {again}"


def run_time_limit(flag_s: int | None, environ: dict[str, str], clock: Callable[[], float] = time.monotonic,
                   now_s: float | None = None) -> tuple[TimeLimit, str | None]:
    """(the run's limit, a warning): the earlier of --time-limit from now and the SLURM job's end, either where the
    other is not given, else none. A --time-limit that ends after the job is warned of: the job's end kills the run
    whatever the flag says (`#SBATCH --time=12:00:00` copied into --time-limit counts from the tuner's start, after the
    job's; trial 62 F5). One ending before the job's end wins: a job whose limit was raised since it started passes its
    time left."""
    now_s = time.time() if now_s is None else now_s
    end_s, warning = job_end_from_env(environ)
    if flag_s is not None and (end_s is None or now_s + flag_s <= end_s):
        return TimeLimit(flag_s, now_s + flag_s, clock=clock), None  # a job's end that is no time: the flag gives it
    if end_s is None:
        return TimeLimit(None, clock=clock), warning
    if flag_s is not None:
        warning = (f"--time-limit ends at {end_words(now_s + flag_s, now_s)}, after this SLURM job's end "
                   f"({end_words(end_s, now_s)}, {SLURM_END_ENV}), which stops the run first: the job's end is the limit")
    return TimeLimit(end_s - now_s, end_s, slurm=True, clock=clock), warning


def forget_time_limit_stop(study) -> None:
    """The study goes on, or stopped for another reason: it is no longer one the time limit stopped."""
    for attr in (TIME_LIMIT_STOP_ATTR, TIME_LIMIT_TOO_SHORT_ATTR):
        if study.user_attrs.get(attr) is not None:
            study.set_user_attr(attr, None)


def longest_probe_s(trials, timeout_settings: dict) -> float | None:
    """The longest wall time a probe of the study took under `timeout_settings` (every run's, every worker's), or None
    where none did. A wall kept without its settings (a study from before they were kept) is not weighed."""
    walls = [t.user_attrs[PROBE_WALL_ATTR] for t in trials
             if PROBE_WALL_ATTR in t.user_attrs and t.user_attrs.get(PROBE_WALL_UNDER_ATTR) == timeout_settings]
    return max(walls, default=None)
