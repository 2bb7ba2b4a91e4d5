"""Whether a replay file's figures can be this study's: a peak memory the device cannot hold, a default power
limit no GPU of the profile has, or a time or energy orders of magnitude from what the simulator gives the same
candidate.

A record's type and range are checked where it is read (replay.checked_record), but a figure in the
wrong unit passes them: peak memory in MiB (70,951 "GiB" on a 96 GiB GH200) made every candidate look
unable to fit, and the study "converged" after three probes on the untuned baseline; times in ms read as
"165 h", energy in J as "1.82 MWh". The simulator is no judge of a figure within its own error, or even
within ten times it (on a CPU it is 6-12x off a 2-rank probe of the tiny model), so only what no
plausible node explains is said: a figure 100x or more from the simulator's is warned of once per file,
as a likely unit slip, and one 100,000x or more (1e-300 s, 1e11 s: a damaged record) is refused.
The profile itself bounds what its device can give, as it bounds a reference file's figures for calibrate
(hardware/plausible.py): a TFLOP/s above the dense peak (5000 per H100: a node's figure, or GFLOP/s) is
refused, though within 100x of the simulator, since the reports show it and calibrate fits it; so is an
energy whose mean power per GPU is below what the parts it covers draw at rest or far above what GPU, host
share and memory draw at full load (the job's energy given per GPU, in J), which passed the simulator's
100x at 8-16x and made a study's picks "50% less energy" for doubling the nodes; and a TFLOP/s that its
own time, over the workload's model FLOPs, does not give (a figure per node under the peak: 3x, 4x).
"""

from __future__ import annotations

from autotune.counted import agreeing, counted
from autotune.candidate import params_key
from autotune.hardware.plausible import (
    CAP_OVER_MAX, capped_power, energy_power_problem, other_hardware, tflops_problem, tflops_time_problem,
)
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


def _default_limit_misread(value_w: float, low_w: float, high_w: float) -> str:
    """What a default limit outside [low_w, high_w] reads as: a unit that puts it inside, or a damaged record."""
    for unit, factor, why in (("kW", 1000.0, ""), ("mW", 0.001, ", NVML's own unit")):
        if low_w <= value_w * factor <= high_w:
            return f"it reads as {unit}{why} ({value_w:g} {unit} = {value_w * factor:g} W)"
    return "no unit slip puts it in range: a damaged record, or another device's or a node's figure"


def default_limit_refusal(records: dict[str, dict], hardware) -> str | None:
    """The refusal of records whose default_power_limit_w (the default NVML reported where a probe set a limit) no
    GPU of `hardware` has; None where every one is plausible. A pick's limit is given in watts of it ("0.7 x default
    (0 W per GPU)" of a 0.65 W figure, a kW typo), so it is held to what the profile says of that GPU:
    - NVML never gives a default below the lowest limit it accepts, the profile's [power] min_limit_w (itself at
      least 10 W on a CUDA profile: hardware/plausible.py);
    - the default is about the device's full-load power (its TDP; the module's on a module-scope profile), and
      NVML accepts at most ~1.3x that (RTX 4090: 600 of 450 W): above plausible.CAP_OVER_MAX x it, the figure
      is a node's or several GPUs', as for a profile's own [power] module_cap_w. A site's cap (module_cap_w)
      may lie below the default, so the default is judged by the power, not by the cap;
    - a cuda = false profile's ranks are host processes, with no NVML limit to have a default."""
    given = [r for r in records.values() if r.get("default_power_limit_w") is not None]
    if not given:
        return None
    first = given[0]
    value_w = first["default_power_limit_w"]
    said = f"{first['origin']}: default_power_limit_w = {value_w:g} W"
    if not hardware.cuda:
        return (f"{said} is a GPU's default power limit, and {hardware.name} has none (cuda = false: its ranks are host "
                f"processes; {counted(len(given), 'record')} {agreeing(len(given), 'gives', 'give')} one): drop the key, or replay with the --hardware the "
                "records were measured on")
    capped_w, what = capped_power(hardware)
    low_w, high_w = hardware.power.min_limit_w, CAP_OVER_MAX * capped_w
    wrong = [r for r in given if not low_w <= r["default_power_limit_w"] <= high_w]
    if not wrong:
        return None
    first = wrong[0]
    value_w = first["default_power_limit_w"]
    said = f"{first['origin']}: default_power_limit_w = {value_w:g} W"
    edge = (f"below the {low_w:g} W {hardware.name} gives as NVML's lowest limit ([power] min_limit_w), under which no "
            "default lies" if value_w < low_w else
            f"more than {CAP_OVER_MAX:g} x {what} = {capped_w:g} W of {hardware.name}, and a default limit is about "
            "the device's full-load power")
    return (f"{said} is {edge} ({counted(len(wrong), 'such record')}); {_default_limit_misread(value_w, low_w, high_w)}: "
            "write the 'Default Power Limit' of nvidia-smi -q -d POWER in W, or replay with the --hardware the records "
            "were measured on")


