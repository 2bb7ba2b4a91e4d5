"""Rank 0 combines the node blocks (one per node, from local rank 0) into the result's energy block.

Totals add across nodes; a node whose energy is unavailable makes the cluster total unavailable
(null), because a partial total would flatter the candidate. Any estimated node makes the total
estimated. Phases add their energy; the timeline is node 0's (power per node over one step is what a
profile figure shows; every node's own block carries its own when kept).

Each node's `*_s` are on its own clock (a probe's: time.monotonic, seconds since that node booted), so
no time of one node compares with another's: the merged `begin_s` is the timeline node's, the origin of
the timeline's `t_s`, never a minimum across nodes.
"""

from __future__ import annotations

from autotune.measure import units
from autotune.measure.block import SCHEMA_VERSION


def merge_node_blocks(blocks: list[dict | None]) -> dict | None:
    """Blocks from every rank (None from ranks that read no sensors) -> one block, or None if none."""
    nodes = sorted((b for b in blocks if b), key=lambda b: b["per_node"][0]["node"])
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    provenances = {b["provenance"] for b in nodes}
    flags = [f"node {b['per_node'][0]['node']}: {flag}" for b in nodes for flag in b["flags"]]
    if "unavailable" in provenances:
        provenance, energy_j = "unavailable", None
        flags.append("energy of at least one node is unavailable: no cluster total")
    else:
        provenance = "estimated" if "estimated" in provenances else "measured"
        if provenances == {"estimated", "measured"}:
            flags.append("mixed: some nodes measured, some estimated; the total is an estimate")
        energy_j = sum(b["energy_j"] for b in nodes)
    window_s = max(b["window_s"] for b in nodes)
    return {
        "schema_version": SCHEMA_VERSION,
        "provenance": provenance,
        "sources": [s for b in nodes for s in b["sources"]],
        "energy_j": energy_j,
        "mean_power_w": units.mean_power_w(energy_j, window_s),
        "window_s": window_s,
        "begin_s": nodes[0]["begin_s"],
        **({"clock": nodes[0]["clock"]} if "clock" in nodes[0] else {}),
        "components": _merge_components([b["components"] for b in nodes]),
        "per_gpu": [g for b in nodes for g in b["per_gpu"]],
        "per_node": [n for b in nodes for n in b["per_node"]],
        "phases": _merge_phases([b["phases"] for b in nodes]),
        "timeline": nodes[0]["timeline"],
        "timeline_node": nodes[0]["per_node"][0]["node"],
        "temperature_c": _merge_temperature(nodes),
        "counter_vs_integrated": {f"node {b['per_node'][0]['node']}/{k}": v
                                  for b in nodes for k, v in b["counter_vs_integrated"].items()},
        "flags": flags,
        **({"model": nodes[0]["model"]} if "model" in nodes[0] else {}),
    }


def _merge_components(per_node: list[dict]) -> dict:
    merged: dict = {}
    for components in per_node:
        for key, value in components.items():
            if key == "not_measured":
                merged[key] = sorted(set(merged.get(key, [])) | set(value))
            elif key == "within_module":
                within = merged.setdefault(key, {})
                for scope, energy_j in value.items():
                    within[scope] = within.get(scope, 0.0) + energy_j
            elif value is None or merged.get(key, 0.0) is None:
                merged[key] = None
            else:
                merged[key] = merged.get(key, 0.0) + value
    return merged


def _merge_phases(per_node: list[dict]) -> dict:
    """Energy adds across nodes; time is wall time (the same marks on every node): the longest."""
    merged: dict = {}
    for phases in per_node:
        for name, phase in phases.items():
            entry = merged.setdefault(name, {"energy_j": 0.0, "time_s": 0.0, "steps": 0})
            entry["energy_j"] = None if entry["energy_j"] is None or phase["energy_j"] is None \
                else entry["energy_j"] + phase["energy_j"]
            entry["time_s"] = max(entry["time_s"], phase["time_s"])
            entry["steps"] = max(entry["steps"], phase["steps"])
    for entry in merged.values():
        entry["mean_power_w"] = units.mean_power_w(entry["energy_j"], entry["time_s"])
    return merged


def _merge_temperature(nodes: list[dict]) -> dict | None:
    present = [(b["per_node"][0]["node"], b["temperature_c"]) for b in nodes if b["temperature_c"]]
    if not present:
        return None
    edges = {edge: [t[edge] for _, t in present if t[edge] is not None] for edge in ("begin", "end")}
    return {"begin": max(edges["begin"], default=None), "end": max(edges["end"], default=None),
            "sensors": {f"node {n}/{k}": v for n, t in present for k, v in t["sensors"].items()}}
