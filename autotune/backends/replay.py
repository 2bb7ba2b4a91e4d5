"""The `replay` backend: a candidate is evaluated by looking up its recorded result.

A study measured on one cluster can be re-run and re-analysed anywhere, and tuner tests and search
benchmarks run in milliseconds. The file (`--measurements FILE`) is either

- JSON lines, one record per candidate (what `autotune export RUN_DIR --measurements FILE` writes):
  {"params": {<every knob>: value}, "status": "ok"|"oom"|"failed", "time_s", "energy_kj", "tflops",
   "peak_mem_gib" (optional), "peak_mem_kind" (optional: what that figure is, the trainer's
   process_peak_rss | cuda_max_memory_allocated), "source" (optional: measured | estimated | simulated;
   default measured)}
  `source` "estimated" means measured time and energy estimated from a power model, as the launch
  backend reports a probe without an energy sensor. An optional "probe_cost" {"time_s", "energy_kj",
  "energy_scope" (optional: "window" where the energy is the measured windows' only, a lower bound),
  "window_s" (optional: those windows' seconds), "energy_provenance" (optional: measured | estimated |
  unavailable)} keeps what the original probe cost, for the report's
  tuning cost; an optional "noise" {"runs", "time_cv", "energy_cv", "step_time_cv"} the spread the probe
  measured (its repeats' coefficients of variation, its measured steps' time CV; each optional), so a
  replayed report marks changes within noise as the original did; an optional
  "energy_not_measured" (["cpu", "memory_interconnect"]) the parts of the node no sensor saw, so a
  replayed GPU-only energy is still reported as one, an optional "default_power_limit_w" (W) the default power
  limit NVML reported on the devices of a probe that set a limit (backends.launch.measured_default_limit), so a
  replayed report gives a pick's limit in watts of that default, not of the profile's, and an optional "study" {"model", "hardware",
  "gpus_per_node", "frames", "text_tokens", "global_batch", "samples", "precision", "model_sizes" (optional)}: what the
  figures were measured for, which no knob says (a 7b file replayed as --model 32b would otherwise pass); its
  model_sizes {"llm", "vision"} are the model's sizes as the study.db keeps them (ModelSpec.to_json: a resume checks
  them), so that a model file or config.json of another size under the same name is refused too, and, in a simulated
  or estimated record, its profile {"name", "sha256", "hardware"} (PROFILE: the profile whose figures they are);
- or the JSON list `autotune space --simulate --json` prints (entries with "valid": false are not
  candidates and are skipped).

Records without `power_limit` / `sm_clock_mhz` (files from before those knobs) mean untouched (1.0 /
"max"). A study searches the recorded candidates only (`evaluable`: the others are invalid, their
reason "no record"), and a candidate evaluated without a record (an Optuna API caller's) is a failed
trial whose reason says so; a file with no record of any valid candidate of the study is refused
before the study opens, and records the study cannot use (knob values its space lacks, node counts
outside --nodes, candidates it rules out) are said in one line (replay_fit.py). Every value is checked
for type and range where it is read, with one line naming the file, the line and the key.
"""

from __future__ import annotations

import functools
import json
import math
import re
import stat
import sys
from dataclasses import asdict
from pathlib import Path

from autotune.backends.base import Backend, ProbeResult
from autotune.backends.probe_outcome import step_time_cv
from autotune.backends.replay_figures import (
    default_limit_disagreement, default_limit_refusal, figure_problems, peak_memory_refusal,
)
from autotune.backends.replay_fit import (
    claimed_node, mixed_studies, none_usable, not_replayed, not_replayed_text, other_model_sizes, other_profile, other_study,
)
from autotune.candidate import KNOBS, UNTOUCHED_DEVICE_SETTINGS, Candidate, knob_value, params_key
from autotune.counted import agreeing, counted
from autotune.checks import (
    MAX_COUNT, checked_number, complete_table, number_problem, refuse_duplicate_keys, refuse_unknown_keys, shown,
)
from autotune.errors import ConfigError
from autotune.hardware import claimed_node_problem
from autotune.memory import HOST_PEAK_KINDS
from autotune.models import MODEL_SIZE_PARTS, ModelSpec, model_from_json
from autotune.text_files import decoded_text
from autotune.measure.combine import SEPARATE_COMPONENTS, not_measured

SOURCES = ("measured", "estimated", "simulated")
RECORD_STATUSES = ("ok", "oom", "failed")
# What a probe's peak memory figure is, as the trainer names it (trainer/result.py): kept through export and replay,
# so a replayed CPU study still reads "process peak RSS", not "measured" (trial60 #8), and is not taken for a device's.
PEAK_MEM_KINDS = (*HOST_PEAK_KINDS, "cuda_max_memory_allocated")
_FIX = "see `autotune run --help` (--measurements) for the record format"
_RECORD_KEYS = ("params", "status", "time_s", "energy_kj", "tflops", "peak_mem_gib", "peak_mem_kind", "source", "error", "probe_cost",
                "energy_not_measured", "study", "noise", "default_power_limit_w")
# A record's `probe_cost.energy_scope`: "window" = energy seen only in the measured windows (a lower bound).
ENERGY_SCOPES = ("window",)
# A record's `probe_cost.energy_provenance`: how its energy was had (a failed probe's record has no `source` for it).
COST_PROVENANCES = ("measured", "estimated", "unavailable")
# A record's `noise`: the probe's runs (--repeats) and coefficients of variation (report/noise.py).
NOISE_CVS = ("time_cv", "energy_cv", "step_time_cv")
# A record's `study`: each part, and the flag that sets it (named when a replay asks for another).
STUDY_FLAGS = {"model": "--model", "hardware": "--hardware", "gpus_per_node": "--gpus-per-node", "frames": "--frames",
               "text_tokens": "--text-tokens", "global_batch": "--global-batch", "samples": "--samples",
               "precision": "--precision"}
