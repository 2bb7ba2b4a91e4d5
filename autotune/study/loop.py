"""The trial loop: Optuna proposes a candidate, we check it, evaluate it and record what happened.

- Constraints (value <= 0 is feasible), set on every trial so samplers see the same keys:
  `rule_violation` (1 when a validity rule is broken), `memory_excess_gib` (the memory estimate
  over usable device memory), `probe_oom` (1 when a probe ran out of memory).
- A candidate that breaks a rule or would not fit is never evaluated: its trial is PRUNED with the
  violated constraint, which TPE counts as infeasible evidence, so the sampler learns the wall.
  A probe that runs out of memory is PRUNED the same way. A probe that fails or times out is FAIL
  (Optuna learns nothing from it, the report shows it) and the study goes on.
- A run whose first probes all fail before any of the study's has run stops there, and a study in
  which no probe succeeded says why (failures.py); a resume probes again what was interrupted or failed
  on the set-up (retries.py).
- A candidate already evaluated in this study is not evaluated again: its trial is FAIL (PRUNED where
  the earlier one was) with `duplicate_of`, never COMPLETE, so Optuna's own views hold no twins.
- `--trials N` counts evaluated candidates over the whole study (every worker, every earlier run);
  the loop also stops when every valid candidate has been evaluated. A probe starts only while the
  evaluated candidates and the probes running on other workers leave room in it (`_reserve_probe`),
  so workers that start their last probes at once never evaluate more than N.
- A probe starts only where the run's time limit (time_limit.py: --time-limit, or the SLURM job's end) leaves room
  for it and the reports; where it does not, the study stops there as at its budget. It is asked before Optuna
  creates a trial (as the study starts, and after each trial: `_TimeLimitStop`), so a candidate not started leaves
  no trial behind; again before the probe only where another worker has a trial under way, as proposing may then
  wait for it (PROPOSAL_WAIT_S; `_other_worker_under_way`): a trial held back then is FAIL with OVER_BUDGET_ATTR.
  And by the backend after a wait before its probe (launch: for another worker's probe on the same devices), through
  `Backend.probe_held_back`: a trial held back there is FAIL, interrupted, and probed when the study resumes.
- The loop runs in `study.optimize`, so several workers on one RDB storage share the study and
  Optuna's heartbeats retry the trials of a worker that died (see storage.py). Two workers that
  propose one candidate at once: the lower trial number probes it, the higher is its duplicate.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, NoReturn

import optuna
from optuna.trial import TrialState

from autotune.backends.base import Backend, ProbeHeldBack, ProbeResult
from autotune.candidate import KNOBS, params_key
from autotune.errors import UserError
from autotune.space import baseline, check_candidate
from autotune.study.failures import FailingStart, failing_start, retried_after_failing_start
from autotune.study.heartbeat import fail_dead_workers_trials
from autotune.study.outside import added_outside_lines, kept_result_fault
from autotune.study.queued import (QueuedOutsideSpace, left_waiting, proposer, queued_invalid, queued_repeat,
                                   suggest_knobs, waiting_trials)
from autotune.study.retries import (
    FAILING_START_ATTR,
    SETUP_FAILURE_ATTR,
    STOPPED_BY_ATTR,
    TIMED_OUT_UNDER_ATTR,
    TOLD_OUTSIDE_ATTR,
    evaluated_trials,
    evaluated_count,
    found_invalid,
    is_evaluated,
    keep_told_outcome,
    killed_after_probe,
    queue_setup_retries,
    released_trials,
    retry_interrupted,
    retry_lineage,
    retry_words,
    setup_failure,
    taken_over,
    told_outside_words,
    trials_by_number,
)
from autotune.study.settings import StudySettings
from autotune.study.stop_rule import STOP_RULE
from autotune.study.time_limit import (PROBE_WALL_ATTR, PROBE_WALL_UNDER_ATTR, TIME_LIMIT_STOP_ATTR, TimeLimit,
                                       forget_time_limit_stop, longest_probe_s, probe_bound_s)
from autotune.study.unique import OVER_BUDGET_ATTR, PROPOSAL_WAIT_S, settled_trials, trial_knobs, unique_candidates
from autotune.study.valid import usable_values, valid_checks
from autotune.study.worker_seed import WorkerSeededSampler

CONSTRAINT_KEYS = ("rule_violation", "memory_excess_gib", "probe_oom")
# Proposals per evaluated trial before the loop gives up on finding new valid candidates.
MAX_PROPOSALS_PER_TRIAL = 25
OBJECTIVES = {"time": ("time_s",), "time,energy": ("time_s", "energy_kj")}
# Study attribute set when the study stopped early: {"probes": evaluated candidates, "rule": ...}.
CONVERGED_ATTR = "converged"
# On each trial its proposer: the sampler, seed and --trials budget of the run that asked for it, and the
# autotune version that ran it. A study resumed with another seed or sampler keeps each trial's own (the
# study's `sampler` and `seed` attributes are its last run's); pareto.json's inputs.proposed_by lists them.
PROPOSED_BY_ATTR = "proposed_by"
# Set on a trial just before its probe starts: what other workers count against the budget (a trial
# that finds no room left is marked OVER_BUDGET_ATTR instead, unique.py).
PROBING_ATTR = "probing"
# Set while a trial asks for room in the budget (_reserve_probe): counted against the budget like a probe, but
# no probe of the other workers' "still running" counts (probes_running_elsewhere) until the room is granted.
RESERVING_ATTR = "reserving_probe"
# Why a probe was not started where the time limit held it back after its trial was made.
TIME_SHORT_WORDS = "too little time is left before the time limit for a probe and the reports"


def _finished_elsewhere(exc: BaseException) -> bool:
    """Whether Optuna refused to record a trial because it was finished meanwhile (by another worker)."""
    return isinstance(exc, optuna.exceptions.UpdateFinishedTrialError) or str(exc).startswith("Cannot tell a ")


class ProbeFailed(Exception):
    """A probe failed or timed out: the trial is FAIL, the study goes on."""


@dataclass
class StudyProgress:
    """Callbacks the CLI uses to draw progress; all optional."""

    on_trial: Callable[[int, dict, ProbeResult | None, str], None] | None = None
    # A probe of a trial is about to run: (number, params, what it resumes: "retry of interrupted trial 0;
    # takes over repeat 1 of 2, runs repeat 2", "" for a first attempt).
    on_probe_start: Callable[[int, dict, str], None] | None = None
    # A line the user must read that no trial line carries (a trial queued outside the space).
    on_note: Callable[[str], None] | None = None


SAMPLERS = ("guided", "tpe", "random", "nsga2")
# An objective in a reason for the user ("no energy figure to rank by"), not the result's field name.
_OBJECTIVE_WORDS = {"time_s": "time figure", "energy_kj": "energy figure"}


def make_sampler(seed: int | None, n_trials: int, kind: str = "tpe", checks: list | None = None) -> optuna.samplers.BaseSampler:
    """`guided` (the CLI's default, see study/guided.py) needs the space's `checks`. The others stay
    for comparison (benchmarks/search_efficiency.py): TPE (multivariate, constraint-aware) with a short
    random start, since the baseline is enqueued first and budgets are 10-60 trials; random; NSGA-II.
    GPSampler would fit too, but it imports torch, which the simulate path must not load.
    The guided sampler is deterministic and takes `seed` as given; the others draw with a seed of each worker's
    own, `seed` itself on a fresh study (worker_seed.py), so a resume or a second worker draws afresh.
    """
    if kind == "guided":
        from autotune.study.guided import GuidedSampler

        if checks is None:
            raise ValueError("the guided sampler needs the space's checks (valid_checks(settings))")
        return GuidedSampler(checks, usable_values(checks), seed)
    if kind == "random":
        return WorkerSeededSampler(lambda drawing_seed: optuna.samplers.RandomSampler(seed=drawing_seed), seed)
    if kind == "nsga2":
        return WorkerSeededSampler(lambda drawing_seed: optuna.samplers.NSGAIISampler(seed=drawing_seed), seed)
    if kind != "tpe":
        raise UserError(f"unknown sampler {kind!r}; choose one of {', '.join(SAMPLERS)}")
    return WorkerSeededSampler(lambda drawing_seed: optuna.samplers.TPESampler(
        seed=drawing_seed,
        multivariate=True,
        n_startup_trials=max(3, min(10, n_trials // 4)),
        constant_liar=True,
    ), seed)


# Why a probe that ran with estimated energy failed (kept as its reason; a resume with the flag names them).
ESTIMATED_ENERGY_REASON = ("energy was only estimated (no sensor on a probe node); pass --allow-estimated-energy or "
                           "--objectives time")


def unranked_estimates(study: optuna.Study) -> list[int]:
    """Trials that ran but failed because their energy was only estimated: a resume with
    --allow-estimated-energy does not probe them again (no candidate is probed twice)."""
    return [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
            if t.user_attrs.get("reason") == ESTIMATED_ENERGY_REASON and "duplicate_of" not in t.user_attrs]


def _set_constraints(trial: optuna.Trial, rule: float, memory_excess: float, oom: float) -> None:
    for key, value in zip(CONSTRAINT_KEYS, (rule, memory_excess, oom)):
        trial.set_constraint(key, float(value))


def _objective_values(result: ProbeResult, objectives: tuple[str, ...]) -> list[float] | None:
    values = [getattr(result, name) for name in objectives]
    return None if any(v is None for v in values) else [float(v) for v in values]


class Interrupts:
    """Where Ctrl-C (SIGINT), SIGTERM and the other stop signals (errors.STOP_SIGNALS) stop a study. During a probe, at
    once: the backend kills the probe and the trial is retried on resume. Anywhere else in the study, at the end of
    the trial being recorded: a KeyboardInterrupt inside Optuna's own bookkeeping (its tell after each trial) left it
    with an UnboundLocalError of its own, a traceback and exit status 1 instead of 130 (a simulated study spends most
    of its time there). Outside a study (start-up, the reports), at once.

    A raise from a signal handler can be lost: Python drops an exception raised in a garbage collector's callback
    or a __del__ ("Exception ignored in: ... Terminated", and the run went on to exit 0; trial 51 #2). So every
    signal is also kept (`received`), such a dropped one is not printed, and the code asks at safe points
    (`check()`: before a probe, when the study returns, after the reports) and raises it there. Once a stop is on
    its way out (`stopping`), a second signal is only kept: it must not cut the lines that say what is kept.
    `install` sets the handlers for the block; main thread only, as signal handlers are."""

    def __init__(self):
        self.pending: BaseException | None = None
        self.received: BaseException | None = None  # the first stop signal, raised or not
        self.stopping = False
        self._study: optuna.Study | None = None
        self._probing = False

    @contextlib.contextmanager
    def install(self, signals: dict):
        """signals: {signal number: the KeyboardInterrupt subclass it raises}. A signal ignored here is left ignored:
        autotune changes no disposition before this but the defaults (cli._stop_from_the_start), so it was ignored
        from the process's start, which is the user's way to say the run must outlive it: nohup's SIGHUP (the ssh
        session closing), the SIGINT a shell without job control ignores for a background job (`autotune run ... &`
        in a script, whose Ctrl-C is meant for the script's foreground). Catching them stopped such a run (trial71
        #4, exit 129 on logout)."""
        import sys

        previous = {signum: signal.signal(signum, self._handler(kind)) for signum, kind in signals.items()
                    if signal.getsignal(signum) is not signal.SIG_IGN}
        hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable(hook)
        try:
            yield self
        finally:
            sys.unraisablehook = hook
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _unraisable(self, previous):
        def hook(unraisable):
            if unraisable.exc_value is not None and unraisable.exc_value is self.received:
                return  # kept: check() raises it where it is safe
            previous(unraisable)
        return hook

    def _handler(self, kind):
        def handle(signum, frame):
            stop = kind()
            self.received = self.received or stop
            if self.stopping:
                return
            if self._probing or self._study is None:
                self.stopping = True
                raise self.received
            try:
                self._study.stop()  # no new trial starts; this one is recorded whole
            except RuntimeError:  # not inside optimize (before the first trial or after the last): nothing to spoil
                self.stopping = True
                raise self.received from None
            self.pending = self.pending or stop
        return handle

    def check(self) -> None:
        """Raises the stop signal received (a raise lost in a collector's callback, say): at a safe point."""
        if self.received is not None:
            self.stopping = True
            raise self.received

    @contextlib.contextmanager
    def probing(self):
        if self.pending is not None:
            raise self.pending
        self.check()
        self._probing = True
        try:
            yield
        except KeyboardInterrupt:
            self.stopping = True
            raise
        finally:
            self._probing = False
        if self.received is not None and self.pending is None:
            # A signal whose raise was lost during the probe: the probe is over, its result is recorded, and then
            # the study stops (as for a signal between probes).
            try:
                self._study.stop()
                self.pending = self.received
            except (AttributeError, RuntimeError):  # no study running
                self.check()

    @contextlib.contextmanager
    def study(self, study: optuna.Study):
        self._study = study
        try:
            yield
        finally:
            self._study = None
        if self.pending is not None:
            self.stopping = True
            raise self.pending
        self.check()


class _TimeLimitStop:
    """Whether the time limit holds the next probe back (time_limit.py), asked before Optuna creates its trial: an
    unstarted candidate's FAIL trial was a red row in optuna-dashboard at every time stop (trial 62 F12)."""

    def __init__(self, time_limit: TimeLimit, backend: Backend):
        self.time_limit, self.backend = time_limit, backend

    def holds_back(self, study: optuna.Study) -> bool:
        """True where the time left cannot hold a probe and the reports: the study is marked stopped by it (for the
        report), and the limit's `stopped` says why."""
        if self.time_limit.deadline is None:
            return False
        settings = self.backend.timeout_settings()
        longest_s = longest_probe_s(study.get_trials(deepcopy=False), settings)
        if self.time_limit.held_back(longest_s, probe_bound_s(settings, self.backend.kill_grace_s)) is None:
            return False
        study.set_user_attr(TIME_LIMIT_STOP_ATTR, "slurm" if self.time_limit.slurm else "flag")
        return True

    def why_held_back(self, study: optuna.Study) -> str | None:
        """`holds_back` in words, as Backend.probe_held_back answers."""
        return TIME_SHORT_WORDS if self.holds_back(study) else None


class _Objective:
    """The function `study.optimize` calls once per proposal."""

    def __init__(self, settings, backend, objectives, progress, checks, accept_estimated_energy, n_trials, interrupts,
                 proposed_by=None, time_limit: TimeLimit | None = None):
        self.settings, self.backend, self.objectives, self.progress = settings, backend, objectives, progress
        self.time_limit = time_limit or TimeLimit(None)  # its clock times every probe, limit or not
        self.time_stop = _TimeLimitStop(self.time_limit, backend)
        self.proposed_by = proposed_by  # report.inputs.PROPOSED_BY_ATTR: kept on each trial this worker evaluates
        self.choices, self.accept_estimated_energy, self.n_trials = usable_values(checks), accept_estimated_energy, n_trials
        # The space's verdicts, a backend's among them (replay: no record), so a proposal is judged as the samplers were.
        self.checks = {params_key(c.candidate.knobs.to_dict()): c for c in checks}
        self.interrupts = interrupts
        self.evaluated = 0  # candidates this worker evaluated (other workers' are in the study too)
        self.trial_number: int | None = None  # the trial being evaluated
        self.told_outside_line: str | None = None  # _told_outside's, for run_study to say

    def __call__(self, trial: optuna.Trial):
        self.trial_number = trial.number  # which trial a tell from outside finished, where run_study catches it
        self.told_outside_line = None
        if self.proposed_by is not None:  # first: a queued trial whose values are refused below is counted too
            trial.set_user_attr(PROPOSED_BY_ATTR, proposer(trial, self.proposed_by))
        try:
            params = suggest_knobs(trial, self.choices, self.settings.space)
        except QueuedOutsideSpace as why:
            _set_constraints(trial, 1.0, 0.0, 0.0)
            trial.set_user_attr("reason", str(why))
            if self.progress.on_note:
                self.progress.on_note(str(why))
            raise optuna.TrialPruned(str(why)) from None
        candidate = self.settings.candidate(params)
        trial.set_user_attr("candidate", candidate.to_dict())  # the study's settings hold the profile
        check = self.checks.get(params_key(params)) or check_candidate(candidate)
        if not check.valid:
            self._prune_invalid(trial, params, check)
        # Running trials first, evaluated ones after: a trial of another worker that finishes between
        # the two looks is then seen by one of them (checked the other way round, by neither).
        # Always, too: a worker that started alone may be joined by another at any time.
        owner = _earlier_unfinished_holder(trial.study, trial.number, params_key(params))
        earlier = evaluated_trials(trial.study).get(params_key(params))
        if earlier is not None:
            if self.progress.on_note and (line := queued_repeat(trial, earlier.number)):
                self.progress.on_note(line)
            self._repeat(trial, earlier)
        if owner is not None:
            self._running_elsewhere(trial, owner)
        if not _reserve_probe(trial, self.n_trials):
            trial.set_user_attr(OVER_BUDGET_ATTR, True)
            trial.study.stop()
            raise ProbeFailed(f"not probed: the --trials budget of {self.n_trials} is held by probes running on other workers")
        saved = _saved_result(trial)
        if saved is None and _other_worker_under_way(trial) and self.time_stop.holds_back(trial.study):
            # Time ran out while the trial was proposed: left unprobed as one over the budget is (never evaluated, its
            # candidate free to be proposed again when the study resumes).
            trial.set_user_attr(OVER_BUDGET_ATTR, True)
            trial.study.stop()
            raise ProbeFailed(f"not probed: {TIME_SHORT_WORDS}")
        trials = trials_by_number(trial.study.get_trials(deepcopy=False)) if saved is None else {}
        lineage = retry_lineage(trials, trial.number) if trials else []
        resumed = ""  # what the start line says a retry resumes
        if lineage:  # a retry: the backend may take over what the trials it repeats completed
            takes_over = self.backend.resumes(trial.number, lineage, candidate)
            resumed = "; ".join(filter(None, (retry_words(trials, lineage), takes_over)))
        probe_started = self.time_limit.probe_started
        if saved is None:
            self.time_limit.probe_started = True
            if self.progress.on_probe_start:
                self.progress.on_probe_start(trial.number, params, resumed)
        started_s = self.time_limit.clock()
        try:
            with self.interrupts.probing():
                result = ProbeResult(**saved) if saved is not None else self.backend.evaluate(candidate, trial.number)
        except ProbeHeldBack as held:
            self.time_limit.probe_started = probe_started  # it waited, and never started
            self._held_back(trial, str(held))
        except BaseException as stop:
            # Ctrl-C, SIGTERM, and an error that ended the tuner mid-probe (a full disk, the run directory
            # removed): no result, so the candidate is probed again when the study resumes. Left a plain FAIL,
            # an error's trial was never retried, and a baseline's savings stayed "n/a" for good (trial 43 F1).
            trial.set_user_attr("interrupted", True)
            if not isinstance(stop, KeyboardInterrupt):
                said = str(stop) if isinstance(stop, UserError) else f"{type(stop).__name__}: {stop}"  # a bug by its name
                trial.set_user_attr(STOPPED_BY_ATTR, " ".join(said.split())[:300])
            raise
        # What the time limit's rule weighs a next probe by, in this run or a later one (a wall under other settings
        # is not weighed).
        walls = {PROBE_WALL_ATTR: self.time_limit.clock() - started_s,
                 PROBE_WALL_UNDER_ATTR: self.backend.timeout_settings()} if saved is None else {}
        try:
            for key, value in {**walls, "result": result.to_dict()}.items():
                trial.set_user_attr(key, value)
        except optuna.exceptions.UpdateFinishedTrialError:
            self._told_outside(trial, params, result, walls)
        self.evaluated += 1
        memory_excess = max(check.memory.device_excess_gib, check.memory.host_excess_gib)
        _set_constraints(trial, 0.0, memory_excess, 1.0 if result.status == "oom" else 0.0)
        values = _objective_values(result, self.objectives) if result.ok else None
        unranked = None  # why a probe that ran cannot be ranked: said on its progress line, kept as its reason
        if result.ok and "energy_kj" in self.objectives and result.energy_source == "estimated" and not self.accept_estimated_energy:
            # A node without a sensor (here, or a remote one) sent an estimate: never rank by it unasked.
            unranked = ESTIMATED_ENERGY_REASON
        elif result.ok and values is None:
            missing = [name for name in self.objectives if getattr(result, name) is None]
            unranked = f"no {' and '.join(_OBJECTIVE_WORDS[name] for name in missing)} to rank by" + (
                " (--objectives time ranks by time alone)" if missing == ["energy_kj"] else "")
        if self.progress.on_trial:
            self.progress.on_trial(trial.number, params, result, unranked or ("" if result.ok else result.error or ""))
        if unranked:
            _fail(trial, unranked)
        if values is not None:
            return values
        if result.status == "oom":
            raise optuna.TrialPruned("out of memory")  # infeasible evidence for the sampler
        if setup_failure(result):
            trial.set_user_attr(SETUP_FAILURE_ATTR, True)  # probed again when the study resumes
        elif result.status == "timeout" and (settings := self.backend.timeout_settings()):
            trial.set_user_attr(TIMED_OUT_UNDER_ATTR, settings)  # see queue_setup_retries
        _fail(trial, f"{result.status}: {(result.error or '').strip()[:300]}")

    def _told_outside(self, trial, params: dict, result: ProbeResult, walls: dict) -> NoReturn:
        """Trial finished from outside autotune while its probe ran (`study.tell`, Optuna's way to cancel a hanging
        trial), where no other worker took it (that is run_study's heartbeat line): its probe's outcome is queued with
        a retry that records it without probing again, and the run goes on (run_study says so in one line). It ended
        the run with a stopped-worker story that was not true, and the outcome was lost: a timeout probed again
        (trial74 #1)."""
        trials = trial.study.get_trials(deepcopy=False)
        if taken_over(trials, trial.number):
            raise ProbeFailed("finished by another worker")  # run_study: the heartbeat's line
        told = trials_by_number(trials)[trial.number]
        attrs = {**walls, **({"baseline": True} if trial.user_attrs.get("baseline") else {})}
        retry = keep_told_outcome(trial.study, trial.number, params, result.to_dict(), attrs)
        outcome = result.status if result.ok else f"{result.status}: {' '.join((result.error or '').split())[:120]}"
        self.told_outside_line = (f"{told_outside_words(told)} while its probe ran; the probe's outcome ({outcome}) "
                                  f"is kept: trial {retry} records it without probing again")
        raise ProbeFailed(self.told_outside_line)

    def _held_back(self, trial, why: str) -> NoReturn:
        """A probe the backend did not start after a wait (launch: for another worker's probe on the same devices), as
        Backend.probe_held_back said: the study stops as where the time limit holds a probe back before its trial. The
        trial is interrupted, not over the budget: never evaluated, and its candidate is queued again when the study
        resumes (retries.retry_interrupted), a baseline's too, where one over the budget is only free to be proposed."""
        reason = f"not probed: {why}, after a wait for another probe on the same devices; probed when the study resumes"
        trial.set_user_attr("interrupted", True)
        trial.set_user_attr("reason", reason)  # the report's trial table: no "its probe was stopped (Ctrl-C, ...)"
        trial.study.stop()
        raise ProbeFailed(reason)

    def _prune_invalid(self, trial, params, check) -> NoReturn:
        # A rule breaker has no memory estimate; one that does not fit has an excess > 0.
        if check.memory is None:
            _set_constraints(trial, 1.0, 0.0, 0.0)
        else:
            _set_constraints(trial, 0.0, max(check.memory.device_excess_gib, check.memory.host_excess_gib), 0.0)
        trial.set_user_attr("reason", check.reason)
        if self.progress.on_note and (line := queued_invalid(trial, check.reason)):
            self.progress.on_note(line)
        if self.progress.on_trial:
            self.progress.on_trial(trial.number, params, None, check.reason)
        raise optuna.TrialPruned(check.reason)

    def _running_elsewhere(self, trial, owner: int) -> NoReturn:
        """Several workers may propose one candidate at once: the lowest-numbered unfinished trial that
        holds it probes it, every later one is a duplicate (FAIL teaches the sampler nothing, the
        owner's result counts). Trial numbers follow creation order and an owner never looks at later
        trials, so exactly one of them probes; a later trial waits for earlier ones still being proposed."""
        trial.set_user_attr("duplicate_of", owner)
        _set_constraints(trial, 0.0, 0.0, 0.0)
        raise ProbeFailed(f"same candidate as trial {owner}, running on another worker")

    def _repeat(self, trial, earlier) -> NoReturn:
        """A candidate the study has evaluated (another worker's, proposed when nothing else was free):
        not probed again, and never COMPLETE, so Optuna's `best_trials` and plots hold no twins."""
        trial.set_user_attr("duplicate_of", earlier.number)
        for key in CONSTRAINT_KEYS:
            trial.set_constraint(key, earlier.constraints.get(key, 0.0))
        if earlier.state == TrialState.PRUNED:
            raise optuna.TrialPruned(f"same candidate as trial {earlier.number}")
        raise ProbeFailed(f"same candidate as trial {earlier.number} ({earlier.state.name.lower()}): not probed again")


def _saved_result(trial: optuna.Trial) -> dict | None:
    """The result a killed run stored for the trial this one retries (killed_after_probe), or None. The
    retries are ours (`retry_of`) or those of Optuna's heartbeat callback (system attr `failed_trial`)."""
    if "retry_of" not in trial.user_attrs and "result" not in trial.user_attrs:
        return None  # a first attempt (Optuna's retry copies the failed trial's user attrs, its result among them)
    trials = trials_by_number(trial.study.get_trials(deepcopy=False))
    # failed_trial first: Optuna's retry copies the user attrs, an older retry_of among them.
    retried = trials[trial.number].system_attrs.get("failed_trial", trial.user_attrs.get("retry_of"))
    original = trials.get(retried)  # None also where the retried trial was deleted from the database since
    told = trial.user_attrs.get(TOLD_OUTSIDE_ATTR)
    if told is not None and original is not None and original.state.is_finished() and "result" not in original.user_attrs:
        # The probe of a trial finished from outside while it ran (_Objective._told_outside): read as a kept result is.
        # Checked as a kept result is, against this retry's own params (it is still running: no values to compare).
        fault = kept_result_fault(SimpleNamespace(user_attrs={"result": told, "candidate": trial.user_attrs.get("candidate")},
                                                  params=trial.params, state=TrialState.RUNNING, values=None))
        return told if fault is None else None
    return original.user_attrs["result"] if original is not None and killed_after_probe(original) else None


def _reserve_probe(trial: optuna.Trial, n_trials: int) -> bool:
    """Whether the trial may start its probe: the study's evaluated candidates and the probes running
    on other workers leave room in the budget. The trial's own mark is stored before the others are
    read, so of two workers that reserve at once at least one sees the other: the budget is never
    exceeded (in that race both may stop, one short of it; the same command resumes). That mark is RESERVING_ATTR:
    PROBING_ATTR only once room is found, as a trial marked probing first, then over the budget, was another
    worker's "1 probe still running" for a probe that never started (trial67 #9)."""
    trial.set_user_attr(RESERVING_ATTR, True)
    taken, released = 0, released_trials(trial.study)
    for t in trial.study.get_trials(deepcopy=False):  # one snapshot: a trial is running or finished in it
        holds_room = t.state == TrialState.RUNNING and (t.user_attrs.get(PROBING_ATTR) or t.user_attrs.get(RESERVING_ATTR))
        taken += t.number != trial.number and bool(holds_room or is_evaluated(t, released))
    if taken >= n_trials:
        return False
    trial.set_user_attr(PROBING_ATTR, True)
    return True


def running_probes(trials: list[optuna.trial.FrozenTrial]) -> list[int]:
    """The numbers of the trials (of one read of the study) whose probe is under way."""
    return [t.number for t in trials if t.state == TrialState.RUNNING and t.user_attrs.get(PROBING_ATTR)]


def probes_running_elsewhere(study: optuna.Study) -> int:
    """Probes other workers are running on the study (after this worker's run: none of its own)."""
    return len(running_probes(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))))


