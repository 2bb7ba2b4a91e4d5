"""How the search ended, and what it may have missed: the `search` and `predicted` blocks of pareto.json.

- `converged`: the guided sampler's early stop fired (after how many probes, by which rule);
- on the simulate backend the model is the truth: every valid candidate is simulated here, and the
  front is `exhaustive` when no unprobed candidate beats the probed front by more than 1%; so on a replay
  of a file that records every valid candidate, by its records (`recorded_front`);
- otherwise `predicted`: unprobed candidates the model (simulator x correction learnt from the
  probes) still gives a real chance to enter the front. Their figures are predictions, labelled so,
  never points of the front.

A replay study evaluates only the candidates its file records (the run keeps their keys in the
study, backend `evaluable`): what a resume would probe next is the model's choice among those, and
where none is left that the stop rule asks for, the recording is exhausted: the candidate the rule
asks for next needs measuring (`--backend launch`), which no larger --trials does. Predicted
candidates are marked `recorded` true or false there.
"""

from __future__ import annotations

import numpy as np
import optuna

from autotune.candidate import params_key
from autotune.pareto import front_indices
from autotune.candidate import knobs_sentence
from autotune.report.units import energy_text, time_text
from autotune.study.acquisition import ENTER_MARGIN, enters_front
from autotune.space.unsearched import NOT_SEARCHED_ATTR
from autotune.study.loop import PROPOSED_BY_ATTR
from autotune.study.queued import QUEUED_BY_HAND
from autotune.study.retries import FAILING_START_ATTR, SETUP_FAILURE_ATTR, evaluated_count, evaluated_trials, first_on_resume
from autotune.study.valid import usable_values, valid_checks
from autotune.study.stop_rule import STOP_CHANCE, stop_rule, stop_rule_summary
from autotune.study.time_limit import TIME_LIMIT_STOP_ATTR, TIME_LIMIT_TOO_SHORT_ATTR
from autotune.counted import agreeing, counted

MAX_PREDICTED = 5
# What the stop rule weighed in a replay of a file that records some of the valid candidates: its rule read "no unprobed
# valid candidate" in pareto.json beside the unrecorded ones it never weighed.
RECORDED_CANDIDATE = "recorded candidate"


def _exhaustive(values: np.ndarray, front: np.ndarray, probed: set[int], objectives: int, valid: int,
                figures: str) -> tuple[bool, str]:
    """Where every valid candidate's figures are known (`values`, (N, objectives), of `valid` candidates or of
    their front: the simulator's on the simulate backend, a replayed file's that records them all), is every point
    of their front within 1% of the probed `front` (positions `probed` of `values` are probed)? With one objective
    (--objectives time) the front is the fastest alone, and so is the check. `figures`: "simulated", "recorded"."""
    truth = front_indices(values)
    missed = [i for i in truth if i not in probed and enters_front(values[i][None, None, :], front)[0, 0]]
    what = "front" if objectives == 2 else "fastest candidate"
    if missed:
        return False, f"{counted(len(missed), 'point')} of the {figures} {what} over all {valid} valid candidates {agreeing(len(missed), 'was', 'were')} not probed"
    beats = (f"beats this front by more than {ENTER_MARGIN - 1:.0%} in time or energy" if objectives == 2 else
             f"is more than {ENTER_MARGIN - 1:.0%} faster than the fastest probe")
    return True, f"exhaustive: all {valid} valid candidates were {figures} and none {beats}"


# The study's backend record's key (commands/run.backend_attrs) for a replay of a file that records every valid
# candidate: the front of those records, so that its report says whether the probes found it, as a simulated
# study's does (trial57 #15: a replay of `space --simulate --json` had every figure and said nothing).
RECORDED_FRONT_KEY = "recorded_front"


def recorded_front(records: dict[str, dict], valid_keys: set[str]) -> list[dict]:
    """{key, time_s, energy_kj} of the ok records of valid candidates on their time-and-energy front, and the
    fastest of them (a time-only study's front, whose energy a file may lack): a few dozen of a file's thousands."""
    ok = [(key, r["time_s"], r["energy_kj"]) for key, r in records.items() if key in valid_keys and r["status"] == "ok"]
    with_energy = [row for row in ok if row[2] is not None]
    kept = {with_energy[i][0] for i in front_indices(np.array([row[1:] for row in with_energy]))}
    if ok:
        kept.add(min(ok, key=lambda row: row[1])[0])
    return [{"key": key, "time_s": time_s, "energy_kj": energy_kj} for key, time_s, energy_kj in ok if key in kept]


