"""What report.md and the terminal say alike of the baseline and the picks: the baseline's configuration and
figures, each pick's devices and device-hours where the picks span device counts, and the caveat that then goes
with a change in time (trial57 #6, #8: the terminal said neither, report.md both)."""

from __future__ import annotations

from autotune.candidate import UNTOUCHED_DEVICE_SETTINGS, knobs_sentence
from autotune.report.error_bars import point_bar
from autotune.report.payback import estimated_saving_mark
from autotune.report.picks import device_hours, missing_change
from autotune.report.power_limit import pick_knobs_sentence
from autotune.report.study_points import StudyView
from autotune.report.units import figure, front_energy_unit, report_energy_text, time_text
from autotune.report.within_noise import labelled_change_text
from autotune.space.files import spans_text
from autotune.counted import counted

# What a point's peak memory is, keyed as pareto.json's `peak_mem_kind` says it (the trainer's kinds, which export
# --measurements writes too, and the simulator's estimate) and worded as the reports' memory column labels it: the
# column must not pass a process's RSS (Python and DeepSpeed included) off as the device memory the simulator estimates.
SIMULATOR_ESTIMATE = "simulator_estimate"
_MEMORY_KINDS = {SIMULATOR_ESTIMATE: "estimated", "process_peak_rss": "process peak RSS",
                 "cuda_max_memory_allocated": "CUDA peak allocated"}


def peak_mem_kind(p) -> str | None:
    """pareto.json's `peak_mem_kind` of a point: "simulator_estimate" for a simulated point, else what the probe read
    ("process_peak_rss", "cuda_max_memory_allocated"; a replayed record that does not say: "measured"); None where
    the point has no peak memory."""
    if p.peak_mem_gib is None:
        return None
    if p.source == "simulated":
        return SIMULATOR_ESTIMATE
    return ((p.extra or {}).get("details") or {}).get("peak_mem_kind") or "measured"


def memory_kind(p) -> str:
    """What a point's peak memory is in the reports' words: "estimated" (the simulator's memory estimate),
    "process peak RSS", "CUDA peak allocated", or "measured" (a replayed record that does not say)."""
    return _MEMORY_KINDS.get(peak_mem_kind(p), "measured")


def kinds_text(p) -> str:
    """What a point's figures are: "simulated", or "time measured, energy estimated" where they differ; "time
    measured" where it has no energy (its figures already say "energy unavailable": trial60 #3 read it twice)."""
    if p.energy_kj is None:
        return f"time {p.source}"
    return p.source if p.source == p.energy_source else f"time {p.source}, energy {p.energy_source}"


def figures_text(p, error, unit: tuple[str, float]) -> str:
    """A point's absolute time and energy, with their error bars: `6.67 min +- 3.4%, 2.09 kWh +- 3.3%`; the energy
    in `unit`, the report's (units.front_energy_unit), as its table's column."""
    return (f"{time_text(p.time_s)}{point_bar(error, p, 'time_s')}, "
            f"{report_energy_text(p.energy_kj, unit)}{point_bar(error, p, 'energy_kj')}")


def change_texts(view: StudyView, row: dict, p, base) -> list[str]:
    """A pick's changes against the baseline in words, as the terminal, report.md and report.html say them:
    `7.7% less energy`, `10.0% less time`, `8.3% more TFLOP/kJ` (within_noise.labelled_change_text; pareto.json keeps
    the signed figures), each marked where within noise or the simulator's error, and estimated where an energy is."""
    noise, stated = row.get("noise_pct"), row.get("simulator_error_pct")
    estimated = "" if row["energy_saved_pct"] is None else estimated_saving_mark(view, p)  # both divide by energy
    changes = (("energy_saved_pct", "energy" + estimated), ("time_change_pct", "time"),
               ("tflop_per_kj_change_pct", "TFLOP/kJ" + estimated))
    return [labelled_change_text(row, key, noise, label, stated, missing_change(key, p, base)) for key, label in changes]


def memory_text(p, words) -> str:
    """`; peak memory 38.1 GiB per GPU (estimated)`, labelled as the front table's column is (memory_kind)."""
    if p.peak_mem_gib is None:
        return ""
    return f"; peak memory {figure(p.peak_mem_gib)} GiB per {words.one} ({memory_kind(p)})"


def spans_gpus(view: StudyView) -> bool:
    """Whether the picks and the baseline run on more than one device count: a time change then holds the
    devices added (trial 49 #5: an 8-node pick's "time -49.9%" against a 4-node baseline is mostly 2x the GPUs)."""
    trials = {*view.picks.values(), *([view.baseline_trial] if view.baseline_trial is not None else [])}
    return len({p.gpus for t in trials if (p := view.point(t)) is not None}) > 1


def devices_text(p, words, spans: bool) -> str:
    """` (32 GPUs, 3.56 GPU-h)` after a configuration where the picks span device counts, else ""."""
    return f" ({counted(p.gpus, words.one, words.many)}, {figure(device_hours(p))} {words.one}-h)" if spans else ""


def with_devices(sentence: str, params: dict, devices: str) -> str:
    """`sentence` (knobs_sentence of `params`, with or without the power limit's watts) with `devices` (devices_text)
    after its node count, not at its end: after the watts, "(476 W per module on the gh200 profile) (4 GPUs, 1.02
    GPU-h)" read as two parentheses in a row (trial61)."""
    nodes = knobs_sentence({**params, **UNTOUCHED_DEVICE_SETTINGS})  # the sentence up to its node count
    assert sentence.startswith(nodes), (sentence, nodes)
    return nodes + devices + sentence[len(nodes):]


def pick_configuration_text(view: StudyView, p, words, spans: bool) -> str:
    """A pick's configuration as its line in every report names it: with the power limit's watts
    (power_limit.pick_knobs_sentence) and, where the picks span device counts, its GPUs and GPU-h after its nodes."""
    return with_devices(pick_knobs_sentence(view, p), p.params, devices_text(p, words, spans))


def baseline_text(view: StudyView, error, words, spans: bool) -> str:
    """What follows "trial 0" where a report names the baseline every percentage is against: `: <configuration>
    [ (GPUs, GPU-h)]; <time>, <energy>, <kinds>[; peak memory ...]`, or, where it has no figures, why no change
    against it can be stated."""
    base = view.baseline_point()
    if base is None:
        row = next((r for r in view.trials if r["trial"] == view.baseline_trial), None)
        why = f", which has no figures ({row['status']}): no change against it can be stated" if row else ""
        return why
    return (f": {with_devices(knobs_sentence(base.params), base.params, devices_text(base, words, spans))}; "
            f"{figures_text(base, error, front_energy_unit(view.front))}, {kinds_text(base)}{memory_text(base, words)}")


def gpu_span_caveat(view: StudyView, words) -> str | None:
    """Where the picks and the baseline run on several device counts (spans_gpus): that part of a change in time
    is the devices added or taken away, and that device-hours compare them on one footing; else None."""
    if not spans_gpus(view):
        return None
    base = view.baseline_point()
    counts = " and ".join(spans_text(sorted({view.point(t).gpus for t in view.picks.values()})).rsplit(", ", 1))
    on = f" and the baseline on {base.gpus}" if base is not None else ""
    return (f"The picks run on {counts} {words.many}{on}: part of a change in time is the {words.many} added or "
            f"taken away; {words.one}-h ({words.many} x time to solution) compares them on one footing.")
