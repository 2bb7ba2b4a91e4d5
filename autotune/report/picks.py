"""The picks a report offers: the parameters they were chosen with, what each saves against the
baseline trial, and a plain sentence when there is no trade-off to choose from.

Every output (terminal, pareto.json, Markdown, HTML) takes its pick rows and labels from here, so
they cannot disagree.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from autotune.counted import counted
from autotune.errors import UserError
from autotune.hardware import HardwareProfile
from autotune.report.device_words import GPU_WORDS, DeviceWords
from autotune.report.front import Point, time_only_fastest
from autotune.report.units import UNAVAILABLE

DEFAULT_MAX_SLOWDOWN = 1.05
DEFAULT_ETA = 0.5

# Export file stems (configs/<stem>.json): the CLI spells picks with hyphens.
PICK_FILES = {
    "fastest": "fastest",
    "min_energy": "min-energy",
    "knee": "knee",
    "max_slowdown": "max-slowdown",
    "cost_weighted": "cost-weighted",
}


def pick_config_files(configs: Path, name: str) -> tuple[str, str | None]:
    """(the file of `configs` that holds the study's pick `name`, the user's edited file kept in its place or None).
    A pass that finds a pick's files edited keeps them and writes the pick beside them as <pick>.new.*, and removes
    those once the pick is written in their place (commands/finish.export_picks): where <pick>.new.json is there,
    <pick>.json is the user's, and no figure of the study is its (trial76 #4: report.html showed an edited ZeRO stage
    under the figures of another)."""
    stem = PICK_FILES.get(name, name)
    if (configs / f"{stem}.new.json").is_file():
        return f"{stem}.new.json", f"{stem}.json"
    return f"{stem}.json", None


@dataclass(frozen=True)
class PickParameters:
    max_slowdown: float = DEFAULT_MAX_SLOWDOWN
    eta: float = DEFAULT_ETA
    max_power_per_gpu_w: float | None = None  # Zeus's P_max per GPU; None leaves out the cost-weighted pick

    def to_dict(self) -> dict:
        return asdict(self)


def check_pick_parameters(max_slowdown: float, eta: float) -> None:
    """User-facing check of --max-slowdown and --eta."""
    if not (math.isfinite(max_slowdown) and max_slowdown >= 1.0):
        raise UserError(f"--max-slowdown must be at least 1 (1.05 allows 5% more time than the fastest), got {max_slowdown}")
    if not (math.isfinite(eta) and 0.0 <= eta <= 1.0):
        raise UserError(f"--eta must be between 0 (time only) and 1 (energy only), got {eta}")


def max_power_per_gpu_w(hardware: HardwareProfile) -> float:
    """Zeus's P_max per GPU, scaled to what our energy to solution counts.

    Zeus measures GPU energy only and uses the GPU's power limit. Our energy counts the GPU, its share
    of the host CPU and memory/interconnect, so P_max is the most those can draw together; where one
    module cap bounds all of them (GH200: `module_scope_energy`), the cap is the most the module draws.
    """
    total_w = hardware.gpu.max_power_w + hardware.cpu.max_power_w + hardware.power.memory_interconnect_w
    return min(total_w, hardware.power.module_cap_w) if hardware.module_scope_energy else total_w


def _slowdown_text(max_slowdown: float) -> str:
    """`5%` for a few percent; a multiple from double on, where `9.99999e+07%` would not read."""
    return f"{max_slowdown:g} x" if max_slowdown >= 2 else f"{100 * (max_slowdown - 1):g}%"


def _meaning(name: str, parameters: PickParameters) -> str:
    if name == "max_slowdown":
        within = _slowdown_text(parameters.max_slowdown)
        return f"least energy within {within} {'the fastest time' if within.endswith('x') else 'of fastest'}"
    if name == "cost_weighted":
        return f"eta {parameters.eta:g}"
    return {"min_energy": "least energy"}.get(name, "")


def pick_label(name: str, parameters: PickParameters) -> str:
    """The pick's `autotune export --pick` name, with what it means where the name does not say it:
    `min-energy (least energy)`, `max-slowdown (least energy within 5% of fastest)`, `knee`."""
    stem = PICK_FILES.get(name, name)
    meaning = _meaning(name, parameters)
    return f"{stem} ({meaning})" if meaning else stem


def pick_definitions(parameters: PickParameters, picks, words: DeviceWords = GPU_WORDS) -> list[str]:
    """What each of `picks` (their pareto.json names) is, one sentence each, and how to choose among them:
    report.md and report.html state them, so a reader who never ran the tool can weigh a pick (trial 49: `knee`
    was defined nowhere, and five picks stood with nothing saying which to deploy). In the study's device
    `words`: a CPU profile's ranks are no GPUs."""
    said = {
        "fastest": "fastest: the least time to solution",
        "min_energy": "min-energy: the least energy to solution",
        "knee": ("knee: the front point farthest below the straight line from the fastest to the least-energy point "
                 "(time and energy each scaled to the front's range): the balanced trade, past which each further "
                 "saving of one costs more of the other"),
        "max_slowdown": (f"max-slowdown: the least energy with a time at most {parameters.max_slowdown:g} x the "
                         "fastest (--max-slowdown)"),
        "cost_weighted": (f"cost-weighted: the least eta x energy + (1 - eta) x max power per GPU x GPUs x time of every "
                          f"feasible trial, eta {parameters.eta:g} (--eta; Zeus's cost, NSDI 2023): 1 weighs energy alone, "
                          "0 GPU time (GPUs x time) alone, which is the fastest only where every candidate has the same "
                          "GPUs; across GPU counts it may lie off the time-energy front, which does not rank GPUs x time"),
    }
    return [re.sub(r"\bGPU\b", words.one, re.sub(r"\bGPUs\b", words.many, said[name])) for name in said if name in picks]


