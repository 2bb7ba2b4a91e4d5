"""Why a difference in figures between compared studies is not (only) the difference the user made: other
jobs, other GPU counts, a simulator against hardware or two simulators, an edited profile, a search that had
not ended. Said, never refused on: a user may mean to compare a simulated study with a measured one (that is
how a simulator is judged); but a change in percent read without them passes their effect off as the
configurations'."""

from __future__ import annotations

from itertools import combinations

from autotune.backends.replay_fit import not_replayed_text, sorted_values, values_text
from autotune.counted import agreeing, counted
from autotune.report.compare_inputs import UNUSED, input_label, numbers_text, value_text
from autotune.report.compare_study import ComparedStudy, point_params
from autotune.report.compare_versions import builtin_of_other_versions, versions_caveat
from autotune.report.error_bars import pct_text
from autotune.report.error_scope import EXTRAPOLATED_KEY, outside_words
from autotune.report.error_unknown import WHY_UNKNOWN
from autotune.report.picks import PICK_FILES

# Inputs that change the job itself (what a time or an energy is the cost of), not how it is run.
_JOB_INPUTS = ("model",)
_ERROR_KEYS = (("time", "time_s_pct"), ("energy", "energy_kj_pct"))


def caveats(studies: list[ComparedStudy], inputs: dict) -> list[str]:
    """Every caveat that holds for these studies, in the order a reader weighs them."""
    differ = inputs["differ"]
    said = [*_job(differ), *_gpu_counts(differ), *_simulated_against_measured(studies), *_two_simulators(studies),
            *_unknown_errors(studies), *_simulator_versions(studies), *_estimated(studies), *_parts_not_measured(differ), *_edited_profiles(studies), *_time_only(studies, differ),
            *_default_limits(studies, differ), *_rules(differ), *_outside_space(studies), *_searches(studies),
            *_no_picks(studies), *_copies(studies)]
    return said


def _sources(study: ComparedStudy) -> set[str]:
    labels = set()
    for key in ("source", "energy_source"):
        value = study.document[key]
        labels.update(value if isinstance(value, list) else [value])
    return labels - {"none", "unavailable"}


def _job(differ: dict) -> list[str]:
    job = [input_label(name) for name in differ if name in _JOB_INPUTS or name.startswith("workload.")]
    if not job:
        return []
    return [f"Not like-for-like: the studies train different jobs (they differ in {', '.join(job)}), so their times and "
            "energies are of different work; a change in % is the jobs' difference as much as the configurations'."]


def _gpu_counts(differ: dict) -> list[str]:
    """Nodes of other GPU counts (--gpus-per-node 2, or a profile of 8 GPUs against one of 4): a node count the
    same in both ("4 nodes") hid that a pick ran on half the GPUs. From the inputs compared already: every study
    records its GPUs per node, and they are not all the same."""
    per_node = differ.get("gpus_per_node")
    if per_node is None:
        return []
    each = "; ".join(f"study {n}: {'/'.join(map(str, v))}" for n, v in enumerate(per_node, 1))
    return [f"Other GPU counts: the studies' nodes hold other numbers of GPUs (GPUs per node, {each}), so their times "
            "and energies are of other GPU counts (`knobs vs 1` names each pick's as `GPUs` before -> after); a change in % is "
            "the GPU count's as much as the configurations'."]


def error_at_picks(study: ComparedStudy) -> str:
    """The simulator's error on a study's simulated picks: the profile's stated error where each pick's
    configuration lies in what it was measured on, `+- ?%` where it does not (pareto.json's
    simulator_error.extrapolated) or where the profile states none: the report's own bars, not the mean alone."""
    document = study.document
    error = document.get("simulator_error") or {}
    stated = ", ".join(f"{what} +- {pct_text(error[key])}%" for what, key in _ERROR_KEYS if key in error)
    if not stated:
        why = error.get(WHY_UNKNOWN)
        return f"+- ?%: the hardware profile was {why}" if why else "+- ?%: the hardware profile was not calibrated"
    simulated = {name: trial for name, trial in document["recommendations"].items()
                 if "simulated" in (study.points[trial].get("source"), study.points[trial].get("energy_source"))}
    outside = error.get(EXTRAPOLATED_KEY) or {}
    unknown = [name for name, trial in simulated.items() if str(trial) in outside]
    if not unknown:
        return stated
    where = outside_words(error, [simulated[name] for name in unknown])
    if len(unknown) == len(simulated):
        return f"+- ?% at every pick, as its report says: the error was not measured at {where}"
    known = [name for name in simulated if name not in unknown]
    return (f"{stated} at {', '.join(PICK_FILES.get(n, n) for n in known)}; +- ?% at "
            f"{', '.join(PICK_FILES.get(n, n) for n in unknown)} (the error was not measured at {where})")


