"""Read a finished (or running) study into what the report needs: every trial, the feasible points."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import optuna
from optuna.trial import TrialState

from autotune.counted import counted
from autotune.flops import flops_per_sample
from autotune.report.front import Point, pareto_front, recommendations
from autotune.report.picks import DEFAULT_ETA, DEFAULT_MAX_SLOWDOWN, PickParameters, max_power_per_gpu_w
from autotune.study.loop import CONVERGED_ATTR, running_probes
from autotune.study.foreign import foreign_trials
from autotune.study.outside import LEFT_OUT, by_reason, outside_reason
from autotune.study.retries import (
    STOPPED_BY_ATTR, is_evaluated, killed_after_probe, released_trials, retried_trials, retry_lineage, trials_by_number,
)
from autotune.study.settings import StudySettings
from autotune.study.unique import OVER_BUDGET_ATTR, trial_knobs


MODEL_CAVEATS_ATTR = "model_caveats"
# A FAIL trial whose probe's result is kept (retries.killed_after_probe), before a run queues it again.
UNRECORDED_PROBE_REASON = ("its probe's result is kept, but the trial was not recorded as finished (its run was killed "
                           "after the probe, or the trial was marked FAIL by hand): left off the front; the next "
                           "`autotune run` takes the result over")


@dataclass(frozen=True)
class StudyView:
    settings: StudySettings
    # One row per distinct trial: number, params, status, figures, reason, gpus, and the result's
    # `details` (the tuning cost reads every probe's, failed ones included: they drew power too).
    trials: list[dict]
    points: list[Point]  # feasible, evaluated
    front: list[Point]
    picks: dict[str, int]
    baseline_trial: int | None
    pick_parameters: PickParameters = PickParameters()
    # A study of --objectives time: its front and picks rank by time alone; energy is a figure beside it.
    time_only: bool = False
    # The node counts a valid candidate uses (searchable_nodes); None where no trial recorded them.
    searchable_nodes: tuple[int, ...] | None = None
    # What of the --model file autotune models otherwise (models_hf.model_warning, kept by `run` as MODEL_CAVEATS_ATTR):
    # said with the figures in every report, not only once on stderr at read time (trial 44 #6).
    model_caveats: str | None = None
    # Simulated trials whose candidate today's rules or memory estimate rule out (an older autotune, whose memory
    # estimate was lower, evaluated them): {trial: reason}; left off the points, the front and the picks (trial52 #2).
    ruled_out_now: dict = field(default_factory=dict)
    # Trials whose probe was under way (another worker's) when the view read the study: not in it. Said from this read,
    # not another: a probe that finished between the two was said to be missing from a report that held it (trial66 #10).
    running_probes: tuple[int, ...] = ()
    # Trials that are no probe of this study, {trial: why} (outside.outside_reason): their rows say why, and pareto.json's
    # note names them in one sentence (left_out_sentence), as a run does on stderr: the report only counted them.
    left_out: dict = field(default_factory=dict)
    # Whether the study kept its hardware profile: an older autotune's did not, and the profile of that name here is
    # today's, whose error is not its figures' (report.error_bars.simulator_error).
    profile_recorded: bool = True
    # The trials of that same read whose candidate was evaluated (retries.is_evaluated, as --trials counts them): the
    # search block counts what finished after an early stop from it, not from a later read, in which a probe that
    # finished meanwhile was "finished since" beside a trial count without it (trial80 #3).
    evaluated: tuple[int, ...] = ()
    # The guided sampler's early-stop record (loop.CONVERGED_ATTR) as it stood just before that read: one another worker
    # wrote after it said "converged after 11 probes" beside the read's 10 trials (trial80 #3).
    converged: dict | None = None

    def point(self, trial: int) -> Point | None:
        return next((p for p in self.points if p.trial == trial), None)

    def baseline_point(self) -> Point | None:
        """The baseline's feasible point, which every pick's change is against; None where it has none."""
        return self.point(self.baseline_trial) if self.baseline_trial is not None else None

    @cached_property
    def space_baseline(self):
        """The baseline candidate the study's space holds (space.baseline over its valid candidates), None where
        none fits or the view knows no space: checked once per view, where every pick's payback and the page's
        header ask it (a replayed file without the baseline's record)."""
        from autotune.space.baseline import baseline
        from autotune.study.valid import valid_checks

        return None if self.settings is None else baseline(valid_checks(self.settings))

    @cached_property
    def pick_ties(self) -> tuple[dict, dict, dict]:
        """The picks' ties by each rule (choosing.ties_by_rule, at the simulator's error): judged once per view, where
        pareto.json's pick rows and each report's "Which to deploy" read them (each judged them all again)."""
        from autotune.report.choosing import ties_by_rule
        from autotune.report.error_bars import simulator_error

        return ties_by_rule(self, simulator_error(self))

    def trials_by_status(self) -> dict[str, int]:
        """{status: trials}, statuses in alphabetical order (pareto.json's `trials_by_status`)."""
        return {s: sum(r["status"] == s for r in self.trials) for s in sorted({r["status"] for r in self.trials})}


def _status(t: optuna.trial.FrozenTrial) -> str:
    result = t.user_attrs.get("result") or {}
    if t.state == TrialState.PRUNED and "reason" in t.user_attrs:
        return "invalid"
    if t.user_attrs.get("interrupted"):
        return "interrupted"  # Ctrl-C, SIGTERM or an error of the tuner stopped its probe; the next run probed it again
    if t.state == TrialState.FAIL and result.get("status") == "ok":
        return "failed"  # it ran, but cannot be ranked (its reason says why: estimated energy, no figure)
    return result.get("status") or ("ok" if t.state == TrialState.COMPLETE else t.state.name.lower())


def _refused_queued(t: optuna.trial.FrozenTrial) -> bool:
    """A trial queued by hand whose values the study refused (study/queued.py): pruned before it became a candidate,
    its reason kept. It is a trial of the study, in Optuna's tools and in pareto.json's proposed_by; the report's
    counts left it out, and named it nowhere (trial 66 #3)."""
    return t.state == TrialState.PRUNED and "candidate" not in t.user_attrs and "reason" in t.user_attrs


def _unevaluated_row(t: optuna.trial.FrozenTrial, settings: StudySettings, reason: str) -> dict:
    """The row of a trial autotune did not evaluate, a queued one it refused or one added outside it (outside.py):
    invalid, its values as queued or added (the table shows what was left out), no figures."""
    params = trial_knobs(t)
    nodes = params.get("nodes")
    gpus = nodes * settings.gpus_per_node if isinstance(nodes, int) and not isinstance(nodes, bool) else None
    return {"trial": t.number, "params": params, "status": "invalid", "reason": reason,
            **dict.fromkeys(("time_s", "energy_kj", "tflops", "peak_mem_gib", "source", "energy_source")),
            "gpus": gpus, "details": {}}


def searchable_nodes(trials: list[optuna.trial.FrozenTrial]) -> tuple[int, ...] | None:
    """The node counts of the study's space that have a valid candidate, ascending: the `nodes` choices
    the sampler was offered (study.valid.usable_values), which each trial's distribution records. Read
    from the trials, not found by checking the space again: that took about 0.3 s for 32b on 2-8 nodes, and
    the study settled it when it ran. None where no trial recorded them (no trial has run yet)."""
    counts = {n for t in trials for n in getattr(t.distributions.get("nodes"), "choices", ())}
    return tuple(sorted(counts)) if counts else None


def ruled_out_now(candidate, result: dict) -> str | None:
    """Why today's rules or memory estimate rule out a simulated trial's candidate; None where they do not. A
    study evaluated by an older autotune can hold such trials (2be1fa5 raised the estimate of SuperOffload's GPU
    share): figures of a candidate that cannot run are no pick. A measured trial ran, which an estimate cannot undo."""
    if result.get("source") != "simulated":
        return None
    from autotune.space.enumerate import check_candidate

    return check_candidate(candidate).reason


def ruled_out_sentence(ruled_out: dict) -> str | None:
    """One line: how many evaluated trials are ruled out now, and why (the commonest reason), or None."""
    if not ruled_out:
        return None
    reasons = list(dict.fromkeys(ruled_out.values()))
    why = reasons[0] + (f" (and {counted(len(reasons) - 1, 'other reason')}; report.html lists each trial's)" if len(reasons) > 1 else "")
    trials = ", ".join(map(str, sorted(ruled_out)))
    many = len(ruled_out)
    return (f"{many} trial{'s' if many > 1 else ''} evaluated earlier (by an older autotune, or on another profile) {'is' if many == 1 else 'are'} "
            f"now ruled out (trial{'s' if many > 1 else ''} {trials}): {why}; {'it is' if many == 1 else 'they are'} left off the front and "
            "the picks, and kept in study.db.")


def left_out_sentence(left_out: dict) -> str | None:
    """One sentence naming the trials that are no probe of this study and why, or None: the report counted them as
    invalid, and said why only in report.html's table."""
    if not left_out:
        return None
    reasons = {number: reason.removesuffix(LEFT_OUT) for number, reason in left_out.items()}
    return f"Left out of the search, the front and the picks as no probe of this study: {by_reason(reasons)}."


def study_view(study: optuna.Study, max_slowdown: float = DEFAULT_MAX_SLOWDOWN, eta: float = DEFAULT_ETA) -> StudyView:
    """The study's trials, feasible points, front and picks (chosen with max_slowdown and eta)."""
    settings = StudySettings.from_dict(study.user_attrs["settings"])
    rows, points, baseline_trial, ruled_out, left_out = [], [], None, {}, {}
    converged = study.user_attrs.get(CONVERGED_ATTR)  # first: a record no newer than the trials read next
    trials = study.get_trials(deepcopy=False)
    retried = retried_trials(study, trials)  # left unfinished by a stopped run (killed outright, or Ctrl-C): probed again
    # Which trial probed each of them again (the nearest retry), for its reason: "interrupted" alone left the
    # reader to find the candidate's later trial.
    by_number = trials_by_number(trials)
    retried_as = {lineage[0]: t.number for t in trials for lineage in [retry_lineage(by_number, t.number)] if lineage}
    time_only = len(study.directions) == 1  # the study's objectives, as `autotune run --objectives` set them
    # Copies of other studies' trials, second records of one probe, figures the backend never gives (foreign.py): left
    # out as a trial added by hand is, and named in the note. Not shown as this study's, nor taken as its baseline (a
    # copy keeps its `baseline` mark): the study's own probes stand without them (trial74 #2).
    foreign = foreign_trials(study, trials)
    for t in trials:
        if t.state == TrialState.WAITING:
            continue  # queued: not evaluated, whatever user_attrs it was queued with (retries.is_evaluated)
        outside = outside_reason(t, foreign)
        if outside or _refused_queued(t):
            rows.append(_unevaluated_row(t, settings, outside or t.user_attrs["reason"]))
            if outside:
                left_out[t.number] = outside
            continue
        if ("duplicate_of" in t.user_attrs or OVER_BUDGET_ATTR in t.user_attrs or t.state == TrialState.RUNNING
                or "candidate" not in t.user_attrs or (killed_after_probe(t) and t.number in retried)):  # its retry holds its result
            continue
        result = t.user_attrs.get("result") or {}
        params = t.user_attrs["candidate"]["knobs"]
        if t.user_attrs.get("baseline"):
            baseline_trial = t.number
        candidate = settings.candidate(params)
        status = "interrupted" if t.number in retried else _status(t)
        reason = t.user_attrs.get("reason") or result.get("error")
        if killed_after_probe(t):  # not queued again yet: it vanished from the report, silently (trial 66 #3)
            status, reason = "interrupted", UNRECORDED_PROBE_REASON
        if status == "interrupted" and not reason:
            again = f"probed again as trial {retried_as[t.number]}" if t.number in retried_as else "probed again when the study resumes"
            stopped_by = t.user_attrs.get(STOPPED_BY_ATTR)
            how = f"by an error of the tuner ({stopped_by})" if stopped_by else "(Ctrl-C, SIGTERM, or the tuner killed)"
            reason = f"its probe was stopped {how}: {again}"
        feasible = t.state == TrialState.COMPLETE and all(v <= 0 for v in t.constraints.values())
        if feasible and (now := ruled_out_now(candidate, result)):
            ruled_out[t.number] = now
            status, reason, feasible = "invalid", f"ruled out by this autotune, though evaluated earlier: {now}", False
        row = {"trial": t.number, "params": params, "status": status, "reason": reason}
        if t.number in retried_as:  # a timeout or set-up failure probed again: "why trials failed" names it (failed_trials.py)
            row["probed_again_as"] = retried_as[t.number]
        if status == "interrupted" and t.user_attrs.get(STOPPED_BY_ATTR):
            row["stopped_by"] = t.user_attrs[STOPPED_BY_ATTR]  # an error of the tuner, not Ctrl-C: the cost note says which
        row.update({k: result.get(k) for k in ("time_s", "energy_kj", "tflops", "peak_mem_gib", "source", "energy_source")})
        row.update({"gpus": candidate.gpus, "details": result.get("details") or {}})
        rows.append(row)
        # A time-only study ranks by time alone, so a trial without an energy figure (no sensor, no estimate:
        # the documented way to tune where none is) is a point of it, its energy unavailable (None); ranking
        # by time and energy needs both.
        if feasible and result.get("time_s") is not None and (time_only or result.get("energy_kj") is not None):
            total_tflop = flops_per_sample(settings.model, settings.workload).model_train * settings.workload.samples / 1e12
            points.append(
                Point(
                    trial=t.number,
                    params=params,
                    time_s=result["time_s"],
                    energy_kj=result.get("energy_kj"),
                    tflops=result.get("tflops"),
                    tflop_per_kj=total_tflop / result["energy_kj"] if result.get("energy_kj") else None,
                    peak_mem_gib=result.get("peak_mem_gib"),
                    source=result.get("source", ""),
                    # A missing figure is labelled so whatever the result says: "unavailable", never read as 0 kJ.
                    energy_source=result.get("energy_source", "") if result.get("energy_kj") is not None else "unavailable",
                    gpus=candidate.gpus,
                    extra={"energy_components_kj": result.get("energy_components_kj", {}), "details": row["details"]},
                )
            )
    front = pareto_front(points, time_only)
    parameters = PickParameters(max_slowdown, eta, max_power_per_gpu_w(settings.hardware))
    picks = recommendations(front, parameters.max_slowdown, parameters.eta, parameters.max_power_per_gpu_w, time_only,
                            feasible=points)
    return StudyView(settings, rows, points, front, picks, baseline_trial, parameters, time_only,
                     searchable_nodes(trials), study.user_attrs.get(MODEL_CAVEATS_ATTR), ruled_out, tuple(running_probes(trials)),
                     left_out, profile_recorded="hardware_profile" in study.user_attrs["settings"],
                     evaluated=_evaluated(study, trials), converged=converged)


def _evaluated(study: optuna.Study, trials: list[optuna.trial.FrozenTrial]) -> tuple[int, ...]:
    """The numbers of the `trials` (one read of the study) whose candidate was evaluated (retries.evaluated_count's)."""
    released = released_trials(study)
    return tuple(t.number for t in trials if is_evaluated(t, released))
