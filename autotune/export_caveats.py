"""What an export warns of the trial it writes, in launch.sh's header and on the terminal: what the report warns of
it as a pick (pick_caveats), and, for a `--trial` off the time-energy front, the front trials that beat it (front_leads,
off_front_line), which the config's `autotune` section records too (export.export_trial)."""

from __future__ import annotations

from dataclasses import dataclass

from autotune.counted import agreeing
from autotune.report.front import Point
from autotune.report.picks import PICK_FILES
from autotune.report.study_points import StudyView


def pick_caveats(view: StudyView, document: dict, trial: int, pick: str | None = None) -> list[str]:
    """What the report warns of the exported trial as a pick, a line each, in the report's words: that it lies where
    the simulator's error was not measured (outside_calibration_line), and its ties on its pick line (a lead inside
    an error, a lopsided trade against the nearest other pick: within_noise.ties_text). `document`: the study's
    pareto document (its pick rows); `pick`: the --pick exported (its key), else the trial's first pick row. [] for a
    pick the report warns nothing of: an export carried none of it (a newcomer's trial). A trial that is no pick gets
    the first line alone, of itself: `--trial 0` of a trial outside the calibration said nothing of its unknown error."""
    from autotune.report.outside_calibration import outside_calibration_line
    from autotune.report.within_noise import ties_text

    rows = [row for row in document.get("picks") or [] if row["trial"] == trial and pick in (None, row["name"])][:1]
    if not rows:
        # The pick's line, of a row of its own, and its sources as its front row (off the front it has none there).
        point = view.point(trial)
        sources = {"trial": trial, "source": point.source, "energy_source": point.energy_source}
        outside = outside_calibration_line({**document, "picks": [{"trial": trial, "name": f"trial {trial}"}],
                                            "front": [sources]}, one=f"trial {trial}")
        return [outside] if outside else []
    outside = outside_calibration_line({**document, "picks": rows})
    ties = ties_text(view, rows[0])
    return [line for line in (outside, ties and f"{PICK_FILES[rows[0]['name']]} (trial {trial}): {ties}") if line]


@dataclass(frozen=True)
class FrontLead:
    """A front trial that beats the exported one in both time and energy, with its changes against it, computed once
    for the ranking, the sentence and its weighing (report.picks.change_pct: negative is less; None against a zero
    figure, which has no percent)."""
    point: Point
    time_pct: float | None
    energy_pct: float | None

    def saving_pct(self, metric: str) -> float:
        """How much less of `metric` ("time_s", "energy_kj") it takes, in percent; 0 where there is no percent."""
        return -((self.time_pct if metric == "time_s" else self.energy_pct) or 0.0)


def front_leads(view: StudyView, trial: int) -> list[FrontLead] | None:
    """The front trials that beat `trial` in both time and energy: first the one that beats it by the widest margin in
    both (its lesser saving the largest; ties to the faster), not the fastest, which may save 30% time and 4% energy
    where another saves 9% and 5%; then the others, fastest first. [] on the front, or for a twin of a front trial (same
    figures: beaten in neither); None in a study that ranks by time alone, or for a point without energy. The front is
    the report's (view.front), so a dominated trial is beaten by one on it."""
    import numpy as np

    from autotune.pareto import dominates
    from autotune.report.picks import change_pct

    point = view.point(trial)
    if view.time_only or point.energy_kj is None:
        return None

    def figures(p) -> np.ndarray:  # as the front ranks them (report.front._objectives)
        return np.array([p.time_s, p.energy_kj], dtype=float)

    leads = [FrontLead(p, change_pct(p.time_s, point.time_s), change_pct(p.energy_kj, point.energy_kj))
             for p in view.front if p.energy_kj is not None and dominates(figures(p), figures(point))]
    if not leads:
        return []
    best = max(leads, key=lambda lead: min(lead.saving_pct("time_s"), lead.saving_pct("energy_kj")))
    return [best, *(lead for lead in leads if lead is not best)]


