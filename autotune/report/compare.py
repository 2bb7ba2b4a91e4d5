"""`autotune compare`: two or more studies side by side, from their pareto.json files.

A pick names a trial, and trial 3 of one study is not trial 3 of another: picks are compared by what
they are (their configuration and figures), and front points are matched across studies by their knobs.
Each change is against the first study given (the reference: "before"), in percent of its figure.

The document `--json` prints (studies numbered from 1, in the order given; every list of per-study
values in that order):

    studies        [{study, run_dir, model, hardware, node_counts, backend, source, energy_source}]
    inputs         {differ: {input: [value per study]}, same: {input: value}, not_recorded: {input: [study]}}
    caveats        [sentence]: why a difference is not like-for-like (other jobs, simulated vs measured, ...)
    picks          [{pick, studies: [null (no such pick) | pick entry]}]; a pick entry: {trial, params,
                   configuration, time_s, energy_kj, time_source, energy_source, error_unknown (the simulated
                   figures, "time_s" and "energy_kj", whose error its report gives as +- ?%), time_change_pct,
                   energy_change_pct, knobs_changed ({knob: [study 1's, this study's]}, `gpus` and `power_limit_w`
                   too where they differ; null for study 1)}
    shared_front   {configurations: [{params, configuration, matched_to, matched_on, matched_without_nodes,
                   studies: [[point entry]], why_absent}]}: the configurations on more than one study's front, each
                   a point of study `matched_to`'s front and the points of the others that match it: on `matched_on`,
                   every knob, but the node count for the studies in `matched_without_nodes`, which share no node
                   count with it (and for all, where none does; `params` then lacks `nodes`); a point entry:
                   {trial, nodes, time_s, energy_kj, time_source, energy_source, error_unknown, time_change_pct,
                   energy_change_pct}; `why_absent`: [null | why a study's front lacks it: evaluated off its front,
                   not in its space, not valid there, not evaluated (or not valid there)]
"""

from __future__ import annotations

from autotune.candidate import KNOBS, UNTOUCHED_DEVICE_SETTINGS, knobs_sentence
from autotune.report.compare_caveats import caveats
from autotune.report.compare_inputs import compare_inputs
from autotune.report.compare_study import ComparedStudy, point_params as _params
from autotune.report.picks import PICK_FILES, change_pct  # a change in percent of the reference, None without one

PICK_ORDER = tuple(PICK_FILES)  # fastest, min_energy, knee, max_slowdown, cost_weighted: the reports' order


def _figures(study: ComparedStudy, point: dict, reference: dict | None) -> dict:
    return {
        "trial": point["trial"],
        "time_s": point["time_s"],
        "energy_kj": point.get("energy_kj"),
        # pareto.json's `source` labels the time (measured unless simulated); `energy_source` the energy.
        "time_source": point.get("source") or "unknown",
        "energy_source": point.get("energy_source") or "unknown",
        "error_unknown": error_unknown(study, point),
        "time_change_pct": None if reference is None else change_pct(point["time_s"], reference["time_s"]),
        "energy_change_pct": None if reference is None else change_pct(point.get("energy_kj"), reference.get("energy_kj")),
    }


def error_unknown(study: ComparedStudy, point: dict) -> list[str]:
    """The simulated figures of a point ("time_s", "energy_kj") whose error is unknown, which its study's report marks
    "+- ?%" (error_bars.point_bar: a configuration the profile's error was not measured on, or a profile that states
    none). compare showed a power-limited pick's "23.0% less" energy clean, where its report said to probe it before
    deploying (trial75 #4)."""
    from types import SimpleNamespace

    from autotune.report.error_bars import point_bar

    error = study.document.get("simulator_error")
    as_point = SimpleNamespace(trial=point["trial"], source=point.get("source"), energy_source=point.get("energy_source"))
    return [metric for metric in ("time_s", "energy_kj") if point_bar(error, as_point, metric) == " +- ?%"]


