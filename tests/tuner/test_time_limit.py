"""`autotune run --time-limit`, or the SLURM job's end: no probe starts that cannot finish before it; the study
stops there as at its budget, its reports written, with a line saying how much time was left and how to resume."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from autotune.backends.simulate import SimulateBackend
from autotune.candidate import params_key
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.retries import is_evaluated
from autotune.study.time_limit import (PROBE_WALL_ATTR, REPORT_MARGIN_S, SLURM_END_ENV, TIME_LIMIT_STOP_ATTR, HeldBack,
                                       TimeLimit, TimeLimitError, job_end_from_env, parse_time_limit, probe_bound_s,
                                       run_exit_status, run_time_limit, stops_again, time_stop_line)
from autotune.study.unique import OVER_BUDGET_ATTR
from autotune.study.valid import valid_checks
from tests import cli
from tests.tuner.test_bad_input import assert_one_clear_line

SPACE = Path(__file__).with_name("small_7b_space.toml")


# --- the flag's value: sbatch --time's forms ------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [
    ("120", 7200),  # a bare number is minutes, as in sbatch
    ("30:00", 1800),  # MINUTES:SECONDS
    ("0:30", 30),
    ("2:00:00", 7200),
    ("48:00:00", 172_800),  # the first field takes any count, as sbatch's does
    ("1-12", 129_600),  # DAYS-HOURS
    ("1-12:30", 131_400),
    ("1-12:30:15", 131_415),
    (" 90 ", 5400),
    ("525600", 365 * 86_400),  # a year, the most
])
def test_every_form_sbatch_takes_is_read_as_sbatch_reads_it(text, seconds):
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize("text, said", [
    ("", "is empty"),
    ("-5", "starts with '-': a time limit is a length of time, of 1 second or more"),
    ("-1:30", "starts with '-'"),
    ("-1", "is SLURM's no limit (as -1, INFINITE and UNLIMITED are): leave --time-limit out for no limit"),
    ("UNLIMITED", "leave --time-limit out for no limit"),
    ("infinite", "is SLURM's no limit (as -1, INFINITE and UNLIMITED are)"),  # trial 62 F8: INFINITE named
    ("1:-5", "has seconds '-5', which is negative"),  # trial 62 F6: it was "has days '1:'"
    ("1:2:-3", "has seconds '-3', which is negative"),
    ("0", "is 0 (SLURM's 0 is no limit)"),
    ("0:00:00", "is 0"),
    ("1:60:00", "has minutes '60', which is out of range; it must be a whole number >= 0 and <= 59"),
    ("1:00:60", "has seconds '60'"),
    ("1-24", "has hours '24'"),
    ("abc", "has minutes 'abc', which is not a whole number"),
    # One wording for every field that is not digits 0-9 (trial 62 F8: three).
    ("1.5", "has minutes '1.5', which is not a whole number in digits 0-9"),
    ("1e-1", "has minutes '1e-1', which is not a whole number in digits 0-9"),  # not "days '1e'"
    ("+5", "has minutes '+5', which is not a whole number in digits 0-9"),
    ("١٢٠", "which is not a whole number in digits 0-9"),  # Arabic-Indic 120: a digit to Python, not to sbatch
    ("１２０", "which is not a whole number in digits 0-9"),  # fullwidth
    ("1_0", "which is not a whole number in digits 0-9"),
    ("525601", "more than a year"),
    ("9" * 400, "more than a year"),
    ("1:2:3:4", "more than two ':'"),
    ("1-2-3", "more than one '-'"),
    ("1-", "lacks its hours"),
    ("1::00", "lacks its minutes"),
    # A unit: said, with the value in sbatch's forms (trial 62 F8).
    ("2h", "'2h' has a unit, which sbatch's forms take none of: write it as 120 (MINUTES, a bare number) or 2:00:00 "
           "(HOURS:MINUTES:SECONDS)"),
    ("120s", "write it as 2 (MINUTES, a bare number) or 0:02:00 (HOURS:MINUTES:SECONDS)"),
    ("90 sec", "write it as 1:30 (MINUTES:SECONDS) or 0:01:30"),
])
def test_a_wrong_value_is_refused_with_its_problem_and_the_forms(text, said):
    with pytest.raises(TimeLimitError) as refused:
        parse_time_limit(text)
    assert said in f"{text!r} {refused.value}"
    if "no limit" not in said and "is 0" not in said and "write it as" not in said:
        assert str(refused.value).endswith("as sbatch --time takes it (a bare number is minutes)")


WHOLE_AS_FLOAT = "is not a whole number; write it without a decimal point or an exponent"


@pytest.mark.parametrize("text, said", [
    ("1e2", f"'1e2' {WHOLE_AS_FLOAT} (100)"), ("2.0", f"'2.0' {WHOLE_AS_FLOAT} (2)"),
    ("+1E2", f"'+1E2' {WHOLE_AS_FLOAT} (100)"), ("1e-0", f"'1e-0' {WHOLE_AS_FLOAT} (1)"),
    ("1e9", f"'1e9' {WHOLE_AS_FLOAT}, and it is too large: it must be a whole number >= 1 and <= 525600"),
    ("1e400", f"'1e400' {WHOLE_AS_FLOAT}, and it is too large: it must be a whole number >= 1 and <= 525600"),
    ("0.0", f"'0.0' {WHOLE_AS_FLOAT}, and it is too small: it must be a whole number >= 1 and <= 525600"),
    ("1:3e1", f"'1:3e1' has seconds '3e1', which {WHOLE_AS_FLOAT} (30)"),
    ("1:6e1", f"'1:6e1' has seconds '6e1', which {WHOLE_AS_FLOAT}, and it is too large: it must be a whole number >= 0 and <= 59"),
    ("1-1e1", f"'1-1e1' has hours '1e1', which {WHOLE_AS_FLOAT} (10)"),
    ("1e1-5", f"'1e1-5' has days '1e1', which {WHOLE_AS_FLOAT} (10)"),
])
def test_a_whole_number_written_as_a_float_is_said_as_every_whole_number_flag_says_it(text, said):
    """--time-limit 1e2 read "has minutes '1e2', which is not a whole number in digits 0-9; write it as MINUTES, ..."
    where --trials, --repeats and --nodes 1e2 say what to write: the same words, and the number."""
    with pytest.raises(TimeLimitError) as refused:
        parse_time_limit(text)
    assert f"{text!r} {refused.value}" == said


@pytest.mark.parametrize("value", ["1e2", "2.0", "1e400"])
def test_the_command_line_says_a_float_written_whole_number_as_trials_does(value):
    said = {}
    for flag in ("--time-limit", "--trials"):
        refused = cli.autotune_main("run", "--model", "7b", f"{flag}={value}")
        assert refused.returncode == 2
        said[flag] = refused.stderr.split(f"argument {flag}: ", 1)[1].split(", and it is too large")[0]
    assert said["--time-limit"] == said["--trials"]


@pytest.mark.parametrize("value", ["", "-5", "0", "1:60:00", "abc", "1e9", "١٢٠", "99999999999"])
def test_the_command_line_refuses_a_wrong_value_in_one_line_with_exit_2(tmp_path, value):
    result = cli.autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", f"--time-limit={value}",
                               "--out", tmp_path / "run")
    assert result.returncode == 2
    assert_one_clear_line(result.stderr, "argument --time-limit", repr(value))
    assert not (tmp_path / "run").exists()


def test_a_negative_value_given_apart_is_read_as_the_flags_value():
    result = cli.autotune_main("run", "--model", "7b", "--time-limit", "-5")
    assert result.returncode == 2
    assert_one_clear_line(result.stderr, "argument --time-limit: '-5' starts with '-': a time limit is a length of time")


def test_a_value_starting_with_a_dash_is_refused_at_once_not_sent_to_the_equals_spelling():
    """Trial 62 F7: `--time-limit -1:30` advised `--time-limit=-1:30`, which then failed with a second error."""
    result = cli.autotune_main("run", "--model", "7b", "--time-limit", "-1:30")
    assert result.returncode == 2
    assert_one_clear_line(result.stderr, "argument --time-limit: '-1:30' starts with '-': a time limit is a length of time")
    assert "--time-limit=" not in result.stderr


def test_help_names_the_forms_and_that_a_bare_number_is_minutes():
    text = " ".join(cli.autotune_main("run", "--help").stdout.split())
    assert "--time-limit TIME" in text
    for form in ("MINUTES (a bare number is minutes, as in sbatch)", "MINUTES:SECONDS", "HOURS:MINUTES:SECONDS", "DAYS-HOURS",
                 "DAYS-HOURS:MINUTES", "DAYS-HOURS:MINUTES:SECONDS", "SLURM_JOB_END_TIME"):
        assert form in text


# --- where the limit comes from ----------------------------------------------------------------------

def test_the_slurm_jobs_end_is_the_default_and_an_earlier_flag_overrides_it():
    clock = _Clock()
    now_s = time.time()
    environ = {SLURM_END_ENV: str(int(now_s) + 3600)}
    limit, warning = run_time_limit(None, environ, clock=clock, now_s=now_s)
    assert warning is None and limit.slurm and limit.deadline == pytest.approx(clock.now_s + 3600, abs=1)
    limit, warning = run_time_limit(600, environ, clock=clock, now_s=now_s)
    assert warning is None and not limit.slurm and limit.deadline == clock.now_s + 600
    limit, warning = run_time_limit(None, {}, clock=clock, now_s=now_s)
    assert warning is None and limit.deadline is None
    limit, warning = run_time_limit(600, {SLURM_END_ENV: "tomorrow"}, clock=clock, now_s=now_s)
    assert warning is None and limit.deadline == clock.now_s + 600  # the flag is the job's time left


def test_a_flag_that_ends_after_the_slurm_job_is_warned_of_and_the_jobs_end_is_the_limit():
    """Trial 62 F5: `--time-limit 60` (meant as seconds) in a job ending in 100 s replaced the job's end silently, and
    probes started that the job's end then killed."""
    clock = _Clock()
    now_s = time.time()
    limit, warning = run_time_limit(3600, {SLURM_END_ENV: str(int(now_s) + 100)}, clock=clock, now_s=now_s)
    assert limit.slurm and limit.deadline == pytest.approx(clock.now_s + 100, abs=1)
    assert re.fullmatch(r"--time-limit ends at \d\d:\d\d, after this SLURM job's end \(\d\d:\d\d, SLURM_JOB_END_TIME\), "
                        r"which stops the run first: the job's end is the limit", warning), warning