_STUDY_NAMES = ("model", "hardware", "precision")
# A record's `study.model_sizes`, optional (records of an older autotune, or written by hand, have none): the model's
# sizes beyond its name, which a model file or config.json keeping another's name (a depth-pruned variant) differs in.
MODEL_SIZES = "model_sizes"
# A simulated or estimated record's `study.profile`: the hardware profile whose figures made it, {"name", "sha256" (of
# what its figures depend on: hardware.simulation_sha256), "hardware" (the --hardware it was given as)}. `study.hardware`
# names the node, whose every calibration replays what was measured on it; a simulation is its profile's own, and an
# export on a calibrated profile was replayed and compared as its base's figures (trial64 #2).
PROFILE = "profile"
PROFILE_KEYS = ("name", "sha256", "hardware")
# The records whose figures a profile made (all, or the energy): a measured record's study names its node alone.
PROFILE_SOURCES = ("simulated", "estimated")
# What `autotune space --simulate --json` adds beside a record's keys.
_SPACE_LIST_KEYS = ("valid", "reason", "simulator_error_pct")  # the last: the profile's, which replay reads itself
# What JSON calls what Python parsed (a record that is `null` was "not NoneType").
_JSON_TYPES = {type(None): "null", str: "a string", int: "a number", float: "a number", bool: "true or false", list: "a list"}


def _choice(origin: str, key: str, value, allowed: tuple):
    if value not in allowed or isinstance(value, bool):
        raise ConfigError(f"{origin}: {key} = {shown(value)} is not one of {', '.join(map(shown, allowed))}; {_FIX}")
    return value


def _checked_params(origin: str, params) -> dict:
    if not isinstance(params, dict):
        raise ConfigError(f"{origin}: params = {shown(params)} is not an object of knob values; {_FIX}")
    refuse_unknown_keys(origin, params, KNOBS, _FIX)
    missing = [k for k in KNOBS if k not in params and k not in UNTOUCHED_DEVICE_SETTINGS]
    if missing:
        raise ConfigError(f"{origin}: params lacks {', '.join(missing)}; every knob needs a value ({_FIX})")
    values = {**UNTOUCHED_DEVICE_SETTINGS, **params}
    return {knob: _knob_value(origin, knob, values[knob]) for knob in KNOBS}


def _knob_value(origin: str, knob: str, value):
    try:
        return knob_value(knob, value)
    except ValueError as why:
        raise ConfigError(f"{origin}: params.{knob} = {shown(value)} {why}; {_FIX}") from None


MAX_FIGURE = 1e12  # above any real probe's seconds, kJ, TFLOP/s or GiB: a larger figure is a damaged record
# A record's time_s and energy_kj are to process the study's --samples, which may be up to MAX_COUNT (1e12): a
# simulated 32b study of 1e12 samples on 4 nodes took 3.7e12 kJ, and its own `export --measurements` could not be
# replayed. A million seconds or kJ a sample is past any training's.
MAX_SOLUTION_FIGURE = MAX_COUNT * 1e6
# The least time_s / energy_kj a record (and a pareto.json point, which compare reads) may hold: far below any
# probe's (a tiny model's simulated step is ~1e-4), and high enough that a change in percent against it stays
# finite (1e-320 read as +inf%, and compare --json died of it: trial 58 F4). One bound for replay, export
# --measurements and compare: a record replay took was refused by compare once its study reported it.
MIN_SOLUTION_FIGURE = 1e-12
# The most a record's default_power_limit_w may be where it is read: the bound a hardware profile's [power] module_cap_w
# (the default limit it assumes) has (hardware/load.py); more is a damaged record, or mW written as W. What the
# study's own profile allows is checked once it is known (replay_figures.default_limit_refusal).
MAX_POWER_LIMIT_W = 1.0e5


def _optional_number(origin: str, record: dict, key: str, low_open: bool = False, high: float = MAX_FIGURE,
                     low: float = 0):
    value = record.get(key)
    return None if value is None else checked_number(origin, key, value, low=low, low_open=low_open, high=high, fix=_FIX)


def model_sizes(model: ModelSpec) -> dict:
    """{"llm", "vision"}: a model's sizes as the study.db keeps them (ModelSpec.to_json, which a resume compares:
    "its sizes differ"), its name and default workload apart (a record's study names the model and its workload)."""
    data = model.to_json()
    return {part: data[part] for part in MODEL_SIZE_PARTS}


def study_of(candidate: Candidate) -> dict:
    """What a candidate's figures are for beyond its knobs: a record's `study` (the hardware by its node:
    figures measured on gh200 nodes replay under every calibration of gh200), the model by its sizes too, and
    the profile, which measurement_record keeps for the figures it made (PROFILE_SOURCES)."""
    return {"model": candidate.model.name, "hardware": candidate.hardware.base_name, "gpus_per_node": candidate.gpus_per_node,
            **{key: getattr(candidate.workload, key) for key in ("frames", "text_tokens", "global_batch", "samples", "precision")},
            MODEL_SIZES: model_sizes(candidate.model), PROFILE: profile_of(candidate.hardware)}


def profile_of(hardware) -> dict:
    """A record's `study.profile` (PROFILE) for figures `hardware` made."""
    from autotune.hardware import hardware_flag

    return {"name": hardware.name, "sha256": _profile_sha256(hardware),
            "hardware": hardware_flag(hardware.source or hardware.name)}


@functools.lru_cache(maxsize=8)  # once per profile, not per record: `space --simulate --json` writes thousands
def _profile_sha256(hardware) -> str:
    from autotune.hardware import simulation_sha256

    return simulation_sha256(hardware)  # its figures' constants, not its stated error: hardware/dump.py