def default_limit_disagreement(path, records: dict[str, dict]) -> str | None:
    """A warning where the records of one study give several default power limits (files of two clusters merged,
    or one edited): each limited pick is then given in watts of its own record's, which the others do not share."""
    by_default: dict[float, list[str]] = {}
    for record in records.values():
        if record.get("default_power_limit_w") is not None:
            by_default.setdefault(record["default_power_limit_w"], []).append(record["origin"])
    if len(by_default) < 2:
        return None
    parts = [f"{value_w:g} W on {counted(len(origins), 'record')}, first {origins[0].removeprefix(f'measurements {path} ')}"
             for value_w, origins in sorted(by_default.items())]
    return (f"measurements {path}: its records give {len(by_default)} default power limits ({'; '.join(parts)}), where "
            "one study's GPUs share one (files of two clusters merged?); each limited pick's watts are of its own "
            "record's default")


def figure_problems(records: dict[str, dict], checks: list) -> tuple[str | None, str | None]:
    """(refusal, warning) for the finished probes' records of the study's valid candidates whose time or
    energy is far from the simulator's figure for the same candidate, or that hold a figure no device of the
    profile gives or a TFLOP/s their time does not give (refused); None where there is none."""
    worst: dict[str, list] = {}
    impossible: list[tuple[str, bool]] = []  # a line per record whose figure no device of the profile gives, and
    # whether another profile could explain it (a TFLOP/s at odds with its own time is wrong on any hardware)
    for check in checks:
        if not check.valid:
            continue
        record = records.get(params_key(check.candidate.knobs.to_dict()))
        if record is None or record["status"] != "ok":
            continue
        simulated = simulate(check.candidate)
        why = _impossible(record, check.candidate, simulated.time_s)
        if why:
            impossible.append((f"{record['origin']}: {why[0]}", why[1]))
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
    if impossible and refusal is None:
        hardware = next(c.candidate.hardware for c in checks if c.valid)
        more = f" ({counted(len(impossible) - 1, 'more record')} likewise)" if len(impossible) > 1 else ""
        line, of_hardware = impossible[0]
        refusal = f"{line}{more}" + (f"; {other_hardware(hardware)}" if of_hardware else "")
    return refusal, warning


def _impossible(record: dict, candidate, simulated_time_s: float) -> tuple[str, bool] | None:
    """Why a finished probe's record holds a figure no device of the candidate's profile gives, or a TFLOP/s its own
    time does not give, and whether another profile could explain it; or None. A cuda = false profile's "GPU" is a
    process on host cores, whose figures hardware/plausible.py bounds by nothing."""
    hardware, tflops, time_s = candidate.hardware, record["tflops"], record["time_s"]
    if hardware.cuda and tflops is not None and (why := tflops_problem(tflops, hardware, candidate.precision)):
        return why, True
    # A time 100x or more from the simulator's is warned of as a slip of its own, and what it implies (a mean power, a
    # TFLOP/s) would blame the other figure for it: not judged.
    if simulated_time_s and not 1 / WARN_RATIO < time_s / simulated_time_s < WARN_RATIO:
        return None
    # A TFLOP/s against its own time, on any profile (the FLOPs are the model's, whatever runs them), where the FLOPs
    # are known: a record naming its study is of this run's model and workload (replay refuses another's), and its
    # TFLOP/s counts them as flops.py does (autotune's trainer or simulator); one without is not judged
    # (hardware/plausible.py).
    if tflops is not None and record.get("study") is not None and (why := tflops_time_problem(tflops, time_s, candidate)):
        return why, False
    if not hardware.cuda or record["energy_kj"] is None:
        return None
    # The mean power per GPU an energy and its time imply (trial72 #8: per-GPU energies given as the job's, 8-16x low,
    # and x8, passed under the 100x warning).
    why = energy_power_problem(record["energy_kj"], time_s, candidate.gpus, hardware, record.get("energy_not_measured") or ())
    return (why, True) if why else None
