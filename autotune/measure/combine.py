"""Which source figures make up a node's total, so that nothing is counted twice.

Rules (in this one place):
- A source nested in another scope (`within`, e.g. GH200 Grace/CPU/SysIO inside Module) is never
  added: it is reported under `components.within_module`.
- If the node has module-scope sources (GH200: hwmon "Module Power Socket N", or NVML on a GH200,
  whose counter covers the module), the total is the sum of one module figure per socket/GPU index,
  preferring a counter over integrated power; the other module figure for the same index is a
  cross-check, and every GPU/CPU/memory figure is inside the module (never added on top).
- Otherwise the total is GPU (NVML) + CPU (RAPL package) + memory (RAPL DRAM), and the components
  the node could not measure are listed in `not_measured`, so a GPU-only total never passes for more.
"""

from __future__ import annotations

COUNTED, WITHIN, CROSS_CHECK = "counted", "within_module", "cross_check"
SEPARATE_COMPONENTS = ("gpu", "cpu", "memory_interconnect")


def not_measured(details: dict | None) -> list[str]:
    """The components a probe result's energy block (its `details["energy"]`) lists as seen by no
    sensor (["cpu", "memory_interconnect"] on a GPU node with NVML alone); [] when there are none."""
    return list((((details or {}).get("energy") or {}).get("components") or {}).get("not_measured") or [])


def parts_text(parts: list[str]) -> str:
    """"cpu, memory/interconnect": not_measured's parts as every output names them."""
    return ", ".join(part.replace("_", "/") for part in parts)


def assign_roles(entries) -> None:
    """Set `role` on every entry (objects with component, within, index, counter_j)."""
    tops = [e for e in entries if e.component is not None and e.within is None]
    modules = [e for e in tops if e.component == "module"]
    if not modules:
        for entry in entries:
            entry.role = COUNTED if entry in tops else WITHIN
        return
    chosen: dict = {}
    for entry in sorted(modules, key=lambda e: e.counter_j is None):  # counters first (stable)
        chosen.setdefault(entry.index, entry)
    chosen_ids = {id(e) for e in chosen.values()}
    for entry in entries:
        if id(entry) in chosen_ids:
            entry.role = COUNTED
        elif entry.component == "module" and entry.within is None:
            entry.role = CROSS_CHECK
        else:
            entry.role = WITHIN


def components(entries) -> dict:
    """The `components` sub-block of a node (entries must have roles)."""
    counted = [e for e in entries if e.role == COUNTED]
    result: dict = {}
    if any(e.component == "module" for e in counted):
        result["module_j"] = _sum(e.energy_j for e in counted)
        within: dict = {}
        for entry in entries:
            if entry.role == WITHIN and entry.energy_j is not None:
                key = f"{entry.scope}_j"
                within[key] = within.get(key, 0.0) + entry.energy_j
        if within:
            result["within_module"] = within
        return result
    for name in SEPARATE_COMPONENTS:
        figures = [e.energy_j for e in counted if e.component == name]
        if figures:
            result[f"{name}_j"] = _sum(figures)
    missing = [name for name in SEPARATE_COMPONENTS if f"{name}_j" not in result]
    if missing:
        result["not_measured"] = missing
    return result


def total_j(entries) -> float | None:
    return _sum(e.energy_j for e in entries if e.role == COUNTED)


def _sum(values) -> float | None:
    """Sum of the available figures; None (unavailable) when there is none, never 0 J."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None