def _every_record_weighed(study, view, backend: str, objectives: int, valid: int) -> tuple[bool | None, str]:
    """A replay of a file that records every valid candidate: `_exhaustive` over its records' front against the
    probed front (the report's). (None, "") where the study keeps no such front (a partial file, another backend,
    a study replayed before it was kept)."""
    front = (study.user_attrs.get("backend") or {}).get(RECORDED_FRONT_KEY) if backend == "replay" else None
    if not isinstance(front, list):
        return None, ""
    rows = [r for r in front if objectives == 1 or r["energy_kj"] is not None]
    values = np.array([[r["time_s"], r["energy_kj"]][:objectives] for r in rows], dtype=float).reshape(-1, objectives)
    evaluated = set(evaluated_trials(study))
    probed = {i for i, r in enumerate(rows) if r["key"] in evaluated}
    probed_front = np.array([[p.time_s, p.energy_kj][:objectives] for p in view.front], dtype=float).reshape(-1, objectives)
    return _exhaustive(values, probed_front, probed, objectives, valid, "recorded")


def _unfinished(study, model, view, replayed=None) -> dict | None:
    """A guided study that stopped before its stop rule was met (the --trials budget ran out, or Ctrl-C):
    how many probes it ran, what the rule still asks for, and the candidate it would probe next. None
    when nothing is left to ask for (every valid candidate probed).

    `replayed`: the model of a replay study's resume (its recorded candidates only). Where it still
    has a candidate to ask for, that is the next one; else the recording is exhausted (`exhausted`) and
    `next`, from the model of every candidate, has no record. `view`: the report's read of the study (_stop_record)."""
    if replayed is not None:
        resumed = _unfinished(study, replayed, view)
        if resumed is not None and resumed["next"] is not None:
            return {**resumed, "exhausted": False}
    reason = model.outstanding(study)
    if reason is None:
        return None
    following = model.next_candidate(study, None)
    unfinished = {**_stop_record(study, view), "reason": reason,
                  "next": None if following is None else dict(model.predictions.params[following]), "next_of": None}
    first = first_on_resume(study)
    if first is not None:
        # A resume probes what it queues before its sampler proposes (a set-up failure again, an interrupted trial,
        # one queued by hand): "next it would probe" named the model's choice over them.
        unfinished.update(next=first[0], next_of={"trial": first[1], "why": first[2]})
    if replayed is not None:
        unfinished.update(exhausted=True, recorded_left=int(replayed.outlook(study).free.sum()))
    return unfinished


def _stop_record(study, view) -> dict:
    """How far a study that stopped short got, and what stopped it: `unfinished` less what a stop rule still asks
    for (a sampler with no rule, such as --sampler random, asks for nothing: `reason` None). Counted in the report's
    read of the study (`view`): from a later one, a pareto.json said 21 probes beside its own "16 ok" (trial80 #5)."""
    read = set(view.evaluated)
    evaluated = [t for t in evaluated_trials(study).values() if t.number in read]
    return {
        "probes": len(evaluated),
        "reason": None,
        "next": None,
        # Other workers' probes under way: "stopped after 2 probes while fewer than 3 succeeded" read as the
        # study's end while the third ran beside it.
        "running_elsewhere": len(view.running_probes),
        # None succeeded: the set-up failed them, and a larger budget would not help (trial 37 F8).
        "succeeded": sum(t.state == optuna.trial.TrialState.COMPLETE for t in evaluated),
        # Of those that did not, how many failed or timed out (the others ran out of memory, which no fix of the
        # set-up changes: trial54 F3).
        "failed": sum(t.state == optuna.trial.TrialState.FAIL for t in evaluated),
        # Stopped by the run's time limit ("slurm": the job's end; "flag": --time-limit), not by the budget: a larger
        # --trials is not what resumes it.
        "time_limit": study.user_attrs.get(TIME_LIMIT_STOP_ATTR),
        # ...before any probe could start, where a run as long stops there again (study/time_limit.stops_again).
        "time_limit_too_short": bool(study.user_attrs.get(TIME_LIMIT_TOO_SHORT_ATTR)),
        # The last run stopped before its --trials budget (interrupted): the same command resumes it, where "a larger
        # --trials" was said of it (trial73 #7).
        "budget_left": _budget_left(study),
        # No failure here is probed again on resume (none on the set-up, none a timeout): they are final, and "fix
        # what failed them, then the same command resumes" led to a resume that probed nothing (trial73 #10).
        "failures_final": _failures_final(study),
    }


def _budget_left(study) -> bool:
    """Whether the --trials budget of the study's last run is above the candidates it holds evaluated."""
    last = max((t for t in study.get_trials(deepcopy=False) if isinstance(t.user_attrs.get(PROPOSED_BY_ATTR), dict)),
               key=lambda t: t.number, default=None)
    budget = None if last is None else last.user_attrs[PROPOSED_BY_ATTR].get("trials_budget")
    return isinstance(budget, int) and budget > evaluated_count(study)


