"""What tuning cost (the probes' own time and energy) and after how much training a pick repays it.

Cost of one probe, best figure first:
1. `details["probe_cost"] = {"time_s", "energy_kj"}`: the whole probe (start-up, warm-up, window,
   every repeat), written by a backend that knows it. The launch backend's time is its wall clock
   (whole probe) and its energy the measured windows only (`energy_scope: "window"`): a lower bound;
2. the energy block's measured window (`energy_j`, `window_s`): a lower bound, since start-up and
   warm-up are outside the window;
3. a simulated trial ran nothing: 0 s and 0 kJ of hardware;
4. a trial replayed from a measurements file with no `probe_cost`: it ran somewhere, at a cost the file
   does not say;
5. a probe interrupted (Ctrl-C, SIGTERM, or an error of the tuner: the trial's `stopped_by`) before it wrote a cost:
   it ran for a while, and was probed again. One that an error of the tuner stopped before its probe started (its
   trial folder unwritable, trial 69 #8: no `probe_runs.json`, which is written before the launcher starts) ran
   nothing: it is no probe, and the note names it.
   Its repeats' wall times are on record in its trial directory's `probe_runs.json` (`wall_s`, written when
   a repeat ends, an interrupted one's too); those no retry took over (`probe_cost.parts.taken_over` of
   the retry, which counts them itself) are its time, so nothing is counted twice. Where the record is
   missing, or a repeat has no `wall_s` (the tuner was killed), the probe time is a lower bound
   (`time_lower_bound`). No sensor window closed for it: its energy is in no measured figure, only in the
   whole-probe estimate below, at idle power;
6. otherwise unknown (an OOM or a crash before the window opened, with no probe_cost).
A total that leaves out probes of the last three kinds is marked incomplete rather than silently short;
with no probe of known cost at all, the total is unknown (None), never 0. An incomplete total, or one
with window-only energy, is a lower bound (`energy_lower_bound`).

Window-only energy can be a thousandth of what a probe drew (a 2-minute CPU probe with a 0.1 s window),
so where probes have it, the whole probes' energy is estimated (`whole_probe_energy_kj`): each such
probe's window energy plus the hardware profile's idle power of its ranks over the rest of its wall
time (all of it for one that timed out, crashed or ran out of memory before a window closed), and each
interrupted probe's recorded time (kind 5) at the idle power of its candidate's ranks. It is None where a probe's
window ran with no sensor reading it (idle power alone would count that window as 0 J). Start-up, warm-up and a running probe draw more than idle, so this is a floor as well, only a far closer one.

Payback compares a pick with the baseline on the same work. Per sample the pick saves
(E_base - E_pick) / samples; one hour of training with the pick processes samples / T_pick * 3600
samples, so it saves (E_base - E_pick) / T_pick * 3600 kJ per hour. Tuning is repaid after
tuning_energy / that many hours of training with the pick, or equivalently after
tuning_energy / (E_base - E_pick) runs of the study's workload, tuning_energy the whole-probe estimate
where there is one, else the total. No saving: never repaid. Where that energy is a lower bound, so is
the payback: "after at least ...". The saving is labelled with its energies' provenance where they are
not measured (estimated, simulated). A saving within the two energies' noise (report.within_noise) is
marked so: it, and its payback, may not be there. A row's `energy_change_pct` is the pick's energy against the
baseline's, 100 x (E_pick / E_base - 1): negative for a saving (a pick row's `energy_saved_pct` is the same
figure with the other sign, positive for a saving; docs/report.md).
"""

from __future__ import annotations

from pathlib import Path

from autotune.backends.repeat_takeover import read_record, trial_folder
from autotune.counted import agreeing, counted
from autotune.measure.estimate import PowerModel
from autotune.measure.units import j_to_kj
from autotune.report.device_words import GPU_WORDS, DeviceWords, view_device_words
from autotune.report.study_points import StudyView
from autotune.report.units import figure, front_energy_unit, report_energy_text
from autotune.report.within_noise import change_noise_pct, is_within_noise, noise_mark

SECONDS_PER_HOUR = 3600.0
# Probes whose cost no figure tells (kinds 4 to 6 above): counted, left out of the totals.
_NO_COST_FIGURE = ("replayed", "interrupted", "unknown")