def test_the_run_says_once_at_its_start_which_limit_is_in_force(tmp_path, monkeypatch):
    monkeypatch.setenv(SLURM_END_ENV, str(int(time.time()) + 7200))
    result = cli.autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "2", "--quiet",
                               "--time-limit", "3:00:00", "--out", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "time limit" in line or "--time-limit" in line]
    assert len(said) == 2, result.stderr
    assert said[0].startswith("warning: --time-limit ends at") and said[0].endswith("the job's end is the limit")
    assert re.fullmatch(r"time limit: the SLURM job's end, \d\d:\d\d \((1\.99|2\.00) h from now\)", said[1]), said[1]


def test_the_environment_is_read_as_the_process_sees_it(monkeypatch):
    monkeypatch.setenv(SLURM_END_ENV, str(int(time.time()) + 7200))
    limit, warning = run_time_limit(None, dict(os.environ))
    assert warning is None and limit.slurm and 7100 < limit.deadline - time.monotonic() <= 7200


@pytest.mark.parametrize("raw", ["abc", "1.5e9", "-1", "0", "17000", "99999999999999", "１７９５８０５７０９", "1_795_805_709"])
def test_a_wrong_slurm_end_is_a_warning_and_no_limit(raw):
    end_s, warning = job_end_from_env({SLURM_END_ENV: raw})
    assert end_s is None
    assert warning.startswith(f"{SLURM_END_ENV}={raw!r} in the environment is not a time") and "--time-limit" in warning
    limit, said = run_time_limit(None, {SLURM_END_ENV: raw})
    assert limit.deadline is None and said == warning