def _errors(studies: list[ComparedStudy], numbers: list[int]) -> str:
    """"study 1: time +- 3.4%, ...; studies 2, 3: +- ?%: ...": each error once, with the studies it holds for."""
    by_words: dict[str, list[int]] = {}
    for n in numbers:
        by_words.setdefault(error_at_picks(studies[n - 1]), []).append(n)
    return "; ".join(f"{numbers_text(ns)}: {words}" for words, ns in by_words.items())


def _simulated_against_measured(studies: list[ComparedStudy]) -> list[str]:
    simulated = [n for n, s in enumerate(studies, 1) if "simulated" in _sources(s)]
    real = [n for n, s in enumerate(studies, 1) if _sources(s) & {"measured", "estimated"}]
    if not (simulated and real and set(simulated) != set(real)):
        return []
    return [f"Simulated against measured: {numbers_text(simulated)} {agreeing(len(simulated), 'has', 'have')} "
            f"simulated figures, {numbers_text(real)} figures from hardware; a difference between them includes the "
            f"simulator's error ({_errors(studies, simulated)})."]


def _profile(study: ComparedStudy) -> tuple:
    return study.document["hardware"], (study.document.get("inputs") or {}).get("hardware_sha256")


def _profiles_differ(one: ComparedStudy, other: ComparedStudy) -> bool:
    """Other names, or the same name with both sha256 recorded and different: an unrecorded sha256 (a study
    older than profile pinning) is not known to differ, and is said under "not compared" instead."""
    (name, sha), (other_name, other_sha) = _profile(one), _profile(other)
    return name != other_name or (None not in (sha, other_sha) and sha != other_sha)


def _simulated(studies: list[ComparedStudy]) -> list[int]:
    return [n for n, s in enumerate(studies, 1) if "simulated" in _sources(s)]


def _two_simulators(studies: list[ComparedStudy]) -> list[str]:
    """Simulated studies on other profiles: each figure is its own profile's model output, and an uncalibrated
    one's error is unknown (`+- ?%`), which a bare "-44.3%" between a gh200 and an h100 study hid. Only the studies
    known to differ are named: one whose profile is not recorded was listed among them (trial73 #2)."""
    differ = sorted({n for pair in combinations(_simulated(studies), 2)
                     if _profiles_differ(*(studies[n - 1] for n in pair)) for n in pair})
    if not differ:
        return []
    return [f"Simulated on different hardware profiles: the simulated figures of {numbers_text(differ)} are each "
            f"profile's model output, so a change between them includes each profile's error ({_errors(studies, differ)})."]


def _unknown_errors(studies: list[ComparedStudy]) -> list[str]:
    """Each study's own line on the picks whose simulated error is unknown (outside_calibration_line: a power-limited
    or clock-capped pick where the profile's error was measured at the untouched GPUs alone), as its report says it:
    compare said nothing of it between two simulated studies on one profile, where "with and without power limits"
    is its first use, and showed their changes as clean as any (trial75 #4)."""
    from autotune.report.outside_calibration import outside_calibration_line

    said = []
    for n, study in enumerate(studies, 1):
        if line := outside_calibration_line(study.document):
            said.append(f"Study {n}, as its report says: {line}")
    return said


def _simulator_versions(studies: list[ComparedStudy]) -> list[str]:
    """Simulated studies of other autotune versions (compare_versions), with the built-in profiles that changed
    between them, which _edited_profiles leaves to this caveat."""
    builtin = [(a, b) for a, b in combinations(range(1, len(studies) + 1), 2)
               if _same_name_other_content(studies[a - 1], studies[b - 1])
               and builtin_of_other_versions(studies[a - 1], studies[b - 1])]
    return versions_caveat(studies, _simulated(studies), builtin)


def _estimated(studies: list[ComparedStudy]) -> list[str]:
    estimated = [n for n, s in enumerate(studies, 1) if "estimated" in _sources(s)]
    if not estimated:
        return []
    return [f"Energy of {numbers_text(estimated)} is estimated from a power model (no energy sensor), not measured: "
            "every change computed from it is an estimate too."]


def _parts_not_measured(differ: dict) -> list[str]:
    # None: no energy measured, nothing left out of it; compare_inputs.NOT_RECORDED: a replayed file that does not say.
    measured = {n: v for n, v in enumerate(differ.get("energy_not_measured", []), 1) if isinstance(v, list)}
    if len({tuple(v) for v in measured.values()}) < 2:
        return []
    parts = "; ".join(f"study {n}: {value_text('energy_not_measured', v)}" for n, v in measured.items())
    return [f"Measured energy covers different parts of the node (left out for want of a sensor: {parts}): "
            "the totals are not of the same parts."]