def probe_cost(row: dict) -> dict:
    """{"time_s", "energy_kj", "basis", "provenance"} of one evaluated trial (None where unknown)."""
    details = row.get("details") or {}
    cost = details.get("probe_cost")
    block = details.get("energy") or {}
    if isinstance(cost, dict) and cost.get("time_s") is not None:
        # The cost's own label first: a replayed OOM has no energy block, yet its windows' energy was estimated.
        own = cost.get("energy_provenance")
        # A failed probe's result has energy "unavailable": that says nothing of an energy its cost does give
        # (a replayed record's probe_cost without energy_provenance), whose label is then unknown.
        result_label = row.get("energy_source")
        if result_label == "unavailable" and cost.get("energy_kj") is not None:
            result_label = None
        provenance = (own if isinstance(own, str) else None) or block.get("provenance") or result_label or "unknown"
        # Whole-probe time, but energy a sensor saw only in the measured windows.
        basis = "probe_cost_window_energy" if cost.get("energy_scope") == "window" else "probe_cost"
        return {"time_s": float(cost["time_s"]), "energy_kj": cost.get("energy_kj"), "basis": basis, "provenance": provenance,
                "window_s": (cost.get("parts") or {}).get("window_s")}
    if block.get("window_s") is not None:
        energy_j = block.get("energy_j")
        return {
            "time_s": float(block["window_s"]),
            "energy_kj": None if energy_j is None else j_to_kj(energy_j),
            "basis": "energy_window",
            "provenance": block.get("provenance") or "unknown",
        }
    if row.get("source") == "simulated":
        return {"time_s": 0.0, "energy_kj": 0.0, "basis": "simulated", "provenance": "simulated"}
    if details.get("replayed_from"):
        return {"time_s": None, "energy_kj": None, "basis": "replayed", "provenance": "unknown"}
    if row.get("status") == "interrupted":
        return {"time_s": None, "energy_kj": None, "basis": "interrupted", "provenance": "unknown"}
    return {"time_s": None, "energy_kj": None, "basis": "unknown", "provenance": "unknown"}


def _trials_root(view: StudyView) -> Path | None:
    """The run's `trials/` folder, from a stored result's `details["trial_dir"]` (the launch backend's
    trials/NNNN): the study itself does not keep the run directory. None where no result names one."""
    for row in view.trials:
        trial_dir = (row.get("details") or {}).get("trial_dir")
        if isinstance(trial_dir, str) and trial_dir:
            return Path(trial_dir).parent
    return None


def _taken_over(view: StudyView) -> set[tuple[str, int]]:
    """(trial directory name, repeat) of every repeat a retry took over: its cost counts them already."""
    taken = set()
    for row in view.trials:
        parts = ((row.get("details") or {}).get("probe_cost") or {}).get("parts") or {}
        for item in parts.get("taken_over") or []:
            if isinstance(item, dict) and isinstance(item.get("from"), str) and isinstance(item.get("repeat"), int):
                taken.add((Path(item["from"]).parent.name, item["repeat"]))
    return taken


def interrupted_wall_s(view: StudyView, trial: int, root: Path | None = None,
                       taken: set[tuple[str, int]] | None = None) -> tuple[float, bool]:
    """(seconds, complete) an interrupted trial's probe ran that no retry counts: the recorded `wall_s` of
    its own repeats (not those it had itself taken over, nor those a retry took over from it). `complete`
    is False where its record is missing or a repeat that started has no wall time."""
    root = _trials_root(view) if root is None else root
    taken = _taken_over(view) if taken is None else taken
    if root is None:
        return 0.0, False
    folder = trial_folder(root, trial)
    record = read_record(folder)
    if record is None:
        return 0.0, False
    wall_s, complete = 0.0, True
    for repeat, run in record["runs"].items():
        if not isinstance(run, dict) or run.get("taken_over_from"):
            continue  # a copy: paid for where it was measured
        if not isinstance(run.get("wall_s"), (int, float)):
            complete = False  # started, never timed (the tuner was killed during it)
            continue
        if repeat.isdigit() and (folder.name, int(repeat)) in taken:
            continue  # the retry's own cost counts it
        wall_s += float(run["wall_s"])
    return wall_s, complete


def _idle_w(view: StudyView, row: dict) -> float:
    """The hardware profile's idle power of a probe's ranks (its candidate's GPUs, or CPU ranks)."""
    return PowerModel.from_hardware(view.settings.hardware, accelerators=row["gpus"]).node_power_w(0.0)


def whole_probe_energy_kj(view: StudyView, costs: list[dict], ran: list[dict]) -> float | None:
    """The probes' whole energy where sensors saw only their windows (module docstring): None where no
    probe's energy is window-only, where a probe's window ran with no sensor reading it, or where another probe's
    energy is unknown. Interrupted probes' recorded time (`_add_interrupted_time`), and the whole time of a probe
    that failed before any window closed, count at idle power."""
    if not any(c["basis"] == "probe_cost_window_energy" for c in costs):
        return None
    total_kj = 0.0
    for cost, row in zip(costs, ran):
        if cost["basis"] == "interrupted":
            total_kj += j_to_kj(_idle_w(view, row) * (cost["time_s"] or 0.0))  # no window closed: all of it idle
            continue
        if cost["basis"] in _NO_COST_FIGURE:
            continue  # left out, as from the total: the note says so
        if cost["basis"] != "probe_cost_window_energy":
            if cost["energy_kj"] is None:
                return None
            total_kj += cost["energy_kj"]
            continue
        if cost["energy_kj"] is None and cost["provenance"] == "unavailable" and _window_ran(cost, row):
            return None  # its window ran with no sensor reading it: idle power alone would count the window as 0 J
        # No window energy on record (a timeout, crash or OOM before any window closed): all of its time at idle power,
        # as an interrupted probe's. One timeout left the whole study without the estimate, and its payback came from
        # the windows' joules, 50x too soon (trial77 #4).
        idle_s = cost["time_s"] if cost["energy_kj"] is None else max(0.0, cost["time_s"] - (cost.get("window_s") or 0.0))
        total_kj += (cost["energy_kj"] or 0.0) + j_to_kj(_idle_w(view, row) * idle_s)
    return total_kj