def take_over_dead_workers(study: optuna.Study, alone: bool) -> list[int]:
    """After this worker's study: the probing trials of workers that died (killed, their node gone), failed and queued
    again, so that this worker probes them before it finishes; returns their numbers. Without it the last worker of
    an allocation finished with "1 still probing on other workers" for a worker dead a minute since, and the study
    stayed short of its budget until a later run (trial 51 #4). A worker is dead where this one is `alone` on the
    run directory now (run_dir_locks.sole_worker, asked again), or, on a --storage study, where its heartbeat is older
    than the grace (Optuna's heartbeat callback queues its retry, as at the start of each trial). A trial that stopped
    RUNNING meanwhile is named only where this worker failed it: one its live owner completed between the two reads
    was announced as a dead worker's, to be probed again, and never was (trial80 #1). A dead worker's trial whose
    candidate was found invalid is pruned (retries.found_invalid), not probed again, and not named: it was left
    RUNNING by the survivor, then retried as an interrupted probe (trial80 #7)."""
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    probing = running_probes(running)
    if not probing and not any(found_invalid(t) for t in running):
        return []
    if alone:  # no other worker writes to the study: what is no longer RUNNING was finished here
        retry_interrupted(study, include_running=True)
        trials = trials_by_number(study.get_trials(deepcopy=False))
        return [number for number in probing if trials[number].state != TrialState.RUNNING]
    with warnings.catch_warnings():  # Optuna marks it experimental; it is what optimize() runs before each trial
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        failed_here = set(fail_dead_workers_trials(study))
    return [number for number in probing if number in failed_here]


