"""pareto.json: the front, every feasible point, the picks and where the figures came from.

Other tools read this file: keep the keys `model`, `nodes`, `gpus`, `hardware`, `backend`, `source`,
`trials`, `front`, `recommendations` stable; add new keys beside them (and new picks inside
`recommendations`: readers must not assume it holds only fastest, min_energy and knee; a study of
--objectives time, `objectives` ["time"], holds fastest alone).
"""

from __future__ import annotations

import json
from pathlib import Path

from autotune.atomic_write import write_text_atomic
from autotune.counted import counted
from autotune.hardware import available_hardware
from autotune.hardware.load import hardware_flag
from autotune.measure.combine import not_measured, parts_text
from autotune.report.error_bars import simulator_error, with_ties
from autotune.report.near_ties import with_near_ties
from autotune.report.noise import change_noise_summary, noise_summary
from autotune.report.importance import importance_method
from autotune.report.payback import tuning_cost
from autotune.report.pick_figures import peak_mem_kind
from autotune.report.power_limit import measured_default_w, recorded_defaults_w
from autotune.report.choosing import with_front_place
from autotune.report.picks import commonest_failure, front_note, pick_rows
from autotune.report.search import UNRECORDED_NODES_KEY
from autotune.report.study_points import StudyView, left_out_sentence, ruled_out_sentence
from autotune.report.unmeasured_floor import unmeasured_floor
from autotune.report.within_noise import RULE as NOISE_RULE, with_noise, with_noise_ties
from autotune.space import node_span
from autotune.space.files import spans_text
from autotune.workload import with_precision


# pareto.json's layout: raised when a key is renamed, removed or changes its meaning (new keys keep it).
PARETO_SCHEMA_VERSION = 1


def point_json(p) -> dict:
    """A front or feasible point, with what its `peak_mem_gib` is (`peak_mem_kind`) beside it: a CPU probe's is
    its process's peak RSS and a simulated one the memory estimate, which the figure alone does not say; and the
    default power limit NVML reported on its probe's devices where it set one (`default_power_limit_w`, W, else
    null), which its limit's watts are of (trial75 #12: compare, which reads this file alone, gave the profile's)."""
    return {**p.to_dict(), "peak_mem_kind": peak_mem_kind(p), "default_power_limit_w": measured_default_w(p)}


def default_power_limit(view: StudyView) -> dict:
    """{"default_power_limit_w": W, "default_power_limit_source": "measured" | "profile"}: what every "x default" of
    the study is in watts of (report.power_limit.limit_default_w): the default its probes recorded, else its
    profile's; W a list of them where the probes recorded several (then no line gives watts), both null where the
    profile has no limit to set (CPU ranks). compare tells two studies' "0.6 x default" apart by it."""
    hardware = view.settings.hardware
    recorded = recorded_defaults_w(view.points)
    if not hardware.cuda:
        return {"default_power_limit_w": None, "default_power_limit_source": None}
    if recorded:
        return {"default_power_limit_w": recorded[0] if len(recorded) == 1 else recorded,
                "default_power_limit_source": "measured"}
    return {"default_power_limit_w": hardware.power.module_cap_w, "default_power_limit_source": "profile"}


def _one_or_list(values: list[int]):
    return values[0] if len(values) == 1 else values


def nodes_text(nodes) -> str:
    """`4`, or `2-8` for a contiguous range, else `2, 4, 8`: how a user wrote --nodes."""
    if isinstance(nodes, int):
        return str(nodes)
    span = node_span(nodes)
    return f"{span[0]}-{span[1]}" if span else ", ".join(map(str, nodes))


def _unrecorded_nodes(document: dict) -> dict[int, int] | None:
    """{node count: its valid candidates} of the counts a replayed file records none of (search.unrecorded_nodes);
    {} where there are none, None where the report does not know (the space could not be rebuilt here)."""
    rows = (document.get("search") or {}).get(UNRECORDED_NODES_KEY)
    return None if rows is None else {row["nodes"]: row["valid_candidates"] for row in rows}