def knobs_changed(params: dict, reference: dict, gpus: int | None = None, reference_gpus: int | None = None,
                  limit_w: float | None = None, reference_limit_w: float | None = None) -> dict:
    """{knob: [reference's value, this one's]} for each knob that differs: what a pick changed between studies; and
    `gpus` where the GPU count differs (--gpus-per-node 2, or a profile of 8 GPUs a node against 4: "4 nodes"
    in both hid that a pick ran on half the GPUs); and `power_limit_w` where the same limit set in both is other watts
    (ComparedStudy.limit_w): "0.6 x default" of a 600 W and of a 1000 W default read as the same pick (trial75 #12)."""
    changed = {knob: [reference.get(knob), params.get(knob)] for knob in KNOBS if params.get(knob) != reference.get(knob)}
    if gpus is not None and reference_gpus is not None and gpus != reference_gpus:
        changed["gpus"] = [reference_gpus, gpus]
    same_limit = params.get("power_limit") == reference.get("power_limit") != UNTOUCHED_DEVICE_SETTINGS["power_limit"]
    if same_limit and None not in (limit_w, reference_limit_w) and round(limit_w) != round(reference_limit_w):
        changed["power_limit_w"] = [round(reference_limit_w), round(limit_w)]  # whole watts, as every report says them
    return changed


def compare_picks(studies: list[ComparedStudy]) -> list[dict]:
    """Each pick some study offers, with every study's configuration and figures, against study 1's same pick."""
    names = [n for n in PICK_ORDER if any(n in s.document["recommendations"] for s in studies)]
    names += sorted({n for s in studies for n in s.document["recommendations"]} - set(names))  # a pick added later
    rows = []
    for name in names:
        points = [s.points[s.document["recommendations"][name]] if name in s.document["recommendations"] else None
                  for s in studies]
        reference = points[0]
        reference_w = studies[0].limit_w(reference) if reference else None
        entries = []
        for number, point in enumerate(points, 1):
            if point is None:
                entries.append(None)
                continue
            params = _params(point)
            entries.append({
                **_figures(studies[number - 1], point, reference if number > 1 else None),
                "params": params,
                # Its watts of the default its probe read, as its own report's pick line gives them.
                "configuration": knobs_sentence(params, studies[number - 1].hardware, point.get("default_power_limit_w")),
                "knobs_changed": (knobs_changed(params, _params(reference), point.get("gpus"), reference.get("gpus"),
                                                studies[number - 1].limit_w(point), reference_w)
                                  if number > 1 and reference else None),
            })
        rows.append({"pick": name, "studies": entries})
    return rows


def shared_front(studies: list[ComparedStudy]) -> dict:
    """The configurations on the front of more than one study, with each study's figures; changes against
    study 1's point. Each row is one front point (study 1's first, then the points of later studies not in a row
    yet) and the points of the other studies that match it: on every knob, and on the node count too where the
    two studies share one. A study that shares none (8 against 4 nodes) is matched at its own scale, per pair:
    with studies of 4, 4 and 8 nodes the two 4-node studies still match on their count, which matching on the
    knobs common to all three lost. Those on most fronts first, then by the time of the first study that has them."""
    fronts = [[(point, _params(point)) for point in study.document["front"]] for study in studies]
    placed: set[tuple[int, int]] = set()  # (study index, trial) of the points in a row already
    configurations = []
    for first, front in enumerate(fronts):
        for anchor, anchor_params in front:
            if (first, anchor["trial"]) not in placed:
                by_study = _matching(studies, fronts, first, anchor_params)
                by_study[first] = [anchor]
                if sum(1 for points in by_study if points) >= 2:
                    placed.update((n, p["trial"]) for n, points in enumerate(by_study) for p in points)
                    configurations.append(_row(studies, first, anchor_params, by_study))
    configurations.sort(key=lambda c: (-sum(1 for points in c["studies"] if points),
                                       next(p["time_s"] for points in c["studies"] for p in points)))
    return {"configurations": configurations}


def _without_nodes(studies: list[ComparedStudy], first: int) -> list[int]:
    """The indices of the studies that share no node count with study `first` (0-based): matched to it on every
    knob but the node count."""
    counts = set(studies[first].node_counts)
    return [n for n, study in enumerate(studies) if n != first and not counts & set(study.node_counts)]


def _matching(studies: list[ComparedStudy], fronts: list[list[tuple[dict, dict]]], first: int,
              anchor_params: dict) -> list[list[dict]]:
    """Each study's front points that match a point of study `first` with `anchor_params`."""
    without_nodes = _without_nodes(studies, first)
    return [[p for p, params in front if all(params[k] == anchor_params[k] for k in KNOBS if k != "nodes")
             and (n in without_nodes or params["nodes"] == anchor_params["nodes"])]
            for n, front in enumerate(fronts)]