def _simulated_again(records: dict[str, dict], checks: list) -> bool:
    """Whether this run's profile gives each of these simulated records' figures again, where it can tell (one record
    of a candidate of the space at least). Records of an older autotune name their profile by a hash of its whole
    content, its stated error too, which a built-in's next version changed alone: its figures were refused as
    another profile's (trial73 #1); the figures themselves tell."""
    from autotune.simulator import resimulated_differs

    candidates = {params_key(asdict(c.candidate.knobs)): c.candidate for c in checks if c.valid}
    compared = [(candidates[key], record) for key, record in records.items()
                if key in candidates and record.get("time_s") is not None]
    return bool(compared) and all(resimulated_differs(candidate, record) is None for candidate, record in compared)


def _checked_profile(origin: str, profile) -> dict:
    complete_table(origin, f"study.{PROFILE}", profile, PROFILE_KEYS, _FIX,
                   f"study.{PROFILE} = {shown(profile)} is not an object of {', '.join(PROFILE_KEYS)} (the hardware "
                   "profile that made the figures)")
    for key in ("name", "hardware"):
        if not isinstance(profile[key], str) or not profile[key].strip():
            raise ConfigError(f"{origin}: study.{PROFILE}.{key} = {shown(profile[key])} is not a name; {_FIX}")
    if not isinstance(profile["sha256"], str) or not re.fullmatch("[0-9a-f]{64}", profile["sha256"]):
        raise ConfigError(f"{origin}: study.{PROFILE}.sha256 = {shown(profile['sha256'])} is not a sha256 (64 lowercase "
                          f"hexadecimal digits); {_FIX}")
    return {key: profile[key] for key in PROFILE_KEYS}


def _checked_model_sizes(origin: str, sizes) -> dict:
    """A record's study.model_sizes, every value checked as a model file's are (models.model_from_json), in the
    shape model_sizes writes (defaults filled in), so that equal sizes compare equal."""
    complete_table(origin, f"study.{MODEL_SIZES}", sizes, MODEL_SIZE_PARTS, _FIX,
                   f"study.{MODEL_SIZES} = {shown(sizes)} is not an object of llm, vision (the model's sizes)")
    return model_sizes(model_from_json(sizes, origin=f"{origin}: study.{MODEL_SIZES}"))


def _checked_study(origin: str, study) -> dict:
    if isinstance(study, dict):
        refuse_unknown_keys(f"{origin} study", study, (*STUDY_FLAGS, MODEL_SIZES, PROFILE), _FIX)
    named = {key: value for key, value in study.items() if key not in (MODEL_SIZES, PROFILE)} if isinstance(study, dict) else study
    complete_table(origin, "study", named, STUDY_FLAGS, _FIX, f"study = {shown(study)} is not an object of {', '.join(STUDY_FLAGS)}")
    out = {}
    if study.get(MODEL_SIZES) is not None:
        out[MODEL_SIZES] = _checked_model_sizes(origin, study[MODEL_SIZES])
    if study.get(PROFILE) is not None:
        out[PROFILE] = _checked_profile(origin, study[PROFILE])
    for key in STUDY_FLAGS:
        value = study[key]
        if key in _STUDY_NAMES:
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{origin}: study.{key} = {shown(value)} is not a name; {_FIX}")
            out[key] = value
        else:
            # Whole as the model and space files write them: 60.0 frames is a hand edit or another tool's float. Up to
            # MAX_COUNT as the flags that give them: 1e13 was told to write 10000000000000 (trial 63 #22).
            out[key] = checked_number(origin, f"study.{key}", value, low=1, high=MAX_COUNT, integer=True,
                                      whole_literal=True, fix=_FIX)
    return out


COST_KEYS = ("time_s", "energy_kj", "window_s", "energy_scope", "energy_provenance")


def _checked_probe_cost(origin: str, cost: dict) -> dict:
    # A misspelt key ("energy_KJ") made the tuning cost and payback "unknown" without a word.
    refuse_unknown_keys(f"{origin} probe_cost", cost, COST_KEYS, _FIX)
    out = {key: _optional_number(f"{origin} probe_cost", cost, key) for key in ("time_s", "energy_kj", "window_s")}
    for key, allowed in (("energy_scope", ENERGY_SCOPES), ("energy_provenance", COST_PROVENANCES)):
        if cost.get(key) is not None:
            out[key] = _choice(f"{origin} probe_cost", key, cost[key], allowed)
    return {key: value for key, value in out.items() if value is not None or key in ("time_s", "energy_kj")}


def _checked_noise(origin: str, noise) -> dict:
    if not isinstance(noise, dict):
        raise ConfigError(f"{origin}: noise = {shown(noise)} is not an object of runs, {', '.join(NOISE_CVS)}; {_FIX}")
    refuse_unknown_keys(f"{origin} noise", noise, ("runs", *NOISE_CVS), _FIX)
    out = {key: _optional_number(f"{origin} noise", noise, key) for key in NOISE_CVS if noise.get(key) is not None}
    if noise.get("runs") is not None:
        out["runs"] = checked_number(f"{origin} noise", "runs", noise["runs"], low=1, high=MAX_FIGURE, integer=True, fix=_FIX)
    return out


def _checked_error(origin: str, error) -> str | None:
    """A failed probe's reason: text, shown as the trial's reason (a number or object was dropped without a word)."""
    if error is not None and not isinstance(error, str):
        raise ConfigError(f"{origin}: error = {shown(error)} is not a text (the reason the probe failed); {_FIX}")
    return error


