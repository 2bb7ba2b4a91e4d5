"""A trial's repeats on disk, and what a retry takes over from the trials it probes again.

With `repeats=N` a probe of one candidate runs N times (result-1.json ... result-N.json). A run stopped
during repeat k (Ctrl-C, scancel, a killed tuner) leaves repeats 1 ... k-1 complete; the resumed study
probes the candidate again as a new trial (study/retries.py), which takes those results over instead
of measuring them again: a real probe holds many GPUs for minutes.

Not all a repeat was measured with is in its result: --probe-seconds and --repeats are the tuner's. So
every trial directory keeps `probe_runs.json` (`RunRecord`) beside its results: the probe settings it
ran with and, per repeat, when it started, how long it took on the tuner's clock, or which file it was
taken over from. A result is taken over only when it is a complete, ok result of the same candidate,
DeepSpeed config and probe settings, from a trial the study says this one repeats; it is copied, never
moved: the earlier trial keeps everything it measured.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from autotune.atomic_write import write_text_atomic
from autotune.backends.base import setting_changes
from autotune.backends.probe_outcome import measured_figures
from autotune.backends.result_check import result_fault
from autotune.candidate import Candidate

RUNS_FILE = "probe_runs.json"
# How a repeat's wall time is known: the tuner's clock from the launcher's start to its end, or (the
# tuner died before it could read its clock) from the repeat's recorded start to its result file's
# last write, which leaves out the teardown after it: a lower bound.
WALL_RECORDED, WALL_LOWER_BOUND = "recorded", "lower_bound"
_RESULT_NAME = re.compile(r"result(?:-(\d+))?\.json")


def trial_folder(trials_root: Path, trial_number: int) -> Path:
    """A trial's directory under the run's `trials/`: the launch backend writes there, the report reads it."""
    return Path(trials_root) / f"{trial_number:04d}"


def result_name(repeat: int, repeats: int) -> str:
    return "result.json" if repeats == 1 else f"result-{repeat}.json"


def _json(data) -> object:
    """As the data reads back from a JSON file (tuples become lists), to compare with what a file holds."""
    return json.loads(json.dumps(data))


class RunRecord:
    """`probe_runs.json` of one trial: {"probe_settings": {flag: value}, "runs": {"1": {...}, ...}}, each
    run with `started_unix_s` and `wall_s` (a probe the tuner ran) or `wall_s`, `wall` and `taken_over_from`
    (a result taken over). Written whole after every change, so a killed tuner leaves the last state."""

    def __init__(self, trial_dir: Path, probe_settings: dict):
        self.path = Path(trial_dir) / RUNS_FILE
        self.data = {"probe_settings": dict(probe_settings), "runs": {}}
        self._write()

    def started(self, repeat: int) -> None:
        self._update(repeat, started_unix_s=time.time())

    def ended(self, repeat: int, wall_s: float) -> None:
        self._update(repeat, wall_s=wall_s)

    def taken_over(self, taken: TakenOver) -> None:
        self._update(taken.repeat, wall_s=taken.wall_s, wall=taken.wall, taken_over_from=str(taken.source))

    def _update(self, repeat: int, **fields) -> None:
        self.data["runs"].setdefault(str(repeat), {}).update(fields)
        self._write()

    def _write(self) -> None:
        write_text_atomic(self.path, json.dumps(self.data, indent=2) + "\n")


def read_record(trial_dir: Path) -> dict | None:
    try:
        data = json.loads((Path(trial_dir) / RUNS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and isinstance(data.get("probe_settings"), dict) and isinstance(data.get("runs"), dict)
    return data if ok else None


@dataclass(frozen=True)
class TakenOver:
    """One repeat's result taken over from an earlier trial of the same candidate."""

    repeat: int
    trial: int  # the earlier trial's number
    source: Path  # its result file
    text: str  # the file as read (copied byte for byte into the new trial)
    result: dict
    wall_s: float
    wall: str  # WALL_RECORDED or WALL_LOWER_BOUND


@dataclass(frozen=True)
class Expected:
    """What a result must have been measured with to count as a repeat of this trial."""

    candidate: Candidate
    ds_config: dict
    probe_settings: dict  # LaunchBackend.probe_settings(): {"--warmup-steps": 2, ..., "--repeats": 3}

    @property
    def repeats(self) -> int:
        return int(self.probe_settings["--repeats"])


def take_over(expected: Expected, earlier: list[tuple[int, Path]]) -> tuple[dict[int, TakenOver], list[str]]:
    """The repeats this trial need not run again: {repeat: TakenOver}, from the earlier trials' directories
    (`earlier`: (trial number, directory), the nearest first; a retry that took results over holds copies,
    so the nearest that has one is named), and one line per result file found but not taken, saying why."""
    taken: dict[int, TakenOver] = {}
    refused: list[str] = []
    for number, folder in earlier:
        record = read_record(folder)
        for path in sorted(Path(folder).glob("result*.json")):
            matched = _RESULT_NAME.fullmatch(path.name)
            if matched is None:
                continue
            repeat = int(matched.group(1) or 1)
            if repeat in taken:
                continue  # a nearer trial's copy of it was taken
            found = _checked(path, repeat, number, record, expected)
            if isinstance(found, str):
                refused.append(f"did not take over {path}: {found}")
            else:
                taken[repeat] = found
    return taken, refused


