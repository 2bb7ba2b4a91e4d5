"""The `energy` block of a probe's result.json: one per node, merged across nodes on rank 0.

Schema: docs/energy-block.md. Unavailable is a state (energy_j null, provenance "unavailable"),
never 0 J; estimated figures say so in `provenance` and in `flags`.
"""

from __future__ import annotations

from autotune.measure import combine, units
from autotune.measure.phases import attribute_phases, labelled_timeline

SCHEMA_VERSION = 1


def node_block(result, phases: list[dict] | None = None, *, node: int = 0) -> dict:
    """A WindowResult (measured or estimated) + the trainer's phase marks -> one node's block."""
    entries = result.entries
    combine.assign_roles(entries)
    counted = [e for e in entries if e.role == combine.COUNTED]
    energy_j = combine.total_j(entries)
    flags = list(result.flags)
    flags += [f"{e.label}: {flag}" for e in entries for flag in e.flags]
    if counted and any(e.energy_j is None for e in counted):
        # A node total missing a GPU or module is not that node's energy: unavailable, as merge.py
        # treats a node that is missing from the cluster total.
        flags.append("incomplete: " + ", ".join(e.label for e in counted if e.energy_j is None)
                     + " unavailable, so the node total is too")
        energy_j = None
    provenance = result.provenance if energy_j is not None else "unavailable"
    times, total_w, by_scope = _power_timeline(result, counted)
    block = {
        "schema_version": SCHEMA_VERSION,
        "provenance": provenance,
        "sources": [{"node": node, **e.to_dict()} for e in entries],
        "energy_j": energy_j,
        "mean_power_w": units.mean_power_w(energy_j, result.window_s),
        "window_s": result.window_s,
        "begin_s": result.begin_s,
        "components": combine.components(entries),
        "per_gpu": [{"node": node, "gpu": e.index, "scope": e.scope, "source": e.label, "method": e.method,
                     "energy_j": e.energy_j, "mean_power_w": e.mean_power_w}
                    for e in counted if e.component in ("gpu", "module")],
        "phases": attribute_phases(times, total_w, phases or []),
        "timeline": labelled_timeline(times, by_scope, total_w, phases or [], result.begin_s),
        "temperature_c": _temperature(result.temperature_c, prefix=""),
        "counter_vs_integrated": {
            e.label: {"counter_j": e.counter_j, "integrated_j": e.integrated_j,
                      "disagreement_pct": units.relative_difference_pct(e.integrated_j, e.counter_j)}
            for e in entries if e.counter_j is not None and e.integrated_j is not None},
        "flags": flags,
    }
    if result.model is not None:
        block["model"] = result.model
    block["per_node"] = [_node_summary(block, node)]
    return block


def _power_timeline(result, counted):
    """Tick times, the node's counted power per tick, and power per scope per tick (all sources)."""
    times = list(result.times_s)
    total_w, by_scope = [], []
    counted_labels = {e.label for e in counted}
    scopes = {e.label: e.scope for e in result.entries}
    # A source with no energy has no power either: a counter that never advanced differences to 0 W at every
    # tick, which the phases and the timeline carried as 0 J and 0 W (unavailable is never 0). Without a
    # counted source the node has no total at any tick, as it has none over the window.
    unavailable = {e.label for e in result.entries if e.energy_j is None}
    no_total = bool(counted_labels & unavailable)
    for i in range(len(times)):
        total, scope_w = None, {}
        for label, series in result.power_w.items():
            power_w = series[i] if i < len(series) else None
            if power_w is None or label in unavailable:
                continue
            scope_w[scopes[label]] = scope_w.get(scopes[label], 0.0) + power_w
            if label in counted_labels:
                total = (total or 0.0) + power_w
        total_w.append(None if no_total else total)
        by_scope.append(scope_w)
    return times, total_w, by_scope


def _temperature(temperature_c: dict | None, prefix: str) -> dict | None:
    if not temperature_c:
        return None
    begin, end = temperature_c.get("begin", {}), temperature_c.get("end", {})
    return {"begin": max(begin.values(), default=None), "end": max(end.values(), default=None),
            "sensors": {f"{prefix}{k}": {"begin": begin.get(k), "end": end.get(k)}
                        for k in sorted(set(begin) | set(end))}}


def _node_summary(block: dict, node: int) -> dict:
    return {"node": node, "provenance": block["provenance"], "energy_j": block["energy_j"],
            "mean_power_w": block["mean_power_w"], "window_s": block["window_s"],
            "components": block["components"]}