def checked_record(origin: str, record) -> dict:
    """One record, every value checked; `origin` names the file and line for the error."""
    if not isinstance(record, dict):
        raise ConfigError(f"{origin}: a record must be a JSON object, not {_JSON_TYPES.get(type(record), 'that')}; {_FIX}")
    refuse_unknown_keys(origin, record, _RECORD_KEYS + _SPACE_LIST_KEYS, _FIX)
    if "params" not in record:
        raise ConfigError(f"{origin}: the record has no params; {_FIX}")
    status = _choice(origin, "status", record.get("status", "ok"), RECORD_STATUSES)
    out = {
        "params": _checked_params(origin, record["params"]),
        "status": status,
        "source": _choice(origin, "source", record.get("source", "measured"), SOURCES),
        "error": _checked_error(origin, record.get("error")),
        # A finished probe did some work in some memory: 0 is a record damaged, or a figure rounded away.
        "tflops": _optional_number(origin, record, "tflops", low_open=True),
        "peak_mem_gib": _optional_number(origin, record, "peak_mem_gib", low_open=True),
        "time_s": _optional_number(origin, record, "time_s", low=MIN_SOLUTION_FIGURE, high=MAX_SOLUTION_FIGURE),
        "energy_kj": _optional_number(origin, record, "energy_kj", low=MIN_SOLUTION_FIGURE, high=MAX_SOLUTION_FIGURE),
    }
    if record.get("default_power_limit_w") is not None:
        out["default_power_limit_w"] = _optional_number(origin, record, "default_power_limit_w", low_open=True,
                                                        high=MAX_POWER_LIMIT_W)
    if status == "ok" and out["time_s"] is None:
        raise ConfigError(f"{origin}: an ok record needs time_s (a number >= {MIN_SOLUTION_FIGURE:g}); {_FIX}")
    # Figures are a finished probe's: on an oom or failed record they were dropped without a word (a record
    # marked "oom" by hand, perhaps the wrong one), so such a record is refused.
    figures = [key for key in ("time_s", "energy_kj", "tflops") if status != "ok" and out[key] is not None]
    if figures:
        a = "an" if status == "oom" else "a"
        raise ConfigError(f"{origin}: {a} {status} record holds {', '.join(figures)}, the figures of a probe that finished; "
                          f"set its status to \"ok\", or drop {', '.join(figures)} (export writes none for {a} {status} probe)")
    cost = record.get("probe_cost")
    if cost is not None:
        if not isinstance(cost, dict):
            raise ConfigError(f"{origin}: probe_cost = {shown(cost)} is not an object with time_s and energy_kj; {_FIX}")
        out["probe_cost"] = _checked_probe_cost(origin, cost)
    if record.get("noise") is not None:
        out["noise"] = _checked_noise(origin, record["noise"])
    left_out = record.get("energy_not_measured")
    if left_out is not None:
        if not isinstance(left_out, list) or any(part not in SEPARATE_COMPONENTS for part in left_out):
            raise ConfigError(f"{origin}: energy_not_measured = {shown(left_out)} is not a list of "
                              f"{', '.join(map(shown, SEPARATE_COMPONENTS))}; {_FIX}")
        out["energy_not_measured"] = sorted(set(left_out))
    if record.get("study") is not None:
        out["study"] = _checked_study(origin, record["study"])
    if record.get("peak_mem_kind") is not None:
        out["peak_mem_kind"] = _choice(origin, "peak_mem_kind", record["peak_mem_kind"], PEAK_MEM_KINDS)
    return out


def _entries(path: Path, text: str) -> list[tuple[str, object]]:
    """(origin, parsed JSON) per record: a JSON list (`autotune space --simulate --json`) or JSON lines."""
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text, object_pairs_hook=refuse_duplicate_keys)
        except (ValueError, RecursionError) as exc:  # nested too deep: RecursionError
            raise ConfigError(f"measurements {path}: not valid JSON ({exc}); {_FIX}") from None
        return [(f"measurements {path} entry {i + 1}", entry) for i, entry in enumerate(data)]
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            # A key given twice (a hand edit that added a figure instead of changing it) would be its last copy.
            entries.append((f"measurements {path} line {number}", json.loads(line, object_pairs_hook=refuse_duplicate_keys)))
        except (ValueError, RecursionError) as exc:
            # A record spread over lines (an editor's pretty-printing) breaks at its first line.
            lines = " (JSON lines: each record is one line)" if line.rstrip().endswith(("{", "[", ",")) else ""
            raise ConfigError(f"measurements {path} line {number}: not valid JSON ({exc}){lines}; {_FIX}") from None
    return entries


# More than a study's records could take (about a kB each): a file past it was passed by mistake.
MAX_MEASUREMENTS_BYTES = 256 << 20


def _check_space_list_keys(origin: str, entry: dict) -> None:
    """`valid` and `reason`, as `autotune space --json` writes them: a candidate listed invalid holds no figures
    (such a record was dropped without a word, its figures with it), one listed valid holds its figures."""
    if entry.get("valid") is True and "time_s" not in entry:
        raise ConfigError(f"{origin}: a candidate `autotune space --json` listed without figures; list them with "
                          "`autotune space --simulate --json`, or pass recorded results")
    if "valid" in entry and not isinstance(entry["valid"], bool):
        raise ConfigError(f"{origin}: valid = {shown(entry['valid'])} is not true or false; {_FIX}")
    if entry.get("reason") is not None and not isinstance(entry["reason"], str):
        raise ConfigError(f"{origin}: reason = {shown(entry['reason'])} is not a text (why the candidate is invalid); {_FIX}")
    figures = [key for key in ("time_s", "energy_kj", "tflops") if entry.get("valid") is False and entry.get(key) is not None]
    if figures:
        raise ConfigError(f"{origin}: a candidate listed invalid (valid false) holds {', '.join(figures)}; an invalid "
                          "candidate is never probed: drop \"valid\": false to replay its figures, or drop the figures")