def _window_ran(cost: dict, row: dict) -> bool:
    """Whether a window-scoped probe's measured window ran: it gave a result (ok), or a window's seconds are on record
    (an earlier repeat's). A probe that timed out, crashed or ran out of memory with neither never closed one."""
    return row.get("status") == "ok" or cost.get("window_s") is not None


def _whole_probe_note(whole_kj: float | None, view: StudyView, interrupted_s: float = 0.0) -> str:
    if whole_kj is None:
        return ""
    unit = front_energy_unit(view.front)  # the report's, as every energy figure in it
    interrupted = f" and {figure(interrupted_s)} s of interrupted runs at idle power" if interrupted_s else ""
    more = "start-up, warm-up and the interrupted runs draw more" if interrupted_s else "start-up and warm-up draw more"
    return (f" Whole probes estimated at {report_energy_text(whole_kj, unit)} or more: the windows' energy plus the {view.settings.hardware.name} "
            f"profile's idle power of each probe's ranks over the rest of its wall time{interrupted} ({more}); "
            "the payback uses this.")


def below_idle(view: StudyView, costs: list[dict], ran: list[dict]) -> int:
    """How many whole-probe costs (`probe_cost` with no `energy_scope`) hold less energy than half their ranks'
    idle power over their time: no probe draws that little, so their energy is likely of the windows alone (a
    measurements file exported before `energy_scope` existed read "Totals cover every probe" and a payback 3.5x
    too soon)."""
    if view.settings is None:
        return 0
    return sum(1 for c, r in zip(costs, ran) if c["basis"] == "probe_cost" and c["energy_kj"] is not None and c["time_s"]
               and c["energy_kj"] * 1000.0 / c["time_s"] < 0.5 * _idle_w(view, r))


def _tuner_error(rows: list[dict]) -> str:
    """'"the error"' of the one of `rows` (else 'the last, trial N: "the error"'), trials an error of the tuner stopped (their `stopped_by`, its fix
    kept, what follows it cut): the terminal and Markdown reports show no interrupted trial's reason elsewhere."""
    last = max(rows, key=lambda r: r["trial"])
    said = f'"{last["stopped_by"].split("; ")[0]}"'
    return said if len(rows) == 1 else f'the last, trial {last["trial"]}: {said}'


def _interrupted_how(interrupted: int, by_tuner: list[dict]) -> str:
    """How `interrupted` probes were stopped, `by_tuner` (rows) of them by an error of the tuner (a trial's `stopped_by`)
    rather than Ctrl-C or a signal: "interrupted (Ctrl-C, SIGTERM)" said of those was untrue (trial 69 #8)."""
    if not by_tuner:
        return "interrupted (Ctrl-C, SIGTERM)"
    if len(by_tuner) == interrupted:
        return f"stopped by an error of the tuner ({_tuner_error(by_tuner)})"
    return f"interrupted (Ctrl-C, SIGTERM, or for {len(by_tuner)} of them an error of the tuner, {_tuner_error(by_tuner)})"


def _not_started_sentence(rows: list[dict]) -> str:
    """The trials an error of the tuner stopped before their probe started: no probe, nothing spent."""
    n = len(rows)
    which = ", ".join(str(r["trial"]) for r in rows)
    return (f" {agreeing(n, 'Trial', 'Trials')} {which} {agreeing(n, 'was', 'were')} stopped by an error of the tuner "
            f"before {agreeing(n, 'its', 'their')} probe started ({_tuner_error(rows)}): no probe ran, nothing was spent, "
            f"and the study probes {agreeing(n, 'its candidate', 'their candidates')} when it resumes.") if rows else ""