def nodes_header(document: dict) -> str:
    """`2-8 nodes`, and `2-8 nodes (searchable: 2, 4, 8)` where some counts of the study's had no valid candidate
    (`autotune run` warned of each): the range alone would claim a search of them all. On a replay whose file
    records none of some count's valid candidates, `1-2 nodes (recorded: 1)`: searchable they were, but not
    recorded, so not searched (trial59 #1); both where both hold, `2-8 nodes (searchable: 2, 4, 8; recorded: 2, 4)`."""
    nodes, searchable = document["nodes"], document.get("searchable_nodes")
    text = counted(nodes_text(nodes), "node")
    if not searchable:
        return text
    unrecorded = _unrecorded_nodes(document) or {}
    valid = sorted({*searchable, *unrecorded})
    parts = []
    if set(valid) != set([nodes] if isinstance(nodes, int) else nodes):
        parts.append(f"searchable: {nodes_text(_one_or_list(valid))}")
    if set(searchable) != set(valid):
        parts.append(f"recorded: {nodes_text(_one_or_list(searchable))}")
    return f"{text} ({'; '.join(parts)})" if parts else text


def _space_says_why(counts: list[int]) -> str:
    """"`autotune space --nodes 3`", or for several counts "`autotune space --nodes N` (N one of 3, 5-7)"."""
    if len(counts) == 1:
        return f"`autotune space --nodes {counts[0]}`"
    return f"`autotune space --nodes N` (N one of {spans_text(counts)})"


def unsearched_nodes_sentence(document: dict) -> str | None:
    """Which node counts of the study's no trial ran on, why, and what to do: the header's "(searchable: 2, 4, 8)"
    alone left a reader to think 3, 5, 6 and 7 nodes were tried and lost (trial 49 #6; `autotune run` warned of
    each only on stderr). A count with valid candidates that a replayed file records none of is said as that
    (trial59 #1: it read "none of the candidates there is valid", of 1012 valid ones). None where every count
    was searched. The reasons are not worked out again here: `autotune space` does that for a count in a fraction
    of a second."""
    nodes, searchable = document.get("node_counts") or [], document.get("searchable_nodes")
    missing = [n for n in nodes if searchable is not None and n not in searchable]
    if not missing:
        return None
    unrecorded = _unrecorded_nodes(document)
    if unrecorded is None and document.get("backend") == "replay":  # which of the two reasons, this report cannot tell
        return (f"No trial ran on {counted(spans_text(missing), 'node')}: the replayed file records none of the valid "
                f"candidates there, or none is valid; {_space_says_why(missing)} with this study's --model and other "
                "flags lists the valid ones.")
    sentences = []
    if not_recorded := [n for n in missing if n in (unrecorded or {})]:
        valid = sum(unrecorded[n] for n in not_recorded)
        sentences.append(f"No trial ran on {counted(spans_text(not_recorded), 'node')}: the replayed file records none "
                         f"of the {counted(f'{valid:,}', 'valid candidate')} there (measure them with --backend launch).")
    if invalid := [n for n in missing if n not in not_recorded]:
        sentences.append(f"No trial ran on {counted(spans_text(invalid), 'node')}: none of the candidates there is valid "
                         f"(`autotune run` warned of each count); {_space_says_why(invalid)} with this study's --model "
                         "and other flags says why.")
    return " ".join(sentences)


def named_study(document: dict) -> str | None:
    """The study's --study-name where it is not the default: several studies share one --storage database, and
    a report that said only the model and hardware read as any of them (trial 49 #10). None for the default."""
    from autotune.study.storage import STUDY_NAME

    name = document.get("study_name")
    return name if isinstance(name, str) and name != STUDY_NAME else None


def provenance(view: StudyView) -> dict:
    """Where time and energy came from, over every evaluated point."""
    sources = sorted({p.source for p in view.points if p.source})
    energy = sorted({p.energy_source for p in view.points if p.energy_source})
    return {"time": sources, "energy": energy}


def energy_not_measured(view: StudyView) -> list[str] | None:
    """The parts of a node that measured energy leaves out because no sensor saw them ("cpu",
    "memory_interconnect" on a GPU node with NVML alone), over every point with measured energy; [] when
    the sensors covered the node. Said beside "measured", so a GPU-only total never reads as the node's.
    None where no energy was measured (estimated, simulated): [] read as "the sensors saw every part"."""
    measured = [point for point in view.points if point.energy_source == "measured"]
    if not measured:
        return None
    return sorted({part for point in measured for part in not_measured(point.extra.get("details"))})


def not_measured_text(parts: list[str]) -> str:
    """" (without cpu, memory/interconnect: no sensor)", or "" when nothing was left out."""
    return f" (without {parts_text(parts)}: no sensor)" if parts else ""