# When to deploy each pick, said after their definitions in this order (choosing.choosing_a_pick merges the picks
# that are one trial); fastest's comes first, and min-energy's "where energy is" reads on from it.
WHEN_TO_DEPLOY = {
    "fastest": "where the allocation's wall-clock time is what costs",
    "min_energy": "where energy is",
    "max_slowdown": "to save energy at a bounded cost in time",
    "cost_weighted": "where both the allocation's time and its energy are paid for (--eta weighs them)",
    "knee": "for a balanced default",
}
# How to choose among five picks that are five trials.
CHOOSING_A_PICK = "Which to deploy: " + "; ".join(f"{PICK_FILES[name]} {when}" for name, when in WHEN_TO_DEPLOY.items()) + "."


def short_pick_label(name: str, parameters: PickParameters) -> str:
    """For chart labels, where several picks share a point and space is short."""
    if name == "max_slowdown":
        return f"within {_slowdown_text(parameters.max_slowdown)}"
    if name == "cost_weighted":
        return f"cost (eta {parameters.eta:g})"
    return PICK_FILES.get(name, name)


def listed(items, conjunction: str = "and") -> str:
    """"a", "a and b", "a, b and c": items as a sentence lists them."""
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def trials_text(trials) -> str:
    """"trial 3", "trials 0 and 2", "trials 0, 2 and 5": trials as a sentence names them (trial59 #3: "tie with
    trial 0, 2")."""
    trials = list(trials)
    return f"trial{'s' if len(trials) > 1 else ''} {listed(trials)}"


def device_hours(point: Point) -> float | None:
    """GPUs x time to solution, in hours: what an allocation bills, where wall-clock time alone hides the GPUs."""
    return None if point.gpus is None or point.time_s is None else point.gpus * point.time_s / 3600


def change_pct(new: float | None, old: float | None) -> float | None:
    if new is None or old is None or old == 0:
        return None
    try:
        pct = 100.0 * (new / old - 1.0)
    except OverflowError:
        return None
    return pct if math.isfinite(pct) else None  # n/a, never inf (JSON has none; trial 58 F4)


def savings(point: Point, base: Point | None) -> dict:
    """Percent changes against the baseline point; None where there is no feasible baseline.
    Energy is a saving (positive = less energy), time and TFLOP/kJ are changes (negative time = faster)."""
    if base is None:
        return {"energy_saved_pct": None, "time_change_pct": None, "tflop_per_kj_change_pct": None}
    energy_change = change_pct(point.energy_kj, base.energy_kj)
    return {
        "energy_saved_pct": None if energy_change is None else 0.0 - energy_change,  # never "-0.0%"
        "time_change_pct": change_pct(point.time_s, base.time_s),
        "tflop_per_kj_change_pct": change_pct(point.tflop_per_kj, base.tflop_per_kj),
    }


# The changes a missing energy leaves unstated (TFLOP/kJ on the fixed work is energy's inverse).
ENERGY_CHANGES = ("energy_saved_pct", "tflop_per_kj_change_pct")


