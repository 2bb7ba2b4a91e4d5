"""The replay records of a run directory's probes read from their own files in RUN_DIR/trials/, for a study whose
study.db cannot be read (a full disk or a quota mid-write, a crash: trial69 #14).

Measured probes are the expensive part of a study, and each leaves its trial directory: candidate.json (what was
probed), result.json (result-1.json ... result-N.json with repeats) and probe_runs.json (the probe settings and each
repeat's wall time). From them each probe's figures are worked out as the launch backend worked them out when it
probed (probe_outcome.measured_figures, ok_result), and given as the records `export --measurements` writes from a
study: a replay of them (`run --backend replay --measurements FILE`) rebuilds the study without probing again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from autotune.backends.base import ProbeResult
from autotune.backends.launch import measured_default_limit, probe_cost
from autotune.backends.probe_outcome import measured_figures, not_ok_result, ok_result, read_result
from autotune.backends.replay import checked_record, measurement_record, study_of
from autotune.backends.repeat_takeover import read_record, result_name
from autotune.candidate import candidate_from_dict, params_key
from autotune.checks import shown
from autotune.errors import ConfigError
from autotune.study.storage_failure import trial_folders_with_results


class _LeftOut(Exception):
    """Why a trial directory gives no record (its message)."""


def trial_file_records(run_dir: Path) -> tuple[list[tuple[int, dict]], list[str]]:
    """(trial number, replay record) of each probed candidate in RUN_DIR/trials/, and "trial N: why" for each trial
    directory left out. A candidate probed again (a retry after an interruption or a set-up failure) keeps its
    later trial's record, as the study kept the retry's outcome."""
    by_candidate: dict[str, tuple[int, dict]] = {}
    left_out = []
    for folder in sorted(trial_folders_with_results(run_dir), key=lambda folder: int(folder.name)):
        number = int(folder.name)
        try:
            record = _record(folder)
        except _LeftOut as why:
            left_out.append(f"trial {number}: {why}")
            continue
        by_candidate[params_key(record["params"])] = (number, record)
    return sorted(by_candidate.values(), key=lambda item: item[0]), left_out


def _record(folder: Path) -> dict:
    """The replay record of the probe in one trial directory."""
    try:
        text = (folder / "candidate.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _LeftOut("it holds no candidate.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _LeftOut(f"its candidate.json cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        candidate = candidate_from_dict(json.loads(text))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # ConfigError is a ValueError
        raise _LeftOut(f"its candidate.json is damaged ({' '.join(str(exc).split())[:120]})") from None
    runs = read_record(folder)  # probe_runs.json: the repeats asked, each one's wall time
    repeats = int(runs["probe_settings"].get("--repeats", 1)) if runs else 1
    figures, results, walls_s = [], [], []
    outcome: ProbeResult | None = None
    for repeat in range(1, repeats + 1):
        path = folder / result_name(repeat, repeats)
        result = read_result(path)
        if result is None:
            raise _LeftOut(f"{path.name} is missing or unreadable (its probe was interrupted, or never ran)")
        wall_s = ((runs or {}).get("runs") or {}).get(str(repeat), {}).get("wall_s")
        if isinstance(wall_s, (int, float)):
            walls_s.append(float(wall_s))
        if result["status"] != "ok":  # a repeat that is not ok decides the trial, as when it was probed
            outcome = not_ok_result(str(result["status"]), str(result.get("error") or "no reason given"), folder,
                                    folder / "log.txt")
            break
        try:
            figures.append(measured_figures(result, candidate, path))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise _LeftOut(f"{path} lacks a figure ({exc!r})") from None
        _check_figures(figures[-1], result, path, candidate.knobs.to_dict())
        results.append(result)
    if outcome is None:
        outcome = ok_result(figures, folder, **measured_default_limit(results))
    if walls_s:
        outcome = replace(outcome, details={**outcome.details, "probe_cost": probe_cost(walls_s, figures)})
    record = measurement_record(candidate.knobs.to_dict(), outcome.to_dict(), study_of(candidate))
    if record is None:
        raise _LeftOut(f"its status {outcome.status!r} is none a replay takes")
    try:  # what _check_figures cannot trace to one field (probe_runs.json's wall times: the probe's cost)
        checked_record("its record", json.loads(json.dumps(record)))
    except ConfigError as why:
        raise _LeftOut(f"its files give a record a replay refuses ({_problem(why)})") from None
    return record


# Each figure of a record and the field of result.json it is worked out from (docs/result-schema.md).
_RESULT_FIELDS = {"time_s": ("step_time_s", "mean"), "energy_kj": ("energy", "energy_j"),
                  "tflops": ("tflops", "model_per_device"), "peak_mem_gib": ("peak_memory_gib",)}


def _check_figures(figures: dict, result: dict, path: Path, params: dict) -> None:
    """A figure a replay would refuse (a negative energy, a zero step time), traced to its field in result.json: a
    damaged file leaves its trial out with a line naming the file, the field and its value, and the intact trials
    are written (trial76 #3: one such file stopped the export as "a bug to report"). The bounds are the replay's own
    (checked_record), one figure at a time, time_s first: an ok record needs it."""
    for key, field in _RESULT_FIELDS.items():
        if figures.get(key) is None:
            continue
        try:
            checked_record("it", {"params": params, "time_s": figures["time_s"], key: figures[key]})
        except ConfigError as why:
            raw = result
            for part in field:
                raw = raw[part]
            raise _LeftOut(f"{path} has {'.'.join(field)} = {shown(raw)}, a damaged figure (scaled to the workload: "
                           f"{_problem(why)}); a replay would refuse it") from None


def _problem(why: ConfigError) -> str:
    """The checked value's problem, without the origin and the record format's fix, which are not the user's."""
    return str(why).split(": ", 1)[-1].split("; see `autotune run --help`")[0]