def test_an_end_already_past_is_an_end_no_probe_fits_in():
    clock = _Clock()
    limit, warning = run_time_limit(None, {SLURM_END_ENV: str(int(time.time()) - 60)}, clock=clock)
    assert warning is None
    assert limit.held_back(None, None) == HeldBack(0.0, 0.0, False)
    assert "pass --time-limit with its time left" in time_stop_line(limit)


def test_a_bad_environment_value_is_one_warning_line_and_the_run_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv(SLURM_END_ENV, "tomorrow")
    result = cli.autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "2", "--quiet",
                               "--out", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if SLURM_END_ENV in line]
    assert len(warned) == 1 and warned[0].startswith("warning: SLURM_JOB_END_TIME='tomorrow' in the environment is not a time")
    assert "stopped:" not in result.stderr


# --- the rule, on a fake clock --------------------------------------------------------------------

class _Clock:
    def __init__(self):
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def test_before_any_probe_the_probe_timeout_times_the_repeats_must_fit():
    assert probe_bound_s({"--probe-timeout": 900.0, "--repeats": 2}) == 1800.0
    assert probe_bound_s({}) is None  # simulate and replay: nothing times out
    clock = _Clock()
    limit = TimeLimit(1800 + REPORT_MARGIN_S, clock=clock)
    assert limit.held_back(None, 1800.0) is None  # just fits
    clock.now_s += 1
    assert limit.held_back(None, 1800.0) == HeldBack(1799 + REPORT_MARGIN_S, 1800.0, False)


def test_once_a_probe_finished_the_longest_so_far_must_fit():
    clock = _Clock()
    limit = TimeLimit(600, clock=clock)
    assert limit.held_back(400.0, 3600.0) is None  # the timeout no longer counts: the probes take 400 s
    clock.now_s += 100
    held = limit.held_back(400.0, 3600.0)
    assert held == HeldBack(500.0, 400.0, True) and limit.stopped == held


def test_probes_that_take_no_time_need_only_the_reports_margin():
    """simulate and replay: the limit applies to the wall clock, but fires only with less than the margin left."""
    clock = _Clock()
    limit = TimeLimit(REPORT_MARGIN_S + 1, clock=clock)
    for _ in range(1000):  # a thousand simulated probes of a millisecond each
        assert limit.held_back(0.001, None) is None
        clock.now_s += 0.001
    assert TimeLimit(None, clock=clock).held_back(10.0 ** 9, None) is None  # no limit: never


# --- a study, with probes that take minutes on a fake clock ------------------------------------------

class _TimedProbes(SimulateBackend):
    """Simulated figures, and probes that take `walls_s` in turn on the fake clock, under a probe timeout."""

    def __init__(self, clock: _Clock, walls_s: list[float], probe_timeout_s: float = 300.0, probe_steps: int = 5,
                 kill_grace_s: float = 0.0):
        super().__init__()
        self.clock, self.walls_s, self.probe_timeout_s = clock, walls_s, probe_timeout_s
        self.probe_steps, self.kill_grace_s = probe_steps, kill_grace_s
        self.probed: list[str] = []

    def evaluate(self, candidate, trial_number=0):
        self.clock.now_s += self.walls_s[len(self.probed) % len(self.walls_s)]
        self.probed.append(params_key(candidate.knobs.to_dict()))
        return super().evaluate(candidate, trial_number)

    def timeout_settings(self) -> dict:
        return {"--probe-steps": self.probe_steps, "--repeats": 1, "--probe-timeout": self.probe_timeout_s}


def _study(tmp_path):
    settings = settings_for("--model", "7b", "--nodes", "1", "--space", str(SPACE))
    checks = valid_checks(settings)
    return settings, checks, open_study(tmp_path, None, make_sampler(0, 10, "guided", checks), cheap_figures=True)