def _failures_final(study) -> bool:
    """Whether the study's failed trials are all final, as study/failures.no_probe_succeeded judges them: none failed
    on the set-up or in a failing start (a resume probes those again), none timed out (a longer --probe-timeout does)."""
    failing_start = set(study.user_attrs.get(FAILING_START_ATTR, []))
    failed = [t for t in evaluated_trials(study).values() if t.state == optuna.trial.TrialState.FAIL]
    return bool(failed) and not any(t.user_attrs.get(SETUP_FAILURE_ATTR) or t.number in failing_start
                                    or t.user_attrs["result"].get("status") == "timeout" for t in failed)


def _evaluated_all(study, valid: set[str], recorded: set[str] | None, backend: str) -> tuple[bool | None, str]:
    """A measured study that neither converged nor stopped short: (True, the line) where it evaluated every valid
    candidate it could (a replay: every recorded one), else (None, ""). Trial54 F10: such a study printed no search
    line at all, where a simulated one says "exhaustive: ..." and a study with nothing ranked "every candidate of
    the space was probed"."""
    reachable = valid if recorded is None else valid & recorded
    if not reachable or reachable - set(evaluated_trials(study)):
        return None, ""
    every = (f"every one of the {len(reachable)} valid candidates" if len(reachable) > 1 else "the one valid candidate")
    if backend != "replay":
        return True, f"exhaustive: {every} of the space was probed"
    unrecorded = len(valid - reachable)
    if not unrecorded:
        return True, f"exhaustive: {every} of the space was replayed from its record"
    # Exhaustive over the recording only: the rest of the space was never measured.
    return None, (f"every one of the {counted(len(reachable), 'recorded valid candidate')} was replayed (the recording is "
                  f"exhausted); the other {counted(unrecorded, 'valid candidate')} {agreeing(unrecorded, 'has no record and was', 'have no record and were')} not evaluated")


def recorded_keys(study, backend: str) -> set[str] | None:
    """The keys of the candidates a replay study's file records; None where every candidate can be
    evaluated (another backend, a file recording them all) or the study does not say (one replayed before
    its run kept them)."""
    evaluable = (study.user_attrs.get("backend") or {}).get("evaluable") if backend == "replay" else None
    return set(evaluable) if isinstance(evaluable, list) else None


def nothing_more_to_evaluate(study, settings, backend: str, resume_said: bool = True) -> str | None:
    """Where a larger --trials would evaluate nothing more, why and what would instead, as a sentence to follow
    with " to compare" or the like: every valid candidate of the space was evaluated (widen it), or on replay every
    recorded one (measure those the file lacks); else, where the time limit stopped the study, that more time does.
    None where some are left, or the space cannot be rebuilt here (`settings` None, or an error): "run more
    --trials" is then the advice (trial54 F2: it was given to studies that had evaluated their whole space or
    recording). `resume_said` False: for the report's lines beside its `search:` line, which says what resumes a
    study the time limit stopped; they name the stop without that advice (trial 63: it was said four times)."""
    # A study the time limit stopped has its budget unspent: more time evaluates more, not a larger --trials (trial 62
    # F1: "widen the space and run more --trials" of a study stopped before its first probe).
    stop = study.user_attrs.get(TIME_LIMIT_STOP_ATTR)
    named = _TIME_LIMIT_TOO_SHORT_NAMED if study.user_attrs.get(TIME_LIMIT_TOO_SHORT_ATTR) else _TIME_LIMIT_NAMED
    time_stop = _TIME_LIMIT_FIXES.get(stop) if resume_said else (named if stop else None)
    if settings is None:
        return time_stop
    try:
        checks = valid_checks(settings)
    except Exception:  # a study whose space cannot be rebuilt here still gets its report
        return time_stop
    valid = {params_key(c.candidate.knobs.to_dict()) for c in checks if c.valid}
    recorded = recorded_keys(study, backend)
    reachable = valid if recorded is None else valid & recorded
    if not valid or reachable - set(evaluated_trials(study)):
        return time_stop
    if recorded is not None and valid - recorded:
        return (f"every record of the replayed file is evaluated: measure more candidates (--backend launch; the space "
                f"holds {counted(len(valid - recorded), 'valid one')} the file lacks)")
    every = f"every valid candidate of the space ({len(valid)}) was evaluated"
    not_searched = study.user_attrs.get(NOT_SEARCHED_ATTR) or []
    if not not_searched:
        return f"{every}: widen the space"
    # The file listed more than was searched: widening it is not the fix where the probes could not set its power
    # limits or clocks, and on the hardware that refused them only other knobs widen it (trial75 #1, #5). Why they
    # were not searched is the search line's (search_summary), said once.
    from autotune.report.inputs import not_searched_values

    fix = next((e["fix"] for e in not_searched if e["fix"]), None)
    return f"{every}; its file's {not_searched_values(not_searched)} not searched: {fix or 'only more values of its other knobs widen it'}"