def _same_name_other_content(one: ComparedStudy, other: ComparedStudy) -> bool:
    """One profile name, both sha256 recorded, and different."""
    (name, sha), (other_name, other_sha) = _profile(one), _profile(other)
    return name == other_name and None not in (sha, other_sha) and sha != other_sha


def _edited_profiles(studies: list[ComparedStudy]) -> list[str]:
    """Judged per pair of studies: a third study on another profile hid the edit between the first two. A built-in
    profile of two autotune versions differs as those versions shipped it: said by _simulator_versions instead."""
    pairs = [(a, b) for (a, sa), (b, sb) in combinations(enumerate(studies, 1), 2)
             if _same_name_other_content(sa, sb) and not builtin_of_other_versions(sa, sb)]
    if not pairs:
        return []
    which = "; ".join(f"{a} and {b}" for a, b in pairs)
    return [f"The hardware profiles of studies {which} share a name but not their content (sha256 differs): one was "
            "edited or calibrated, and simulated figures follow its constants."]


def _time_only(studies: list[ComparedStudy], differ: dict) -> list[str]:
    if "objectives" not in differ:
        return []
    time_only = [n for n, v in enumerate(differ["objectives"], 1) if v == ["time"] and studies[n - 1].document["recommendations"]]
    if not time_only:  # a study with no picks at all is said so below
        return []
    said = [f"{numbers_text(time_only).capitalize()} ranked by time only: "
            f"{agreeing(len(time_only), 'its', 'their')} picks hold the fastest alone."]
    command = _reordered(studies, lambda s: s.document.get("objectives") == ["time"] or not s.document["recommendations"])
    if time_only[0] == 1 and command:  # every other pick's change would read n/a
        said.append(f"The other picks' changes are against study 1, which has only the fastest: put a study ranked by "
                    f"time and energy first (`{command}`).")
    return said


def _default_limits(studies: list[ComparedStudy], differ: dict) -> list[str]:
    """Studies whose power limits are fractions of other defaults (a 600 W and a 1000 W NVML default, or one against a
    profile's 700 W), where some point of theirs is limited: the same "0.6 x default" is another limit in watts in each,
    and was matched as one configuration (trial75 #12)."""
    values = differ.get("default_power_limit")
    limited = any(point_params(point)["power_limit"] != 1.0 for study in studies for point in study.points.values())
    if values is None or not limited:
        return []
    each = "; ".join(f"study {n}: {value_text('default_power_limit', v)}" for n, v in enumerate(values, 1))
    return [f"Other default power limits ({each}): the same fraction (power limit 0.6 x default) is another limit in "
            "watts in each study, though picks and front points are matched on it; each pick's configuration gives its "
            "own watts, and `knobs vs 1` names a change as `power limit W` before -> after."]


def _rules(differ: dict) -> list[str]:
    said = []
    for name in ("max_slowdown", "eta"):
        values = differ.get(name, [])
        if len({v for v in values if v != UNUSED}) < 2:  # a time-only study uses neither: no other rule of its own
            continue
        listed = ", ".join(f"{value_text(name, v)} in study {n}" for n, v in enumerate(values, 1) if v != UNUSED)
        pick = "max-slowdown" if name == "max_slowdown" else "cost-weighted"
        said.append(f"The {pick} pick follows a different rule in each study ({input_label(name)} {listed}).")
    return said


def _outside_space(studies: list[ComparedStudy]) -> list[str]:
    """Study 1's front configurations a later study's space lacks: its picks could not be them, and the pick that
    moved (min-energy from a 0.35 power limit to 0.7) read as a finding where the space was the difference; a replay
    whose space left its file's records of them out says so, with the --space that takes them in (trial64 #6)."""
    said = []
    front = [point_params(point) for point in studies[0].document["front"]]
    for n, study in enumerate(studies[1:], 2):
        # Knob values alone: other node counts are a comparison of scale, matched without the count (compare.py).
        outside = [{knob: value for knob, value in study.outside_space(params).items() if knob != "nodes"}
                   for params in front]
        outside = [values for values in outside if values]
        if not outside:
            continue
        lacked: dict[str, set] = {}
        for values in outside:
            for knob, value in values.items():
                lacked.setdefault(knob, set()).add(value)
        lacked_text = values_text({knob: sorted_values(values) for knob, values in lacked.items()})
        measurements = (study.document.get("inputs") or {}).get("measurements") or {}
        left_out = measurements.get("not_replayed")
        file = (f"; its replayed file holds records it left out ({not_replayed_text(left_out, measurements['records'])})"
                if left_out else "")
        said.append(f"Study {n}'s space lacks {counted(len(outside), 'configuration')} of study 1's front ({lacked_text} "
                    f"not searched there), so its picks could not be {agreeing(len(outside), 'it', 'them')}: a change "
                    f"against study 1 there is the spaces' difference as much as the configurations'{file}.")
    return said


