"""The trial loop: Optuna proposes a candidate, we check it, evaluate it and record what happened.

- Constraints (value <= 0 is feasible), set on every trial so samplers see the same keys:
  `rule_violation` (1 when a validity rule is broken), `memory_excess_gib` (the memory estimate
  over usable device memory), `probe_oom` (1 when a probe ran out of memory).
- A candidate that breaks a rule or would not fit is never evaluated: its trial is PRUNED with the
  violated constraint, which TPE counts as infeasible evidence, so the sampler learns the wall.
  A probe that runs out of memory is PRUNED the same way. A probe that fails or times out is FAIL
  (Optuna learns nothing from it, the report shows it) and the study goes on.
- A run whose first FAILING_START_PROBES probes all fail, while no probe of the study has ever run
  (finished, or run out of memory), stops there with a UserError that names the last failure: that
  points at the set-up (a module missing on the nodes, an unreachable host, no sensor) rather than
  at the configurations, and the rest of the budget would fail the same way. The trials are kept; the
  same command resumes, with as many tries again.
- A probe that failed on the set-up, before the trainer ran the candidate (`setup_failure`: the launcher
  missing, nodes out of reach, the launcher exiting without the trainer's result), is marked so, and a
  resumed study probes its candidate again (`queue_setup_retries`): the user fixed the set-up in
  between, as the stop above asks. Such a trial stops counting as evaluated once it is queued again.
  A candidate's own failure, an out-of-memory and a timeout stay final.
- `no_probe_succeeded` says why no probe of a study ran to its end (every one failed, timed out or ran
  out of memory): the CLI exits non-zero on it, whatever the budget.
- A candidate already evaluated in this study is not evaluated again: its trial is FAIL (PRUNED where
  the earlier one was) with `duplicate_of`, never COMPLETE, so Optuna's own views hold no twins.
- `--trials N` counts evaluated candidates over the whole study (every worker, every earlier run);
  the loop also stops when every valid candidate has been evaluated. A probe starts only while the
  evaluated candidates and the probes running on other workers leave room in it (`_reserve_probe`),
  so workers that start their last probes at once never evaluate more than N.
- The loop runs in `study.optimize`, so several workers on one RDB storage share the study and
  Optuna's heartbeats retry the trials of a worker that died (see storage.py). Two workers that
  propose one candidate at once: the lower trial number probes it, the higher is its duplicate.
"""

from __future__ import annotations

import contextlib
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, NoReturn

import optuna
from optuna.trial import TrialState

from autotune.backends.base import Backend, ProbeResult
from autotune.candidate import KNOBS
from autotune.errors import UserError
from autotune.space import baseline, check_candidate, enumerate_space
from autotune.study.settings import StudySettings
from autotune.study.stop_rule import STOP_RULE
from autotune.candidate import params_key
from autotune.study.unique import OVER_BUDGET_ATTR, PROPOSAL_WAIT_S, settled_trials, trial_knobs, unique_candidates

CONSTRAINT_KEYS = ("rule_violation", "memory_excess_gib", "probe_oom")
# Proposals per evaluated trial before the loop gives up on finding new valid candidates.
MAX_PROPOSALS_PER_TRIAL = 25
OBJECTIVES = {"time": ("time_s",), "time,energy": ("time_s", "energy_kj")}
# Study attribute set when the study stopped early: {"probes": evaluated candidates, "rule": ...}.
CONVERGED_ATTR = "converged"
# Failed probes in a row, at a run's start and with none of the study's ever run, after which the run
# stops (see above). Three: one failure may be the candidate's; three different candidates failing
# before any has run is the set-up's, and each costs the user a probe's start-up on the cluster.
FAILING_START_PROBES = 3
# Set on a trial whose probe failed on the set-up (`setup_failure`); the study's list of such trials
# queued again when it resumed (they no longer count as evaluated: their retries do).
SETUP_FAILURE_ATTR = "setup_failure"
SETUP_RETRIED_ATTR = "setup_retried_trials"
# Set on a trial just before its probe starts: what other workers count against the budget (a trial
# that finds no room left is marked OVER_BUDGET_ATTR instead, unique.py).
PROBING_ATTR = "probing"


