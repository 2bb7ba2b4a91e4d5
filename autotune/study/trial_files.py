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
from autotune.backends.probe_options import probe_bounds
from autotune.backends.probe_outcome import measured_figures, not_ok_result, ok_result, read_result
from autotune.backends.replay import checked_record, measurement_record, study_of
from autotune.backends.repeat_takeover import RUNS_FILE, read_record, result_name
from autotune.backends.result_check import checked_problem, lacking_field, result_fault, scaled_figure_fault
from autotune.candidate import candidate_from_dict, params_key
from autotune.checks import checked_number, shown
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
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
            # A damage _record does not trace to its field: this trial's, not study.db's, whose refusal ("start the
            # study over") it became, every intact trial lost with it (trial78 #11).
            left_out.append(f"trial {number}: its files in {folder} are damaged ({' '.join(str(exc).split())[:120]})")
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
    repeats = _repeats(folder, runs)
    figures, results, walls_s = [], [], []
    outcome: ProbeResult | None = None
    for repeat in range(1, repeats + 1):
        path = folder / result_name(repeat, repeats)
        result = read_result(path)
        if result is None:
            raise _LeftOut(f"{path.name} is missing or unreadable (its probe was interrupted, or never ran)")
        wall_s = _wall_s(folder, runs, repeat)
        if wall_s is not None:
            walls_s.append(wall_s)
        if result["status"] != "ok":  # a repeat that is not ok decides the trial, as when it was probed
            outcome = not_ok_result(str(result["status"]), str(result.get("error") or "no reason given"), folder,
                                    folder / "log.txt")
            break
        try:
            figures.append(measured_figures(result, candidate, path))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            # The field and value it could not compute with: its exception's text named neither (trial78 #11).
            raise _LeftOut(f"{path} {result_fault(result, candidate) or lacking_field(result) or f'lacks a figure ({exc!r})'}"
                           ) from None
        # A damaged file leaves its trial out with a line naming the file, the field and its value, and the intact
        # trials are written (trial76 #3: one such file stopped the export as "a bug to report").
        damaged = scaled_figure_fault(figures[-1], result, candidate.knobs.to_dict())
        if damaged:
            raise _LeftOut(f"{path} {damaged}; a replay would refuse it")
        results.append(result)
    if outcome is None:
        outcome = ok_result(figures, folder, **measured_default_limit(results))
    if walls_s:
        outcome = replace(outcome, details={**outcome.details, "probe_cost": probe_cost(walls_s, figures)})
    record = measurement_record(candidate.knobs.to_dict(), outcome.to_dict(), study_of(candidate))
    if record is None:
        raise _LeftOut(f"its status {outcome.status!r} is none a replay takes")
    try:  # what scaled_figure_fault cannot trace to one field (probe_runs.json's wall times: the probe's cost)
        checked_record("its record", json.loads(json.dumps(record)))
    except ConfigError as why:
        raise _LeftOut(f"its files give a record a replay refuses ({checked_problem(why)})") from None
    return record


def _repeats(folder: Path, runs: dict | None) -> int:
    """The repeats the probe was asked for (probe_runs.json's probe_settings), checked as the --repeats flag is: a
    hand-edited "abc" or -3 was a ValueError that ended the export as a damaged study.db, and 2.5 was read as 2
    (trial78 #11)."""
    if not runs:
        return 1
    try:
        return checked_number(str(folder / RUNS_FILE), "probe_settings.--repeats", runs["probe_settings"].get("--repeats", 1),
                              **{k: v for k, v in probe_bounds("repeats").items() if k != "fix"})
    except ConfigError as why:
        raise _LeftOut(f"{why} (the repeats its probe was asked for)") from None


def _wall_s(folder: Path, runs: dict | None, repeat: int) -> float | None:
    """One repeat's wall time in probe_runs.json (its cost), None where it holds none."""
    entry = runs["runs"].get(str(repeat)) if runs else None  # read_record: "runs" is an object
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise _LeftOut(f"{folder / RUNS_FILE} has runs.{repeat} = {shown(entry)}, not an object with its wall_s")
    wall_s = entry.get("wall_s")
    return float(wall_s) if isinstance(wall_s, (int, float)) and not isinstance(wall_s, bool) else None