def _searches(studies: list[ComparedStudy]) -> list[str]:
    """A search still under way elsewhere, or stopped before its rule was met, has a front that may still change:
    two seeds or two samplers compared mid-search read as the samplers' difference. A replay that ended among the
    records of a partial file has the recorded candidates' front only (_recording_only)."""
    said = []
    for n, study in enumerate(studies, 1):
        search = study.document.get("search") or {}
        unfinished = search.get("unfinished")
        if unfinished and unfinished.get("running_elsewhere"):
            said.append(f"Study {n} was still running elsewhere when its pareto.json was written "
                        f"({counted(unfinished['running_elsewhere'], 'probe')} under way on other workers): its front and picks "
                        f"are partial; `autotune report {study.run_dir}` again once it ends.")
        elif unfinished:
            why = f" while {unfinished['reason']}" if isinstance(unfinished.get("reason"), str) else ""
            after = f" after {counted(unfinished['probes'], 'probe')}" if isinstance(unfinished.get("probes"), int) else ""
            more = ("its replayed file records no more of what the search asks for, so its front may lack points only "
                    "a measured probe (--backend launch) would find" if unfinished.get("exhausted")
                    else "a resumed run may still change its front and picks")
            said.append(f"Study {n} stopped before its search converged{after}{why}: {more}.")
        elif recording_only := _recording_only(n, search.get("converged")):
            said.append(recording_only)
        elif search.get("exhaustive") is False and isinstance(search.get("exhaustive_note"), str):
            # The note names whose front it is (report/search._exhaustive): the simulator's, or a replayed file's
            # records', measured ones among them; "its whole simulated front" called a measured replay's simulated.
            said.append(f"Study {n}'s search did not probe its whole front ({search['exhaustive_note']}): "
                        "its front may lack them.")
    return said


def _recording_only(n: int, converged) -> str | None:
    """A replay of a file that records part of the space, whose search ended among its records: at the end of the
    recording (`at_end_of_recording`), or with its stop rule met over the recorded candidates alone. Its report says
    its front is the recorded candidates' only; compared without that, it read as a search of the whole space."""
    if not isinstance(converged, dict) or not converged.get("unrecorded"):
        return None
    recorded, unrecorded = converged.get("recorded", 0), converged["unrecorded"]
    after = f" after {counted(converged['probes'], 'probe')}" if isinstance(converged.get("probes"), int) else ""
    how = (f"stopped{after} with no recorded candidate left to replay, before its search converged"
           if converged.get("at_end_of_recording") else
           f"converged among the candidates its replayed file records{',' if after else ''}{after}")
    return (f"Study {n} {how} ({recorded} of the {recorded + unrecorded} valid candidates "
            f"{agreeing(recorded, 'was', 'were')} recorded; the other {unrecorded} {agreeing(unrecorded, 'was', 'were')} "
            "not measured): its front is the recorded candidates' front only, and may lack points only a measured probe "
            "(--backend launch) would find.")


def _no_picks(studies: list[ComparedStudy]) -> list[str]:
    said = []
    for n, study in enumerate(studies, 1):
        note = study.document.get("note")
        if not study.document["recommendations"]:
            why = (note[0].lower() + note[1:] if note[1:2].islower() else note) if note else "its front is empty"
            said.append(f"Study {n} has no picks: {why}")
    command = _reordered(studies, lambda s: not s.document["recommendations"])
    if said and not studies[0].document["recommendations"] and command:  # no change at all can be computed
        said.append(f"Every change is against study 1, which has no picks: put a study with picks first (`{command}`).")
    return said


def _reordered(studies: list[ComparedStudy], lacking) -> str | None:
    """`autotune compare ...` with the studies not `lacking` first, each group in its order; None where all lack."""
    ordered = sorted(studies, key=lacking)
    return None if lacking(ordered[0]) else "autotune compare " + " ".join(str(s.run_dir) for s in ordered)


def _copies(studies: list[ComparedStudy]) -> list[str]:
    first = studies[0].document
    copies = [n for n, s in enumerate(studies[1:], 2) if s.document == first]
    if not copies:
        return []
    return [f"{numbers_text(copies).capitalize()} {agreeing(len(copies), 'holds', 'hold')} the same pareto.json as "
            "study 1 (a copy of one run directory?): every change is 0."]