def _replay_model(checks: list, recorded: set[str]):
    """The guided sampler a replay run uses: over the recorded candidates only (ReplayBackend.evaluable)."""
    from autotune.backends.replay import recorded_only
    from autotune.study.guided import GuidedSampler

    checks = recorded_only(checks, recorded, "no record")
    return GuidedSampler(checks, usable_values(checks)) if any(c.valid for c in checks) else None


# The `search` block's key for a replay of a file that records some node counts' valid candidates not at all:
# [{"nodes": 2, "valid_candidates": 1012}]. The study's `searchable_nodes` (the counts its sampler was offered)
# leave those out as they leave out counts with no valid candidate, and the report said the latter of both
# (trial59 #1), whose fix differs: measure those candidates, where the other needs other flags.
UNRECORDED_NODES_KEY = "unrecorded_nodes"


def unrecorded_nodes(checks: list, recorded: set[str] | None) -> list[dict]:
    """[{nodes, valid_candidates}] of each node count with valid candidates none of which the replayed file records
    (`recorded`: recorded_keys; None, a file that records them all or another backend: [])."""
    if recorded is None:
        return []
    valid: dict[int, int] = {}
    kept = set()
    for check in checks:
        if check.valid:
            nodes = check.candidate.knobs.nodes
            valid[nodes] = valid.get(nodes, 0) + 1
            if params_key(check.candidate.knobs.to_dict()) in recorded:
                kept.add(nodes)
    return [{"nodes": nodes, "valid_candidates": count} for nodes, count in sorted(valid.items()) if nodes not in kept]


# The `search` block's key for a replay whose study could not use some of its file's records (another --space or
# --nodes): {"records", "of" (the file's records), "why" (by cause, with each fix: replay_fit.not_replayed)}. The
# run's start-up warning alone said so, and the report's front lacked the file's best points without a word (trial64 #6).
NOT_REPLAYED_KEY = "not_replayed"


def not_replayed_sentence(left_out: dict) -> str:
    """"5 of the replayed file's 10 records were not replayed: they hold knob values ...; pass the --space ..."."""
    were = agreeing(left_out["records"], "was", "were")
    return f"{left_out['records']} of the replayed file's {left_out['of']} records {were} not replayed: {left_out['why']}"


def _not_replayed(study, backend: str) -> dict | None:
    measurements = (study.user_attrs.get("backend") or {}).get("measurements") if backend == "replay" else None
    left_out = (measurements or {}).get("not_replayed")
    return {**left_out, "of": measurements["records"]} if left_out else None


def _probed_since(view, converged: dict) -> list[int]:
    """The evaluated trials of the report's read (`view`) proposed after the study converged: a worker with no stop rule
    (--sampler random beside a guided one) goes on to its budget, and its probes were said to be "under way on other
    workers then" (trial66 #13). Empty where the record does not say how many trials were made by then (an older
    autotune's)."""
    made_then = converged.get("trials")
    if not isinstance(made_then, int):
        return []
    return [number for number in view.evaluated if number >= made_then]


def _samplers(study, numbers: list[int]) -> list[str]:
    """The samplers that proposed the trials `numbers` (PROPOSED_BY_ATTR, kept as a trial starts), in order of name;
    those not recorded left out."""
    trials = [t for t in study.get_trials(deepcopy=False) if t.number in set(numbers)]
    return sorted({who["sampler"] for t in trials if isinstance(who := t.user_attrs.get(PROPOSED_BY_ATTR), dict)
                   and isinstance(who.get("sampler"), str)})


def search_summary(study, view, backend: str) -> dict:
    """The `search` block: sampler, early stop, exhaustiveness, and the `predicted` list. An exhaustive search of a
    space the study narrowed says so: "the one valid candidate of the space was probed" read as the whole of what
    its file listed (trial75 #1)."""
    from autotune.report.inputs import not_searched_sentence

    summary = _search_summary(study, view, backend)
    not_searched = study.user_attrs.get(NOT_SEARCHED_ATTR)
    if summary["exhaustive"] and not_searched:
        summary["exhaustive_note"] += f"; {not_searched_sentence(not_searched)}"
    return summary


