"""Why a calibrated profile states no simulator error, and what it was calibrated on.

A profile `autotune calibrate` wrote without [simulator_error] (its left-out error was not reliable, or not
computed) shows "+- ?%" as an uncalibrated one does, but its error sentence says it was calibrated and why its error
is not known, from a note calibrate leaves in its description.
"""

from __future__ import annotations

import re

from autotune.hardware.profile import IGNORED_CALIBRATED_ON_NOTE, IGNORED_ERROR_NOTE, with_description_note
from autotune.report.picks import listed
from autotune.counted import counted

# The key of a simulator_error dict (pareto.json's too) that says why a calibrated profile states no error;
# it holds no percentage, so every figure still shows "+- ?%" and no pick is called a tie.
WHY_UNKNOWN = "why_unknown"

# The note `autotune calibrate -o` appends to the description of a profile it writes without
# [simulator_error]. The description is the one free-text key a profile (and the copy a study keeps of
# it) has: a key of its own would change the profile's schema for a sentence.
_CALIBRATE_NOTE = (r"calibrated \(from [^()]*\), error not (?:known reliably|computed \(--no-loo\)|measured \(fitted to "
                   r"simulated figures, a test of the fit\))")
# Either note says why no error is stated; a recalibration's replaces both (an ignored error's reason is stale once
# calibrate wrote the profile again).
_NOTE = re.compile(f"(?:{_CALIBRATE_NOTE}|{IGNORED_ERROR_NOTE.pattern})")


def calibration_note(configurations: int, fitted: int, on_bound: int, computed: bool, simulated: bool = False) -> str:
    """"calibrated (from 3 configurations for 13 constants), error not known reliably": why the profile
    calibrate writes has no [simulator_error] (`computed`: a left-out error was computed, and not trusted;
    `simulated`: the figures fitted were the simulator's own, --allow-simulated)."""
    bound = f", {on_bound} ended on a bound" if on_bound else ""
    why = ("measured (fitted to simulated figures, a test of the fit)" if simulated
           else "known reliably" if computed else "computed (--no-loo)")
    return f"calibrated (from {counted(configurations, 'configuration')} for {counted(fitted, 'constant')}{bound}), error not {why}"


def with_calibration_note(description: str, note: str | None) -> str:
    """The description with `note` in place of any earlier one (a recalibration's is the one that holds, with the
    [calibrated_on] it writes)."""
    return with_description_note(with_description_note(description, IGNORED_CALIBRATED_ON_NOTE, None), _NOTE, note)


def why_unknown(hardware) -> str:
    """Why a profile states no error, and where to read more: why its [simulator_error] was ignored when read (the
    warning's reason, kept in its description), else why calibrate wrote none (its file's header)."""
    ignored = IGNORED_ERROR_NOTE.search(hardware.description)
    if ignored:
        return f"{ignored.group(0)} ({hardware.source})" if hardware.source else ignored.group(0)
    found = _NOTE.search(hardware.description)
    why = found.group(0) if found else f"calibrated (from '{hardware.calibrated_from}'), error not stated"
    return f"{why}: see its header ({hardware.source})" if hardware.source else f"{why}: see its file's header"


def unrecorded_profile(hardware) -> str:
    """Why the simulated figures of a study an older autotune made carry no known error: it kept no copy of its profile,
    and the one of that name here is today's, whose stated error is of today's figures (a configuration's went from
    531 s then to 412 s now, and the report lent them today's +- 3.4%: trial73 #5). Said after "this hardware profile
    was"."""
    return (f"not kept by the older autotune that simulated them (its study holds no copy), and the '{hardware.name}' "
            "profile here states the error of today's simulator, whose figures may differ from these: `autotune run` "
            "with the study's options and a new --out simulates figures that carry it")


def outside_calibration(calibrated_on: dict, model: str, gpu_counts, node_counts=()) -> str | None:
    """"calibrated on 1.5b, 1 GPU, 1 node only: this study's model 32b and 32 GPUs are outside it": where a study's
    model, GPU counts or node counts lie outside what its profile was fitted on ([calibrated_on]), else None. A profile
    fitted on one GPU of a 1.5B model drove a 32B study on 32 GPUs saying only "calibrated (from 10 configurations ...)"
    (trial64 #7): its link, overlap and ZeRO-3 constants were never fitted; nor are its inter-node link's on one node,
    whatever its GPU count (8 GPUs on 1 node passed a study of 8 GPUs on 2: trial65 #7)."""
    if not calibrated_on:
        return None
    gpus = [n for n in sorted(gpu_counts) if str(n) not in calibrated_on["gpus"]]
    nodes = [n for n in sorted(node_counts) if str(n) not in calibrated_on["nodes"]]
    outside = (([] if model in calibrated_on["model"] else [f"model {model}"]) + ([_counts(gpus, "GPU")] if gpus else [])
               + ([_counts(nodes, "node")] if nodes else []))
    if not outside:
        return None
    on = ", ".join(["/".join(calibrated_on["model"]), _counts(calibrated_on["gpus"], "GPU"),
                    _counts(calibrated_on["nodes"], "node")])
    one = len(outside) == 1 and (not gpus or gpus == [1]) and (not nodes or nodes == [1])
    return f"calibrated on {on} only: this study's {listed(outside)} {'is' if one else 'are'} outside it"


def _counts(values, noun: str) -> str:
    """"1 GPU", "8/16 GPUs"."""
    numbers = [str(v) for v in values]
    return f"{'/'.join(numbers)} {noun}{'' if numbers == ['1'] else 's'}"


def with_calibrated_on(why: str, outside: str) -> str:
    """The profile's reason for no error with what it was calibrated on after calibrate's note ("calibrated (from 10
    configurations ...) on 1.5b, 1 GPU, 1 node only: ... outside it; error not known reliably"), or after a reason of
    another kind. Put in place of its "calibrated", the note's parenthesis followed "outside it" and read as if it
    described the study (trial65 #20)."""
    close = why.find("), ") if why.startswith("calibrated (") else -1
    if close < 0:
        return f"{why}; {outside}"
    return f"{why[:close + 1]} {outside[len('calibrated '):]}; {why[close + 3:]}"
