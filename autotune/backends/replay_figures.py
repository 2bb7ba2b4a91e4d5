"""Whether a replay file's figures can be this study's: a peak memory the device cannot hold, or a time or
energy orders of magnitude from what the simulator gives the same candidate.

A record's type and range are checked where it is read (replay.checked_record), but a figure in the
wrong unit passes them: peak memory in MiB (70,951 "GiB" on a 96 GiB GH200) made every candidate look
unable to fit, and the study "converged" after three probes on the untuned baseline; times in ms read as
"165 h", energy in J as "1.82 MWh". The simulator is no judge of a figure within its own error, or even
within ten times it (on a CPU it is 6-12x off a 2-rank probe of the tiny model), so only what no
plausible node explains is said: a figure 100x or more from the simulator's is warned of once per file,
as a likely unit slip, and one 100,000x or more (1e-300 s, 1e11 s: a damaged record) is refused.
"""

from __future__ import annotations

from autotune.counted import counted
from autotune.candidate import params_key
from autotune.simulator import simulate

WARN_RATIO = 100.0  # beyond any profile's error: ms for s or J for kJ (1000x) lies past it
REFUSE_RATIO = 1e5  # no unit slip between s, ms, kJ, J, kWh gives this much: the record is damaged
# Each figure, its unit, and the slips that move it by about 1000x.
_FIGURES = (("time_s", "s", "ms for s"), ("energy_kj", "kJ", "J for kJ"))


def _ratio_text(ratio: float) -> str:
    """`1,270x`, or `1/1,270` of it; past a million, `1.3e+08x`."""
    far = max(ratio, 1 / ratio)
    times = f"{far:,.0f}" if far < 1e6 else f"{far:.2g}"
    return f"{times}x" if ratio >= 1 else f"1/{times} of"


def peak_memory_refusal(records: dict[str, dict], hardware) -> str | None:
    """The refusal of a finished probe's record whose peak memory is more than a GPU of `hardware` holds
    (a GPU's peak is CUDA's allocation; a CPU profile's is the process's RSS, bounded by no device), naming both
    causes: a figure in MiB, or a profile that is not the hardware the records were measured on."""
    if not hardware.cuda:
        return None
    device_gib = hardware.gpu.memory_gib
    over = [r for r in records.values() if r["status"] == "ok" and (r["peak_mem_gib"] or 0) > device_gib]
    if not over:
        return None
    first = over[0]
    return (f"{first['origin']}: peak_mem_gib = {first['peak_mem_gib']:g} is more than the {device_gib:g} GiB a GPU of "
            f"{hardware.name} holds, for a probe that finished ({counted(len(over), 'such record')}): figures in MiB? (GiB = MiB / 1024): "
            # 61.3 read as MiB is 0.06 GiB, no real peak: a profile of the same name with less memory (an edited
            # file) is as likely, and is said as calibrate's refusal of a figure says it (calibrate/reference.py).
            f"fix the records; or, if the figure is right, the profile '{hardware.name}' is not the hardware it was "
            "measured on (pass --hardware): such a peak would place the memory wall below every candidate")


def figure_problems(records: dict[str, dict], checks: list) -> tuple[str | None, str | None]:
    """(refusal, warning) for the finished probes' records of the study's valid candidates whose time or
    energy is far from the simulator's figure for the same candidate; None where there is none."""
    worst: dict[str, list] = {}
    for check in checks:
        if not check.valid:
            continue
        record = records.get(params_key(check.candidate.knobs.to_dict()))
        if record is None or record["status"] != "ok":
            continue
        simulated = simulate(check.candidate)
        for key, unit, slip in _FIGURES:
            value, model = record.get(key), getattr(simulated, key)
            if value is None or not model:
                continue
            ratio = value / model
            if ratio >= WARN_RATIO or ratio <= 1 / WARN_RATIO:
                worst.setdefault(key, []).append((max(ratio, 1 / ratio), ratio, record, model, unit, slip))
    refusal = warning = None
    for key, found in worst.items():
        far, ratio, record, model, unit, slip = max(found, key=lambda f: f[0])
        said = (f"{record['origin']}: {key} = {record[key]:.6g} {unit} is {_ratio_text(ratio)} the {model:,.4g} {unit} the "
                f"simulator gives its candidate")
        if far >= REFUSE_RATIO:
            refusal = refusal or f"{said}: no node or unit slip explains that much; fix or drop the record"
        else:
            warning = warning or (f"{said} ({counted(len(found), 'record')} 100x or more from the simulator in {key}): {slip}? "
                                  "they are replayed as they are")
    return refusal, warning