def load_measurements(path: Path) -> dict[str, dict]:
    """{params_key(params): checked record}; refuses a file with no usable record or a candidate twice."""
    path = Path(path)
    if str(path) == "-":  # `ssh host cat m.jsonl | autotune run ... --measurements -`, as export writes to stdout
        data = _standard_input()
        return _records(path, data, len(data))
    try:
        status = path.stat()
        mode, size = status.st_mode, status.st_size
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero never ends
            raise ConfigError(f"--measurements {path} is a device, not a file of records; pass a JSON or JSON lines file")
        # A regular file by its size; a pipe (<(zcat m.jsonl.gz)) read up to the limit.
        data = b""
        if size <= MAX_MEASUREMENTS_BYTES:
            with open(path, "rb") as handle:
                data = handle.read(MAX_MEASUREMENTS_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read --measurements {path} ({exc.strerror or exc}); {_unreadable_fix(exc)}") from None
    return _records(path, data, size)


def _unreadable_fix(exc: OSError) -> str:
    """What to do about a file that could not be read, by why: "pass an existing file" told the owner of one
    whose mode forbids reading to look for it (trial69 #10)."""
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return "pass an existing file"
    if isinstance(exc, IsADirectoryError):
        return "pass the records file, not a folder"
    return "make it readable (check its permissions and those of its folders), or pass a readable file"


def _standard_input() -> bytes:
    """What `--measurements -` reads, up to past the limit. A process started with stdin closed (`<&-`) has
    sys.stdin None: an AttributeError traceback (trial 45 §9)."""
    fix = "pipe the records in (`autotune export RUN --measurements - | autotune run ... --measurements -`), or pass a file"
    if sys.stdin is None:
        raise ConfigError(f"--measurements -: standard input is closed; {fix}")
    try:
        return sys.stdin.buffer.read(MAX_MEASUREMENTS_BYTES + 1)
    except OSError as exc:  # EIO from a terminal that went away, say
        raise ConfigError(f"cannot read --measurements - from standard input ({exc.strerror or exc}); {fix}") from None


def _records(path: Path, data: bytes, size: int) -> dict[str, dict]:
    """The checked records of a file's bytes (`size`: the file's own, which may be past the limit unread)."""
    if max(len(data), size) > MAX_MEASUREMENTS_BYTES:  # a binary file passed by mistake held gigabytes in memory, twice
        raise ConfigError(f"--measurements {path} is larger than {MAX_MEASUREMENTS_BYTES >> 20} MiB, far more than any "
                          "study's records; pass the file `autotune export --measurements` or `autotune space --json` wrote")
    text = decoded_text(data, f"measurements {path}")  # as every file a user writes: a byte-order mark is no JSON
    records: dict[str, dict] = {}
    untold: dict[str, str] = {}  # key -> the device settings its record left out, taken as untouched
    for origin, entry in _entries(path, text):
        if isinstance(entry, dict):
            _check_space_list_keys(origin, entry)
            if entry.get("valid") is False:
                continue  # `autotune space --json` lists invalid candidates too: they are not candidates
        record = checked_record(origin, entry)
        key = params_key(record["params"])
        left_out = ", ".join(f"{knob} (taken as {value})" for knob, value in UNTOUCHED_DEVICE_SETTINGS.items()
                             if knob not in entry["params"])
        if key in records:
            # A knob deleted by hand reads as a duplicate of the untouched setting's record: say which.
            if left_out and left_out == untold[key]:
                why = f" (neither names {left_out}: records that differ only there read as one)"
            else:
                why = next((f" ({where.removeprefix(f'measurements {path} ')} has no {said})"
                            for where, said in ((origin, left_out), (records[key]["origin"], untold[key])) if said), "")
            raise ConfigError(f"{origin}: a second record for the same knobs as {records[key]['origin']}{why}; keep one")
        records[key], untold[key] = {**record, "origin": origin, "untold": left_out}, left_out
    if not records:
        raise ConfigError(f"measurements {path} holds no record of a valid candidate; {_FIX}")
    return records


def _probe_cost_details(cost: dict) -> dict:
    """A record's probe_cost in the shape the launch backend writes it (launch.probe_cost)."""
    details = {key: cost[key] for key in ("time_s", "energy_kj", "energy_scope", "energy_provenance") if key in cost}
    if "window_s" in cost:
        details["parts"] = {"window_s": cost["window_s"]}
    return details


def _noise_details(noise: dict | None) -> dict:
    """A record's noise as the launch backend's details hold it (report/noise.py reads them): "cv" over
    the repeats, "repeats" (one entry per run: the report counts them), and the step times' CV."""
    if not noise:
        return {}
    details = {}
    if noise.get("runs"):
        details["repeats"] = [{"replayed": True} for _ in range(noise["runs"])]
    if noise.get("time_cv") is not None or noise.get("energy_cv") is not None:
        details["cv"] = {"time": noise.get("time_cv"), "energy": noise.get("energy_cv")}
    if noise.get("step_time_cv") is not None:
        details["step_time_cv"] = noise["step_time_cv"]
    return details


# A failed or oom record's reason where it gives none ("failed: recorded as failed" said nothing twice).
_NO_REASON = {"oom": "out of memory in the replayed record", "failed": "its record gives no reason"}


def time_source(source: str) -> str:
    """What a record's time is, from its `source` (its energy's label): a probe without an energy sensor
    measured its time and estimated its energy, so "estimated" labels the energy alone."""
    return "measured" if source == "estimated" else source


def _result(record: dict) -> ProbeResult:
    source = record["source"]
    time_label = time_source(source)
    details = {"replayed_from": record["origin"], **_noise_details(record.get("noise"))}
    if "probe_cost" in record:
        details["probe_cost"] = _probe_cost_details(record["probe_cost"])
    if record.get("energy_not_measured"):
        details["energy"] = {"components": {"not_measured": record["energy_not_measured"]}}
    if record.get("peak_mem_kind"):
        details["peak_mem_kind"] = record["peak_mem_kind"]
    if record.get("default_power_limit_w") is not None:  # where the launch backend keeps it (report/power_limit.py reads it)
        details["default_power_limit_w"] = record["default_power_limit_w"]
    if record["status"] != "ok":
        return ProbeResult(status=record["status"], source=time_label, energy_source="unavailable",
                           error=record["error"] or _NO_REASON[record["status"]], details=details)
    return ProbeResult(
        status="ok",
        source=time_label,
        energy_source=source if record["energy_kj"] is not None else "unavailable",
        time_s=record["time_s"],
        energy_kj=record["energy_kj"],
        tflops=record["tflops"],
        peak_mem_gib=record["peak_mem_gib"],
        details=details,
    )


class ReplayBackend(Backend):
    name = "replay"
    failures_may_be_the_setup = False

    def __init__(self, path: Path, reason: str = "chosen with --backend replay"):
        self.path = Path(path)
        self.records = load_measurements(self.path)
        sources = {r["source"] for r in self.records.values()}
        # What time figures are: the records' own labels, carried through unchanged.
        self.source = "simulated" if sources == {"simulated"} else "measured"
        self.reason = reason
        self.usable: int | None = None  # records of valid candidates of this study's space (evaluable() counts them)
        self.figure_warning: str | None = None  # figures far from the simulator's (check_candidates), said once
        self.not_replayed: dict | None = None  # the records this study's space leaves out (unused_records), kept in it

    def measurements_record(self) -> dict:
        """What pareto.json's inputs name the replayed file by: its path as given, its records, and a hash of
        their content (where each was read aside: the same figures from `space --json` or an export, moved or renamed,
        hash alike; a file edited in place does not)."""
        from autotune.report.inputs import content_sha256

        content = {key: {k: v for k, v in record.items() if k not in ("origin", "untold")}
                   for key, record in self.records.items()}
        # Absolute: the path as typed named a file relative to wherever the run was started (trial 50 #14).
        where = str(self.path) if str(self.path) == "-" else str(self.path.resolve())
        record = {"file": where, "records": len(self.records), "sha256": content_sha256(content)}
        return {**record, "not_replayed": self.not_replayed} if self.not_replayed else record

    def check_candidates(self, checks: list) -> None:
        """Refuses, in one line, a file whose records say they were measured for another model,
        hardware, GPU count per node or workload (their `study`; records without one cannot be told
        apart), naming every flag that replays them (--nodes and --space too), or that holds no record of
        any valid candidate of this study (measured for another node count or space), saying why by cause:
        every probe would fail with "no record"."""
        if checks:
            # Any candidate, valid or not, names the study (they share all but their knobs): run.py asks this before
            # the space's own refusals, whose advice ("pass --global-batch 16") is for this run's flags, not the records'.
            self._check_study(study_of(checks[0].candidate), checks)
        valid = [c.candidate for c in checks if c.valid]
        if valid:
            refusal = (peak_memory_refusal(self.records, valid[0].hardware)
                       or default_limit_refusal(self.records, valid[0].hardware))
            refusal, self.figure_warning = (refusal, None) if refusal else figure_problems(self.records, checks)
            if refusal:
                raise ConfigError(refusal)
        valid = {params_key(c.knobs.to_dict()) for c in valid}
        if not valid or valid & set(self.records):
            return
        raise ConfigError(none_usable(self.path, self.records, checks))

    def evaluable(self, checks: list) -> list:
        """A partial file (a guided study's export records a few dozen of hundreds of candidates): the study
        searches the recorded candidates only. Proposing the others would spend the --trials budget on
        "no record" failures, and three of them at the start stop the run as a broken set-up."""
        self.usable = sum(1 for c in checks if c.valid and params_key(c.candidate.knobs.to_dict()) in self.records)
        return recorded_only(checks, self.records, self.no_record)

    @property
    def no_record(self) -> str:
        return f"no record in {self.path} (replay evaluates only recorded candidates)"

    def unused_records(self, checks: list) -> str | None:
        """One line on the records this study cannot use, by why, with each fix (replay_fit.not_replayed):
        measured figures left out without a word would change the answer unseen. None where all are used. Kept
        for the study's report too (measurements_record), which said nothing of them (trial64 #6)."""
        self.not_replayed = not_replayed(self.path, self.records, checks)
        if self.not_replayed is None:
            return None
        return f"measurements {self.path}: {not_replayed_text(self.not_replayed, len(self.records))}"

    def unchecked_records(self, checks: list) -> list[str]:
        """Records replayed on an assumption, a line each: without `study`, for whatever model and workload the
        run names (a hand-written file's 32b figures reported as 72b's, without a word, in a newcomer's trial);
        without a device knob, at its untouched setting (as files from before those knobs)."""
        lines = [line for line in (self.figure_warning, default_limit_disagreement(self.path, self.records)) if line]
        unnamed = [r for r in self.records.values() if r.get("study") is None]
        valid = [c.candidate for c in checks if c.valid]
        if unnamed and valid:
            mine = study_of(valid[0])
            lines.append(f"measurements {self.path}: {len(unnamed)} of its {counted(len(self.records), 'record')} "
                         f"{agreeing(len(unnamed), 'names', 'name')} no study (the "
                         f"model, hardware and workload they were measured for), so nothing checks that they are this run's "
                         f"--model {mine['model']} --hardware {mine['hardware']}; they are replayed as its own (a \"study\" "
                         "object in each record, as `autotune export --measurements` writes it, has them checked)")
        if valid:
            lines += _estimated_elsewhere(self.path, self.records, study_of(valid[0])[PROFILE])
        untold = [r for r in self.records.values() if r.get("untold")]
        if untold:
            lines.append(f"measurements {self.path}: {len(untold)} of its {counted(len(self.records), 'record')} "
                         f"{agreeing(len(untold), 'names', 'name')} no "
                         f"{untold[0]['untold']} (first {untold[0]['origin'].removeprefix(f'measurements {self.path} ')}): "
                         "replayed at the untouched setting, as files from before those knobs are")
        return lines

    def _check_study(self, mine: dict, checks: list) -> None:
        studies: dict[str, list[str]] = {}
        for record in self.records.values():
            if record.get("study") is not None:  # by what was studied: a sensorless study's estimated records name a profile
                studies.setdefault(json.dumps(_without_profile(record["study"]), sort_keys=True), []).append(record["origin"])
        if len(studies) > 1:
            # Each study's records asked for its own flags in turn ("--model 7b", then "--model 32b").
            raise ConfigError(mixed_studies(self.path, [(json.loads(key), origins) for key, origins in studies.items()],
                                            STUDY_FLAGS))
        for record in self.records.values():
            theirs = record.get("study")
            differs = [key for key in STUDY_FLAGS if theirs is not None and theirs[key] != mine[key]]
            if differs:
                # --nodes and --space from that study's records alone: another study's in the file would be refused next.
                same = [r for r in self.records.values() if _without_profile(r.get("study")) == _without_profile(theirs)]
                raise ConfigError(other_study(record["origin"], theirs, mine, differs, STUDY_FLAGS, same, checks))
        hardware = checks[0].candidate.hardware
        for record in self.records.values():
            # Matched by the node a calibrated profile describes: where a calibrated_from written by hand names it, the
            # profile's figures (power, memory, peak) may be another node's, and every record is judged by them.
            node = (record.get("study") or {}).get("hardware")
            why = node is not None and claimed_node_problem(hardware, node)
            if why:
                raise ConfigError(claimed_node(record["origin"], node, why))
        for record in self.records.values():
            # Another model under this one's name: every figure would be its (a resume refuses it: "its sizes differ").
            theirs = (record.get("study") or {}).get(MODEL_SIZES)
            if theirs is not None and theirs != mine[MODEL_SIZES]:
                raise ConfigError(other_model_sizes(record["origin"], mine["model"], theirs, mine[MODEL_SIZES]))
        # Measured figures are the node's, whatever its calibration; simulated ones are the profile's.
        other = {key: r for key, r in self.records.items() if r["source"] == "simulated" and (r.get("study") or {}).get(
            PROFILE) is not None and r["study"][PROFILE]["sha256"] != mine[PROFILE]["sha256"]}
        if other and not _simulated_again(other, checks):
            first = next(iter(other.values()))
            raise ConfigError(other_profile(first["origin"], first["study"][PROFILE], mine[PROFILE]))

    def check_resumed(self, evaluated: list) -> None:
        """Refuses, in one line, to resume with a file whose records for the study's replayed trials hold
        other figures (another study's export, a re-measured file): two files' figures on one front would
        not be comparable. Records added for unprobed candidates are welcome; a trial that failed for
        want of a record is not compared."""
        differing = []
        for trial in evaluated:
            result = trial.user_attrs["result"]
            origin = (result.get("details") or {}).get("replayed_from")
            if origin is None:
                continue  # not replayed: failed for want of a record
            record = self.records.get(params_key(trial.user_attrs["candidate"]["knobs"]))
            change = _figure_change(result, record)
            if change:
                differing.append(f"trial {trial.number}: {change} in {origin}")
        if differing:
            raise ConfigError(
                f"measurements {self.path} gives other figures than this study replayed ({differing[0]}; "
                f"{len(differing)} of {len(evaluated)} evaluated trials differ): resume with the file it was replayed from, "
                "or pass --out NEW_DIR (in a shared --storage, --study-name NEW) to start a new study with this one")

    def estimated_energy_only(self) -> str | None:
        """A file with records whose energy was estimated where it was measured: each of their probes would
        fail on the label, silently dropping them from the front (the true fastest, say), so it is said first."""
        ok = [r for r in self.records.values() if r["status"] == "ok" and r["energy_kj"] is not None]
        estimated = [r["origin"] for r in ok if r["source"] == "estimated"]
        if not estimated:
            return None
        if len(estimated) == len(ok):
            return f"measurements {self.path}: every record's energy was estimated (no sensor where it was measured)"
        return (f"measurements {self.path}: {len(estimated)} of its {len(ok)} records' energy was estimated (no sensor "
                f"where it was measured; first {estimated[0].removeprefix(f'measurements {self.path} ')})")

    def energy_unrecorded(self) -> str | None:
        """A file whose ok records hold no energy (exported from a study without a sensor or estimate): none
        of its probes could be ranked by energy."""
        ok = [r for r in self.records.values() if r["status"] == "ok"]
        if not ok or any(r["energy_kj"] is not None for r in ok):
            return None
        return f"measurements {self.path}: no record has an energy figure (its study had no sensor or estimate)"

    def evaluate(self, candidate: Candidate, trial_number: int = 0) -> ProbeResult:
        record = self.records.get(params_key(candidate.knobs.to_dict()))
        if record is None:
            return ProbeResult(status="failed", source=self.source, energy_source="unavailable", error=self.no_record)
        return _result(record)

    def describe(self) -> str:
        # Time and energy apart, as the trial lines label them: one label for both would call the measured
        # time of a sensorless machine's records "estimated".
        records = self.records.values()
        times = sorted({time_source(r["source"]) for r in records})
        energies = sorted({r["source"] for r in records if r["energy_kj"] is not None}) or ["not recorded"]
        # The records this study replays, where the warning above said some are not (another space, node count).
        used = (f", {self.usable} of them valid in this study's space"
                if self.usable is not None and self.usable < len(self.records) else "")
        return (f"replay ({counted(len(self.records), 'recorded candidate')} from {self.path}{used}; time {', '.join(times)}, "
                f"energy {', '.join(energies)}): {self.reason}")


def _estimated_elsewhere(path, records: dict[str, dict], mine: dict) -> list[str]:
    """A line on records whose energy another profile's power model estimated (their time was measured, so they
    replay, as measured figures of the node do): their energy is that profile's estimate, not this one's."""
    other = [r for r in records.values() if r["source"] == "estimated"
             and ((r.get("study") or {}).get(PROFILE) or mine)["sha256"] != mine["sha256"]]
    if not other:
        return []
    theirs = other[0]["study"][PROFILE]
    of_records = counted(len(records), "record's", "records'")
    return [f"measurements {path}: {len(other)} of its {of_records} energy was estimated by hardware profile "
            f"'{theirs['name']}' (sha256 {theirs['sha256'][:12]}), not this run's '{mine['name']}' (sha256 "
            f"{mine['sha256'][:12]}): their energy is that profile's power model's, their time measured"]


def _without_profile(study: dict | None) -> dict | None:
    return study if study is None else {key: value for key, value in study.items() if key != PROFILE}


def _figure(value) -> str:
    return "none" if value is None else f"{value:.6g}"


def _figure_change(result: dict, record: dict | None) -> str | None:
    """How a record differs from the result a trial replayed from another file, or None if it does not."""
    if record is None:
        return "no record here, one"
    now = _result(record).to_dict()
    if now["status"] != result.get("status"):
        return f"{now['status']} here, {result.get('status')}"
    for key in ("time_s", "energy_kj"):
        here, there = now.get(key), result.get(key)
        if (here is None) != (there is None) or (here is not None and not math.isclose(here, there, rel_tol=1e-9)):
            return f"{key} {_figure(here)} here, {_figure(there)}"
    return None


def recorded_only(checks: list, recorded, reason: str) -> list:
    """`checks` with each valid candidate whose key `recorded` lacks made invalid for `reason`: what a
    replay study searches (ReplayBackend.evaluable), and what its report's model asks of a resume."""
    from dataclasses import replace

    return [replace(c, reason=reason) if c.valid and params_key(c.candidate.knobs.to_dict()) not in recorded else c
            for c in checks]


def measurement_record(params: dict, result: dict, study: dict | None = None) -> dict | None:
    """The replay record of one evaluated trial's result (ProbeResult.to_dict()); None if it has none.
    `study`: what it was measured for (study_of).

    A timeout is recorded as failed; estimated energy keeps its label (source "estimated")."""
    status = result.get("status")
    if status not in ("ok", "oom", "failed", "timeout"):
        return None
    record = {"params": {k: params[k] for k in KNOBS}, "status": "failed" if status == "timeout" else status}
    source = result.get("source") or "measured"
    if result.get("energy_source") == "estimated":
        source = "estimated"
    if study is not None:
        record["study"] = study if source in PROFILE_SOURCES else {k: v for k, v in study.items() if k != PROFILE}
    record["source"] = source
    if status == "ok":
        record.update({k: result.get(k) for k in ("time_s", "energy_kj", "tflops", "peak_mem_gib")})
        kind = (result.get("details") or {}).get("peak_mem_kind")
        if result.get("peak_mem_gib") is not None and kind in PEAK_MEM_KINDS:
            record["peak_mem_kind"] = kind
    elif result.get("error"):
        record["error"] = result["error"][:500]
    details = result.get("details") or {}
    cost = details.get("probe_cost")
    if isinstance(cost, dict):
        record["probe_cost"] = _probe_cost_record(cost)
    left_out = not_measured(details)
    if status == "ok" and left_out:
        record["energy_not_measured"] = left_out
    noise = _noise_record(details) if status == "ok" else None
    if noise:
        record["noise"] = noise
    default_w = details.get("default_power_limit_w")
    # What the launch backend measured (measured_default_limit); a value a replay would refuse is a damaged study.db's.
    if default_w is not None and number_problem(default_w, low=0, low_open=True, high=MAX_POWER_LIMIT_W) is None:
        record["default_power_limit_w"] = default_w
    return record


def _probe_cost_record(cost: dict) -> dict:
    """What the probe cost, with what its energy covers: window-only energy stays a lower bound on replay."""
    record = {k: cost.get(k) for k in ("time_s", "energy_kj")}
    for key, allowed in (("energy_scope", ENERGY_SCOPES), ("energy_provenance", COST_PROVENANCES)):
        if cost.get(key) in allowed:
            record[key] = cost[key]
    window_s = (cost.get("parts") or {}).get("window_s", cost.get("window_s"))
    if window_s is not None:
        record["window_s"] = window_s
    return record


def _noise_record(details: dict) -> dict | None:
    """The spread a probe measured: its runs, their CVs (`--repeats`), and its measured steps' time CV
    (read from its result files while they are there: a replay elsewhere has none)."""
    repeats = [r for r in details.get("repeats") or [] if isinstance(r, dict)]
    cv = details.get("cv") or {}
    noise = {"time_cv": cv.get("time"), "energy_cv": cv.get("energy"),
             "step_time_cv": step_time_cv(details)}
    noise = {key: value for key, value in noise.items() if value is not None}
    if noise and repeats:
        noise["runs"] = len(repeats)
    return noise or None