def test_the_study_stops_before_the_probe_that_would_overrun_and_resumes_without_repeating_one(tmp_path):
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [400.0, 500.0], probe_timeout_s=600.0)
    # 1500 s: the first probe needs its timeout (600 s) and the margin; then 400 s, 500 s: 600 s are left, less
    # than the longest probe (500 s) and the margin.
    limit = TimeLimit(1500.0, ends_s=time.time() + 1500, slurm=True, clock=clock)
    ran = run_study(study, settings, backend, 10, checks=checks, early_stop=False, time_limit=limit)
    assert ran == 2 and len(backend.probed) == 2
    assert limit.stopped == HeldBack(600.0, 500.0, True)
    # Stopped before Optuna created the next trial: no unstarted candidate's FAIL trial in optuna-dashboard (trial 62
    # F12), where a trial over_budget was left at every time stop.
    assert not [t for t in study.trials if t.user_attrs.get(OVER_BUDGET_ATTR)]
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert sorted(t.user_attrs[PROBE_WALL_ATTR] for t in study.trials if PROBE_WALL_ATTR in t.user_attrs) == [400.0, 500.0]
    line = time_stop_line(limit)
    assert re.fullmatch(r"stopped: 10\.0 min left of the time limit \(SLURM job ends \d\d:\d\d\), and a probe of this study "
                        r"has taken up to 8\.33 min \(3\.00 min more are kept for the reports\); resume with the same command "
                        r"in a new job", line), line

    # A new job with 650 s: the earlier run's 500 s probe is the study's longest, so none starts.
    again = TimeLimit(650.0, clock=clock)
    assert run_study(study, settings, backend, 10, checks=checks, early_stop=False, time_limit=again) == 0
    assert again.stopped == HeldBack(650.0, 500.0, True) and len(backend.probed) == 2
    assert len(study.trials) == 2  # a run that starts no probe creates no trial

    # A new job with time enough: the study goes on to its budget, and no candidate is probed twice.
    enough = TimeLimit(10 * 3600.0, clock=clock)
    ran = run_study(study, settings, backend, 6, checks=checks, early_stop=False, time_limit=enough)
    assert ran == 4 and enough.stopped is None
    evaluated = [params_key(t.params) for t in study.trials if is_evaluated(t)]
    assert len(evaluated) == 6 and len(set(evaluated)) == 6 and len(set(backend.probed)) == len(backend.probed) == 6


def test_before_any_probe_finished_a_limit_shorter_than_the_timeout_starts_none(tmp_path):
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [60.0], probe_timeout_s=900.0)
    limit = TimeLimit(900.0, ends_s=time.time() + 900, clock=clock)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 0
    assert backend.probed == [] and limit.stopped == HeldBack(900.0, 900.0, False)
    assert re.fullmatch(r"stopped: 15\.0 min left of --time-limit \(ends \d\d:\d\d\), and a probe may take up to 15\.0 min "
                        r"\(--probe-timeout x --repeats and the time to stop one: no shorter probe of this study ran under "
                        r"these probe settings; 3\.00 min more are kept for the reports\); with this much time the same "
                        r"command stops here again: a --probe-timeout of 720 s fits the time left, or a --time-limit of "
                        r"18:01 or more lets a probe start", time_stop_line(limit, backend.timeout_settings()))


def test_a_limit_no_probe_of_the_run_fits_in_says_what_would_fit_not_the_same_command(tmp_path):
    """Trial 62 F2: a 16.9 min job under the default --probe-timeout 900 stopped before its first probe with "resume
    with the same command in a new job", which stops there again in every job of that length."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [60.0], probe_timeout_s=900.0, kill_grace_s=10.0)
    backend.timeout_settings = lambda: {"--repeats": 2, "--probe-timeout": 900.0}
    limit = TimeLimit(1014.0, ends_s=time.time() + 1014, slurm=True, clock=clock)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 0
    line = time_stop_line(limit, backend.timeout_settings(), backend.kill_grace_s)
    # (1014 s - 180 s - 10 s) / 2 repeats = 412 s; 1810 s and the margin: 1990 s, so 33:11 or more.
    assert line.endswith("3.00 min more are kept for the reports); with this much time the same command stops here again: "
                         "a --probe-timeout of 412 s (with --repeats 2) fits the time left, or a job of 33:11 or more "
                         "(sbatch --time) lets a probe start"), line
    assert "resume" not in line

    # A run that did probe: the next job, as long, goes on from there.
    limit = TimeLimit(250.0, ends_s=time.time() + 250, slurm=True, clock=clock)
    backend.timeout_settings = lambda: {"--repeats": 1, "--probe-timeout": 60.0}
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 1
    assert time_stop_line(limit, backend.timeout_settings(), 10.0).endswith("resume with the same command in a new job")


def test_the_exit_status_says_whether_a_job_as_long_gets_further(tmp_path):
    """Trial 67 #3: a run the limit stopped before any probe could start said "with this much time the same command
    stops here again" and exited 75, on which the documented job chain submits the job again, for ever. It exits 2 (a
    set-up to fix); 75 where a new job goes on: a probe of the run started, or the rule let one through."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [60.0], probe_timeout_s=900.0)
    assert run_exit_status(TimeLimit(None, clock=clock)) == 0
    short = TimeLimit(900.0, ends_s=time.time() + 900, clock=clock)
    run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=short)
    assert short.stopped and backend.probed == [] and stops_again(short) and run_exit_status(short) == 2
    assert "the same command stops here again" in time_stop_line(short, backend.timeout_settings())
    let_through = TimeLimit(900.0, ends_s=time.time() + 900, clock=clock)
    let_through.let_probe_start = True  # its trials were duplicates or pruned, or held back after a wait
    let_through.stopped = HeldBack(850.0, 900.0, False)
    assert not stops_again(let_through) and run_exit_status(let_through) == 75
    probed = TimeLimit(200.0, clock=clock)
    probed.probe_started = True
    probed.stopped = HeldBack(100.0, 60.0, True)
    assert not stops_again(probed) and run_exit_status(probed) == 75
    past = TimeLimit(0.0, ends_s=time.time() - 5, slurm=True, clock=clock)
    past.stopped = HeldBack(0.0, 60.0, True)  # a job in SLURM's grace: the next job has its own end
    assert not stops_again(past) and run_exit_status(past) == 75