def _search_summary(study, view, backend: str) -> dict:
    converged = view.converged
    objectives = len(study.directions)
    if converged:
        # The study records the time-and-energy rule whatever its objectives: a time-only study was judged
        # by the best time alone (guided.py), so its rule says that. Probes other workers had under way when
        # it converged finish after it: counted apart, "118 trials" beside "converged after 117 probes"
        # read as a miscount (trial 46). Counted in the report's own read of the study (the view): a later read
        # counted probes that finished after it, "finished since" beside a trial count without them (trial80 #3).
        probed_since = _probed_since(view, converged)
        finished_since = max(len(view.evaluated) - converged.get("probes", 0) - len(probed_since), 0)
        converged = {**{k: v for k, v in converged.items() if k != "trials"}, "rule": stop_rule(objectives),
                     "finished_since": finished_since,
                     "probed_since": len(probed_since), "probed_since_by": _samplers(study, probed_since)}
    summary = {
        "sampler": study.user_attrs.get("sampler", "unknown"),
        "converged": converged,
        "exhaustive": None,
        "exhaustive_note": "",
        "predicted": [],
    }
    if left_out := _not_replayed(study, backend):
        summary[NOT_REPLAYED_KEY] = left_out
    try:
        checks = valid_checks(view.settings)
    except Exception as exc:  # a study whose space cannot be rebuilt here still gets its report
        summary["exhaustive_note"] = f"no model outlook: {exc}"
        return summary
    from autotune.study.guided import GuidedSampler

    # The guided sampler's model, whatever sampler ran: its predictions and outlook serve the lines below
    # and, computed once (it caches them), what a stopped guided study still asks for.
    model = GuidedSampler(checks, usable_values(checks))
    pred = model.predictions
    view_now = model.outlook(study)
    recorded = recorded_keys(study, backend)
    valid_keys = {params_key(c.candidate.knobs.to_dict()) for c in checks if c.valid}
    summary[UNRECORDED_NODES_KEY] = unrecorded_nodes(checks, recorded)
    if converged and recorded is not None and not valid_keys <= recorded:
        # Converged among the recorded candidates: the rule weighed no other, and those it could not probe are
        # predicted below (a partial file's "no unprobed valid candidate" beside "100% chance" contradicted itself).
        summary["converged"] = {**converged, "rule": stop_rule(objectives, RECORDED_CANDIDATE),
                                "recorded": len(valid_keys & recorded), "unrecorded": len(valid_keys - recorded)}
    if summary["sampler"] == "guided" and not converged:
        replayed = _replay_model(checks, recorded) if recorded is not None else None
        summary["unfinished"] = _unfinished(study, model, view, replayed) if recorded is None or replayed else None
        if summary["unfinished"] is not None:
            # A replay's failures are recorded: fixing nothing re-runs them (trial54 F3).
            summary["unfinished"]["replayed"] = backend == "replay"
        evaluated = evaluated_trials(study)
        if replayed is not None and summary["unfinished"] is None and evaluated:
            # The run ended at the end of the recording (every recorded candidate evaluated) before it asked its
            # rule, which holds over every candidate by the model's prediction alone: the others were never measured,
            # so it is said as a stop at the end of the recording, with how much of the space that covered (a replay
            # of a converged study's export said nothing of how its search ended; then, the words of a study that
            # searched its whole space).
            summary["converged"] = {"probes": len(evaluated), "rule": stop_rule(objectives), "at_end_of_recording": True,
                                    "recorded": len(valid_keys & recorded), "unrecorded": len(valid_keys - recorded)}
    elif not converged and study.user_attrs.get(TIME_LIMIT_STOP_ATTR):
        # A sampler with no stop rule (random, tpe, nsga2) the time limit stopped before its --trials budget: without
        # this its report read as a finished study, and nothing said the same command resumes it (trial68 #8).
        summary["unfinished"] = _stop_record(study, view)
    if view.running_probes and not summary.get("unfinished"):
        # Probes under way when the report read the study (a --storage study's workers, or those beside a worker that
        # ended first): its pareto.json said nothing of them, and `compare` took the half-done study for a finished
        # one (trial80 #5). A study its stop rule or time limit stopped says them in its own record, above.
        summary["unfinished"] = _stop_record(study, view)
    if backend == "simulate":
        probed = set(view_now.observations.done)
        summary["exhaustive"], summary["exhaustive_note"] = _exhaustive(
            np.exp(pred.log_values[:, :objectives]), view_now.front, probed, objectives, len(pred), "simulated")
        return summary
    if not summary["converged"] and not summary.get("unfinished"):
        summary["exhaustive"], summary["exhaustive_note"] = _evaluated_all(study, valid_keys, recorded, backend)
    if summary["exhaustive"] is None and not summary["exhaustive_note"]:
        summary["exhaustive"], summary["exhaustive_note"] = _every_record_weighed(study, view, backend, objectives,
                                                                                  len(valid_keys))
        if summary["exhaustive"]:
            return summary  # the records are all a replay evaluates: none left to predict, as on simulate
    chance = np.where(view_now.free, view_now.chance_to_enter, 0.0)
    for i in np.argsort(-chance, kind="stable")[:MAX_PREDICTED]:
        if chance[i] < STOP_CHANCE:
            break
        summary["predicted"].append({
            "params": pred.params[i],
            "time_s": float(view_now.mean[i, 0]),
            "energy_kj": float(view_now.mean[i, 1]) if objectives == 2 else None,
            "chance_to_enter_front": float(chance[i]),
            "source": "predicted",
            **({} if recorded is None else {"recorded": params_key(pred.params[i]) in recorded}),
        })
    return summary


