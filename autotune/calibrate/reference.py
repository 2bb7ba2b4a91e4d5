"""Reference observations: published figures shipped with the project, or a file like them.

`load_reference("gh200-study")` reads autotune/calibrate/gh200-study.json: the GH200 study's tables,
one record per figure (see the file's own `assumptions` and `samples_derivation`). A user may write
a file in the same schema for figures of their own (`--reference my-figures.json`):

    {"name": ..., "hardware": "gh200",
     "configurations": {NAME: {"model": "7b", "knobs": {...}, "workload": {frames, text_tokens, global_batch, samples}}},
     "figures": [{"id": ..., "configuration": NAME, "metric": "time_s", "value": 1248.0,
                  "relative_to": NAME (optional), "bound": "lower" (optional), "approximate": false, ...}],
     "hold": {CONSTANT: "why these figures cannot pin it"} (optional)}

`hold` names the constants the figures cannot pin, each with its reason (`reference_holds`): calibrating
against the reference alone keeps them at the base profile's value, as `--hold` does, rather than let the
fit push one onto a bound it does not measure and warn that the error cannot be trusted.
"""

from __future__ import annotations

import json
from pathlib import Path

from autotune.counted import agreeing
from autotune.calibrate.observations import BOUNDS, Observation, checked_candidate, checked_knobs, checked_observation
from autotune.calibrate.plausible import implausible_figures, refused_figure
from autotune.candidate import Candidate
from autotune.checks import checked_number, refuse_duplicate_keys, refuse_unknown_keys, shown
from autotune.errors import ConfigError
from autotune.hardware import SIMULATOR_CONSTANTS, HardwareProfile, claimed_node_problem
from autotune.models import PRESETS, load_model
from autotune.shell import shell_path
from autotune.text_files import read_text
from autotune.workload import Workload

REFERENCE_DIR = Path(__file__).parent
_TOP_KEYS = ("name", "description", "source", "hardware", "caveat", "metrics", "relative", "assumptions",
             "samples_derivation", "groups", "configurations", "figures", "hold")
_CONFIGURATION_KEYS = ("group", "model", "knobs", "workload")
_WORKLOAD_KEYS = ("frames", "text_tokens", "global_batch", "samples")
_FIGURE_KEYS = ("id", "configuration", "metric", "value", "published", "approximate", "relative_to", "bound",
                "derived", "note")
_FIX = "see autotune/calibrate/gh200-study.json for the schema"


def available_references() -> list[str]:
    return sorted(p.stem for p in REFERENCE_DIR.glob("*.json"))


def _is_measurements(path: Path) -> bool:
    """Whether `path` reads as a measurements file (JSON lines of probe records, as `export --measurements`
    writes): its first line is one JSON object with `params`."""
    try:
        with open(path, encoding="utf-8") as file:
            first = json.loads(file.readline())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "params" in first


def replay_route(measurements) -> str:
    """How a measurements file is calibrated: calibrate fits the probes of a run directory's study, which a replay
    of the file makes (docs/calibration.md)."""
    return (f"replay it into a run directory (`autotune run --backend replay --measurements {shell_path(measurements)} "
            "--model MODEL --hardware PROFILE --nodes N --out DIR`, with the study its records name), then `autotune "
            "calibrate DIR`")


def measurements_given_as_run(run_dir: Path) -> str | None:
    """Why a RUN_DIR that is a measurements file, or a folder holding one and no study.db (a colleague's committed
    results), is none, with the replay that makes one; None for anything else (judged as a run directory)."""
    if run_dir.is_file() and _is_measurements(run_dir):
        return (f"{run_dir} is a measurements file (JSON lines of probe records, as `autotune export --measurements` "
                f"writes), not a run directory: {replay_route(run_dir)}")
    held = run_dir / "measurements.jsonl"
    if run_dir.is_dir() and not (run_dir / "study.db").exists() and held.is_file() and _is_measurements(held):
        return (f"{run_dir} holds {held.name} but no study.db, so no study to calibrate: {replay_route(held)}")
    return None


