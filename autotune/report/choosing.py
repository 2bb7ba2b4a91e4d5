"""How to choose among the picks (picks.WHEN_TO_DEPLOY), and where this study's figures undo that advice.

Picks that are one trial are one choice, said once ("fastest and max-slowdown (one configuration, trial 9) where
..."; every pick one trial: "deploy it"), without the words that are false of it: max-slowdown saves no energy
where it is the fastest itself, and a knee at an end of the front is no balanced trade (trial59 #15: five-way
advice where every pick was one trial, and "max-slowdown to save energy" where it was the fastest and used more
energy than the baseline).

"min-energy where energy is what costs" steered a reader to twice the knee's time for 0.2% less energy,
a difference inside the simulator's error (trial57 #2). Where a pick leads another pick by no more than
its figures can tell apart (the simulator's error, measured noise, or, outside the calibrated region, the
error measured inside it: near_ties) and the other is much faster or much cheaper, the advice says so. Much
faster on more GPUs is no better where the GPU-h are not much fewer too (trial59 #2: "knee does about as well with
50% less time" on 8 GPUs against 4, the same GPU-h): the caveat then gives the GPU counts and GPU-h, and no advice.
Where the other is not much better, the advice still leans on the lead, and says it may not be real (trial61:
"fastest where time is what costs; ...; max-slowdown to save energy", on a 0.7% lead in time and a 1.1% one in
energy, both inside the error): two picks each tied with the other by one rule are said once, as neither
difference being real.
"""

from __future__ import annotations

from autotune.report.device_words import view_device_words
from autotune.report.error_bars import pct_text, pick_ties
from autotune.report.near_ties import (LOPSIDED_RATIO, MUCH_PCT, SEARCH_RESOLUTION_PCT, devices_clause, near_ties, pick_names,
                                       pick_stems, size_text)
from autotune.report.picks import PICK_FILES, WHEN_TO_DEPLOY, change_pct, device_hours, listed
from autotune.report.units import change_words
from autotune.report.within_noise import noise_ties, ties_text

_FIGURES = (("time_s", "time", "less time"), ("energy_kj", "energy", "less energy"))
# A pick's word on when to deploy it is false where the same trial is this other pick too.
_UNTRUE_BESIDE = {"max_slowdown": {"fastest"}, "knee": {"fastest", "min_energy"}}
_WITHIN = {"near": "inside the error measured at calibrated configurations", "simulator": "within the simulator's error",
           "noise": "within measured noise", "resolution": f"under the {pct_text(SEARCH_RESOLUTION_PCT)}% the search tells apart"}
_WHY = {**_WITHIN, **{why: f"{_WITHIN[why]}, so it may not be real" for why in ("near", "resolution")}}


def ties_by_rule(view, error: dict | None) -> tuple[dict, dict, dict]:
    """The picks' ties by each rule, as pareto.json's pick rows and "Which to deploy" both say them: within the
    simulator's error (error_bars.pick_ties), within measured noise (within_noise.noise_ties) and, for a pair
    neither ties, a lead inside the error measured at calibrated configurations (near_ties.near_ties)."""
    simulator = pick_ties(view, error)
    noise = noise_ties(view, simulator)
    already = {name: set(simulator.get(name, [])) | {tie["trial"] for tie in noise.get(name, [])} for name in view.picks}
    return simulator, noise, near_ties(view, error, already)


def _tied_picks(view) -> list[tuple[str, int, str]]:
    """(pick, other pick's trial, why) for every tie a pick has with another pick, of any rule."""
    simulator, noise, near = view.pick_ties
    picked = set(view.picks.values())
    pairs = [(name, trial, "simulator") for name, trials in simulator.items() for trial in trials]
    pairs += [(name, tie["trial"], "noise") for name, ties in noise.items() for tie in ties]
    # A near tie's bound: the error measured at calibrated configurations, or the search's resolution (near_ties).
    pairs += [(name, tie["trial"], "near" if tie["bound"] == "calibrated_error" else "resolution")
              for name, tie in near.items() if tie]
    return [(name, trial, why) for name, trial, why in pairs if trial in picked and trial != view.picks[name]]