def hardware_text(document: dict) -> str:
    """`my-cpu (calibrated from cpu)`: a calibrated profile's figures are its calibration's, and the
    reader must be able to tell it from the shipped profile it started from; so must a copy of a shipped
    profile that kept its name (`gh200 (the profile in /home/me/mygh.toml)`)."""
    base, copy = document.get("calibrated_from"), document.get("hardware_file")
    if base:
        return f"{document['hardware']} (calibrated from {base})"
    return f"{document['hardware']} (the profile in {copy})" if copy else str(document["hardware"])


def hardware_file(profile) -> str | None:
    """The file of a profile named as a shipped one but read from elsewhere (a copy of gh200.toml, edited
    or not), else None: its figures are that file's, not the shipped profile's."""
    if profile.calibrated_from or profile.name not in available_hardware() or not profile.source:
        return None
    return None if hardware_flag(profile.source) == profile.name else profile.source


_SOURCE_WORDS = {
    "simulated": "simulated by the analytic model (no hardware was run)",
    "measured": "measured on the hardware (probe runs; energy from its sensors)",
    "estimated": "estimated from a power model (no energy sensor was available)",
    "unavailable": "unavailable (no sensor and no estimate)",
    "none": "not available (no probe succeeded)",
}
# `none` before any trial ran (a report of a study just opened): no probe has failed either.
_NOTHING_EVALUATED = "not available (no trial has been evaluated yet)"
# What the energy of an --objectives time study is where it has none: no objective, so nothing is missing from a ranking.
_NOT_AN_OBJECTIVE = "not an objective of this study (--objectives time)"


def _sources(source) -> list[str]:
    return source if isinstance(source, list) else [source]


def source_label(source) -> str:
    """A short label of pareto.json's `source` or `energy_source`: `measured`, `mixed measured/simulated`, and
    `not available` for ["none"] (no trial has figures), which read "mixed none" (trial 49 #7)."""
    kinds = _sources(source)
    if kinds == ["none"]:
        return "not available"
    return kinds[0] if len(kinds) == 1 else "mixed " + "/".join(kinds)


def provenance_sentence(document: dict) -> str:
    """One line saying where time and energy came from, for the top of every report."""

    def words(source) -> str:
        kinds = _sources(source)
        if kinds == ["none"] and not document.get("trials"):
            return _NOTHING_EVALUATED
        if len(kinds) > 1:  # mixed sources: name each, never hide the mix
            return "mixed: " + "; ".join(_SOURCE_WORDS.get(s, s) for s in kinds)
        return _SOURCE_WORDS.get(kinds[0], kinds[0])  # one kind, or none (["none"]) is not a mix

    time_words = words(document["source"]).replace(" (probe runs; energy from its sensors)", " by probe runs")
    energy = document["energy_source"]
    energy_words = words(energy)
    if document.get("objectives") == ["time"] and set(_sources(energy)) <= {"none", "unavailable"}:
        energy_words = f"{_NOT_AN_OBJECTIVE}, and {energy_words}"
    left_out = not_measured_text(document.get("energy_not_measured") or [])
    return f"Time is {time_words}. Energy is {energy_words}{left_out}."


def unrecorded_count(view: StudyView) -> int:
    """Trials refused as invalid because the replayed file holds no record of them (ReplayBackend.no_record)."""
    return sum(1 for r in view.trials if r["status"] == "invalid" and str(r.get("reason") or "").startswith("no record"))


def trial_counts(document: dict, view: StudyView) -> str:
    """"27 failed (of them 27 with a time but energy unavailable: ...), 3 ok": a probe that ran and measured its
    time but whose energy no sensor saw cannot be ranked, and is counted failed; said so, it does not read as a
    crash (the terminal and Markdown said "27 failed" where only the HTML said why)."""
    without_energy = sum(1 for r in view.trials if r["status"] == "failed" and r.get("time_s") is not None
                         and r.get("energy_kj") is None and r.get("energy_source") == "unavailable")
    unrecorded = unrecorded_count(view)
    words = {"failed": f" (of them {without_energy} with a time but energy unavailable: no sensor saw it and nothing "
                       "estimated it)" if without_energy else "",
             # A replay's sampler (tpe, random) proposing what the file does not record: not a rule's refusal.
             "invalid": f" (of them {unrecorded} with no record in the replayed file)" if unrecorded else ""}
    return ", ".join(f"{n} {s}{words.get(s, '')}" for s, n in document["trials_by_status"].items()) or "none"


