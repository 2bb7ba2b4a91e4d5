"""A probe's result.json (docs/result-schema.md) -> the ProbeResult the study records.

A probe measures a few optimizer steps; the study compares configurations on the fixed workload
(`samples` at a fixed `global_batch`). Time and energy are scaled from the measured steps to the
workload's `samples / global_batch` steps, the same count the simulator uses, so measured and
simulated figures answer the same question.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import statistics
from pathlib import Path

from autotune.measure.units import j_to_kj
from autotune.backends.base import ProbeResult
from autotune.candidate import Candidate

LOG_TAIL_LINES = 40
# Enough of a log's end (within _LOG_TAIL_BYTES) to hold torchrun's teardown lines above its failure table: the table
# of 8 ranks alone is past LOG_TAIL_LINES.
TEARDOWN_LINES = 1000
_LOG_TAIL_BYTES = 64 * 1024


def read_result(path: Path) -> dict | None:
    """The probe's result, or None when it wrote none (or a torn one: the probe writes atomically,
    so that means something else went wrong; unreadable_result says what)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "status" in data else None


def unreadable_result(path: Path) -> str | None:
    """Why a result file that is there is no probe's result (its parse error), for read_result's None; None where
    there is no file. A torn file told as "without writing a result" sent a user to ask why their trainer never
    wrote, not what it wrote (trial79 #4)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"
    if not isinstance(data, dict) or "status" not in data:
        return "a JSON value without a status, not a probe's result"
    return None


def _log_end(log_path: Path) -> list[str]:
    """The lines of the log's last _LOG_TAIL_BYTES ([] where it cannot be read)."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - _LOG_TAIL_BYTES))
            return handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []


def log_tail(log_path: Path, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(_log_end(log_path)[-lines:])


# The tuner's own lines in a probe's log (the launcher's command, notes about other trials' result files): never
# the probe's output.
TUNER_LINE = "== autotune: "
_LAUNCH_LINE = TUNER_LINE + "repeat "  # launch.py's line before each start of the launcher


def launch_output(log_path: Path) -> str:
    """What the last launch wrote to the log: the lines after the tuner's own line that starts it, without the
    tuner's lines. Where an exception of a probe is looked for: torchrun's own traceback and failure table follow a
    rank's and take 40 lines with 2 ranks, more with more (so the last 40 lines held none: trial79 #2), and neither
    an earlier repeat's output nor the tuner's notes about other trials' files are the probe's (trial79 #3)."""
    lines = _log_end(log_path)
    starts = [index for index, line in enumerate(lines) if line.startswith(_LAUNCH_LINE)]
    return "\n".join(line for line in lines[starts[-1] + 1 if starts else 0:] if not line.startswith(TUNER_LINE))


# A Python exception's last line, as a traceback ends ("ModuleNotFoundError: No module named 'torch'").
_EXCEPTION_LINE = re.compile(r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit)\b.*")
# A program's refusal in its own words, before any rank raised: SLURM's (no allocation, a bad step request: "srun:
# error: ..."), and argparse's "PROG: error: ..." of a launcher that refuses its command line or environment
# (torchrun's "run.py: error: argument --monitor-interval: invalid float value", exit 2: trial79 #10) or of the probe.
_ERROR_LINE = re.compile(r"(?:srun|slurmstepd|salloc)(?:-\d+)?: error: .*|^[\w./-]+(?: -m [\w.]+)?: error: .*")


def _probe_lines(tail: str) -> list[str]:
    """The lines of a log's tail the probe and its launcher wrote: a note of the tuner's that another trial's file was
    "unreadable or partial (JSONDecodeError)" was given as the exception of a probe killed by SIGKILL (trial79 #3)."""
    return [line for line in tail.splitlines() if not line.startswith(TUNER_LINE)]


def last_exception_line(tail: str) -> str | None:
    """The last exception a probe's log shows, where it shows one: torchrun's failure table and
    DeepSpeed's launcher summary follow it, so the log's last line says less. Else the last error line
    of SLURM (srun: error: Unable to allocate resources ...) or of a launcher's argument parser, where
    no rank started Python."""
    lines = _probe_lines(tail)
    for line in reversed(lines):
        found = _EXCEPTION_LINE.search(line.strip())
        if found and not found.group(0).startswith(("torch.distributed.elastic", "ChildFailedError")):
            text = found.group(0)
            if text.count(")") > text.count("("):  # quoted inside a parenthesis: "(ModuleNotFoundError: ...)"
                text = text[: text.rfind(")")]
            return text[:300]
    for line in reversed(lines):
        found = _ERROR_LINE.search(line.strip())
        if found:
            return found.group(0)[:300]
    return None


# A probe a signal from outside stopped, as its launcher tells it: torchrun's agent ("SignalException: Process 7 got
# signal: 15"), torchrun's failure table of a rank ("Signal 15 (SIGTERM) received by PID 8"), DeepSpeed's per-node
# launcher ("Main process received SIGTERM, exiting"), slurmstepd ("*** STEP 7.0 ON n1 CANCELLED AT ... ***").
_SIGNALLED_LINES = (
    re.compile(r"SignalException: Process \d+ got signal: (?P<signum>\d+)"),
    re.compile(r"Signal (?P<signum>\d+) \(SIG\w+\) received by PID (?P<pid>\d+)"),
    re.compile(r"Main process received (?P<name>SIG[A-Z0-9]+), exiting"),
    re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?P<why>.*?)\*\*\*"),
)
# torchrun's own teardown of the ranks still running once one has failed (its subprocess and its spawn ways of starting
# them): the SIGTERM such a rank then dies of is the launcher's, not a stop from outside.
_LAUNCHER_CLOSED_LINE = re.compile(r"(?:Sending process (?P<pid>\d+) closing signal|Closing process (?P<spawned>\d+) "
                                   r"via signal) SIG\w+")


