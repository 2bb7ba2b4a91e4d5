"""A realistic merged energy block (docs/energy-block.md, schema 1) as a GH200 probe would write it:
hwmon module power sampled every 0.1 s, three steps of two micro-steps each, four phases."""

from __future__ import annotations

SAMPLE_PERIOD_S = 0.1
BEGIN_S = 49373.74  # time.monotonic, as a probe writes it: seconds since boot
# Node power (4 modules) in each phase, W, and its length per micro-step (optimizer: per step), s.
PHASE_POWER_W = {"vit_fwd": 1900.0, "llm_fwd": 2350.0, "backward": 2620.0, "optimizer": 1450.0}
PHASE_TIME_S = {"vit_fwd": 0.3, "llm_fwd": 0.5, "backward": 1.0, "optimizer": 0.4}
MICRO_STEPS, STEPS = 2, 3


def phase_marks() -> list[dict]:
    marks, t = [], 0.0
    for step in range(STEPS):
        for _ in range(MICRO_STEPS):
            for name in ("vit_fwd", "llm_fwd", "backward"):
                marks.append({"name": name, "step": step, "start_s": t, "end_s": t + PHASE_TIME_S[name]})
                t += PHASE_TIME_S[name]
        marks.append({"name": "optimizer", "step": step, "start_s": t, "end_s": t + PHASE_TIME_S["optimizer"]})
        t += PHASE_TIME_S["optimizer"]
    return marks


def energy_block(nodes: int = 4, scale: float = 1.0) -> dict:
    """`scale` multiplies every power (so trials differ); energies follow from the samples."""
    marks = phase_marks()
    window_s = marks[-1]["end_s"]
    timeline = []
    for i in range(int(round(window_s / SAMPLE_PERIOD_S)) + 1):
        t = round(i * SAMPLE_PERIOD_S, 4)
        mark = next((m for m in marks if m["start_s"] <= t < m["end_s"]), None)
        power_w = scale * (PHASE_POWER_W[mark["name"]] if mark else 1000.0)
        timeline.append({
            "t_s": t, "power_w": round(power_w, 3), "phase": mark and mark["name"], "step": mark and mark["step"],
            "scopes": {"module": power_w, "grace": 0.12 * power_w, "cpu": 0.09 * power_w, "sysio": 0.03 * power_w},
        })
    node_j = sum((b["t_s"] - a["t_s"]) * (a["power_w"] + b["power_w"]) / 2 for a, b in zip(timeline, timeline[1:]))
    phases = {}
    for name in PHASE_POWER_W:
        time_s = sum(m["end_s"] - m["start_s"] for m in marks if m["name"] == name)
        energy_j = nodes * scale * PHASE_POWER_W[name] * time_s
        phases[name] = {"energy_j": energy_j, "time_s": time_s, "mean_power_w": energy_j / time_s, "steps": STEPS}
    sources = [
        {"node": 0, "kind": "hwmon", "label": f"Module Power Socket {i}", "scope": "module", "component": "module",
         "index": i, "energy_j": node_j / 4, "method": "integrated", "mean_power_w": node_j / 4 / window_s, "role": "counted"}
        for i in range(4)
    ] + [
        {"node": 0, "kind": "hwmon", "label": "Grace Power Socket 0", "scope": "grace", "component": "module",
         "index": 0, "energy_j": 0.03 * node_j, "method": "integrated", "role": "within_module"},
    ]
    return {
        "schema_version": 1,
        "provenance": "measured",
        "energy_j": nodes * node_j,
        "mean_power_w": nodes * node_j / window_s,
        "window_s": window_s,
        "begin_s": BEGIN_S,
        "clock": "time.monotonic",
        "components": {"module_j": nodes * node_j, "within_module": {"grace_j": 0.12 * nodes * node_j}},
        "sources": sources,
        "per_gpu": [],
        "per_node": [
            {"node": n, "provenance": "measured", "energy_j": node_j, "mean_power_w": node_j / window_s,
             "window_s": window_s, "components": {"module_j": node_j}}
            for n in range(nodes)
        ],
        "phases": phases,
        "timeline": timeline,
        "timeline_node": 0,
        "temperature_c": {"begin": 45.0, "end": 58.0, "sensors": {}},
        "flags": [],
    }