def partial_steps_text(workload: dict) -> str:
    """` (time and energy are for 100 / 64 = 1.56 optimizer steps at the steady per-step rate; a job of whole steps
    runs 1 or 2)` where --samples is no whole number of global batches, else "". The simulator and the probes' window
    charge samples / global batch steps, a fraction DeepSpeed never runs (trial72 #7); said, not refused: a study
    is fixed to its workload, and a refusal would lock out a resumed older one."""
    samples, batch = workload.get("samples"), workload.get("global_batch")
    if not isinstance(samples, int) or not isinstance(batch, int) or batch <= 0 or samples % batch == 0:
        return ""
    whole = samples // batch
    return (f" (time and energy are for {samples} / {batch} = {samples / batch:.3g} optimizer steps at the steady "
            f"per-step rate; a job of whole steps runs {whole} or {whole + 1})")


def workload_sentence(workload: dict, model_caveats: str | None = None) -> str:
    """The fixed work every trial is measured on, for the top of every report, and what of the model's file autotune
    models otherwise where it does (every figure holds for the model as modelled)."""
    caveat = f" The figures are of the model as autotune builds it: {model_caveats}" if model_caveats else ""
    return (
        f"Workload held fixed for every trial: {workload.get('samples')} samples, global batch {workload.get('global_batch')}"
        f"{partial_steps_text(workload)}, "
        f"{counted(workload.get('frames'), 'frame')} and {workload.get('text_tokens')} text tokens per sample, "
        f"{workload.get('precision')} precision.{caveat}"
    )


def _with_rule(summary: dict | None) -> dict | None:
    return None if summary is None else {**summary, "rule": NOISE_RULE}


