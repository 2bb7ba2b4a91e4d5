"""One training step of a pick, as the report draws it: power over time with the phases shaded
(from the probe's energy block), or the simulated phase breakdown when nothing was measured.

The energy block's timeline holds every sample of the window labelled with its phase and step
(docs/energy-block.md). One step is drawn, not the window: the step is what repeats, and its shape
(forward below backward, the optimizer dip) is what a configuration changes. A middle step is taken,
since the first may still carry warm-up effects and the last the closing sync.
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.report.device_words import GPU_WORDS, DeviceWords

PHASE_LABELS = {
    "vit_fwd": "ViT forward",
    "llm_fwd": "LLM forward",
    "backward": "backward",
    "optimizer": "optimizer",
    None: "between phases",
    # the simulator's phases (details["phases_s"])
    "compute": "compute (forward + backward)",
    "communication": "exposed communication",
    "activation_offload": "activation offload wait",
    "gpu_optimizer": "optimizer (GPU)",
    "host_optimizer": "optimizer (CPU offload)",
    "zero3_block_overhead": "ZeRO-3 per-block overhead",
    "step_overhead": "fixed per-step overhead",
}


def phase_label(phase: str | None, words: DeviceWords = GPU_WORDS) -> str:
    """A phase as the report names it; the optimizer that is not offloaded runs on the study's device
    ("optimizer (GPU)", or "optimizer (CPU rank)" on a CPU profile)."""
    if phase == "gpu_optimizer":
        return f"optimizer ({words.one})"
    return PHASE_LABELS.get(phase, str(phase))


# Fewer samples than this in one step draw no shape: show the whole window instead.
MIN_SAMPLES_PER_STEP = 4

PROVENANCE_WORDS = {
    "measured": "measured with sensors",
    "estimated": "estimated from a power model (no sensor)",
    "simulated": "simulated by the analytic model (nothing ran)",
}


@dataclass(frozen=True)
class PowerProfile:
    """Samples of one step (or the whole window, when steps are too short to draw)."""

    samples: list[tuple[float, float, str | None]]  # (seconds from the first sample, power W, phase)
    provenance: str  # measured | estimated
    step: int | None  # None: the whole window is drawn
    node: int | None  # whose timeline (merged blocks keep node 0's)
    sensors: str  # which sources, in words, for the figure's caption


def source_label(source: dict, words: DeviceWords = GPU_WORDS) -> str:
    """An energy source as a caption names it. The power model labels its per-device estimates by their
    JSON scope (`gpu 0 (model)`, kept for tools that read it); on a CPU profile that device is a CPU rank."""
    label = source.get("label", "")
    if source.get("scope") == "gpu" and label.startswith("gpu "):
        label = f"{words.one} {label[len('gpu '):]}"
    return f"{source.get('kind', '?')} {label}".strip()


def _sensors(block: dict, words: DeviceWords = GPU_WORDS) -> str:
    counted = [s for s in block.get("sources") or [] if s.get("role", "counted") == "counted"]
    labels = sorted({source_label(s, words) for s in counted})
    if len(labels) > 3:
        labels = labels[:3] + [f"and {len(labels) - 3} more"]
    return ", ".join(labels)


def power_profile(details: dict, words: DeviceWords = GPU_WORDS) -> PowerProfile | None:
    """The step to draw from a result's energy block; None without a usable timeline. `words` name the
    devices in the sources' caption (the report's, by its hardware profile)."""
    block = details.get("energy") or {}
    timeline = [s for s in block.get("timeline") or [] if s.get("power_w") is not None and s.get("t_s") is not None]
    if len(timeline) < 2 or block.get("provenance") not in ("measured", "estimated"):
        return None
    steps = sorted({s["step"] for s in timeline if s.get("step") is not None})
    chosen = steps[len(steps) // 2] if steps else None
    picked = [s for s in timeline if chosen is not None and s.get("step") == chosen]
    if len(picked) < MIN_SAMPLES_PER_STEP:
        picked, chosen = timeline, None
    t0 = picked[0]["t_s"]
    return PowerProfile(
        samples=[(s["t_s"] - t0, float(s["power_w"]), s.get("phase")) for s in picked],
        provenance=block["provenance"],
        step=chosen,
        node=block.get("timeline_node"),
        sensors=_sensors(block, words),
    )


def phase_bands(samples: list[tuple[float, float, str | None]]) -> list[tuple[float, float, str | None]]:
    """(start s, end s, phase) runs of one phase. A sample stands for the time up to halfway to its
    neighbours, so a band edge lies between the last sample of one phase and the first of the next:
    the shading is as exact as the sampling period, no more."""
    if not samples:
        return []
    times = [t for t, _, _ in samples]
    edges = [times[0]] + [(a + b) / 2 for a, b in zip(times, times[1:])] + [times[-1]]
    bands: list[list] = []
    for i, (_, _, phase) in enumerate(samples):
        if bands and bands[-1][2] == phase:
            bands[-1][1] = edges[i + 1]
        else:
            bands.append([edges[i], edges[i + 1], phase])
    return [tuple(b) for b in bands if b[1] > b[0]]


def simulated_phases(details: dict) -> list[tuple[str, float]]:
    """(phase, seconds) of one simulated step, the phases that take time only."""
    phases = details.get("phases_s") or {}
    return [(name, float(s)) for name, s in phases.items() if s is not None and s > 0]