def _much_more(gain_pct: float, lead_pct: float) -> bool:
    """Whether a gain is worth a caveat beside a lead no one can tell from zero: at least MUCH_PCT, and
    LOPSIDED_RATIO times the lead."""
    return gain_pct >= max(MUCH_PCT, LOPSIDED_RATIO * lead_pct)


def _caveat(view, name: str, other_trial: int, why: str, mutual: bool) -> str | None:
    """"Here min-energy takes 0.2% less energy than knee, ...: where energy is what costs, knee does as well in
    50% less time." where the other pick is much better in the figure the pick does not lead in. Where that figure
    is time and the other runs on other GPUs, the GPU counts and GPU-h follow it, and the advice only where the
    GPU-h are much better too ("...; knee takes 50% less time, on 8 GPUs against 4 (1.0% more GPU-h)"); where the
    other is not much better, no advice ("...; knee takes 3.0% less time."). `mutual`: the other is tied with the
    pick by the same rule, so neither lead may be real (_mutual_caveat)."""
    pick, other = view.point(view.picks[name]), view.point(other_trial)
    # Each figure's change, the pick's against the other (negative: the pick takes less) and the other's against the pick.
    pick_less = {key: change_pct(getattr(pick, key), getattr(other, key)) for key, _, _ in _FIGURES}
    other_less = {key: change_pct(getattr(other, key), getattr(pick, key)) for key, _, _ in _FIGURES}
    if any(v is None for v in (*pick_less.values(), *other_less.values())):
        return None
    (lead_key, lead_word, lead_less), (gain_key, _, gain_less) = sorted(_FIGURES, key=lambda f: pick_less[f[0]])
    lead, gain = -pick_less[lead_key], -other_less[gain_key]
    if lead < 0:
        return None
    if mutual:
        return _mutual_caveat(view, pick, other, why)
    others = pick_stems(pick_names(view, other_trial))
    # Every pick that is this trial (min-energy and cost-weighted often are one): the caveat is then said once.
    head = f"Here {pick_stems(pick_names(view, view.picks[name]))} takes {size_text(lead)} {lead_less} than {others}, {_WHY[why]}"
    devices = devices_clause(other, pick, view_device_words(view)) if gain_key == "time_s" else ""
    hours_change = change_pct(device_hours(other), device_hours(pick))
    if not _much_more(gain, lead) or (devices and (hours_change is None or not _much_more(-hours_change, lead))):
        return f"{head}; {others} takes {size_text(gain)} {gain_less}{devices}."
    return f"{head}: where {lead_word} is what costs, {others} does about as well with {size_text(gain)} {gain_less}{devices}."


def _mutual_caveat(view, a, b, why: str) -> str:
    """"Here fastest takes 0.7% less time than max-slowdown and max-slowdown 1.1% less energy, each inside the error
    ...: neither difference may be real, so nothing here chooses between them.": the same words from either side
    (the faster one first), so the pair is said once."""
    fast, slow = sorted((a, b), key=lambda p: (p.time_s, p.trial))
    fast_names, slow_names = (pick_stems(pick_names(view, p.trial)) for p in (fast, slow))
    time_less, energy_less = -change_pct(fast.time_s, slow.time_s), -change_pct(slow.energy_kj, fast.energy_kj)
    devices = devices_clause(fast, slow, view_device_words(view))
    return (f"Here {fast_names} takes {size_text(time_less)} less time than {slow_names}{devices} and {slow_names} "
            f"{size_text(energy_less)} less energy, each {_WITHIN[why]}: neither difference may be real, so nothing "
            "here chooses between them.")