def _closed_by_launcher(tail: str) -> set[int]:
    """The PIDs of the ranks the launcher itself signalled to stop, after another rank failed."""
    return {int(found.group("pid") or found.group("spawned")) for found in _LAUNCHER_CLOSED_LINE.finditer(tail)}


def stopped_from_outside(exit_code: int | None, tail: str) -> tuple[int, str] | None:
    """(signal number, what says so) where a probe that wrote no result was stopped by a stop signal from outside
    the tuner (SIGTERM, SIGINT, SIGHUP, SIGUSR1/2: SLURM signals every process of a job on scancel, preemption or a
    time limit, and the probe may die before the tuner gets its own), else None. Such a probe says nothing of its
    candidate. SIGKILL (the kernel's OOM killer) and a rank's crash are not stops: they stay the probe's failure.
    `exit_code`: the launcher's (negative: the signal that ended it); `tail`: the end of its log."""
    import signal

    from autotune.errors import stop_signals

    stops = set(stop_signals())
    if exit_code is not None and exit_code < 0 and -exit_code in stops:
        return -exit_code, f"the launcher was ended by {signal.Signals(-exit_code).name}"
    if exit_code is None:
        return None
    # A rank torchrun stopped itself, once another rank had failed, is no evidence: where the rank that failed exited
    # with a status (its traceback; no signal line), its sibling's "Signal 15 (SIGTERM) received by PID" was the last
    # such line, and one rank's crash stopped the study (exit 143) on every resume (trial79 #1). `tail` holds the
    # launcher's teardown lines, above the table's last LOG_TAIL_LINES.
    closed = _closed_by_launcher(tail)
    for line in reversed(_probe_lines(tail)[-LOG_TAIL_LINES:]):
        for pattern in _SIGNALLED_LINES:
            found = pattern.search(line)
            if found is None:
                continue
            groups = found.groupdict()
            if groups.get("pid") and int(groups["pid"]) in closed:
                continue
            if groups.get("signum"):
                signum = int(groups["signum"])
            elif groups.get("name"):
                signum = getattr(signal, groups["name"], None)
            else:  # slurmstepd cancelled the step: SLURM's stop signal is SIGTERM
                signum = signal.SIGTERM
            # The last such line decides: torchrun's table ends with the root cause (a rank the OOM killer's
            # SIGKILL ended, with a rank its agent then stopped by SIGTERM listed above it, is a failure).
            return (int(signum), found.group(0).strip()[:200]) if signum in stops else None
    return None


# The entry of torchrun's failure table it names the root cause: the rank, and its exit code (negative: a signal).
_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):\n\[\d+\]:\n(?:.*\n)*?\s*rank\s*: (?P<rank>\d+).*\n"
                         r"\s*exitcode\s*: (?P<exit_code>-?\d+)")


def rank_signal(tail: str) -> tuple[int, int] | None:
    """(rank, signal number) where torchrun's failure table names as the root cause a rank that a signal ended (the
    kernel's OOM killer kills the biggest process: a rank, rarely the launcher); else None. The launcher itself then
    exits with a status, so its exit code alone never says it (trial79 #6)."""
    found = None
    for found in _ROOT_CAUSE.finditer(tail):
        pass
    if found is None or int(found.group("exit_code")) >= 0:
        return None
    return int(found.group("rank")), -int(found.group("exit_code"))