def _cost_note(probes: int, by_basis: dict[str, int], energy_kj: float | None, provenances: list[str],
               words: DeviceWords = GPU_WORDS, interrupted_s: float = 0.0, time_lower_bound: bool = False,
               interrupted_estimated: bool = False, below_idle_probes: int = 0, no_energy_probes: int = 0,
               interrupted_by_tuner: list[dict] = (), stopped_before_probe: list[dict] = ()) -> str:
    """`interrupted_by_tuner`: of the interrupted probes, the rows of those an error of the tuner stopped;
    `stopped_before_probe`: the rows of trials an error of the tuner stopped before their probe started (not among the
    `probes`)."""
    not_started = _not_started_sentence(list(stopped_before_probe))
    if probes == 0:
        return "No probe ran: tuning cost nothing." + not_started
    if by_basis.get("simulated") == probes:
        return (
            f"Simulated study: nothing ran on hardware ({probes} candidates modelled analytically), so tuning "
            f"cost no {words.one} time and no energy, and a pick that saves energy repays it at once; a measured study "
            "would pay for its probes."
        ) + not_started
    parts = []
    if by_basis.get("probe_cost_window_energy"):
        # A probe without a sensor estimates its windows' energy: "measured" would claim a sensor; with no sensor
        # reading and no estimate, "unavailable" (a lower bound of nothing is no figure).
        energy = " or ".join(p for p in provenances if p in ("estimated", "measured"))
        seen = (f"energy {energy} only in the windows (start-up and warm-up not counted): energy is a lower bound" if energy
                else "energy unavailable (no sensor reading and no estimate, in the windows or outside them)")
        parts.append(
            f"{counted(by_basis['probe_cost_window_energy'], 'probe')}: time measured for the whole probe (start-up, warm-up, "
            f"window, every repeat), {seen}"
        )
    if by_basis.get("energy_window"):
        parts.append(
            f"{counted(by_basis['energy_window'], 'probe')} {agreeing(by_basis['energy_window'], 'reports', 'report')} only {agreeing(by_basis['energy_window'], 'its', 'their')} measured window (start-up and warm-up "
            "not counted): the totals are a lower bound"
        )
    if 0 < by_basis.get("simulated", 0) < probes:
        parts.append(f"{counted(by_basis['simulated'], 'trial')} {agreeing(by_basis['simulated'], 'was', 'were')} simulated: {agreeing(by_basis['simulated'], 'it', 'they')} ran nothing on hardware and cost nothing here")
    if by_basis.get("replayed"):
        parts.append(
            f"{counted(by_basis['replayed'], 'probe')} {agreeing(by_basis['replayed'], 'was', 'were')} replayed from a measurements file that records no probe cost "
            "(`probe_cost`): what they cost where they were measured is unknown"
        )
    if by_basis.get("interrupted"):
        # No sensor saw their energy: at most the whole-probe estimate's idle power, never the measured figure.
        energy = (" and, at idle power, in the whole-probe estimate, not in the measured energy" if interrupted_estimated
                  else ", their energy is not")
        recorded = (f": the {figure(interrupted_s)} s their runs recorded (`probe_runs.json`) that no retry took over "
                   f"is in the probe time{energy}") if interrupted_s else ""
        how = _interrupted_how(by_basis["interrupted"], list(interrupted_by_tuner))
        parts.append(f"{counted(by_basis['interrupted'], 'probe')} {agreeing(by_basis['interrupted'], 'was', 'were')} {how} before "
                     f"{agreeing(by_basis['interrupted'], 'it', 'they')} wrote a cost (each probed again when the study resumes){recorded}")
    if time_lower_bound:
        parts.append("some probe time is not on record: the probe time is a lower bound")
    if below_idle_probes:
        parts.append(counted(below_idle_probes, "probe's", "probes'") + " recorded cost (`probe_cost`, which names no `energy_scope`) holds "
                     "less energy than half the hardware profile's idle power of their ranks over its time: likely their "
                     "measured windows' energy alone, so the energy is a lower bound")
    if by_basis.get("unknown"):
        parts.append(f"{counted(by_basis['unknown'], 'probe')} {agreeing(by_basis['unknown'], 'has', 'have')} no cost figure at all (failed before measuring)")
    if energy_kj is None and no_energy_probes:
        # Said of the probes it is true of: "some" read oddly where none of them had an energy (trial60 #2).
        timed = by_basis.get("probe_cost", 0) + by_basis.get("energy_window", 0)
        why = " (no sensor reading and no estimate)" if provenances == ["unavailable"] else ""
        those = "" if timed == probes else f" that {agreeing(timed, 'has', 'have')} a time"
        parts.append(f"energy is unknown for {no_energy_probes} of the {timed} probes that have a time{why}" if no_energy_probes < timed
                     else f"{'the probe' if timed == 1 else f'none of the {timed} probes'}{those} "
                          f"{'has no energy' if timed == 1 else 'has an energy'} on record{why}")
    if not parts:
        return "Totals cover every probe, start-up and warm-up included." + not_started
    note = "; ".join(parts) + "."
    return note[0].upper() + note[1:] + not_started  # a sentence of its own in every output, after the cost line's figures


