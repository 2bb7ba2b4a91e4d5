"""How the search ended, and what it may have missed: the `search` and `predicted` blocks of pareto.json.

- `converged`: the guided sampler's early stop fired (after how many probes, by which rule);
- on the simulate backend the model is the truth: every valid candidate is simulated here, and the
  front is `exhaustive` when no unprobed candidate beats the probed front by more than 1%;
- otherwise `predicted`: unprobed candidates the model (simulator x correction learnt from the
  probes) still gives a real chance to enter the front. Their figures are predictions, labelled so,
  never points of the front.
"""

from __future__ import annotations

import numpy as np

from autotune.pareto import front_indices
from autotune.report.table import knobs_sentence
from autotune.report.units import energy_text, time_text
from autotune.study.acquisition import ENTER_MARGIN, enters_front
from autotune.study.loop import CONVERGED_ATTR, evaluated_trials, usable_values, valid_checks
from autotune.study.outlook import Predictions
from autotune.study.stop_rule import STOP_CHANCE, STOP_RULE_SUMMARY

MAX_PREDICTED = 5


def _exhaustive(pred: Predictions, front: np.ndarray, probed: set[int]) -> tuple[bool, str]:
    """Simulated study: is every point of the simulator's own front within 1% of the probed one?"""
    values = np.exp(pred.log_values)
    truth = front_indices(values)
    missed = [i for i in truth if i not in probed and enters_front(values[i][None, None, :], front)[0, 0]]
    if missed:
        return False, f"{len(missed)} point(s) of the simulated front over all {len(pred)} valid candidates were not probed"
    return True, (
        f"exhaustive: all {len(pred)} valid candidates were simulated and none beats this front by more than "
        f"{ENTER_MARGIN - 1:.0%} in time or energy"
    )


def _unfinished(study, model) -> dict | None:
    """A guided study that stopped before its stop rule was met (the --trials budget ran out, or Ctrl-C):
    how many probes it ran, what the rule still asks for, and the candidate it would probe next. None
    when nothing is left to ask for (every valid candidate probed)."""
    reason = model.outstanding(study)
    if reason is None:
        return None
    following = model.next_candidate(study, None)
    return {
        "probes": len(evaluated_trials(study)),
        "reason": reason,
        "next": None if following is None else dict(model.predictions.params[following]),
    }


def search_summary(study, view, backend: str) -> dict:
    """The `search` block: sampler, early stop, exhaustiveness, and the `predicted` list."""
    converged = study.user_attrs.get(CONVERGED_ATTR)
    summary = {
        "sampler": study.user_attrs.get("sampler", "unknown"),
        "converged": converged,
        "exhaustive": None,
        "exhaustive_note": "",
        "predicted": [],
    }
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
    objectives = len(study.directions)
    view_now = model.outlook(study)
    if summary["sampler"] == "guided" and not converged:
        summary["unfinished"] = _unfinished(study, model)
    if backend == "simulate" and objectives == 2:
        probed = set(view_now.observations.done)
        summary["exhaustive"], summary["exhaustive_note"] = _exhaustive(pred, view_now.front, probed)
        return summary
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
        })
    return summary


def search_sentences(summary: dict) -> list[str]:
    """Lines for the terminal and HTML reports."""
    lines = []
    if summary.get("converged"):
        lines.append(f"converged after {summary['converged']['probes']} probes: {STOP_RULE_SUMMARY}")
    unfinished = summary.get("unfinished")
    if unfinished:
        following = f"; next it would probe {knobs_sentence(unfinished['next'])}" if unfinished.get("next") else ""
        lines.append(
            f"not converged: stopped after {unfinished['probes']} probes while {unfinished['reason']}{following}. "
            "The same command with a larger --trials resumes the study"
        )
    if summary.get("exhaustive_note"):
        lines.append(summary["exhaustive_note"])
    for p in summary.get("predicted", []):
        energy = f", {energy_text(p['energy_kj'])}" if p["energy_kj"] is not None else ""
        lines.append(
            f"predicted, not probed: {knobs_sentence(p['params'])}: "
            f"{time_text(p['time_s'])}{energy} (predicted), {p['chance_to_enter_front']:.0%} chance to enter the front"
        )
    return lines