def _fail(trial: optuna.Trial, reason: str) -> NoReturn:
    """An evaluated candidate whose trial fails: its reason is kept for the report's trial table (a
    probe that ran but cannot be ranked has no error of its own) and for the failing-start stop."""
    trial.set_user_attr("reason", reason)
    raise ProbeFailed(reason)


def _other_worker_under_way(trial: optuna.Trial) -> bool:
    """Whether the time left must be asked again before this trial's probe: another worker has a trial under way.
    It was asked before the trial was made (_StopWhenDone, run_study); a worker alone has only proposed since (under
    a second for a 72B space on 8 nodes, here), so asking again decides as then, but at the rule's edge, where it
    held back a probe the first ask let start and left the unstarted candidate's FAIL trial that ask is there to
    avoid (trial 62 F12). Another worker's trial is what time can pass for: its proposal is waited for
    (unique.settled_trials, up to PROPOSAL_WAIT_S, in the sampler and in _earlier_unfinished_holder), and its probe
    may record a longer wall meanwhile. A wait for its probe on the same devices (backends/device_turns.py) comes
    later, inside the backend's evaluate, which asks again after it (Backend.probe_held_back, set by run_study)."""
    return any(t.number != trial.number for t in trial.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def _earlier_unfinished_holder(study: optuna.Study, number: int, key: str, wait_s: float = PROPOSAL_WAIT_S) -> int | None:
    """The lowest number below `number` of a RUNNING or WAITING (queued) trial with these knobs, or None.
    Earlier trials whose knobs are still being suggested are waited for (`settled_trials`)."""
    holders = [t.number for t in settled_trials(study, number, wait_s)
               if t.number < number and t.state in (TrialState.RUNNING, TrialState.WAITING)
               and all(k in trial_knobs(t) for k in KNOBS) and params_key(trial_knobs(t)) == key]
    return min(holders, default=None)


class _StopWhenDone:
    """The callback after each trial: stop at the budget, at the end of the space, when the guided
    sampler has converged, on a failing start (kept in `failing`, raised once optimize returns), or where the time
    limit leaves no room for the next probe."""

    def __init__(self, n_trials: int, valid_total: int, max_proposals: int, early_stop: bool,
                 failures_may_be_the_setup: bool = True, time_stop: _TimeLimitStop | None = None):
        self.n_trials, self.valid_total, self.max_proposals, self.early_stop = n_trials, valid_total, max_proposals, early_stop
        self.time_stop = time_stop  # asked last: a study its budget or its convergence ends is not one time stopped
        # This run's own trials, each passed here as it ends: not "every trial that finished since it began", which
        # counted other workers' failures as "the N probes of this run" and named their log (trial80 #4).
        self.own: set[int] = set()
        self.failures_may_be_the_setup = failures_may_be_the_setup  # the backend's
        self.failing: FailingStart | None = None

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        self.own.add(trial.number)
        trials = study.get_trials(deepcopy=False)
        released = released_trials(study)
        evaluated = [t for t in trials if is_evaluated(t, released)]
        if len(evaluated) >= min(self.n_trials, self.valid_total) or len(trials) >= self.max_proposals:
            forget_time_limit_stop(study)  # another worker's time limit stopped it before this one spent the budget
            study.stop()
        elif self.early_stop and _converged(study) and not waiting_trials(study):
            # "trials": how many were made by then; a later one was proposed after it (by a worker with no stop rule).
            study.set_user_attr(CONVERGED_ATTR, {"probes": len(evaluated), "rule": STOP_RULE, "trials": len(trials)})
            study.stop()
        else:
            self.failing = failing_start(evaluated, self.own, self.failures_may_be_the_setup)
            if self.failing is not None:
                if self.failures_may_be_the_setup:  # probed again when the study resumes (retries.FAILING_START_ATTR)
                    again = retried_after_failing_start([t for t in evaluated if t.number in self.own])
                    study.set_user_attr(FAILING_START_ATTR, sorted(set(study.user_attrs.get(FAILING_START_ATTR, [])) | set(again)))
                study.stop()
            elif self.time_stop is not None and self.time_stop.holds_back(study):
                study.stop()  # before Optuna creates the next trial


def _converged(study: optuna.Study) -> bool:
    """The guided sampler's early stop (other samplers have no model to stop on)."""
    converged = getattr(study.sampler, "converged", None)
    return bool(converged and converged(study))


def run_study(
    study: optuna.Study,
    settings: StudySettings,
    backend: Backend,
    n_trials: int,
    progress: StudyProgress | None = None,
    checks: list | None = None,
    objectives: str = "time,energy",
    shared_storage: bool = False,
    accept_estimated_energy: bool = True,
    early_stop: bool = True,
    interrupts: Interrupts | None = None,
    proposed_by: dict | None = None,
    time_limit: TimeLimit | None = None,
) -> int:
    """Evaluate candidates until the study holds n_trials evaluated ones (every worker's); returns how many
    this call evaluated. `proposed_by`: kept on each trial (report.inputs.PROPOSED_BY_ATTR). `time_limit`: no probe
    starts that it would cut; where it held one back, the study stopped there (`time_limit.stopped`)."""
    progress = progress or StudyProgress()
    checks = checks if checks is not None else valid_checks(settings)
    valid_total = sum(c.valid for c in checks)
    if not study.trials:
        study.set_user_attr("settings", settings.to_dict())
        study.set_user_attr("objectives", objectives)
        base = baseline(checks)
        if base is not None:
            # Two workers that start at once both find the study empty: the later one's copy is skipped
            # where the first one's is already stored (else it is a duplicate trial, never a second probe).
            study.enqueue_trial(base.candidate.knobs.to_dict(), user_attrs={"baseline": True}, skip_if_exists=True)
    forget_time_limit_stop(study)  # an earlier run's stop: set again where this run's limit stops it too
    for line in added_outside_lines(study) if progress.on_note else ():
        progress.on_note(line)
    retry_interrupted(study, include_running=not shared_storage)
    queue_setup_retries(study)  # the CLI has queued them already, to say so: then nothing is left here
    before = evaluated_count(study)
    if before >= min(n_trials, valid_total):
        _say_left_waiting(study, n_trials, valid_total, progress)
        return 0
    converged_now = bool(before and early_stop and _converged(study))
    if converged_now and not waiting_trials(study):
        # Converged already (in an earlier run, or by probes other workers finished since): the record
        # names the probes it converged on now. A study with nothing evaluated cannot have: no model
        # is built for it at start-up.
        study.set_user_attr(CONVERGED_ATTR, {"probes": before, "rule": STOP_RULE, "trials": len(study.trials)})
        return 0
    if study.user_attrs.get(CONVERGED_ATTR) and not converged_now:
        # A sampler with no stop rule probes past a guided run's convergence: "converged after 5 probes"
        # would then describe a study of 12. So does a guided run whose model no longer holds the study converged
        # (trials queued or added since): "converged after 4 probes (26 more probed since by --sampler guided)" was
        # said of a study its --trials budget stopped (trial74 #3). A converged study that takes queued trials keeps it.
        study.set_user_attr(CONVERGED_ATTR, None)
    choices = usable_values(checks)
    study.sampler = unique_candidates(study.sampler, choices, [c.candidate.knobs.to_dict() for c in checks if c.valid])
    interrupts = interrupts or Interrupts()  # without install(): no handler of ours, Python's own
    objective = _Objective(settings, backend, OBJECTIVES[objectives], progress, checks, accept_estimated_energy, n_trials,
                           interrupts, proposed_by, time_limit)
    if objective.time_stop.holds_back(study):
        _say_left_waiting(study, n_trials, valid_total, progress)
        return 0  # no trial created for a probe that would not start
    # Asked by the backend after a wait before a probe, which no ask of this loop sees.
    backend.probe_held_back = functools.partial(objective.time_stop.why_held_back, study)
    stop = _StopWhenDone(n_trials, valid_total, len(study.trials) + MAX_PROPOSALS_PER_TRIAL * n_trials, early_stop,
                         failures_may_be_the_setup=backend.failures_may_be_the_setup, time_stop=objective.time_stop)
    with interrupts.study(study):
        while not _optimize(study, objective, stop, progress):
            pass  # a trial finished from outside autotune: said, and the study goes on
    if stop.failing is not None:
        raise stop.failing
    _say_left_waiting(study, n_trials, valid_total, progress)
    return objective.evaluated


def _optimize(study: optuna.Study, objective: _Objective, stop: _StopWhenDone, progress: StudyProgress) -> bool:
    """study.optimize; False where a trial was finished from outside autotune meanwhile (Optuna then refuses the
    trial's own tell), which is said in one line: optimize is to be called again."""
    try:
        study.optimize(objective, catch=(ProbeFailed,), callbacks=[stop])
        return True
    except (ValueError, optuna.exceptions.UpdateFinishedTrialError) as exc:
        if not _finished_elsewhere(exc):
            raise
    trials = study.get_trials(deepcopy=False)
    number = objective.trial_number
    if number is None or taken_over(trials, number):
        # A worker stopped (Ctrl-Z, SIGSTOP, a frozen machine) past the heartbeat's grace: another worker took
        # its trial for a dead worker's, failed it and probed it again; Optuna's "Cannot tell a FAIL trial" was
        # a traceback (trial 43 F7).
        raise UserError("this worker was stopped longer than the heartbeat's grace (Ctrl-Z, SIGSTOP, a frozen "
                        "machine): another worker took its trial for a dead worker's and probes it again; what was "
                        "evaluated is kept: run the same command again to go on") from None
    # No retry of it anywhere: finished by a tell from outside (trial74 #1), while its probe ran (its outcome kept,
    # _Objective._told_outside) or before or after it (nothing probed, or its result kept on the trial).
    line = objective.told_outside_line or (
        f"{told_outside_words(trials_by_number(trials)[number])} before autotune recorded it; "
        + ("its probe's result is kept on it" if "result" in trials_by_number(trials)[number].user_attrs
           else "it was not probed, and its candidate may be proposed again"))
    if progress.on_note:
        progress.on_note(line)
    return False


def _say_left_waiting(study: optuna.Study, n_trials: int, valid_total: int, progress: StudyProgress) -> None:
    """The queued trials the run leaves WAITING, said in one line (queued.left_waiting)."""
    line = left_waiting(study, evaluated_count(study), n_trials, valid_total,
                        study.user_attrs.get(TIME_LIMIT_STOP_ATTR) is not None)
    if line and progress.on_note:
        progress.on_note(line)