def unevaluated_baseline(view: StudyView) -> str | None:
    """Where the space holds a baseline the study never evaluated (a replayed file without its record: the
    study searches recorded candidates only), the words that name it; None where the space has none."""
    from autotune.candidate import knobs_sentence

    base = view.space_baseline
    if base is None:
        return None
    return (f"the space's baseline ({knobs_sentence(base.candidate.knobs.to_dict())}) was not evaluated (a replayed "
            "file holds no record of it: measure it to compare with it)")


def no_baseline_in_space(words: DeviceWords = GPU_WORDS) -> str:
    return ("this space holds no baseline (a candidate without offload or sequence parallelism, at the "
            f"{words.many}' own power limit and clock)")


def baseline_missing(view: StudyView) -> str:
    """Why no pick can be measured against the baseline: the space has none, it was not evaluated, or it did
    not run."""
    if view.baseline_trial is None:
        return unevaluated_baseline(view) or no_baseline_in_space(view_device_words(view))
    status = next((r["status"] for r in view.trials if r["trial"] == view.baseline_trial), "not evaluated")
    return f"the baseline (trial {view.baseline_trial}) is not feasible ({status})"


def no_baseline_sentence(view: StudyView) -> str:
    """What heads the picks of a study without a baseline, in place of the baseline's line: why their savings are not
    stated, and what to add to the space for one (trial75 #18: the reports said "baseline (trial None)")."""
    from autotune.space.baseline import baseline_lacks

    lacks = (baseline_lacks(view.settings.space) if view.baseline_trial is None and view.settings is not None
             and not unevaluated_baseline(view) else [])
    listed = ", ".join(lacks[:-1]) + " and " + lacks[-1] if len(lacks) > 1 else "".join(lacks)
    fix = f": list {listed} in the --space file for one" if lacks else ""
    return f"no baseline to measure savings against: {baseline_missing(view)}{fix}"


def _saved_source(point, base) -> str:
    """Where a saving's energies came from, the weakest first: a saving of estimated energy is an estimate."""
    sources = {point.energy_source, base.energy_source}
    return next((s for s in ("estimated", "simulated") if s in sources), "measured")


def payback_row(name: str, trial: int, view: StudyView, tuning_energy_kj: float | None, ran_on_hardware: bool,
                lower_bound: bool = False, tuning_energy_estimated: bool = False) -> dict:
    """One pick's saving against the baseline, per run of the workload and per hour of training with it, and the
    hours until tuning is repaid
    (`lower_bound`: the tuning energy is, and so the payback is, at least that; `tuning_energy_estimated`: that
    energy is the whole-probe estimate, part of it idle power from the profile)."""
    row = {"name": name, "trial": trial, "saved_kj_per_workload": None, "saved_kj_per_training_hour": None, "saved_source": None,
           "tuning_energy_estimated": tuning_energy_estimated,
           "payback_training_hours": None, "payback_workloads": None, "payback_lower_bound": False, "text": "",
           "energy_change_pct": None, "energy_noise_pct": None, "within_noise": False}
    point, base = view.point(trial), view.baseline_point()
    if base is None:
        row["text"] = f"n/a: {baseline_missing(view)}, so there is no saving to measure against"
        return row
    if point.energy_kj is None or base.energy_kj is None:  # a time-only study's, where no sensor saw it
        which = "this pick's" if point.energy_kj is None else f"the baseline's (trial {base.trial})"
        row["text"] = (f"n/a: {which} energy is unavailable (no sensor saw it and nothing estimated it), so there is no "
                       "saving to measure")
        return row
    saved_kj = base.energy_kj - point.energy_kj
    row["saved_source"] = _saved_source(point, base)
    # Per run of the study's workload: what compares picks. Per hour of training with the pick too (what the
    # payback hours count), which grows with the pick's speed: a 256-node pick that saves 6.7% read 11x the saving
    # of a 4-node one that saves 29.9% (trial 46).
    row["saved_kj_per_workload"] = saved_kj
    row["saved_kj_per_training_hour"] = saved_kj / point.time_s * SECONDS_PER_HOUR
    if point is not base and base.energy_kj:
        change_pct = 100.0 * (point.energy_kj / base.energy_kj - 1.0)
        noise_pct = change_noise_pct(point, base, "energy")
        row.update(energy_change_pct=change_pct, energy_noise_pct=noise_pct, within_noise=is_within_noise(change_pct, noise_pct))
    # No saving first: a pick that uses more energy than the baseline repays nothing, however little tuning
    # cost (a simulated study's "repaid at once" beside "uses 1 kWh more" contradicted itself).
    if point is base:
        # Not "never repaid ... needs no tuning": tuning ran, and found the untuned configuration best (trial60 #11).
        row["text"] = "no saving: this pick is the baseline itself"
    elif saved_kj <= 0:
        row["text"] = "never: this pick uses no less energy than the baseline"
    elif not ran_on_hardware:
        row.update(payback_training_hours=0.0, payback_workloads=0.0, text="at once: no probe ran on hardware, so tuning cost no energy")
    elif tuning_energy_kj is None:
        row["text"] = "unknown: the probes' energy is not known"
    else:
        hours = tuning_energy_kj / row["saved_kj_per_training_hour"]
        at_least = "at least " if lower_bound else ""
        # Said on the row itself: a payback read alone (pareto.json, a copied line) must not pass for a measured one.
        estimate = ", from the whole probes' estimated energy" if tuning_energy_estimated else ""
        row.update(payback_training_hours=hours, payback_workloads=tuning_energy_kj / saved_kj, payback_lower_bound=lower_bound,
                   text=f"after {at_least}{figure(hours)} h of training with this pick ({figure(tuning_energy_kj / saved_kj)} runs of "
                        f"the workload{estimate})")
    return row