def off_front_line(view: StudyView, trial: int, leads: list[FrontLead] | None = None) -> str | None:
    """Where the exported trial lies off the time-energy front, which front trial beats it in both figures and by how
    much, in one line; None where front_leads has none. `export --trial 3` of a trial that trial 1 beat in both time and
    energy said nothing of it (trial64 #12). `leads`: front_leads(view, trial), where the caller has them."""
    from autotune.report.picks import trials_text
    from autotune.report.units import change_words, energy_text_in, energy_unit, figure, time_unit

    leads = front_leads(view, trial) if leads is None else leads
    if not leads:
        return None
    point, best = view.point(trial), leads[0]
    rest = [lead.point.trial for lead in leads[1:]]
    unit_s, per_s = time_unit([best.point.time_s, point.time_s])
    energy = energy_unit([best.point.energy_kj, point.energy_kj])
    # The others unweighed: some may lead by a rounding alone (trial 65 #13), so "beat it in both" claimed too much.
    also = f"; {trials_text(rest)} of the front {agreeing(len(rest), 'is', 'are')} as good in both, or better, too" if rest else ""
    return (f"trial {trial} is off the time-energy front: trial {best.point.trial} takes "
            f"{change_words(best.time_pct)} time ({figure(best.point.time_s, per_s)} {unit_s} against "
            f"{figure(point.time_s, per_s)} {unit_s}) and {change_words(best.energy_pct)} "
            f"energy ({energy_text_in(best.point.energy_kj, energy)} against {energy_text_in(point.energy_kj, energy)}"
            f"{_estimated(best.point, point)}){_how_sure(point, best)}{also}{_least_cost(view, point, best.point)}; "
            f"--trial {best.point.trial} exports it")


def _least_cost(view: StudyView, point, best) -> str:
    """Why a cost-weighted pick off the front is the pick all the same (report.front.cost_weighted), as its report
    line says it (choosing.off_front_text); "" for any other trial."""
    from autotune.report.choosing import gpu_time_reason
    from autotune.report.device_words import view_device_words
    from autotune.report.near_ties import devices_clause

    if view.picks.get("cost_weighted") != point.trial:
        return ""
    devices = devices_clause(best, point, view_device_words(view)).removeprefix(",")  # " on 64 GPUs against 32 (...)"
    return f"; it is the cost-weighted pick all the same: trial {best.trial} runs{devices}, and {gpu_time_reason(view)}"


def _estimated(*points) -> str:
    """", estimated" after the two energies where both are a power model's (no sensor), as the run's lines mark each
    "(estimated)" (units.estimate_header's rule); where one alone is, whose: trial 67 #4, a CPU study's 13.5 J against
    100 J were quoted as if measured, on the terminal and in launch.sh."""
    from autotune.report.units import estimate_header

    if estimate_header([p.energy_source for p in points]):
        return ", estimated"
    estimated = [p.trial for p in points if p.energy_source == "estimated"]
    return f", trial {estimated[0]}'s estimated" if estimated else ""


def _how_sure(point, best: FrontLead) -> str:
    """What off_front_line's lead is worth: a lead under the search's resolution is no win (the report calls 2,023
    against 2,024 kJ the same energy), and simulated figures carry the simulator's error, which the line does not
    weigh (trial 65 #13: "beats it in both", stated as a fact, for a 0.05% lead of two simulated figures)."""
    from autotune.report.error_bars import is_simulated
    from autotune.report.near_ties import SEARCH_RESOLUTION_PCT
    from autotune.report.within_noise import bound_text, gaps_within_noise

    small = [words for words, metric in (("time", "time_s"), ("energy", "energy_kj"))
             if best.saving_pct(metric) < SEARCH_RESOLUTION_PCT]
    said = (f", the {' and the '.join(small)} under the search's {SEARCH_RESOLUTION_PCT:g}% resolution: as good, if not "
            "better" if small else "")
    # Measured figures, weighed as the report weighs its ties (within_noise): a CPU study's 18% may be noise.
    noisy = gaps_within_noise(point, best.point)
    if noisy:
        both = len(noisy) == 2
        said += (f"; {'both' if both else f'the {next(iter(noisy))}'} within measured noise ("
                 + ", ".join(f"{words} {bound_text(bound_pct)}" for words, bound_pct in noisy.items())
                 + f"): {'a tie, as the run report calls such a pair, not a lead' if both else 'no lead in it'}")
    if any(is_simulated(p, metric) for p in (point, best.point) for metric in ("time_s", "energy_kj")):
        said += "; simulated figures, whose error this line does not weigh: probe both before choosing between them"
    return said