def pareto_document(view: StudyView, backend: str, backend_reason: str, importance: dict | None = None,
                    exhausted: str | None = None) -> dict:
    """`importance` comes from `report.importance.knob_importance` (it needs the study, not just the view), and
    `exhausted` from `report.search.nothing_more_to_evaluate` (the note's advice where --trials evaluates no more)."""
    settings = view.settings
    nodes = list(settings.space.nodes)
    sources = provenance(view)
    error = simulator_error(view)
    trials_by_status = view.trials_by_status()
    ties, noise, near = view.pick_ties
    picks = with_noise_ties(with_ties(pick_rows(view.picks, view.points, view.baseline_trial), ties), noise)
    picks = with_front_place(with_near_ties(picks, view, error, near), view)
    return {
        "schema_version": PARETO_SCHEMA_VERSION,
        "model": settings.model.name,
        "nodes": _one_or_list(nodes),
        # The counts of `nodes` a valid candidate uses, the only ones the search could take (a count whose
        # GPUs cannot divide the global batch has none); null where no trial recorded them.
        "searchable_nodes": ([n for n in nodes if n in view.searchable_nodes]
                             if view.searchable_nodes is not None else None),
        "gpus": _one_or_list([n * settings.gpus_per_node for n in nodes]),
        # `nodes` and `gpus` are a number for one count and a list for a range (as the study was asked);
        # a script reads these two, lists always (trial 48: `.gpus * 2` worked on one study, not the next).
        "node_counts": nodes,
        "gpu_counts": [n * settings.gpus_per_node for n in nodes],
        "hardware": settings.hardware.name,
        # The profile `autotune calibrate` started from when `hardware` is a calibration of it, else None.
        "calibrated_from": settings.hardware.calibrated_from or None,
        "hardware_file": hardware_file(settings.hardware),
        # What a point's power limit fraction is in watts of, and whose that default is (default_power_limit).
        **default_power_limit(view),
        "backend": backend,
        "backend_reason": backend_reason,
        # "simulated" or "measured" for time; energy may be estimated where a probe had no sensor.
        "source": sources["time"][0] if len(sources["time"]) == 1 else (sources["time"] or ["none"]),
        "energy_source": sources["energy"][0] if len(sources["energy"]) == 1 else (sources["energy"] or ["none"]),
        # What measured energy leaves out for want of a sensor (["cpu", "memory_interconnect"]: GPUs only).
        "energy_not_measured": energy_not_measured(view),
        # Where the least-energy pick would not be least with those parts counted at their idle power (an
        # estimate; report.unmeasured_floor), else None.
        "unmeasured_floor": unmeasured_floor(view),
        # As the candidates ran it: the precision resolved from the hardware when the user gave none.
        "workload": with_precision(settings.workload, settings.hardware.cuda).to_dict(),
        # What of a Hugging Face config autotune models otherwise (its tower, a sliding window, ...), else None.
        "model_caveats": view.model_caveats,
        "trials": len(view.trials),
        "trials_by_status": trials_by_status,
        "baseline": view.baseline_trial,
        "front": [point_json(p) for p in view.front],
        "feasible": [point_json(p) for p in view.points],
        # What the front and picks rank by, as --objectives spells it: ["time"] ranks by time alone (the
        # front is the fastest, `recommendations` holds `fastest` only; energy is a figure, not ranked).
        "objectives": ["time"] if view.time_only else ["time", "energy"],
        "recommendations": view.picks,
        "recommendation_parameters": view.pick_parameters.to_dict(),
        # Each pick against the baseline trial; percentages are None when the baseline is not feasible.
        # `noise_pct`: each change's noise (report.within_noise); `within_noise`: the changes no larger than it.
        "picks": with_noise(picks, view.points, view.baseline_trial, error),
        # Simulated figures: the profile's leave-one-out error in percent ({} when not calibrated), else None.
        # A pick's `tied_with` lists the trials it cannot be told apart from within that error (any feasible one
        # for fastest, min_energy and cost_weighted, one within its time bound for max_slowdown, a front one for knee:
        # error_bars.compared_points);
        # its `within_simulator_error`, the changes against the baseline no larger than it (`simulator_error_pct`).
        # Its `tied_within_noise`, those within measured noise (same rule as `within_noise`; `tie_noise_cv`: the CVs).
        # Its `on_front`/`beaten_by`: false, and the front trials that beat it in both figures, for a cost_weighted
        # pick off the front (its cost weighs GPUs x time, which the front does not rank; null: time-only).
        # Its `outside_calibration`: what of its configuration that error was not measured on ([] inside it); its
        # `near_tie`: the other pick it leads by less than the error measured at calibrated configurations where
        # either side's error is unknown, or than the search's 1% resolution (`bound`; or null; report.near_ties), and `nearest_pick_trade`: its changes against
        # the nearest other pick where one is LOPSIDED_RATIO times the other (or null).
        "simulator_error": error,
        # A plain sentence when there is no trade-off (no feasible point, one, or one beating all); else None.
        "note": " ".join(filter(None, (left_out_sentence(view.left_out), ruled_out_sentence(view.ruled_out_now), front_note(
            view.points, view.front, trials_by_status, commonest_failure(view.trials), view.time_only,
            exhausted)))) or None,
        # Per objective, {knob: share of its variation explained} (largest first), or why there is none.
        "importance": importance if importance is not None else "not computed",
        "importance_method": importance_method(len(view.points)),
        # The probes' own time and energy, and after how many training hours each pick repays them.
        "tuning_cost": tuning_cost(view),
        # Spread over repeated probes (--repeats): a saving smaller than this is noise.
        "noise": noise_summary(view),
        # The noise figure the changes above were judged against: its basis ("repeats", "step_times", both,
        # or "unknown"), CV median and worst, and the rule; None for a simulated study (no noise).
        "change_noise": _with_rule(change_noise_summary(view)),
    }


# Why a pareto.json this user may not read cannot be: its content may be whole, so it is not "damaged", and a report
# that rewrites it keeps its mode, so "run `autotune report`" was no fix (trial69 #3).
UNREADABLE = "unreadable (permission denied)"


def unreadable_fix(path: Path) -> str:
    return f"make it readable for you (chmod u+r {path})"


def read_pareto_json(path: Path) -> tuple[object, str | None]:
    """The JSON value a pareto.json holds, and None; or None and why it cannot be read: "missing", UNREADABLE,
    "damaged (JSONDecodeError: ...)". Whether the value is a report's document is the reader's to judge."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        return None, "missing"
    except PermissionError:
        return None, UNREADABLE
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        return None, f"damaged ({type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else 'unreadable'})"


# Keys every pareto.json autotune wrote holds (the stable ones of the module's docstring): JSON without them in a
# folder without a study.db is another tool's file, not a damaged report.
_REPORT_KEYS = ("model", "front", "recommendations")


def is_report_document(value: object) -> bool:
    """Whether a pareto.json's JSON value is a report autotune wrote (of any schema version)."""
    return isinstance(value, dict) and all(key in value for key in _REPORT_KEYS)


def write_pareto_json(path: Path, document: dict) -> None:
    write_text_atomic(path, json.dumps(document, indent=2) + "\n")  # never half a file for other tools to read