def _never_started(row: dict, root: Path | None) -> bool:
    """An interrupted trial whose probe_runs.json records no run: no repeat of its probe started. Or one an error of
    the tuner stopped (`stopped_by`) with no readable probe_runs.json: the launch backend writes it with the probe's
    files, before the launcher starts, so the error came first (an unwritable trial folder, trial 69 #8). Ctrl-C
    without a record stays a probe of unknown time: the record may be what is lost."""
    if row["status"] != "interrupted" or root is None:
        return False
    record = read_record(trial_folder(root, row["trial"]))
    return not record["runs"] if record is not None else bool(row.get("stopped_by"))


def _add_interrupted_time(view: StudyView, costs: list[dict], ran: list[dict], root: Path | None) -> None:
    """Give each interrupted probe the recorded wall time of its repeats that no retry counts (module
    docstring, kind 5); its energy stays unknown (no sensor window closed for it): only the whole-probe
    estimate counts its time, at idle power."""
    if not any(c["basis"] == "interrupted" for c in costs):
        return
    taken = _taken_over(view)
    for cost, row in zip(costs, ran):
        if cost["basis"] == "interrupted":
            wall_s, complete = interrupted_wall_s(view, row["trial"], root, taken)
            # Nothing on record: unknown, not 0 s (a total of only such probes is unknown).
            cost.update(time_s=wall_s if wall_s or complete else None, time_complete=complete)