def search_sentences(summary: dict, backend: str | None = None) -> list[str]:
    """Lines for the terminal, Markdown and HTML reports; `backend`: the study's (pareto.json's `backend`), whose
    simulate probes are said to be simulated."""
    lines = []
    converged = summary.get("converged")
    if converged:
        # The short form of the rule the search block keeps (search_summary states it per objectives).
        objectives = 1 if converged.get("rule") in (stop_rule(1), stop_rule(1, RECORDED_CANDIDATE)) else 2
        lines.append(converged_sentence(converged["probes"], objectives, converged.get("recorded", 0),
                                        converged.get("unrecorded", 0), converged.get("finished_since", 0),
                                        simulated=backend == "simulate", probed_since=converged.get("probed_since", 0),
                                        probed_since_by=converged.get("probed_since_by", []),
                                        at_end_of_recording=bool(converged.get("at_end_of_recording"))))
    unfinished = summary.get("unfinished")
    if unfinished and unfinished.get("exhausted"):
        lines.append(_exhausted_sentence(unfinished))
    elif unfinished and unfinished.get("reason") is None and unfinished.get("running_elsewhere") and not unfinished.get("time_limit"):
        # No stop to say: the study is still being probed (search_summary's record of the probes under way).
        running = unfinished["running_elsewhere"]
        lines.append(f"under way: {counted(running, 'probe')} still running on the study's workers "
                     f"{agreeing(running, 'is', 'are')} not in this report (`autotune report` again once "
                     f"{agreeing(running, 'it finishes', 'they finish')})")
    elif unfinished:
        following = _next_words(unfinished)
        running = unfinished.get("running_elsewhere")
        beside = f" ({running} more still probing on other workers)" if running else ""
        if unfinished.get("time_limit") and (not unfinished["probes"] or unfinished.get("succeeded") != 0):
            resume = _TIME_LIMIT_RESUMES[unfinished["time_limit"]]
            if unfinished.get("time_limit_too_short"):
                resume = _TIME_LIMIT_TOO_SHORT[unfinished["time_limit"]]
        elif not unfinished["probes"]:  # none ran (the time limit held the first back): no budget spent, nothing failed
            resume = "The same command resumes the study"
        elif unfinished.get("succeeded") == 0:
            resume = _none_succeeded_sentence(unfinished)
        else:
            resume = f"The same command{'' if unfinished.get('budget_left') else ' with a larger --trials'} resumes the study"
        if unfinished.get("reason") is None:  # a sampler with no stop rule: nothing it would converge on
            lines.append(f"stopped after {counted(unfinished['probes'], 'probe')}{beside}, before the --trials budget. {resume}")
        else:
            lines.append(f"not converged: stopped after {counted(unfinished['probes'], 'probe')}{beside} while "
                         f"{unfinished['reason']}{following}. {resume}")
    if summary.get(NOT_REPLAYED_KEY):
        lines.append(not_replayed_sentence(summary[NOT_REPLAYED_KEY]))
    if summary.get("exhaustive_note"):
        lines.append(summary["exhaustive_note"])
    for p in summary.get("predicted", []):
        energy = f", {energy_text(p['energy_kj'])}" if p["energy_kj"] is not None else ""
        # A replay cannot reach a candidate its file does not record: its chance is the model's, not a resume's.
        where = " (no record: replay cannot probe it; measure it with --backend launch)" if p.get("recorded") is False else ""
        lines.append(
            f"predicted, not probed{where}: {knobs_sentence(p['params'])}: "
            f"{time_text(p['time_s'])}{energy} (predicted), {p['chance_to_enter_front']:.0%} chance to enter the front"
        )
    return lines