def test_a_probe_under_a_longer_timeout_than_this_runs_blocks_no_probe(tmp_path):
    """Trial 62 F9: one probe that timed out at --probe-timeout 100 (110 s with its kill grace) stopped every resume
    with --probe-timeout 30 and 4.5 min left, though no probe could then take more than 30 s and the grace."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    assert run_study(study, settings, _TimedProbes(clock, [110.0], probe_timeout_s=100.0, kill_grace_s=10.0), 1,
                     checks=checks, early_stop=False, time_limit=TimeLimit(None, clock=clock)) == 1
    backend = _TimedProbes(clock, [20.0], probe_timeout_s=30.0, kill_grace_s=10.0)
    limit = TimeLimit(270.0, clock=clock)
    ran = run_study(study, settings, backend, 4, checks=checks, early_stop=False, time_limit=limit)
    # 270 s holds a 40 s bound and the margin, then (20 s each) the probes measured under these settings.
    assert ran == 3 and limit.stopped is None


def test_probes_under_shorter_settings_do_not_let_a_longer_probe_start(tmp_path):
    """Trial 62 F11: 20 s probes at --probe-steps 5 let a --probe-steps 2500 probe (up to its 500 s timeout) start with
    3.6 min left, into the margin kept for the reports and the job script's SIGTERM."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    assert run_study(study, settings, _TimedProbes(clock, [20.0]), 2, checks=checks, early_stop=False,
                     time_limit=TimeLimit(None, clock=clock)) == 2
    longer = _TimedProbes(clock, [192.0], probe_timeout_s=500.0, probe_steps=2500)
    limit = TimeLimit(220.0, clock=clock)
    assert run_study(study, settings, longer, 4, checks=checks, early_stop=False, time_limit=limit) == 0
    assert longer.probed == [] and limit.stopped == HeldBack(220.0, 500.0, False)


def test_the_next_probe_is_weighed_by_the_walls_under_the_same_settings_within_their_bound():
    from types import SimpleNamespace

    from autotune.study.time_limit import PROBE_WALL_UNDER_ATTR, longest_probe_s

    now = {"--probe-steps": 5, "--probe-timeout": 60.0}
    trials = [SimpleNamespace(user_attrs={PROBE_WALL_ATTR: wall_s, PROBE_WALL_UNDER_ATTR: under})
              for wall_s, under in ((30.0, now), (300.0, {**now, "--probe-steps": 500}), (45.0, now))]
    trials.append(SimpleNamespace(user_attrs={PROBE_WALL_ATTR: 999.0}))  # kept before the settings were: not weighed
    assert longest_probe_s(trials, now) == 45.0
    assert longest_probe_s(trials, {**now, "--probe-timeout": 30.0}) is None
    assert probe_bound_s({"--probe-timeout": 60.0, "--repeats": 3}, kill_grace_s=10.0) == 190.0
    clock = _Clock()
    # A wall past the bound (a long wait for another worker's probe on the devices): the bound is what a probe takes.
    assert TimeLimit(100.0, clock=clock).held_back(500.0, 70.0) == HeldBack(100.0, 70.0, False)


def test_without_a_limit_every_probe_records_its_wall_time_for_a_later_limited_run(tmp_path):
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [42.0])
    no_limit = TimeLimit(None, clock=clock)
    assert run_study(study, settings, backend, 2, checks=checks, early_stop=False, time_limit=no_limit) == 2
    assert [t.user_attrs.get(PROBE_WALL_ATTR) for t in study.trials if is_evaluated(t)] == [42.0, 42.0]


# --- the command --------------------------------------------------------------------------------------

def test_a_simulated_run_at_its_jobs_end_stops_cleanly_with_its_reports(tmp_path):
    """A real process, as SLURM starts it: the job ends in a second, less than the reports need, so no probe starts;
    the run ends as at its budget (reports written) with the stop line, and status 75, EX_TEMPFAIL: a job chain tells
    "submit me again" from a study that ended (0), where a time stop exited 0 too (trial 62 F3)."""
    env = {**os.environ, SLURM_END_ENV: str(int(time.time()) + 1)}
    out = tmp_path / "run"
    result = cli.autotune("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--out", out, env=env)
    stops = [line for line in result.stderr.splitlines() if line.startswith("stopped:")]
    assert len(stops) == 1 and "left of the time limit (SLURM job ends" in stops[0], result.stderr
    # A job as long stops here again: 2, so a chain that resubmits on 75 ends (trial 67 #3); an end already past
    # (read after the second went) is a job's grace: a new job may go on.
    assert result.returncode == (2 if "stops here again" in stops[0] else 75), result.stderr
    assert re.search(r"the same command stops here again: a job of 3:\d\d or more \(sbatch --time\) lets a probe start$", stops[0]) or (
        "pass --time-limit" in stops[0]), stops[0]  # 3.00 min for the reports, and the run's start-up
    assert (out / "pareto.json").is_file() and (out / "report.html").is_file()
    # No trial ran: the note says the time limit stopped the study, not "widen the space and run more --trials" (trial
    # 62 F1), in pareto.json and on the terminal; what resumes it is said once, on the search line, not again by the
    # note and both importance lines (trial 63: four times).
    import json

    note = json.loads((out / "pareto.json").read_text(encoding="utf-8"))["note"]
    named = ("the time limit stopped the study before any probe could start" if result.returncode == 2
             else "resume the study the time limit stopped")  # a job as long stops there again: no "resume" (trial71 #5)
    assert note == ("No feasible configuration: no trial ran to completion (no trials). Nothing is recommended; see "
                    f"`autotune space` for what fits; {named}."), note
    assert "--trials" not in " ".join(result.stderr.split())
    report = cli.autotune("report", out)
    said = " ".join(report.stdout.split())
    if result.returncode == 2:  # a job as long stops there again: the report says what resumes it (trial 67 #3)
        assert said.count("resumes the study") == 1 and "the same command" not in said, report.stdout
        assert ("Stopped for the time limit (the SLURM job's end) before any probe could start; a longer job resumes the "
                "study (the run's `stopped:` line says how long, and any shorter --probe-timeout that fits)") in said
    else:
        assert said.count("the same command in a new job resumes") == 1, report.stdout
        assert "Stopped for the time limit (the SLURM job's end); the same command in a new job resumes the study" in said
    # A run with time enough goes on: its report no longer says the time limit stopped it.
    again = cli.autotune("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--out", out)
    assert again.returncode == 0 and "Stopped for the time limit" not in " ".join(again.stderr.split()), again.stderr