class ProbeFailed(Exception):
    """A probe failed or timed out: the trial is FAIL, the study goes on."""


class FailingStart(UserError):
    """The run's first probes all failed and none of the study's has ever run (see the docstring)."""


@dataclass
class StudyProgress:
    """Callbacks the CLI uses to draw progress; all optional."""

    on_trial: Callable[[int, dict, ProbeResult | None, str], None] | None = None


SAMPLERS = ("guided", "tpe", "random", "nsga2")


def make_sampler(seed: int | None, n_trials: int, kind: str = "tpe", checks: list | None = None) -> optuna.samplers.BaseSampler:
    """`guided` (the CLI's default, see study/guided.py) needs the space's `checks`. The others stay
    for comparison (benchmarks/search_efficiency.py): TPE (multivariate, constraint-aware) with a short
    random start, since the baseline is enqueued first and budgets are 10-60 trials; random; NSGA-II.
    GPSampler would fit too, but it imports torch, which the simulate path must not load.
    """
    if kind == "guided":
        from autotune.study.guided import GuidedSampler

        if checks is None:
            raise ValueError("the guided sampler needs the space's checks (valid_checks(settings))")
        return GuidedSampler(checks, usable_values(checks), seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if kind != "tpe":
        raise UserError(f"unknown sampler {kind!r}; choose one of {', '.join(SAMPLERS)}")
    return optuna.samplers.TPESampler(
        seed=seed,
        multivariate=True,
        n_startup_trials=max(3, min(10, n_trials // 4)),
        constant_liar=True,
    )


# Why a probe that ran with estimated energy failed (kept as its reason; a resume with the flag names them).
ESTIMATED_ENERGY_REASON = ("energy was only estimated (no sensor on a probe node); pass --allow-estimated-energy or "
                           "--objectives time")


def unranked_estimates(study: optuna.Study) -> list[int]:
    """Trials that ran but failed because their energy was only estimated: a resume with
    --allow-estimated-energy does not probe them again (no candidate is probed twice)."""
    return [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
            if t.user_attrs.get("reason") == ESTIMATED_ENERGY_REASON and "duplicate_of" not in t.user_attrs]


def is_evaluated(t: optuna.trial.FrozenTrial, released: Collection[int] = ()) -> bool:
    """A trial whose candidate was really evaluated (not pruned unrun, not a repeat, not interrupted).
    `released`: set-up failures queued again (`released_trials(study)`), which their retries replace."""
    return ("result" in t.user_attrs and "duplicate_of" not in t.user_attrs and not killed_after_probe(t)
            and t.number not in released)


def released_trials(study: optuna.Study) -> set[int]:
    """Trials whose probe failed on the set-up and whose candidate a resumed run queued again."""
    return set(study.user_attrs.get(SETUP_RETRIED_ATTR, []))


def setup_failure(result: ProbeResult) -> bool:
    """Whether a probe failed before the trainer ran the candidate, which points at the set-up, not at
    the candidate: the launch backend could not start the launcher (not installed), could not reach the
    candidate's nodes (a hostfile or an allocation too small), or the launcher ended without the trainer's
    result (a module missing on the nodes, ssh or pdsh refused, srun refused the step), or with a result
    the tuner cannot read (another version on the nodes). The trainer writes a result naming the
    `failed_rank` for each failure of its own (DeepSpeed's error, a candidate it refuses): the candidate's.
    Final too: out of memory (a result), a timeout (a hang may be the candidate's, and a retry costs the
    whole timeout) and a launcher killed by a signal (the kernel's OOM killer). Replayed and simulated
    failures are recorded or computed: they carry no `launcher`, and stay final."""
    details = result.details or {}
    if result.status != "failed" or "launcher" not in details or "failed_rank" in details or "refused" in details:
        return False
    exit_code = details.get("exit_code")
    return exit_code is None or exit_code >= 0


def killed_after_probe(t: optuna.trial.FrozenTrial) -> bool:
    """A trial whose probe finished (its result is stored) but whose run died before recording the outcome
    (kill -9, Ctrl-C in between): it is RUNNING, or FAIL without the reason every recorded failure carries.
    Its retry takes the stored result: the probe is not run twice, nor lost."""
    if "result" not in t.user_attrs or "duplicate_of" in t.user_attrs or "reason" in t.user_attrs:
        return False
    return t.state in (TrialState.RUNNING, TrialState.FAIL)


def evaluated_trials(study: optuna.Study) -> dict[str, optuna.trial.FrozenTrial]:
    done, released = {}, released_trials(study)
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)):
        if is_evaluated(t, released):
            done.setdefault(params_key(t.user_attrs["candidate"]["knobs"]), t)
    return done


def valid_checks(settings: StudySettings) -> list:
    """Every candidate of the study's space checked; refuses a space in which nothing can run."""
    checks = list(enumerate_space(settings.space, settings.model, settings.hardware, settings.workload, settings.gpus_per_node))
    reason = nothing_valid(checks)
    if reason:
        raise UserError(reason)
    return checks


def nothing_valid(checks: list) -> str | None:
    """Why no candidate of the space can run, with the fix, in one line; None when one can."""
    if any(c.valid for c in checks):
        return None
    batch = _global_batch_miss(checks)
    if batch:
        return f"nothing in the space is valid: {batch}"
    if any(c.memory is not None for c in checks):
        return (f"nothing in the space fits in memory ({_closest_miss(checks)}); widen it: more --nodes, ZeRO-3, "
                "offload or checkpointing in the --space file (see `autotune space`)")
    return (f"nothing in the space is valid: {_closest_miss(checks)}; change those values in the --space "
            "file (`autotune space --space FILE` gives each candidate's reason)")


def _closest_miss(checks: list) -> str:
    """Why nothing runs, told by the candidate nearest to running: the one that breaks no rule and
    overflows memory least; else every rule the candidates break (a candidate is told by the first it breaks)."""
    sized = [c for c in checks if c.memory is not None]
    if sized:
        closest = min(sized, key=lambda c: max(c.memory.device_excess_gib, c.memory.host_excess_gib))
        knobs = ", ".join(f"{knob} {value}" for knob, value in closest.candidate.knobs.to_dict().items()
                          if knob not in ("power_limit", "sm_clock_mhz"))  # they move no memory
        return f"the closest, {knobs}, {closest.reason}"
    reasons = Counter(c.reason for c in checks).most_common()
    listed = "; ".join(f"{reason} ({count} of {len(checks)})" for reason, count in reasons[:3])
    return f"every candidate breaks a rule: {listed}" + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")


def node_counts_without_candidates(checks: list) -> list[str]:
    """For a range of node counts: each count none of whose candidates is valid, and why (a study of
    --nodes 2-3 on 4-GPU nodes and a batch of 64 would otherwise leave 3 nodes out without a word)."""
    by_nodes: dict[int, list] = {}
    for check in checks:
        by_nodes.setdefault(check.candidate.knobs.nodes, []).append(check)
    if len(by_nodes) < 2:
        return []
    return [f"no candidate on {nodes} node(s) is valid: {_global_batch_miss(group) or _closest_miss(group)}"
            for nodes, group in sorted(by_nodes.items()) if not any(c.valid for c in group)]


def _global_batch_miss(checks: list) -> str | None:
    """When no micro-batch x data-parallel size of the space divides the global batch (3 nodes of 4 GPUs
    and the default 64), that alone is why nothing runs, and the fix is the batch: every SP degree then
    only hides it behind another rule (the commonest reason would read "SP degree 8 does not divide")."""
    shapes = [c.candidate for c in checks if c.candidate.gpus % c.candidate.knobs.sp_degree == 0]
    if not shapes or any(c.grad_accum for c in shapes):
        return None
    global_batch = shapes[0].workload.global_batch
    data_parallel = sorted({c.dp_degree for c in shapes})
    step = max(data_parallel) * min(c.knobs.micro_batch for c in shapes)  # every SP degree then fits
    lower, upper = global_batch // step * step, (global_batch // step + 1) * step
    nearest = " or ".join(str(b) for b in (lower, upper) if b > 0)
    micro_batches = sorted({c.knobs.micro_batch for c in shapes})
    return (f"no micro-batch ({', '.join(map(str, micro_batches))}) x data-parallel size "
            f"({', '.join(map(str, data_parallel))} on these GPUs) divides the global batch {global_batch}: pass "
            f"--global-batch {nearest}, other micro_batch values in a --space file, or another --nodes / --gpus-per-node")


def usable_values(checks: list) -> dict[str, list]:
    """Per knob, the values (in the space file's order) that at least one valid, fitting candidate
    uses. A value no valid candidate has (SuperOffload without CUDA, ZeRO-0 for a 72B model) can
    only waste proposals, so the sampler is never offered it; `autotune space` still lists it."""
    used = {knob: {getattr(c.candidate.knobs, knob) for c in checks if c.valid} for knob in KNOBS}
    return {knob: [v for v in dict.fromkeys(getattr(c.candidate.knobs, knob) for c in checks) if v in used[knob]]
            for knob in KNOBS}


def _suggest(trial: optuna.Trial, choices: dict[str, list]) -> dict:
    return {knob: trial.suggest_categorical(knob, choices[knob]) for knob in KNOBS}


def _set_constraints(trial: optuna.Trial, rule: float, memory_excess: float, oom: float) -> None:
    for key, value in zip(CONSTRAINT_KEYS, (rule, memory_excess, oom)):
        trial.set_constraint(key, float(value))


def _objective_values(result: ProbeResult, objectives: tuple[str, ...]) -> list[float] | None:
    values = [getattr(result, name) for name in objectives]
    return None if any(v is None for v in values) else [float(v) for v in values]


class Interrupts:
    """Where Ctrl-C (SIGINT) and SIGTERM stop a study. During a probe, at once: the backend kills the probe
    and the trial is retried on resume. Anywhere else, at the end of the trial being recorded: a
    KeyboardInterrupt inside Optuna's own bookkeeping (its tell after each trial) left it with an
    UnboundLocalError of its own, a traceback and exit status 1 instead of 130 (a simulated study spends
    most of its time there). `install` sets the handlers for the block; run_study raises what is pending
    once `study.optimize` has returned. Main thread only, as signal handlers are."""

    def __init__(self):
        self.pending: BaseException | None = None
        self._study: optuna.Study | None = None
        self._probing = False

    @contextlib.contextmanager
    def install(self, signals: dict):
        """signals: {signal number: the KeyboardInterrupt subclass it raises}."""
        previous = {signum: signal.signal(signum, self._handler(kind)) for signum, kind in signals.items()}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _handler(self, kind):
        def handle(signum, frame):
            if self._probing or self._study is None:
                raise kind()
            try:
                self._study.stop()  # no new trial starts; this one is recorded whole
            except RuntimeError:  # not inside optimize (before the first trial or after the last): nothing to spoil
                raise kind() from None
            self.pending = self.pending or kind()
        return handle

    @contextlib.contextmanager
    def probing(self):
        if self.pending is not None:
            raise self.pending
        self._probing = True
        try:
            yield
        finally:
            self._probing = False

    @contextlib.contextmanager
    def study(self, study: optuna.Study):
        self._study = study
        try:
            yield
        finally:
            self._study = None
        if self.pending is not None:
            raise self.pending


class _Objective:
    """The function `study.optimize` calls once per proposal."""

    def __init__(self, settings, backend, objectives, progress, checks, accept_estimated_energy, n_trials, interrupts):
        self.settings, self.backend, self.objectives, self.progress = settings, backend, objectives, progress
        self.choices, self.accept_estimated_energy, self.n_trials = usable_values(checks), accept_estimated_energy, n_trials
        # The space's verdicts, a backend's among them (replay: no record), so a proposal is judged as the samplers were.
        self.checks = {params_key(c.candidate.knobs.to_dict()): c for c in checks}
        self.interrupts = interrupts

    def __call__(self, trial: optuna.Trial):
        params = _suggest(trial, self.choices)
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
            self._repeat(trial, earlier)
        if owner is not None:
            self._running_elsewhere(trial, owner)
        if not _reserve_probe(trial, self.n_trials):
            trial.set_user_attr(OVER_BUDGET_ATTR, True)
            trial.study.stop()
            raise ProbeFailed(f"not probed: the --trials budget of {self.n_trials} is held by probes running on other workers")
        saved = _saved_result(trial)
        try:
            with self.interrupts.probing():
                result = ProbeResult(**saved) if saved is not None else self.backend.evaluate(candidate, trial.number)
        except KeyboardInterrupt:
            trial.set_user_attr("interrupted", True)  # retried when the study resumes
            raise
        trial.set_user_attr("result", result.to_dict())
        memory_excess = max(check.memory.device_excess_gib, check.memory.host_excess_gib)
        _set_constraints(trial, 0.0, memory_excess, 1.0 if result.status == "oom" else 0.0)
        values = _objective_values(result, self.objectives) if result.ok else None
        unranked = None  # why a probe that ran cannot be ranked: said on its progress line, kept as its reason
        if result.ok and "energy_kj" in self.objectives and result.energy_source == "estimated" and not self.accept_estimated_energy:
            # A node without a sensor (here, or a remote one) sent an estimate: never rank by it unasked.
            unranked = ESTIMATED_ENERGY_REASON
        elif result.ok and values is None:
            missing = [name for name in self.objectives if getattr(result, name) is None]
            unranked = f"probe gave no {' and '.join(missing)}" + (" (energy unavailable?)" if "energy_kj" in missing else "")
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
        _fail(trial, f"{result.status}: {(result.error or '').strip()[:300]}")

    def _prune_invalid(self, trial, params, check) -> NoReturn:
        # A rule breaker has no memory estimate; one that does not fit has an excess > 0.
        if check.memory is None:
            _set_constraints(trial, 1.0, 0.0, 0.0)
        else:
            _set_constraints(trial, 0.0, max(check.memory.device_excess_gib, check.memory.host_excess_gib), 0.0)
        trial.set_user_attr("reason", check.reason)
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
    trials = trial.study.get_trials(deepcopy=False)
    # failed_trial first: Optuna's retry copies the user attrs, an older retry_of among them.
    retried = trials[trial.number].system_attrs.get("failed_trial", trial.user_attrs.get("retry_of"))
    if retried is None:
        return None
    original = trials[retried]
    return original.user_attrs["result"] if killed_after_probe(original) else None


def _reserve_probe(trial: optuna.Trial, n_trials: int) -> bool:
    """Whether the trial may start its probe: the study's evaluated candidates and the probes running
    on other workers leave room in the budget. The trial's own mark is stored before the others are
    read, so of two workers that reserve at once at least one sees the other: the budget is never
    exceeded (in that race both may stop, one short of it; the same command resumes)."""
    trial.set_user_attr(PROBING_ATTR, True)
    taken, released = 0, released_trials(trial.study)
    for t in trial.study.get_trials(deepcopy=False):  # one snapshot: a trial is running or finished in it
        running_probe = t.state == TrialState.RUNNING and t.user_attrs.get(PROBING_ATTR)
        taken += t.number != trial.number and bool(running_probe or is_evaluated(t, released))
    return taken < n_trials


def probes_running_elsewhere(study: optuna.Study) -> int:
    """Probes other workers are running on the study (after this worker's run: none of its own)."""
    return sum(bool(t.user_attrs.get(PROBING_ATTR)) for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def _fail(trial: optuna.Trial, reason: str) -> NoReturn:
    """An evaluated candidate whose trial fails: its reason is kept for the report's trial table (a
    probe that ran but cannot be ranked has no error of its own) and for the failing-start stop."""
    trial.set_user_attr("reason", reason)
    raise ProbeFailed(reason)


def _earlier_unfinished_holder(study: optuna.Study, number: int, key: str, wait_s: float = PROPOSAL_WAIT_S) -> int | None:
    """The lowest number below `number` of a RUNNING or WAITING (queued) trial with these knobs, or None.
    Earlier trials whose knobs are still being suggested are waited for (`settled_trials`)."""
    holders = [t.number for t in settled_trials(study, number, wait_s)
               if t.number < number and t.state in (TrialState.RUNNING, TrialState.WAITING)
               and all(k in trial_knobs(t) for k in KNOBS) and params_key(trial_knobs(t)) == key]
    return min(holders, default=None)


class _StopWhenDone:
    """The callback after each trial: stop at the budget, at the end of the space, when the guided
    sampler has converged, or on a failing start (kept in `failing`, raised once optimize returns)."""

    def __init__(self, n_trials: int, valid_total: int, max_proposals: int, early_stop: bool, earlier: set[int]):
        self.n_trials, self.valid_total, self.max_proposals, self.early_stop = n_trials, valid_total, max_proposals, early_stop
        self.earlier = earlier  # trials finished before this run
        self.failing: FailingStart | None = None

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        trials = study.get_trials(deepcopy=False)
        released = released_trials(study)
        evaluated = [t for t in trials if is_evaluated(t, released)]
        if len(evaluated) >= min(self.n_trials, self.valid_total) or len(trials) >= self.max_proposals:
            study.stop()
        elif self.early_stop and _converged(study) and not retries_owed(study):
            study.set_user_attr(CONVERGED_ATTR, {"probes": len(evaluated), "rule": STOP_RULE})
            study.stop()
        else:
            self.failing = _failing_start(evaluated, self.earlier)
            if self.failing is not None:
                study.stop()


def _failing_start(evaluated: list, earlier: set[int]) -> FailingStart | None:
    """A FailingStart when this run's probes are FAILING_START_PROBES or more, every one failed, and no
    probe of the study has ever run (on shared storage another worker's that ran counts too)."""
    if any(t.state != TrialState.FAIL for t in evaluated):
        return None
    now = [t for t in evaluated if t.number not in earlier]
    if len(now) < FAILING_START_PROBES:
        return None
    last = max(now, key=lambda t: t.number)
    return FailingStart(
        f"stopped: the {len(now)} probes of this run all failed or timed out and no probe of this study has run "
        f"yet, which points at the set-up rather than the configurations. {_trial_failure(last)}. "
        f"Fix that and run the same command again: {_what_a_resume_does(now)}"
    )


def _trial_failure(t: optuna.trial.FrozenTrial) -> str:
    """"Trial N: its reason (its log: PATH)", as the stops and refusals name a failed trial."""
    details = t.user_attrs["result"].get("details") or {}
    log = f" (its log: {Path(details['trial_dir']) / 'log.txt'})" if details.get("trial_dir") else ""
    return f"Trial {t.number}: {t.user_attrs.get('reason') or t.user_attrs['result'].get('status') or 'failed'}{log}"


def _what_a_resume_does(failed: list) -> str:
    setup = sum(bool(t.user_attrs.get(SETUP_FAILURE_ATTR)) for t in failed)
    if not setup:
        return "the study resumes, and its failed trials are kept"
    kept = "" if setup == len(failed) else " (the others' failures are the candidates' own, and are kept)"
    return f"the study resumes and probes again the {setup} candidate(s) that failed on the set-up{kept}"


def no_probe_succeeded(study: optuna.Study, others_left: bool = True) -> str | None:
    """Why no probe of a study that evaluated candidates succeeded (every one failed, timed out or ran out
    of memory), in one line with the fix; None when one ran to its end, or none was evaluated. Whatever the
    budget: the failing-start stop above needs three failures in one run. A probe that ran but cannot be
    ranked (energy only estimated, or missing) succeeded as a probe: its figures and why they are not
    ranked are in the report. `others_left`: whether the space holds valid candidates not evaluated yet."""
    released = released_trials(study)
    evaluated = [t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released)]
    if not evaluated or any(t.user_attrs["result"].get("status") == "ok" for t in evaluated):
        return None
    outcomes = Counter(_OUTCOME_WORDS.get(t.user_attrs["result"].get("status"), "failed") for t in evaluated)
    said = " and ".join(f"{count} {words}" for words, count in outcomes.most_common())
    head = (f"no probe of this study succeeded (of its {len(evaluated)} evaluated candidate(s), {said}), so nothing "
            "is on its front")
    others = "probe others with a larger --trials" if others_left else "every candidate of the space was probed"
    failed = [t for t in evaluated if t.state == TrialState.FAIL]
    if not failed:
        widen = "widen the space (ZeRO-3, offload, checkpointing, more --nodes in a --space file)"
        return f"{head}: {others}, or {widen}" if others_left else f"{head}: {others}; {widen}"
    setup = sum(bool(t.user_attrs.get(SETUP_FAILURE_ATTR)) for t in failed)
    again = "run the same command again" + ("" if setup == len(evaluated) else f" ({others})")
    return f"{head}. {_trial_failure(max(failed, key=lambda t: t.number))}. Fix that and {again}: {_what_a_resume_does(failed)}"


# How a probe that did not succeed ended, as a sentence counts them.
_OUTCOME_WORDS = {"oom": "ran out of memory", "timeout": "timed out", "failed": "failed"}


def queue_setup_retries(study: optuna.Study) -> list[int]:
    """On resume, queue again the candidate of each trial whose probe failed on the set-up (see the module
    docstring); that trial then counts no more as evaluated. Once per trial, and not for a candidate another
    trial has evaluated since or holds queued or running. Returns the trial numbers whose candidates were queued."""
    trials = study.get_trials(deepcopy=False)
    released = released_trials(study)
    taken = {params_key(trial_knobs(t)) for t in trials
             if (t.state in (TrialState.RUNNING, TrialState.WAITING) and all(k in trial_knobs(t) for k in KNOBS))
             or (is_evaluated(t, released) and not t.user_attrs.get(SETUP_FAILURE_ATTR))}
    queued = []
    for t in trials:
        if t.state != TrialState.FAIL or not t.user_attrs.get(SETUP_FAILURE_ATTR) or not is_evaluated(t, released):
            continue
        key = params_key(t.params)
        if key in taken:
            continue
        attrs = {"retry_of": t.number, **({"baseline": True} if t.user_attrs.get("baseline") else {})}
        study.enqueue_trial(t.params, user_attrs=attrs)
        taken.add(key)
        queued.append(t.number)
    if queued:
        study.set_user_attr(SETUP_RETRIED_ATTR, sorted(released | set(queued)))
    return queued


def retries_owed(study: optuna.Study) -> bool:
    """Whether a resume queued candidates to probe again (interrupted, or failed on the set-up) that no
    trial has taken yet: the run said it would probe them, so a converged model does not stop it first
    (their figures may move the front the model converged on)."""
    return any(t.state == TrialState.WAITING and "retry_of" in t.user_attrs
               for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


def _converged(study: optuna.Study) -> bool:
    """The guided sampler's early stop (other samplers have no model to stop on)."""
    converged = getattr(study.sampler, "converged", None)
    return bool(converged and converged(study))


def retry_interrupted(study: optuna.Study, include_running: bool = True) -> int:
    """Queue again the candidates of trials a stopped run left unfinished.

    Interrupted trials (Ctrl-C, SIGTERM) are FAIL with an `interrupted` mark. RUNNING trials (the
    process was killed outright) are failed first, but only with one worker per storage: on shared
    storage a RUNNING trial may be a live worker's, and Optuna's heartbeats retry the dead ones.
    """
    trials = study.get_trials(deepcopy=False)
    done_before = retried_trials(study, trials)
    retried = set(study.user_attrs.get(RETRIED_ATTR, []))  # ours, kept in the study
    queued = 0
    for t in trials:
        running = include_running and t.state == TrialState.RUNNING
        unfinished = running or (t.state == TrialState.FAIL and (t.user_attrs.get("interrupted") or killed_after_probe(t)))
        if not unfinished or t.number in done_before:
            continue
        if t.state == TrialState.RUNNING:
            # Public API: tell() finishes a RUNNING trial by number. A run killed between creating a
            # trial and its first suggest leaves one with no params: failed too, or it stays forever.
            study.tell(t.number, state=TrialState.FAIL)
        # A trial killed before its first suggest still has its queued knobs (the baseline, a retry).
        params = t.params if len(t.params) == len(KNOBS) else t.system_attrs.get("fixed_params")
        if not params:
            continue
        attrs = {"retry_of": t.number, **({"baseline": True} if t.user_attrs.get("baseline") else {})}
        study.enqueue_trial(params, user_attrs=attrs)
        retried.add(t.number)
        queued += 1
    if queued:
        study.set_user_attr(RETRIED_ATTR, sorted(retried))
    return queued


RETRIED_ATTR = "retried_trials"


def retried_trials(study: optuna.Study, trials: list) -> set[int]:
    """The trials a stopped run left unfinished that were queued again: by retry_interrupted (the study's
    RETRIED_ATTR), or by Optuna's heartbeat callback itself (the retry's system attr `failed_trial`)."""
    return set(study.user_attrs.get(RETRIED_ATTR, [])) | {t.system_attrs["failed_trial"] for t in trials
                                                          if "failed_trial" in t.system_attrs}


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
) -> int:
    """Evaluate candidates until the study holds n_trials evaluated ones; returns how many ran now."""
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
    retry_interrupted(study, include_running=not shared_storage)
    queue_setup_retries(study)  # the CLI has queued them already, to say so: then nothing is left here
    released = released_trials(study)
    before = len([t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released)])
    if before >= min(n_trials, valid_total):
        return 0
    if before and early_stop and _converged(study) and not retries_owed(study):
        # Converged already (in an earlier run, or by probes other workers finished since): the record
        # names the probes it converged on now. A study with nothing evaluated cannot have: no model
        # is built for it at start-up.
        study.set_user_attr(CONVERGED_ATTR, {"probes": before, "rule": STOP_RULE})
        return 0
    if study.user_attrs.get(CONVERGED_ATTR) and not (early_stop and hasattr(study.sampler, "converged")):
        # A sampler with no stop rule probes past a guided run's convergence: "converged after 5 probes"
        # would then describe a study of 12.
        study.set_user_attr(CONVERGED_ATTR, None)
    choices = usable_values(checks)
    study.sampler = unique_candidates(study.sampler, choices, [c.candidate.knobs.to_dict() for c in checks if c.valid])
    finished = {t.number for t in study.get_trials(deepcopy=False) if t.state.is_finished()}
    stop = _StopWhenDone(n_trials, valid_total, len(study.trials) + MAX_PROPOSALS_PER_TRIAL * n_trials, early_stop, finished)
    interrupts = interrupts or Interrupts()  # without install(): no handler of ours, Python's own
    with interrupts.study(study):
        study.optimize(
            _Objective(settings, backend, OBJECTIVES[objectives], progress, checks, accept_estimated_energy, n_trials,
                       interrupts),
            catch=(ProbeFailed,),
            callbacks=[stop],
        )
    if stop.failing is not None:
        raise stop.failing
    return len([t for t in study.get_trials(deepcopy=False) if is_evaluated(t, released_trials(study))]) - before