def reference_path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.is_file() and _is_measurements(path):
        # "unknown reference" read as "not found" for a colleague's measurements file (trial61 #14): calibrate fits
        # probes through a run directory, which a replay of the file makes.
        raise ConfigError(f"--reference {name_or_path} is a measurements file (JSON lines of probe records, as `autotune "
                          f"export --measurements` writes), not figures in the reference schema: "
                          f"{replay_route(name_or_path)}")
    if path.is_file():  # any name, as --space and --hardware take: read as JSON, which says what is wrong (trial78 #4)
        return path
    if path.is_dir():  # "unknown reference" read as a typo of a name (trial 37 F18)
        raise ConfigError(f"--reference {name_or_path} is a directory; give a JSON file of figures ({_FIX}), or measured "
                          "run directories as RUN_DIR arguments")
    path = REFERENCE_DIR / f"{name_or_path}.json"
    if not path.is_file():
        raise ConfigError(
            f"unknown reference '{name_or_path}': no built-in reference has that name and no file is there; use one of "
            f"{', '.join(available_references())} or the path of a JSON file of figures ({_FIX})"
        )
    return path


def read_reference(name_or_path: str) -> tuple[dict, str]:
    """The reference document and the name to cite it by."""
    path = reference_path(name_or_path)
    try:
        # JSON is UTF-8 whatever the locale (text_files: a byte-order mark dropped, UTF-16 said as such); a
        # configuration named twice would silently be its last copy.
        data = json.loads(read_text(path, f"reference {path}"), object_pairs_hook=refuse_duplicate_keys)
    except OSError as exc:
        raise ConfigError(f"reference {path} cannot be read ({exc.strerror or exc}); pass a readable JSON file") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, a repeated key, nested too deep
        raise ConfigError(f"reference {path}: not valid JSON ({exc}); fix the file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"reference {path}: the top level must be an object; {_FIX}")
    refuse_unknown_keys(f"reference {path}", data, _TOP_KEYS, _FIX)
    for key in ("hardware", "configurations", "figures"):
        if key not in data:
            raise ConfigError(f"reference {path}: missing '{key}'; {_FIX}")
    for key in ("name", "hardware"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise ConfigError(f"reference {path}: {key} = {shown(data[key])} is not a name; write one string, "
                              f"such as \"{'gh200' if key == 'hardware' else path.stem}\"")
    if "/" in data["hardware"] or data["hardware"].lower().endswith(".toml"):
        # The figures are matched to the profile by its name (load_reference): a path never equals one, and the fix
        # the mismatch suggested (--hardware PATH) failed the same way.
        raise ConfigError(f"reference {path}: hardware = {shown(data['hardware'])} is a path; write the name of the profile "
                          "the figures were measured on (its `name`, such as \"gh200\") and pass its file with --hardware "
                          f"{data['hardware']}")
    return data, data.get("name") or path.stem


def reference_origin(name_or_path: str, name: str) -> str:
    """How messages name a reference: a built-in one by its name, a file by its path and then its `name`
    ("reference bad/figs.json (a100-figs)"): with several copies of a file, the name alone said not which to open."""
    path = reference_path(name_or_path)
    if path.parent.resolve() == REFERENCE_DIR.resolve() and path.stem == name_or_path:
        return f"reference {name}"
    return f"reference {name_or_path}" + (f" ({name})" if name != path.stem else "")


def _model(origin: str, key: str, name_or_path: str, base_dir: Path):
    """A configuration's model: a preset, or a file read relative to the reference file's directory (a figures file
    kept beside its model, or in a repository, broke when run from elsewhere: trial61 #10), else, as before, to the
    working directory."""
    beside = base_dir / name_or_path
    relative = name_or_path not in PRESETS and not Path(name_or_path).is_absolute()
    if relative and beside.exists():
        name_or_path = str(beside)
    elif relative and ("/" in name_or_path or name_or_path.lower().endswith(".json")) and not Path(name_or_path).exists():
        raise ConfigError(f"{origin}: {key}: model {name_or_path} is neither a preset ({', '.join(PRESETS)}) nor a file "
                          f"beside the reference ({beside}) or in the working directory; write its path relative to "
                          "the reference file")
    try:
        return load_model(name_or_path)
    except ConfigError as exc:
        raise ConfigError(f"{origin}: {key}: {exc}") from None


def _candidate(origin: str, name: str, raw, hardware: HardwareProfile, base_dir: Path) -> Candidate:
    key = f"configuration {name!r}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: {key} must be an object; {_FIX}")
    refuse_unknown_keys(f"{origin}: {key}", raw, _CONFIGURATION_KEYS, _FIX)
    for part in ("model", "knobs", "workload"):
        if part not in raw:
            raise ConfigError(f"{origin}: {key} lacks '{part}'; {_FIX}")
    workload = raw["workload"]
    if not isinstance(workload, dict) or set(workload) != set(_WORKLOAD_KEYS):
        raise ConfigError(f"{origin}: {key} workload must hold exactly {', '.join(_WORKLOAD_KEYS)}; {_FIX}")
    counts = {k: checked_number(origin, f"{key} workload {k}", workload[k], low=1, integer=True) for k in _WORKLOAD_KEYS}
    if counts["samples"] < counts["global_batch"]:  # as `autotune run` refuses --samples below --global-batch
        raise ConfigError(f"{origin}: {key} workload samples {counts['samples']} is less than one global batch "
                          f"({counts['global_batch']}): a run takes at least one optimizer step; fix the workload")
    if not isinstance(raw["model"], str) or not raw["model"].strip():
        raise ConfigError(f"{origin}: {key} model = {shown(raw['model'])} is not a model name or file; {_FIX}")
    model = _model(origin, key, raw["model"], base_dir)
    candidate = Candidate(checked_knobs(origin, key, raw["knobs"]), model, hardware, Workload(**counts))
    return checked_candidate(origin, key, candidate, "fix the configuration (`autotune space` lists each candidate's reason)")


def _observation(origin: str, index: int, raw, candidates: dict, source: str) -> Observation:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: figure {index} must be an object; {_FIX}")
    key = f"figure {raw.get('id', index)!r}"
    refuse_unknown_keys(f"{origin}: {key}", raw, _FIGURE_KEYS, _FIX)
    for part in ("configuration", "metric", "value"):
        if part not in raw:
            raise ConfigError(f"{origin}: {key} lacks '{part}'; every figure names its configuration, metric and value")
    for part in ("configuration", "relative_to"):
        if part in raw and (not isinstance(raw[part], str) or raw[part] not in candidates):
            raise ConfigError(f"{origin}: {key} {part} {raw[part]!r} is not among the configurations; {_FIX}")
    if raw.get("bound") not in (None, *BOUNDS):
        raise ConfigError(f"{origin}: {key} bound {raw['bound']!r}; use 'lower' or 'upper' or leave it out")
    if not isinstance(raw.get("approximate", False), bool):  # bool("no") is True
        raise ConfigError(f"{origin}: {key} approximate = {shown(raw['approximate'])} is not true or false; write "
                          "true for a figure published as approximate ('~'), else false or leave it out")
    if "id" in raw and (not isinstance(raw["id"], str) or not raw["id"].strip() or not raw["id"].isprintable()):
        raise ConfigError(f"{origin}: figure {index} id = {shown(raw['id'])} is not a name on one line (--exclude "
                          "names a figure by it); give it one, such as \"7b-baseline-time\", or leave it out")
    if raw.get("relative_to") is not None and raw.get("relative_to") == raw["configuration"]:
        raise ConfigError(f"{origin}: {key} is relative to its own configuration {raw['configuration']!r}, a ratio that is "
                          "always 1; name the baseline it was published against in relative_to, or drop relative_to")
    relative = "relative_to" in raw
    metric, value = checked_observation(origin, key, raw["metric"], raw["value"], relative)
    return Observation(
        id=str(raw.get("id", index)),
        candidate=candidates[raw["configuration"]],
        metric=metric,
        value=value,
        source=source,
        relative_to=candidates[raw["relative_to"]] if relative else None,
        bound=raw.get("bound"),
        approximate=raw.get("approximate", False),
        note=str(raw.get("note", "")),
    )


def load_reference(name_or_path: str, hardware: HardwareProfile) -> list[Observation]:
    """Every figure of the reference as an observation on `hardware` (the reference's, or a calibration of it)."""
    data, name = read_reference(name_or_path)
    origin = reference_origin(name_or_path, name)
    if data["hardware"] != hardware.base_name:
        given = hardware.name if hardware.base_name == hardware.name else f"{hardware.name}, calibrated from {hardware.base_name}"
        raise ConfigError(
            f"{origin} holds figures measured on '{data['hardware']}' hardware, but --hardware is '{given}'; "
            f"pass --hardware {data['hardware']} (or a profile of that name or calibrated from it) to calibrate against it"
        )
    claimed = claimed_node_problem(hardware, data["hardware"])
    if claimed:  # its figures may be another node's: a fit would make them the claimed node's, and -o would vouch
        raise ConfigError(f"{origin} holds figures measured on '{data['hardware']}' hardware, and {claimed}: pass "
                          f"--hardware {data['hardware']} (or a profile `autotune calibrate -o` wrote from it) to calibrate "
                          "against it")
    if not isinstance(data["configurations"], dict) or not isinstance(data["figures"], list) or not data["figures"]:
        raise ConfigError(f"{origin}: 'configurations' must be an object and 'figures' a non-empty list; {_FIX}")
    base_dir = reference_path(name_or_path).parent
    candidates = {n: _candidate(origin, n, raw, hardware, base_dir) for n, raw in data["configurations"].items()}
    for configuration, raw in data["configurations"].items():  # a label of where its figures were derived
        if "group" in raw and (not isinstance(raw["group"], str) or not raw["group"].strip()):
            raise ConfigError(f"{origin}: configuration {configuration!r} group = {shown(raw['group'])} is not a name; "
                              f"name the group its figures were derived in, or leave it out; {_FIX}")
    observations = [_observation(origin, i, raw, candidates, name) for i, raw in enumerate(data["figures"])]
    ids = [o.id for o in observations]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ConfigError(f"{origin}: figure {agreeing(len(repeated), 'id', 'ids')} {', '.join(repeated)} "
                          f"{agreeing(len(repeated), 'appears', 'appear')} more than once; give each figure its own id")
    wrong = implausible_figures(observations)
    if wrong:
        raise ConfigError(refused_figure(f"{origin}: figure {wrong[0][0].id!r}", wrong, hardware))
    return observations


def reference_holds(name_or_path: str) -> dict[str, str]:
    """The constants the reference says its figures cannot pin (its `hold`), each with the reason."""
    data, name = read_reference(name_or_path)
    holds = data.get("hold", {})
    origin = reference_origin(name_or_path, name)
    if not isinstance(holds, dict):
        raise ConfigError(f"{origin}: hold must be an object of simulator constant: reason; {_FIX}")
    known = [spec.name for spec in SIMULATOR_CONSTANTS]
    for constant, why in holds.items():
        if constant not in known:
            raise ConfigError(f"{origin}: hold names {constant!r}, no simulator constant; use one of {', '.join(known)}")
        if not isinstance(why, str) or not why.strip():
            raise ConfigError(f"{origin}: hold {constant} = {shown(why)}: give the reason the figures cannot pin it, as a sentence")
    return dict(holds)