def test_a_run_whose_time_limit_lets_no_probe_start_ends_with_what_fits(tmp_path):
    """Trial71 #5: exit 2 for a time limit too short for any probe is documented as "its last line says what fits",
    but the `stopped:` line came before the report, the run directory last, and the report said "resume the study
    the time limit stopped" where the same command stops there again. A job log's last line is now the stop line, said
    once, and the report names the stop without "resume"."""
    result = cli.autotune("run", "--model", "7b", "--nodes", "2", "--trials", "6", "--backend", "simulate",
                          "--time-limit", "0:30", "--out", tmp_path / "run")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("stopped:")] == lines[-1:], result.stderr
    assert re.search(r"the same command stops here again: a --time-limit of 3:\d\d or more lets a probe start$", lines[-1])
    said = " ".join((result.stdout + result.stderr).split())
    assert "resume the study the time limit stopped" not in said
    assert said.count("(the time limit stopped the study before any probe could start)") == 2, said  # importance lines


def test_a_simulated_run_with_time_enough_never_stops_on_it(tmp_path):
    result = cli.autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "12",
                               "--time-limit", "4", "--quiet", "--out", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert "stopped:" not in result.stderr
    assert [line for line in result.stderr.splitlines() if "--time-limit" in line] == [
        next(line for line in result.stderr.splitlines() if line.startswith("time limit: --time-limit, "))]


def test_a_study_stopped_before_its_first_probe_is_not_said_to_have_run_out_of_memory():
    """The report's search line of a study the time limit stopped before any probe: "stopped after 0 probes ...
    Every probe ran out of memory, which is final" described probes that never ran."""
    from autotune.report.search import search_sentences

    unfinished = {"probes": 0, "reason": "fewer than 3 probes succeeded", "next": None, "succeeded": 0, "failed": 0,
                  "replayed": False}
    said = search_sentences({"unfinished": unfinished})[0]
    assert said == "not converged: stopped after 0 probes while fewer than 3 probes succeeded. The same command resumes the study"


def _search_line(study) -> str:
    """The report's "not converged: ..." line of the study, as every report prints it."""
    from autotune.commands.finish import build_report
    from autotune.report.search import search_sentences

    study.set_user_attr("sampler", "guided")  # as `autotune run` records it
    _, document = build_report(study)
    return next(line for line in search_sentences(document["search"]) if line.startswith("not converged"))


def test_the_report_of_a_study_the_time_limit_stopped_says_so_not_a_larger_trials(tmp_path):
    """The report's search line said "The same command with a larger --trials resumes the study" of a study the job's
    end stopped with its budget unspent; a later run that ends otherwise is no longer said to have stopped for it."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [400.0, 500.0], probe_timeout_s=600.0)
    limit = TimeLimit(1500.0, ends_s=time.time() + 1500, slurm=True, clock=clock)
    assert run_study(study, settings, backend, 10, checks=checks, early_stop=False, time_limit=limit) == 2
    said = _search_line(study)
    assert said.endswith(". Stopped for the time limit (the SLURM job's end); the same command in a new job resumes the "
                         "study") and "--trials" not in said, said

    flag = TimeLimit(100.0, ends_s=time.time() + 100, clock=clock)  # --time-limit: no job to start anew
    assert run_study(study, settings, backend, 10, checks=checks, early_stop=False, time_limit=flag) == 0
    assert _search_line(study).endswith(". Stopped for the time limit (--time-limit); the same command resumes the study")

    # A later run with time enough ends at its budget: the time limit is no longer what stopped the study.
    assert run_study(study, settings, backend, 4, checks=checks, early_stop=False, time_limit=TimeLimit(None, clock=clock)) == 2
    assert study.user_attrs[TIME_LIMIT_STOP_ATTR] is None


def test_the_report_of_a_random_study_the_time_limit_stopped_says_so_and_what_resumes_it(tmp_path):
    """trial68 #8: a --sampler random study the time limit stopped had no `unfinished` block (filled for the guided
    sampler only) and no line of the stop: its report read as a finished study's."""
    from autotune.commands.finish import build_report
    from autotune.report.search import search_sentences

    settings = settings_for("--model", "7b", "--nodes", "1", "--space", str(SPACE))
    checks = valid_checks(settings)
    study = open_study(tmp_path, None, make_sampler(0, 10, "random", checks), cheap_figures=True)
    study.set_user_attr("sampler", "random")  # as `autotune run` records it
    clock = _Clock()
    backend = _TimedProbes(clock, [400.0, 500.0], probe_timeout_s=600.0)
    limit = TimeLimit(1500.0, ends_s=time.time() + 1500, clock=clock)
    assert run_study(study, settings, backend, 10, checks=checks, early_stop=False, time_limit=limit) == 2
    _, document = build_report(study)
    assert document["search"]["unfinished"]["time_limit"] == "flag"
    assert search_sentences(document["search"])[0] == ("stopped after 2 probes, before the --trials budget. Stopped for "
                                                        "the time limit (--time-limit); the same command resumes the study")