def missing_change(key: str, point: Point, base: Point | None) -> str:
    """What a change of `key` that cannot be stated reads: UNAVAILABLE for an energy change where the point's or
    the baseline's energy is unavailable (a time-only study without a sensor), else n/a (no feasible baseline)."""
    energy_missing = base is not None and (point.energy_kj is None or base.energy_kj is None)
    return UNAVAILABLE if key in ENERGY_CHANGES and energy_missing else "n/a"


def baseline_label(point: Point, base: Point | None) -> str:
    """"its figures simulated" (or "its time simulated, energy estimated") where the baseline's figures come from
    elsewhere than the pick's: a measured pick's "+7.7% energy saved" against a simulated baseline read as a
    measured saving. "" where both are of one kind (the report's top line says which)."""
    if base is None or (base.source, base.energy_source) == (point.source, point.energy_source):
        return ""
    if base.source == base.energy_source:
        return f"its figures {base.source}"
    return f"its time {base.source}, energy {base.energy_source}"


def pick_rows(picks: dict[str, int], points: list[Point], baseline_trial: int | None) -> list[dict]:
    """One row per pick: {name, trial, energy_saved_pct, time_change_pct, tflop_per_kj_change_pct}."""
    by_trial = {p.trial: p for p in points}
    base = by_trial.get(baseline_trial) if baseline_trial is not None else None
    return [{"name": name, "trial": trial, **savings(by_trial[trial], base)} for name, trial in picks.items()]


def commonest_failure(trials: list[dict]) -> tuple[str, int] | None:
    """The reason most failed or timed-out trials give, and on how many; None when none failed."""
    reasons = Counter(row.get("reason") or "no reason recorded" for row in trials if row["status"] in ("failed", "timeout"))
    return reasons.most_common(1)[0] if reasons else None


def time_only_energy_words(energy_source: str) -> str:
    """What a time-only front says of its energy column: shown but not ranked, or that there is none."""
    if energy_source == "unavailable":
        return "energy unavailable: no sensor saw it and nothing estimated it"
    return f"{energy_source} energy shown, not ranked"


def front_title(time_only: bool) -> str:
    """What the front table is called: a time-only study's is its fastest configurations, no trade-off."""
    return "Fastest (ranked by time only: --objectives time)" if time_only else "Pareto front"


def time_only_note(points: list[Point], front: list[Point]) -> str:
    """Why a time-only study (--objectives time) offers one pick, and what its energy figures are."""
    pick = time_only_fastest(front)
    ties = (f"; {len(front)} configurations (trials {', '.join(str(p.trial) for p in front)}) tie at that time, and the "
            "pick is the one of least peak memory (then fewest devices, then lowest trial)" if len(front) > 1 else "")
    lead = (f"This study ranks by time only (--objectives time): the one pick is the fastest of "
            f"{counted(len(points), 'feasible configuration')}, trial {pick.trial}{ties}. ")
    energy_picks = "no energy pick (min-energy, knee, max-slowdown, cost-weighted)"
    missing = sum(p.energy_kj is None for p in points)
    if missing == len(points):
        # Nothing to choose the other picks by: said as a fact of the machine, with the two ways to get energy.
        return (lead + f"Energy is unavailable (no sensor saw it and nothing estimated it), so {energy_picks} can be made "
                "or exported; to have them, probe where a sensor is (`autotune sensors`), or pass "
                "--allow-estimated-energy to rank by estimated energy, in a study with --objectives time,energy in another --out.")
    estimated = " (estimated from the hardware profile where no sensor saw it)" if any(
        p.energy_source == "estimated" for p in points) else ""
    unavailable = f" (unavailable for {missing} of them: no sensor saw it and nothing estimated it)" if missing else ""
    return (lead + f"Energy{estimated} is shown beside each figure{unavailable} but ranks nothing, so {energy_picks} "
            "is made or exported; for those, run a study with --objectives time,energy in another --out.")