def _row(studies: list[ComparedStudy], first: int, anchor_params: dict, by_study: list[list[dict]]) -> dict:
    """One configuration of the shared front: the point of study `first` with `anchor_params`, and `by_study`,
    each study's points that match it."""
    without_nodes = _without_nodes(studies, first)
    # Every other study at its own scale (1 against 2 nodes): the row is matched without the node count at all.
    matched_on = [k for k in KNOBS if k != "nodes"] if len(without_nodes) == len(studies) - 1 else list(KNOBS)
    params = {knob: anchor_params[knob] for knob in matched_on}
    reference = by_study[0][0] if len(by_study[0]) == 1 else None
    nodes = "/".join(dict.fromkeys(str(_params(p)["nodes"]) for points in by_study for p in points))
    return {
        "params": params,
        # Matched without the node count: the sentence names each study's ("1/2 nodes").
        "configuration": knobs_sentence({**params, "nodes": params.get("nodes", nodes)}),
        "matched_to": first + 1,
        "matched_on": matched_on,
        "matched_without_nodes": [n + 1 for n in without_nodes],
        "studies": [[{**_figures(studies[number], p, reference if number > 0 else None), "nodes": _params(p)["nodes"]}
                     for p in points] for number, points in enumerate(by_study)],
        "why_absent": [None if points else why_absent(study, params if n not in without_nodes else
                                                       {k: v for k, v in params.items() if k != "nodes"})
                       for n, (study, points) in enumerate(zip(studies, by_study))],
    }


def why_absent(study: ComparedStudy, params: dict) -> str:
    """Why a configuration on another study's front is not on this one's: dominated here, never evaluated, or
    not even searchable (a knob value its space lacks: a study without power limits has no 0.8)."""
    evaluated = [p for p in study.points.values() if all(_params(p)[knob] == value for knob, value in params.items())]
    if evaluated:
        return f"evaluated (trial {', '.join(str(p['trial']) for p in evaluated)}), not on its front"
    outside = study.outside_space(params)  # a pareto.json older than `inputs` still says which node counts it searched
    if outside:
        return f"not in its searched space ({', '.join(f'{knob} {value}' for knob, value in outside.items())})"
    invalid = _invalid_there(study, params)
    if invalid:
        return f"not valid there ({invalid})"
    # pareto.json lists feasible points only: one pruned by the memory estimate, or out of memory, is not in it either.
    return "not evaluated (or not valid there)"


def _invalid_there(study: ComparedStudy, params: dict) -> str | None:
    """Why no search of `study` could evaluate `params` at any of its node counts (or the matched one), by the
    validity rules pareto.json holds what to check (its GPU counts and global batch), else None: "not evaluated"
    suggested more trials would find a micro-batch that cannot divide the global batch at 8 nodes."""
    gpus_at = dict(zip(study.node_counts, study.gpu_counts or []))
    counts = [params["nodes"]] if "nodes" in params else study.node_counts
    global_batch, sp, micro = study.document["workload"].get("global_batch"), params["sp_degree"], params["micro_batch"]
    reasons = []
    for nodes in counts:
        gpus = gpus_at.get(nodes)
        if gpus is None or global_batch is None:
            return None
        if gpus % sp:
            reasons.append(f"SP {sp} does not divide its {gpus} GPUs")
        elif global_batch % (micro * (gpus // sp)):
            reasons.append(f"micro-batch {micro} x data-parallel size {gpus // sp} does not divide global batch {global_batch}")
        else:
            return None
    return "; ".join(dict.fromkeys(reasons))


def _study_summary(number: int, study: ComparedStudy) -> dict:
    document = study.document
    return {"study": number, "run_dir": str(study.run_dir), "model": document["model"], "hardware": document.get("hardware"),
            "node_counts": study.node_counts, "backend": document["backend"], "source": document["source"],
            "energy_source": document["energy_source"]}


def compare_document(studies: list[ComparedStudy]) -> dict:
    """The comparison as the module's docstring lays it out (what --json prints and the table shows)."""
    inputs = compare_inputs(studies)
    return {
        "studies": [_study_summary(number, study) for number, study in enumerate(studies, 1)],
        "inputs": inputs,
        "caveats": caveats(studies, inputs),
        "picks": compare_picks(studies),
        "shared_front": shared_front(studies),
    }