def tuning_cost(view: StudyView) -> dict:
    """The `tuning_cost` block of pareto.json: totals over every probe that ran, and each pick's payback."""
    root = _trials_root(view)
    # Refused before running, or stopped before the probe started (waiting for another worker's probe on its
    # devices): they cost nothing, and were no probe ("Tuning ran 5 probes" of 4, one "probed again").
    ran = [r for r in view.trials if r["status"] != "invalid" and not _never_started(r, root)]
    # Named in the note: "interrupted" alone read as a probe the user stopped (trial 69 #8).
    stopped_before_probe = [r for r in view.trials if r.get("stopped_by") and _never_started(r, root)]
    costs = [probe_cost(r) for r in ran]
    bases = {c["basis"] for c in costs}
    if root is None and "simulated" in bases and bases <= {"simulated", "interrupted"}:
        # A simulated study stopped mid-trial: that trial ran nothing on hardware either (its cost line spoke of
        # interrupted probes and a lower-bound probe time, trial 37 F9).
        costs = [probe_cost({**r, "source": "simulated"}) if c["basis"] == "interrupted" else c for c, r in zip(costs, ran)]
    _add_interrupted_time(view, costs, ran, root)
    by_basis: dict[str, int] = {}
    for c in costs:
        by_basis[c["basis"]] = by_basis.get(c["basis"], 0) + 1
    ran_on_hardware = any(c["basis"] != "simulated" for c in costs)
    # Where some trials ran on hardware, the simulated ones' 0 s and 0 kJ are no figure of what that cost: a
    # replay of one simulated record beside probes of unknown cost read "0 J; simulated", "repaid after 0 h".
    costed = [c for c in costs if c["basis"] not in _NO_COST_FIGURE and not (ran_on_hardware and c["basis"] == "simulated")]
    timed = [(c, r) for c, r in zip(costs, ran)
             if c["time_s"] is not None and not (ran_on_hardware and c["basis"] == "simulated")]
    # A window-scoped probe that never opened its window (OOM, crash) drew energy no sensor saw: the
    # total leaves it out and is a lower bound (the note says so), rather than unknown altogether.
    in_total = [c for c in costed if not (c["basis"] == "probe_cost_window_energy" and c["energy_kj"] is None)]
    energies = [c["energy_kj"] for c in in_total]
    # Probes that ran, none of known cost: the cost is unknown, not zero.
    energy_kj = None if any(e is None for e in energies) or (ran and not energies) else sum(energies)
    time_s = sum(c["time_s"] for c, _ in timed) if timed or not ran else None
    # The label of the energy the total holds: a probe it leaves out adds no joules, nor its "unavailable" (a timed-out
    # probe's made the windows' estimated joules read "mixed: estimated, unavailable", trial77 #4). With none in the
    # total, every probe's: "unavailable" says why there is no figure.
    provenances = sorted({c["provenance"] for c in in_total} or {c["provenance"] for c in costed})
    complete = set(by_basis) <= {"probe_cost", "simulated"}
    # Time is a floor where a probe's time is not (or not all) on record; an unknown total is no floor.
    time_lower_bound = time_s is not None and any(c["time_s"] is None or c.get("time_complete") is False for c in costs if c["basis"] != "simulated") \
        or any(((r.get("details") or {}).get("probe_cost") or {}).get("time_scope") == "lower_bound" for r in ran)
    interrupted_s = sum(c["time_s"] or 0.0 for c in costs if c["basis"] == "interrupted")
    whole_kj = whole_probe_energy_kj(view, costs, ran)
    implausible = below_idle(view, costs, ran)
    document = {
        "ran_on_hardware": ran_on_hardware,
        "probes": len(ran),
        # Probes whose figures, cost included, were replayed from a file: they ran where it was measured, not here.
        "replayed": sum(1 for r in ran if (r.get("details") or {}).get("replayed_from")),
        "probes_by_basis": by_basis,
        "time_s": time_s,
        "time_lower_bound": time_lower_bound,
        "gpu_hours": None if time_s is None else sum(c["time_s"] * r["gpus"] for c, r in timed) / SECONDS_PER_HOUR,
        # What a "GPU" of gpu_hours is: a CPU profile's ranks are processes, not GPUs.
        "gpu_hours_of": view_device_words(view).many,
        "energy_kj": energy_kj,
        "provenance": provenances[0] if len(provenances) == 1 else (provenances or "none"),
        "complete": complete,
        # Probes left out, or energy only of their windows: every figure of the total is a floor.
        "energy_lower_bound": ran_on_hardware and (not complete or implausible > 0),
        "whole_probe_energy_kj": whole_kj,
        "note": _cost_note(len(ran), by_basis, energy_kj, provenances, view_device_words(view), interrupted_s,
                           time_lower_bound, interrupted_estimated=whole_kj is not None, below_idle_probes=implausible,
                           no_energy_probes=sum(1 for c in costed if c["basis"] in ("probe_cost", "energy_window") and c["energy_kj"] is None),
                           interrupted_by_tuner=[r for c, r in zip(costs, ran) if c["basis"] == "interrupted" and r.get("stopped_by")],
                           stopped_before_probe=stopped_before_probe)
                + _whole_probe_note(whole_kj, view, interrupted_s),
    }
    tuning_kj = whole_kj if whole_kj is not None else energy_kj
    document["payback"] = [payback_row(name, trial, view, tuning_kj, ran_on_hardware, document["energy_lower_bound"],
                                       tuning_energy_estimated=whole_kj is not None) for name, trial in view.picks.items()]
    return document


def cost_sentence(cost: dict, unit: tuple[str, float]) -> str:
    """One line for every output: what the probes took, with where the figures come from; its energies in `unit`,
    the report's (units.front_energy_unit)."""
    if not cost["ran_on_hardware"]:
        return cost["note"]
    energy = "unknown energy" if cost["energy_kj"] is None else report_energy_text(cost["energy_kj"], unit)
    provenance = cost["provenance"] if isinstance(cost["provenance"], str) else "mixed: " + ", ".join(cost["provenance"])
    provenance = "provenance unknown" if provenance == "unknown" else provenance  # "14.7 J; unknown." reads as no figure
    if cost["energy_kj"] is None:
        # No figure to label: "unknown energy; unavailable." said it twice (trial60 #2); the note says why.
        energy, provenance = ("energy unavailable" if provenance == "unavailable" else energy), ""
    if cost.get("whole_probe_energy_kj") is not None and cost["energy_kj"] is not None:
        # The figure the payback uses first: the windows' energy alone, 20x less on a CPU study, led the line (trial 49 #14).
        energy = (f"{report_energy_text(cost['whole_probe_energy_kj'], unit)} or more with start-up and warm-up (estimated, below), "
                  f"{energy} of it in the measurement windows ({provenance})")
        provenance = ""
    # A replay ran nothing here: its probes' cost is what they took where the file was measured.
    # The count and its noun agree: "Tuning ran 1 probes" beside "1 probe: ..." in the note (trial77 #3).
    ran = (f"The {counted(cost['probes'], 'replayed probe')} took, where "
           f"{agreeing(cost['probes'], 'it was', 'they were')} measured," if cost.get("replayed") == cost["probes"]
           else f"Tuning ran {counted(cost['probes'], 'probe')}:")
    if cost["time_s"] is None:
        return f"{ran} unknown probe time and {energy}. {cost['note']}"
    at_least = "at least " if cost.get("time_lower_bound") else ""
    return (
        f"{ran} {at_least}{figure(cost['time_s'], SECONDS_PER_HOUR)} h of probe time, "
        f"{at_least}{figure(cost['gpu_hours'])} {'CPU-rank' if cost.get('gpu_hours_of') == 'CPU ranks' else 'GPU'}-hours, {energy}"
        f"{'; ' + provenance if provenance else ''}. {cost['note']}"
    )