def front_note(points: list[Point], front: list[Point], trials_by_status: dict[str, int],
               failure: tuple[str, int] | None = None, time_only: bool = False,
               exhausted: str | None = None) -> str | None:
    """A plain sentence when the front offers no choice; None when it holds a trade-off. `failure`:
    `commonest_failure` of the trials, which says more than "widen the space" when probes failed.
    `time_only`: a study of --objectives time, which never offers a trade-off (`time_only_note`).
    `exhausted`: search.nothing_more_to_evaluate's sentence where a larger --trials evaluates nothing more, said
    in place of "run more --trials" (trial54 F2)."""
    if not points:
        counts = ", ".join(f"{n} {s}" for s, n in trials_by_status.items()) or "no trials"
        fix = (f"see `autotune space` for what fits; {exhausted}." if exhausted else
               "see `autotune space` for what fits, or widen the space and run more --trials.")
        if failure is not None:
            reason, count = failure
            fix = (f"{count} failed with: {reason.strip()[:300]}; report.html lists every trial's reason (and a "
                   "launched probe's log is in the run directory's trials/ folder).")
        return f"No feasible configuration: no trial ran to completion ({counts}). Nothing is recommended; {fix}"
    if time_only:
        return time_only_note(points, front)
    if len(points) == 1:
        return (
            f"Only one feasible configuration (trial {points[0].trial}): every pick is that trial and there is "
            "no trade-off to choose from; " + (f"{exhausted} to compare." if exhausted else
                                               "run more --trials or widen the space to compare.")
        )
    if len({(p.time_s, p.energy_kj) for p in front}) == 1:  # one point, or configurations tied exactly
        why = ""
        if all(p.energy_source == "estimated" for p in points):
            # The estimate is the profile's power model over the probe's time: with no sensor to tell
            # configurations apart by power, the least energy is the fastest almost by construction.
            why = (" Every energy here is estimated from the hardware profile's power model (no sensor saw it), "
                   "which charges nearly the same power to every configuration, so energy orders them as time "
                   "does; probe where a sensor is (`autotune sensors`) to see a trade-off.")
        if len(front) > 1:
            trials = ", ".join(str(p.trial) for p in front)
            return (
                f"{len(front)} configurations (trials {trials}) tie with exactly the same time and energy, both the "
                f"fastest and the least energy of {len(points)} feasible ones: every pick is the lowest trial, "
                f"{front[0].trial}, though any of them does as well.{why}"
            )
        return (
            f"One configuration (trial {front[0].trial}) is both the fastest and the least energy of "
            f"{len(points)} feasible ones: every pick is that trial.{why}"
        )
    two_points = two_point_note(front) if len({(p.time_s, p.energy_kj) for p in front}) == 2 else None
    return " ".join(filter(None, (two_points, exact_ties_note(front)))) or None


def exact_ties_note(front: list[Point]) -> str | None:
    """Front points with exactly the same time and energy, where the front holds others too (the all-tie and the
    time-only cases say theirs in front_note): the picks name the lowest trial of a tie, and the others, perhaps the
    less intrusive setting, do exactly as well (trial54 F6). None where there is no such tie."""
    groups: dict[tuple, list[int]] = {}
    for p in front:
        groups.setdefault((p.time_s, p.energy_kj), []).append(p.trial)
    sentences = []
    for trials in sorted((sorted(set(t)) for t in groups.values() if len(set(t)) > 1), key=lambda t: t[0]):
        others = ", ".join(str(t) for t in trials[1:])
        sentences.append(f"{len(trials)} configurations on the front (trials {', '.join(map(str, trials))}) tie with "
                         f"exactly the same time and energy: a pick among them names the lowest trial, {trials[0]}, though "
                         f"{'trial' if len(trials) == 2 else 'trials'} {others} {'does' if len(trials) == 2 else 'do'} "
                         "as well.")
    return " ".join(sentences) or None


def two_point_note(front: list[Point]) -> str:
    """A front of two points has no knee (both lie on the line the knee is measured from): front.knee takes the lower
    trial, which is no balanced trade, and the report's "knee for a balanced default" must not read as one (trial54 F5)."""
    from autotune.report.front import fastest, knee

    chosen = knee(front)
    which = "the fastest" if chosen.trial == fastest(front).trial else "the least energy"
    trials = " and ".join(str(t) for t in sorted({p.trial for p in front}))
    return (f"The front holds two configurations (trials {trials}): both lie on the line the knee is measured from, so "
            f"there is no knee to choose on; the knee pick is the lower trial, {chosen.trial} ({which}), a tie-break, "
            "not a balanced trade: choose between fastest and min-energy.")


def picks_by_trial(view) -> dict[int, list[str]]:
    """{trial: [pick names]} in pick order: one trial is often several picks at once."""
    grouped: dict[int, list[str]] = {}
    for name, trial in view.picks.items():
        grouped.setdefault(trial, []).append(name)
    return grouped