def _checked(path: Path, repeat: int, number: int, record: dict | None, expected: Expected) -> TakenOver | str:
    """The repeat to take over, or why not (one line)."""
    try:
        text = path.read_text(encoding="utf-8")
        result = json.loads(text)
    except (OSError, ValueError) as exc:
        return f"unreadable or partial ({type(exc).__name__})"
    if not isinstance(result, dict) or "schema_version" not in result or "status" not in result:
        return "not a probe's result.json"
    if result["status"] != "ok":
        return f"its status is {result['status']!r}, not ok"
    if record is None:
        return f"no {RUNS_FILE} beside it to say the probe settings it ran with (a trial of an earlier autotune)"
    changed = setting_changes(record["probe_settings"], expected.probe_settings)
    if changed:
        return f"probed with other settings ({'; '.join(changed)})"
    if repeat > expected.repeats or path.name != result_name(repeat, expected.repeats):
        return f"not a repeat of {expected.repeats}"
    wanted = _json(expected.candidate.to_dict())
    ran = result.get("candidate") if isinstance(result.get("candidate"), dict) else {}
    differ = [part for part in wanted if ran.get(part) != wanted[part]]
    if differ:
        return f"a result of another candidate (its {', '.join(differ)} differ)"
    if result.get("ds_config") != _json(expected.ds_config):
        return "trained with another DeepSpeed config than this candidate's"
    # The record says what the probe was asked; the result, what it ran: they must agree.
    steps = result.get("steps") if isinstance(result.get("steps"), dict) else {}
    warmup, measured = steps.get("warmup"), steps.get("measured")
    asked_warmup, asked_measured = expected.probe_settings["--warmup-steps"], expected.probe_settings["--probe-steps"]
    if warmup != asked_warmup or not isinstance(measured, int) or measured < asked_measured:
        return (f"it ran {warmup} warm-up and {measured} measured steps, not the {asked_warmup} and at least "
                f"{asked_measured} asked")
    try:
        measured_figures(result, expected.candidate, path)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        return f"it lacks a figure the backend needs ({exc!r})"
    fault = result_fault(result, expected.candidate)
    if fault is not None:
        return f"it {fault}"
    wall = _wall(path, record["runs"].get(str(repeat)))
    if isinstance(wall, str):
        return wall
    return TakenOver(repeat=repeat, trial=number, source=path, text=text, result=result, wall_s=wall[0], wall=wall[1])


def _wall(path: Path, run: dict | None) -> tuple[float, str] | str:
    """(seconds, how known) of the repeat that wrote `path`, from its record; or why it is not known."""
    run = run if isinstance(run, dict) else {}
    if isinstance(run.get("wall_s"), (int, float)):
        return float(run["wall_s"]), run.get("wall", WALL_RECORDED)
    started = run.get("started_unix_s")
    if not isinstance(started, (int, float)):
        return f"{RUNS_FILE} has no start or duration of repeat {path.name}"
    written_s = path.stat().st_mtime - started
    if written_s < 0:
        return "written before its repeat started (a stale file)"
    return written_s, WALL_LOWER_BOUND


def taken_over_line(taken: dict[int, TakenOver], repeats: int) -> str:
    """One log line: which repeats were taken over from where, and which run now."""
    by_trial: dict[int, list[TakenOver]] = {}
    for item in sorted(taken.values(), key=lambda t: t.repeat):
        by_trial.setdefault(item.trial, []).append(item)
    parts = [f"{_repeats_text([t.repeat for t in items])}{f' of {repeats}' if not i else ''} from trial {number} "
             f"({items[0].source.parent})" for i, (number, items) in enumerate(by_trial.items())]
    missing = [r for r in range(1, repeats + 1) if r not in taken]
    left = f"running {_repeats_text(missing)}" if missing else "nothing left to run"
    lower = [t.repeat for t in taken.values() if t.wall == WALL_LOWER_BOUND]
    bound = (f"; the wall time of {_repeats_text(lower)} was not recorded (the tuner was killed during it): counted "
             "from its start to its result's write, a lower bound") if lower else ""
    return f"took over {', '.join(parts)}: complete ok results of this candidate under these probe settings; {left}{bound}"


def taken_over_words(taken: dict[int, TakenOver], repeats: int) -> str:
    """A retry's take-over in a few words, for its start line on the console: "takes over repeat 1 of 2, runs
    repeat 2"; "" where it takes over nothing (a first attempt, or a retry that measures every repeat again)."""
    if not taken:
        return ""
    missing = [r for r in range(1, repeats + 1) if r not in taken]
    return f"takes over {_repeats_text(list(taken))} of {repeats}, runs {_repeats_text(missing) if missing else 'none'}"


def kept_line(trial: int, stopped_repeat: int, kept: dict[int, TakenOver], repeats: int) -> str:
    """The console's line when a run was stopped during `stopped_repeat` of `trial`: the finished repeats a
    resume takes over (`kept`, as take_over finds them in that trial's directory), so a user who scancels
    a job knows what the stop cost. "" where none is kept."""
    if not kept:
        return ""
    one = len(kept) == 1
    return (f"trial {trial} stopped during repeat {stopped_repeat} of {repeats}: its finished {_repeats_text(list(kept))} "
            f"{'is' if one else 'are'} kept, and the same command takes {'it' if one else 'them'} over")


def _repeats_text(numbers: list[int]) -> str:
    return f"repeat{'s' if len(numbers) > 1 else ''} {', '.join(map(str, sorted(numbers)))}"