# Which limit stopped a study (search.unfinished.time_limit), and what resumes it, as the run's stop line says it.
_TIME_LIMIT_WHICH = {"slurm": "the time limit (the SLURM job's end)", "flag": "the time limit (--time-limit)"}
_TIME_LIMIT_AGAIN = {"slurm": "the same command in a new job", "flag": "the same command"}
# The search line's sentence, and nothing_more_to_evaluate's (read after "; " and before " to compare").
_TIME_LIMIT_RESUMES = {stop: f"Stopped for {which}; {_TIME_LIMIT_AGAIN[stop]} resumes the study"
                       for stop, which in _TIME_LIMIT_WHICH.items()}
# Where a run as long stops in the same place (no probe could start): the run's stop line gives the figures.
_TIME_LIMIT_TOO_SHORT = {
    stop: f"Stopped for {which} before any probe could start; {longer} resumes the study (the run's `stopped:` line "
          "says how long, and any shorter --probe-timeout that fits)"
    for (stop, which), longer in zip(_TIME_LIMIT_WHICH.items(), ("a longer job", "a longer --time-limit"))}
_TIME_LIMIT_FIXES = {stop: f"{which} stopped the study: {_TIME_LIMIT_AGAIN[stop]} resumes it"
                     for stop, which in _TIME_LIMIT_WHICH.items()}
# The same, where the report's `search:` line says how to resume (nothing_more_to_evaluate's resume_said): it reads
# after "; " and before " to compare".
_TIME_LIMIT_NAMED = "resume the study the time limit stopped"
# Where a run as long stops in the same place: "resume" was read as the same command again (trial71 #5).
_TIME_LIMIT_TOO_SHORT_NAMED = "the time limit stopped the study before any probe could start"


# Why a resume probes a trial's candidate before its sampler proposes one (search.unfinished.next_of.why).
_NEXT_OF_WORDS = {"setup": "which failed on the set-up", "interrupted": "which a stopped run left unfinished",
                  "queued": "queued and not yet taken"}


def _next_words(unfinished: dict) -> str:
    """"; next it would probe KNOBS", and where that is a trial a resume takes before its sampler (`next_of`), which."""
    if not unfinished.get("next"):
        return ""
    of = unfinished.get("next_of")
    if not of:
        return f"; next it would probe {knobs_sentence(unfinished['next'])}"
    again = "" if of["why"] == "queued" else " again"
    return (f"; next it would probe{again} the candidate of trial {of['trial']}, {_NEXT_OF_WORDS[of['why']]} "
            f"({knobs_sentence(unfinished['next'])})")


def _none_succeeded_sentence(unfinished: dict) -> str:
    """What a study stopped by its budget, none of whose evaluations succeeded, does next. A replay's failures and
    any out-of-memory are final (trial54 F3: "fix what failed them, then the same command resumes" was said of a
    replayed OOM, where the same command probes nothing); a launched probe's failure may be the set-up's."""
    if unfinished.get("replayed"):
        return ("No replayed candidate succeeded; a recorded failure or out-of-memory is final (replaying it again "
                "changes nothing): a larger --trials replays the other recorded candidates")
    if unfinished.get("failed") == 0:
        return ("Every probe ran out of memory, which is final (no fix makes that candidate fit): a larger --trials "
                "probes others, and `autotune space` shows what fits")
    if unfinished.get("failures_final"):  # as the run's own last line says (study/failures.no_probe_succeeded)
        return (f"No probe succeeded, and the failures are the candidates' own (the trainer ran them) and final: "
                f"{'the same command' if unfinished.get('budget_left') else 'a larger --trials'} probes others (each "
                "trial's reason says why; where a failure is the machine's rather than the candidate's, its log in the "
                "run directory's trials/ folder says so: fix that first)")
    return ("No probe succeeded: fix what failed them (each trial's reason; a launched probe's log is in the run "
            "directory's trials/ folder), then the same command resumes the study")


def _finished_since(finished_since: int, probed_since: int = 0, probed_since_by: list[str] = ()) -> str:
    """What the study evaluated after it converged: probes other workers had under way then, and probes proposed since
    (by a worker whose sampler has no stop rule)."""
    # A trial queued by hand is no sampler's: "--sampler queued" named a flag value that does not exist (trial68 #12).
    samplers = [f"--sampler {name}" for name in probed_since_by if name != QUEUED_BY_HAND]
    by_hand = QUEUED_BY_HAND in probed_since_by
    if by_hand and not samplers:
        since = f"{probed_since} more queued by hand since"
    else:
        by = " and ".join(samplers + (["trials queued by hand"] if by_hand else [])) or "other workers"
        since = f"{probed_since} more probed since by {by}"
    said = ([f"{finished_since} more, under way on other workers then, finished since"] if finished_since else []) + (
        [since] if probed_since else [])
    return f" ({'; '.join(said)})" if said else ""