def test_the_docs_say_a_signal_writes_no_reports_and_what_the_margin_is_for():
    """Trial 62 F4: launch.md asked to "give the warning the time the reports take after the stop", but a SIGTERM's
    stop writes none (the reports stay the run before's, and the tuner says so): the time limit's stop writes them."""
    import inspect

    from autotune.commands import run

    text = " ".join((Path(__file__).parents[2] / "docs" / "launch.md").read_text(encoding="utf-8").split())
    assert "the time the reports take" not in text
    assert "It writes no reports then" in text and "which a signal's stop does not write" in text
    # The line the docs quote is the one the run prints.
    assert "the reports in RUN_DIR are not this run's: `autotune report RUN_DIR --html` writes them for every finished trial" in text
    source = inspect.getsource(run)
    assert "are not this run's\" if" in source and "writes them for every finished trial" in source


# --- once per trial where the worker is alone; again before the probe where another worker may hold it up ------------

def _proposing_takes(monkeypatch, clock: _Clock, seconds: float) -> None:
    """Each proposal takes `seconds` on the fake clock (between the ask before the trial is made and its probe)."""
    import autotune.study.loop as loop

    suggest = loop.suggest_knobs

    def slow_suggest(*args, **kwargs):
        clock.now_s += seconds
        return suggest(*args, **kwargs)

    monkeypatch.setattr(loop, "suggest_knobs", slow_suggest)


def test_a_worker_alone_asks_the_time_left_once_per_trial_and_leaves_no_unstarted_trial_at_the_edge(tmp_path, monkeypatch):
    """The time left was asked before the trial was made, and again before its probe, a proposal later: at the rule's
    edge the second ask held back the probe the first had let start, leaving an unstarted candidate's FAIL trial."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    _proposing_takes(monkeypatch, clock, 2.0)
    backend = _TimedProbes(clock, [250.0], probe_timeout_s=300.0)
    # 300 s (the timeout) and the margin, and a second: the rule lets the first probe start as the study starts.
    limit = TimeLimit(300.0 + REPORT_MARGIN_S + 1.0, ends_s=time.time() + 481, clock=clock)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 1
    assert not [t for t in study.trials if t.user_attrs.get(OVER_BUDGET_ATTR)]
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]
    assert limit.stopped == HeldBack(229.0, 250.0, True)  # after the probe: 481 - 2 - 250 s left


def test_where_another_worker_has_a_trial_under_way_the_time_left_is_asked_again_before_the_probe(tmp_path, monkeypatch):
    """A proposal may wait for another worker's (unique.settled_trials, up to PROPOSAL_WAIT_S): time the first ask
    did not see."""
    from autotune.study.loop import PROBING_ATTR
    from autotune.study.queued import suggest_knobs
    from autotune.study.valid import usable_values

    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _TimedProbes(clock, [100.0], probe_timeout_s=300.0)
    assert run_study(study, settings, backend, 1, checks=checks, early_stop=False, time_limit=TimeLimit(None, clock=clock)) == 1
    other = study.ask()  # another worker's trial, its knobs proposed, its probe under way
    suggest_knobs(other, usable_values(checks), settings.space)
    other.set_user_attr(PROBING_ATTR, True)
    _proposing_takes(monkeypatch, clock, 60.0)
    # The longest probe (100 s) and the margin, and 30 s: enough as the trial is asked for, not after the wait.
    limit = TimeLimit(100.0 + REPORT_MARGIN_S + 30.0, ends_s=time.time() + 310, clock=clock)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit,
                     shared_storage=True) == 0
    assert len(backend.probed) == 1 and limit.stopped == HeldBack(250.0, 100.0, True)
    assert [t.number for t in study.trials if t.user_attrs.get(OVER_BUDGET_ATTR)] == [2]


def test_a_run_whose_trials_before_the_stop_never_reached_a_probe_says_what_would_let_one_start(tmp_path, monkeypatch):
    """The rule let the run's first trial through, but it was a duplicate (here a queued copy of an evaluated
    candidate; with two workers, one proposed at once by both), and its proposal used the time up: no probe of this run
    started, where the stop line said "run the same command again to resume"."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    # An earlier run's probe, under other probe settings: this run's bound (its 300 s timeout) is what a probe takes.
    assert run_study(study, settings, _TimedProbes(clock, [100.0], probe_steps=7), 1, checks=checks, early_stop=False,
                     time_limit=TimeLimit(None, clock=clock)) == 1
    study.enqueue_trial(study.trials[0].params)
    _proposing_takes(monkeypatch, clock, 2.0)
    backend = _TimedProbes(clock, [100.0], probe_timeout_s=300.0)
    limit = TimeLimit(300.0 + REPORT_MARGIN_S + 1.0, ends_s=time.time() + 481, clock=clock)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 0
    assert backend.probed == [] and study.trials[1].user_attrs.get("duplicate_of") == 0
    assert limit.stopped == HeldBack(479.0, 300.0, False)
    line = time_stop_line(limit, backend.timeout_settings())
    assert line.endswith("; no probe of this run started; with this much time the same command may stop here again: a "
                         "--probe-timeout of 299 s fits the time left, or a --time-limit of 8:03 or more lets a "
                         "probe start"), line  # 2 s spent on the duplicate, 300 s and the margin: 482 s