def estimated_saving_mark(view: StudyView, point) -> str:
    """` (estimated)` after a pick's saving against the baseline where either energy is an estimate, else ""
    (a measured pick saves an estimate against an estimated baseline)."""
    base = view.baseline_point()
    return " (estimated)" if base is not None and _saved_source(point, base) == "estimated" else ""


def saved_label(row: dict) -> str:
    """` (estimated)` or ` (simulated)` after a payback row's saving where its energies were not measured."""
    return f" ({row['saved_source']})" if row.get("saved_source") not in (None, "measured") else ""


# What the hourly saving is per: the work an hour of the pick's training does, which the baseline does in its own
# time. Not a saving of power per wall-clock hour: the pick may draw more power than the baseline.
HOURLY_BASIS = "this pick's training, against the baseline doing the same work"


def _negligible(row: dict) -> str:
    """`, under 0.1% of its energy` after a saving (or extra) that small a share of the baseline's energy: in the
    report's unit it may read "<0.001 kWh", which must not pass for a figure rounded away."""
    change_pct = row.get("energy_change_pct")
    return ", under 0.1% of its energy" if change_pct is not None and 0 < abs(change_pct) < 0.1 else ""


def payback_sentence(row: dict, unit: tuple[str, float]) -> str:
    """`saves 0.4 kWh per run of the workload against the baseline (1.2 kWh saved per hour of this pick's
    training, against the baseline doing the same work); tuning is repaid after 3 h ...`, its energies in `unit`, the
    report's (units.front_energy_unit): a kJ report read "saves 0.000256 kWh" (trial57 #4)."""
    saved_kj, per_hour_kj = row["saved_kj_per_workload"], row["saved_kj_per_training_hour"]  # both set, or neither
    if saved_kj is None:
        return row["text"]
    label = saved_label(row)
    rate = (
        f"saves {report_energy_text(saved_kj, unit)}{label}" if saved_kj > 0 else f"uses {report_energy_text(-saved_kj, unit)}{label} more"
    ) if saved_kj else "saves nothing"
    # Not "less per hour": in a wall-clock hour a faster pick may draw more power than the baseline; this is the
    # saving on the work that hour of the pick's training does, against the baseline doing that same work.
    noise = noise_mark(row.get("energy_change_pct"), row.get("energy_noise_pct"))
    # The hourly figure is the same saving scaled: its label and noise mark too, after its basis rather than in
    # parentheses of their own, two deep (trial60 #6: "(64,169 J saved per hour ...)" beside "4.03 J (estimated)").
    qualifiers = ", ".join(q for q in (row.get("saved_source") if label else "", noise.strip()[1:-1]) if q)
    hourly = (f" ({report_energy_text(abs(per_hour_kj), unit)} {'saved' if per_hour_kj > 0 else 'extra'} per hour of "
              f"{HOURLY_BASIS}{'; ' + qualifiers if qualifiers else ''})") if per_hour_kj else ""
    when, _, why = row["text"].partition(": ")
    saving = f"{rate} per run of the workload against the baseline{_negligible(row)}{noise}{hourly}"
    if when == "at once":
        # Nothing ran on hardware: the tuning-cost line above says so, and that a saving repays it at once, once for
        # every pick (trial57 #11: "tuning is repaid at once: no probe ran on hardware, ..." on each pick's line).
        return saving
    if when == "no saving":
        return f"{saving}: {why}"  # the baseline against itself: nothing to repay tuning with, nor to say of it
    repaid = {"never": "tuning is never repaid", "unknown": "when tuning is repaid is unknown"}.get(when, f"tuning is repaid {when}")
    # A payback from a saving within noise is no firmer than that saving (trial60 #6).
    unsure = ", if that saving, within noise, is there at all" if noise and row.get("payback_training_hours") else ""
    return f"{saving}; {repaid}" + (f": {why}" if why else "") + unsure


def payback_by_trial(rows: list[dict]) -> list[tuple[list[str], dict]]:
    """Picks that share a trial share a payback: one (pick names, row) per distinct trial, in pick order."""
    grouped: dict[int, tuple[list[str], dict]] = {}
    for row in rows:
        grouped.setdefault(row["trial"], ([], row))[0].append(row["name"])
    return list(grouped.values())