def _converged_after(probes: int, simulated: bool, finished_since: int = 0, probed_since: int = 0,
                     probed_since_by: list[str] = ()) -> str:
    """"converged after 9 probes"; on the simulate backend "9 simulated probes": nothing ran on hardware, and a
    probe is a short training run elsewhere (trial57 #10)."""
    since = _finished_since(finished_since, probed_since, probed_since_by)
    return f"converged after {counted(probes, ('simulated ' if simulated else '') + 'probe')}{since}"


def _recording_ended(probes: int, recorded: int, unrecorded: int, finished_since: int = 0) -> str:
    """A replay that stopped because every candidate its file records was evaluated, where the file records some of
    the valid candidates only: "converged" there read as a search of the whole space, whose front it was not."""
    return (f"stopped after {counted(probes, 'probe')}{_finished_since(finished_since)}: no recorded candidate is left "
            f"to replay ({recorded} of the {recorded + unrecorded} valid candidates {agreeing(recorded, 'was', 'were')} "
            f"recorded; the other {unrecorded} "
            f"{agreeing(unrecorded, 'was', 'were')} not measured, so the front is the recorded candidates' front only, "
            "not exhaustive)")


def converged_stop_line(probes: int, simulated: bool, recorded: int = 0, unrecorded: int = 0,
                        at_end_of_recording: bool = False) -> str:
    """The run's own line as its study stops early. The rule is said once, in the report's `search:` line
    (converged_sentence): printed twice, 450 characters each, it read as two findings (trial57 #10). The report
    follows this line on every path but a stop while it is written, whose line names the command that writes it.
    `at_end_of_recording`: a replay that ended with its partial recording (_recording_ended)."""
    if at_end_of_recording and unrecorded:
        return (f"{_recording_ended(probes, recorded, unrecorded)}; the report's `search:` line says what the model "
                "predicts of the others")
    among = f" among the {counted(recorded, 'recorded candidate')}" if unrecorded else ""
    return f"{_converged_after(probes, simulated)}{among}; the report's `search:` line says why it stopped"


def converged_sentence(probes: int, objectives: int, recorded: int = 0, unrecorded: int = 0, finished_since: int = 0,
                       simulated: bool = False, at_end_of_recording: bool = False, probed_since: int = 0,
                       probed_since_by: list[str] = ()) -> str:
    """"converged after 9 probes: ...", in the report. A replay of a file that records some of the valid candidates
    converged among those (`recorded`): the `unrecorded` others it could not probe, and "no unprobed valid candidate"
    was false of them. `finished_since`: probes other workers had under way then; `probed_since`: probes proposed after
    it, by the samplers `probed_since_by`. `simulated`: the simulate
    backend's study. `at_end_of_recording`: a replay that ended with its partial recording, the rule met by the
    model's prediction of the others alone (_recording_ended)."""
    if at_end_of_recording and unrecorded:
        return (f"{_recording_ended(probes, recorded, unrecorded, finished_since)}; a prediction, not a measurement: "
                f"{stop_rule_summary(objectives, 'valid candidate the file lacks')}; --backend launch measures them")
    after = _converged_after(probes, simulated, finished_since, probed_since, probed_since_by)
    if not unrecorded:
        return f"{after}: {stop_rule_summary(objectives)}"
    return (f"{after} among the {counted(recorded, 'recorded candidate')}: "
            f"{stop_rule_summary(objectives, RECORDED_CANDIDATE)}; the other {counted(unrecorded, 'valid candidate')}, "
            f"which the replayed file does not record, {agreeing(unrecorded, 'was', 'were')} not measured, so the front is "
            "the recorded candidates' front only: those predicted to matter are listed apart, to measure (--backend launch)")


def _exhausted_sentence(unfinished: dict) -> str:
    left = ("every recorded candidate is evaluated" if not unfinished.get("recorded_left") else
            f"the {counted(unfinished['recorded_left'], 'recorded candidate')} left {agreeing(unfinished['recorded_left'], 'holds', 'hold')} none the stop rule asks for")
    following = (f"; next it would probe {knobs_sentence(unfinished['next'])}, which the replayed file does not record"
                 if unfinished.get("next") else "")
    return (f"not converged: stopped after {counted(unfinished['probes'], 'probe')} while {unfinished['reason']}{following}. The "
            f"recording is exhausted ({left}): a larger --trials replays nothing more; the next candidate needs "
            "measuring (--backend launch)")