def _when_to_deploy(view) -> str:
    """"Which to deploy: ..." with a clause per trial the picks name (WHEN_TO_DEPLOY's, of the picks it is that hold
    for it), or, where every pick is one trial, that one."""
    by_trial: dict[int, list[str]] = {}
    for name in WHEN_TO_DEPLOY:
        if name in view.picks:
            by_trial.setdefault(view.picks[name], []).append(name)
    stems = {trial: listed(PICK_FILES[name] for name in names) for trial, names in by_trial.items()}
    # The baseline as a pick saves nothing against what one would run untuned: said, so no word reads as a saving.
    named = {trial: f"trial {trial}{', the baseline' if trial == view.baseline_trial else ''}" for trial in by_trial}
    if len(by_trial) == 1:
        trial = next(iter(by_trial))
        keep = "keep it" if trial == view.baseline_trial else "deploy it"
        return f"Which to deploy: {stems[trial]} are one configuration, {named[trial]}: {keep}."
    clauses = []
    for trial, names in by_trial.items():
        whens = [WHEN_TO_DEPLOY[name] for name in names if not _UNTRUE_BESIDE.get(name, set()) & set(names)]
        # ", or" before the last: the clauses hold commas of their own.
        when = whens[0] if len(whens) == 1 else f"{', '.join(whens[:-1])}, or {whens[-1]}"
        clauses.append(f"{stems[trial]} {when}" if len(names) == 1 else
                       f"{stems[trial]} (one configuration, {named[trial]}) {when}")
    return f"Which to deploy: {'; '.join(clauses)}."


def choosing_a_pick(view) -> str:
    """Which to deploy (_when_to_deploy), and a sentence for each pick it would steer to on a lead that is a tie with
    another pick (_caveat)."""
    ties = _tied_picks(view)
    # Of trials: knee and cost-weighted are often one, and either's tie holds for both.
    tied = {(view.picks[name], trial, why) for name, trial, why in ties}
    caveats = dict.fromkeys(filter(None, (_caveat(view, name, trial, why, (trial, view.picks[name], why) in tied)
                                          for name, trial, why in ties)))
    return " ".join([_when_to_deploy(view), *caveats])


def front_beaters(view, trial: int) -> list[int]:
    """The front trials that beat a pick in both time and energy, the widest lead first (export_caveats.front_leads);
    [] on the front, or in a study of --objectives time. Only the cost-weighted pick can have any: its cost weighs
    GPUs x time, which the front does not rank (front.cost_weighted)."""
    from autotune.export_caveats import front_leads

    return [lead.point.trial for lead in front_leads(view, trial) or []]


def with_front_place(rows: list[dict], view) -> list[dict]:
    """Pick rows with `on_front` (false for a pick that front trials beat in both time and energy; null in a study of
    --objectives time, which ranks no energy) and `beaten_by` (those trials, the widest lead first), as an exported
    config's `autotune` section has them."""
    placed = []
    for row in rows:
        beaters = None if view.time_only else front_beaters(view, row["trial"])
        placed.append({**row, "on_front": None if beaters is None else not beaters, "beaten_by": beaters or []})
    return placed


def off_front_text(view, row: dict) -> str | None:
    """"off the time-energy front: trial 15 takes 38.1% less time and 4.4% less energy, on 64 GPUs against 32 (30.6%
    more GPU-h), and costs more: the cost counts GPUs x time, which the front does not rank" for a pick row off the
    front (with_front_place), else None: a least-cost pick that front trials beat in both figures must say why it is
    the pick all the same (trial72 #9), on its line in every report."""
    if not row.get("beaten_by"):
        return None
    pick, best = view.point(row["trial"]), view.point(row["beaten_by"][0])
    words = view_device_words(view)
    return (f"off the time-energy front: trial {best.trial} takes {change_words(change_pct(best.time_s, pick.time_s))} "
            f"time and {change_words(change_pct(best.energy_kj, pick.energy_kj))} energy"
            f"{devices_clause(best, pick, words)}, and costs more: {gpu_time_reason(view)}")


def gpu_time_reason(view) -> str:
    """Why the least cost may lie off the front, as every line that says it words it."""
    return f"the cost counts {view_device_words(view).many} x time, which the front does not rank"


def pick_notes(view, row: dict) -> str:
    """What a pick's line says after its figures and changes, in every report: that it lies off the front
    (off_front_text), then its ties (within_noise.ties_text)."""
    return "; ".join(filter(None, (off_front_text(view, row), ties_text(view, row))))