def test_the_longer_limit_advised_counts_what_the_run_spent_before_its_stop(tmp_path):
    """A run given --time-limit 3:06 with the simulate backend spent 6 s starting up (two workers on two cores) and was
    told "a --time-limit longer than 3.00 min lets a probe start"."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    limit = TimeLimit(900.0, ends_s=time.time() + 900, clock=clock)
    clock.now_s += 30.0  # the run's start-up: the study opened, the space checked
    backend = _TimedProbes(clock, [60.0], probe_timeout_s=900.0)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 0
    # 30 s, the 900 s timeout and the 180 s margin: 1110 s, so 18:31 or more; the timeout that fits the 870 s left: 690 s.
    assert time_stop_line(limit, backend.timeout_settings()).endswith(
        "with this much time the same command stops here again: a --probe-timeout of 690 s fits the time left, or a "
        "--time-limit of 18:31 or more lets a probe start")


def test_the_longer_limit_advised_is_never_the_value_given_as_printed():
    """trial68 #9: --time-limit 3:01 under the simulate backend was told "a --time-limit longer than 3.02 min", which
    3:01 is as printed; the advice is in the flag's own form, to the second, and past the value given."""
    from autotune.study.time_limit import parse_time_limit

    clock = _Clock()
    limit = TimeLimit(float(parse_time_limit("3:01")), ends_s=time.time() + 181, clock=clock)
    clock.now_s += 1.1  # the run's start-up
    limit.held_back(None, None)
    line = time_stop_line(limit)
    assert line.endswith("with this much time the same command stops here again: a --time-limit of 3:02 or more lets a "
                         "probe start"), line


def test_a_time_left_just_short_of_what_is_needed_is_not_said_as_equal_to_it():
    """179.8 s left under the simulate backend read "3.00 min left ..., less than the 3.00 min kept for the reports"."""
    clock = _Clock()
    limit = TimeLimit(REPORT_MARGIN_S - 0.2, ends_s=time.time() + 180, clock=clock)
    assert limit.held_back(None, None) is not None  # no probe under these settings, none that can time out
    assert time_stop_line(limit).startswith("stopped: 179.8 s left of --time-limit (ends ")
    assert ", less than the 3.00 min kept for the reports; " in time_stop_line(limit)


# --- again by the backend, after a wait before its probe (launch: for another worker's probe on the same devices) ----

class _WaitingProbes(_TimedProbes):
    """Probes whose first evaluation waits `wait_s` on the fake clock before its probe, then asks the time limit again
    as the launch backend does after a wait for the devices (Backend.probe_held_back)."""

    def __init__(self, clock: _Clock, wait_s: float, **kwargs):
        super().__init__(clock, [100.0], **kwargs)
        self.wait_s, self.asked = wait_s, []

    def evaluate(self, candidate, trial_number=0):
        from autotune.backends.base import ProbeHeldBack

        if self.wait_s:
            self.clock.now_s += self.wait_s
            self.wait_s = 0.0
            why = self.probe_held_back()
            self.asked.append(why)
            if why is not None:
                raise ProbeHeldBack(why)
        return super().evaluate(candidate, trial_number)


def test_a_probe_held_back_after_its_wait_stops_the_study_and_its_candidate_is_probed_on_resume(tmp_path):
    """The study stops as the time limit stops it before a trial; the trial that waited is no failed probe of its
    candidate (it never ran) and, the baseline's here, is probed again when the study resumes (one over the budget
    would only be free to be proposed again: the baseline is queued once)."""
    settings, checks, study = _study(tmp_path)
    clock = _Clock()
    backend = _WaitingProbes(clock, wait_s=60.0, probe_timeout_s=300.0)
    limit = TimeLimit(300.0 + REPORT_MARGIN_S + 30.0, ends_s=time.time() + 510, clock=clock)
    assert run_study(study, settings, backend, 5, checks=checks, early_stop=False, time_limit=limit) == 0
    assert backend.asked == ["too little time is left before the time limit for a probe and the reports"]
    assert backend.probed == [] and limit.stopped == HeldBack(450.0, 300.0, False)
    assert study.user_attrs[TIME_LIMIT_STOP_ATTR] == "flag" and not limit.probe_started
    [waited] = study.trials
    assert waited.state == TrialState.FAIL and waited.user_attrs["baseline"] and waited.user_attrs["interrupted"]
    assert not is_evaluated(waited) and PROBE_WALL_ATTR not in waited.user_attrs
    assert waited.user_attrs["reason"] == ("not probed: too little time is left before the time limit for a probe and "
                                           "the reports, after a wait for another probe on the same devices; probed "
                                           "when the study resumes")
    assert "no probe of this run started" in time_stop_line(limit, backend.timeout_settings())
    # The report's trial table says why, not "its probe was stopped (Ctrl-C, SIGTERM, or the tuner killed)".
    from autotune.report.study_points import study_view

    [row] = study_view(study).trials
    assert row["status"] == "interrupted" and row["reason"] == waited.user_attrs["reason"]

    no_limit = TimeLimit(None, clock=clock)
    assert run_study(study, settings, backend, 2, checks=checks, early_stop=False, time_limit=no_limit) == 2
    retry = next(t for t in study.trials if t.user_attrs.get("retry_of") == waited.number)
    assert is_evaluated(retry) and retry.user_attrs["baseline"] and retry.params == waited.params
    assert backend.probed[0] == params_key(waited.params)