def signal_said(signum: int) -> str:
    """A signal that ended a probe, by number and name, SIGKILL with what sends it on a node: "signal 9 (SIGKILL: the
    kernel's OOM killer, or a kill -9)", "signal 11 (SIGSEGV)"."""
    import signal

    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    return f"signal {signum} ({name}: the kernel's OOM killer, or a kill -9)" if signum == signal.SIGKILL else \
        f"signal {signum} ({name})"


def workload_steps(candidate: Candidate) -> float:
    return candidate.workload.samples / candidate.workload.global_batch


def _phases_s(result: dict) -> dict[str, float]:
    """Mean time of each phase per optimizer step (rank 0's marks)."""
    totals: dict[str, float] = {}
    steps = {mark["step"] for mark in result.get("phases", [])}
    for mark in result.get("phases", []):
        totals[mark["name"]] = totals.get(mark["name"], 0.0) + mark["end_s"] - mark["start_s"]
    return {name: total / len(steps) for name, total in totals.items()} if steps else {}


def _energy_figures(block: dict | None, measured_steps: int, scale_steps: float, gpus: int) -> dict:
    """Energy of the workload from the window's energy: per measured step x workload steps."""
    provenance = (block or {}).get("provenance", "unavailable")
    energy_j = (block or {}).get("energy_j")
    if provenance == "unavailable" or energy_j is None:
        return {"energy_source": "unavailable", "energy_kj": None, "energy_components_kj": {}, "mean_power_w": None}
    per_step = scale_steps / measured_steps
    # Counted buckets only ("gpu_j", "module_j", ...): "within_module" is inside module_j, never added.
    components = {
        name.removesuffix("_j"): j_to_kj(value * per_step)
        for name, value in block.get("components", {}).items()
        if name.endswith("_j") and isinstance(value, (int, float))
    }
    mean_power_w = block.get("mean_power_w")
    return {
        "energy_source": provenance,
        "energy_kj": j_to_kj(energy_j * per_step),
        "energy_components_kj": components,
        "mean_power_w": mean_power_w / gpus if mean_power_w is not None else None,  # per GPU module
    }


def measured_figures(result: dict, candidate: Candidate, result_file: Path) -> dict:
    """One ok repeat's figures on the fixed workload (the fields of ProbeResult, plus the block)."""
    step_time_s = result["step_time_s"]["mean"]
    scale_steps = workload_steps(candidate)
    return {
        "result_file": str(result_file),
        "time_s": step_time_s * scale_steps,
        "step_time_s": step_time_s,
        "tflops": result["tflops"]["model_per_device"],
        "mfu": result["mfu"],
        "peak_mem_gib": result.get("peak_memory_gib"),
        # On CPU the peak is the process's resident set, not device memory: the sampler must not
        # read it against the device's memory estimate (outlook.py, `_chance_to_fit`).
        "peak_mem_kind": result.get("peak_memory_kind"),
        "phases_s": _phases_s(result),
        "energy": result.get("energy"),
        **_energy_figures(result.get("energy"), result["steps"]["measured"], scale_steps, candidate.gpus),
    }


def _mean(values: list) -> float | None:
    return None if any(v is None for v in values) else statistics.fmean(values)


def _cv(values: list) -> float | None:
    """Coefficient of variation (sample standard deviation / mean); None where a value is missing."""
    if any(v is None for v in values) or len(values) < 2 or statistics.fmean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def _energy_source(sources: list[str]) -> str:
    """The weakest provenance over repeats: one unavailable repeat makes the mean unavailable."""
    for weakest in ("unavailable", "estimated"):
        if weakest in sources:
            return weakest
    return sources[0]


def ok_result(repeats: list[dict], trial_dir: Path, **extra_details) -> ProbeResult:
    """Objective values are means over repeats; the first repeat's energy block is kept whole."""
    source = _energy_source([r["energy_source"] for r in repeats])
    energies = [r["energy_kj"] for r in repeats] if source != "unavailable" else [None]
    components = {name: _mean([r["energy_components_kj"].get(name) for r in repeats])
                  for name in repeats[0]["energy_components_kj"]} if source != "unavailable" else {}
    details = {
        "energy": repeats[0]["energy"],
        "phases_s": repeats[0]["phases_s"],
        "peak_mem_kind": repeats[0].get("peak_mem_kind"),
        "repeats": [_repeat_figures(r) for r in repeats],
        "trial_dir": str(trial_dir),
        **extra_details,
    }
    if len(repeats) > 1:
        details["cv"] = {"time": _cv([r["time_s"] for r in repeats]), "energy": _cv(energies)}
    return ProbeResult(
        status="ok",
        source="measured",
        energy_source=source,
        time_s=_mean([r["time_s"] for r in repeats]),
        energy_kj=_mean(energies),
        tflops=_mean([r["tflops"] for r in repeats]),
        mfu=_mean([r["mfu"] for r in repeats]),
        step_time_s=_mean([r["step_time_s"] for r in repeats]),
        peak_mem_gib=max((r["peak_mem_gib"] for r in repeats if r["peak_mem_gib"] is not None), default=None),
        energy_components_kj={k: v for k, v in components.items() if v is not None},
        mean_power_w=_mean([r["mean_power_w"] for r in repeats]) if source != "unavailable" else None,
        details=details,
    )


def not_ok_result(status: str, error: str, trial_dir: Path, log_path: Path, *, name_exception: bool = False,
                  **details) -> ProbeResult:
    """oom, failed or timeout: no figures; the error and the end of the log say why. `name_exception`:
    the error gets the last exception the last launch's output shows (a probe that wrote no result says no more
    itself)."""
    tail = log_tail(log_path)
    raised = last_exception_line(launch_output(log_path)) if name_exception else None
    return ProbeResult(
        status=status,
        source="measured",
        energy_source="unavailable",
        error=error + (f": {raised}" if raised else ""),
        details={"trial_dir": str(trial_dir), "log_tail": tail, **details},
    )


def _repeat_figures(repeat: dict) -> dict:
    """What details["repeats"] keeps of one ok repeat's figures (measured_figures)."""
    return {k: repeat[k] for k in ("result_file", "time_s", "energy_kj", "step_time_s", "tflops", "energy_source")}


def ended_at_repeat(outcome: ProbeResult, repeat: int, repeats: int, finished: list[dict]) -> ProbeResult:
    """`outcome` of repeat `repeat` of `repeats`, which was not ok and so ends its trial with its status
    (docs/launch.md), saying which repeat it was and what the repeats before it measured (`finished`: their
    measured_figures), which stay on the trial as `details["finished_repeats"]`: a timeout in repeat 2 read as the
    candidate's only probe, and repeat 1's measurement was said nowhere (trial79 #9)."""
    if repeats == 1:
        return outcome
    error = f"repeat {repeat} of {repeats}: {outcome.error}"
    if finished:
        numbers = ", ".join(str(number) for number in range(1, len(finished) + 1))
        steps_s = ", ".join(f"{r['step_time_s']:.3g}" for r in finished)
        files = ", ".join(Path(r["result_file"]).name for r in finished)
        error += (f"; repeat{'s' if len(finished) > 1 else ''} {numbers} finished ok ({steps_s} s per step, kept in "
                  f"{files})")
    details = {**outcome.details, "ended_at_repeat": repeat}
    if finished:
        details["finished_repeats"] = [_repeat_figures(r) for r in finished]
    return dataclasses.replace(outcome, error=error, details=details)


@functools.lru_cache(maxsize=1024)
def _steps_cv(result_file: str, mtime_ns: int) -> float | None:
    """CV of one probe's measured step times, read once per version of its result.json (every output
    of one report asks for it)."""
    try:
        steps_s = json.loads(Path(result_file).read_text(encoding="utf-8"))["step_time_s"]["all"]
        mean_s = statistics.fmean(steps_s)
    except (TypeError, OSError, ValueError, KeyError, statistics.StatisticsError):
        return None
    # One step has no scatter to measure: no figure, rather than a noise of 0.
    return statistics.stdev(steps_s) / mean_s if len(steps_s) > 1 and mean_s > 0 else None


def _window_cv(result_file) -> float | None:
    """None where the file is gone (a run directory moved since the probe wrote the path)."""
    try:
        return _steps_cv(str(result_file), Path(result_file).stat().st_mtime_ns)
    except (TypeError, OSError):
        return None


def step_time_cv(details: dict) -> float | None:
    """Within-probe step-time CV of a trial: the one its record carries (a replayed measurement's), else
    the mean over its repeats' result files while they are there; None where neither is."""
    if details.get("step_time_cv") is not None:
        return details["step_time_cv"]
    values = [_window_cv(r.get("result_file")) for r in details.get("repeats") or [] if isinstance(r, dict)]
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None
