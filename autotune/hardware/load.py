"""Reading a hardware profile TOML: every key known, every number checked for type and range.

A wrong profile is refused when read, with one line naming the file, the key, the value and what is
allowed, before a study directory is touched (a zero bandwidth or peak would otherwise crash or lie
mid-study).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import fields, replace
from pathlib import Path

from autotune.checks import MAX_COUNT, checked_number, complete_table, refuse_unknown_keys, shown
from autotune.errors import ConfigError
from autotune.file_kind import did_you_mean, mixed_up
from autotune.hardware.dump import figures_sha256 as hashed_figures
from autotune.hardware.plausible import check_plausible
from autotune.hardware.profile import (
    CALIBRATED_ON_KEYS,
    ERROR_SCOPE_BY_MODEL,
    ERROR_SCOPE_KEYS,
    ERROR_SCOPE_MODEL_KEYS,
    ERROR_SCOPE_NOTE,
    IGNORED_CALIBRATED_ON_NOTE,
    IGNORED_ERROR_NOTE,
    CpuSpec,
    GpuSpec,
    HardwareProfile,
    LinkSpec,
    PowerSpec,
    ignored_calibrated_on_note,
    ignored_error_note,
    scope_table,
    with_description_note,
)
from autotune.hardware.simulator_constants import simulator_constants, simulator_error
from autotune.models import MAX_NAME_CHARS
from autotune.shell import shell_path
from autotune.text_files import parse_toml, read_text
from autotune.workload import PRECISIONS

PROFILE_DIR = Path(__file__).parent
SCHEMA = "see docs/hardware.md"

# Bounds per number: (low, low_open, high, integer). Highs are generous: they catch unit mistakes
# (W for kW, MB/s for GB/s), not plausible future hardware.
_POSITIVE = (0.0, True, None, False)
_WATTS = (0.0, False, 1.0e5, False)
# Lows likewise: a rate of 1e-300 passes "positive" and overflows every time it divides (1 GFLOP/s,
# 1 MB/s and 1 MiB are below any device a probe runs on).
_RATE = (1.0e-3, False, 1.0e6, False)
_NUMBERS = {
    "gpus_per_node": (1, False, 1024, True),
    "memory_gib": (1.0e-3, False, 1.0e6, False),
    "memory_bandwidth_gbs": _RATE,
    "bandwidth_gbs": _RATE,
    "peak_bf16_tflops": (1.0e-3, False, 1.0e5, False),
    "peak_fp32_tflops": (1.0e-3, False, 1.0e5, False),
    "idle_power_w": _WATTS,
    "max_power_w": (0.0, True, 1.0e5, False),
    "min_sm_clock_mhz": (0.0, False, 1.0e5, False),
    "max_sm_clock_mhz": (0.0, False, 1.0e5, False),
    "cores": (1, False, 1.0e6, True),
    "module_cap_w": (0.0, True, 1.0e5, False),
    "memory_interconnect_w": _WATTS,
    "min_limit_w": (0.0, True, 1.0e5, False),
}
_TOP_KEYS = ("name", "calibrated_from", "figures_sha256", "description", "gpus_per_node", "cuda", "module_scope_energy", "gpu", "cpu",
             "host_link", "intra_node", "inter_node", "power", "simulator", "simulator_error", "error_measured_on",
             "calibrated_on")


def available_hardware() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _text(origin: str, key: str, value, required: bool = True) -> str:
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(f"{origin}: {key} = {value!r} is not allowed; it must be a non-empty string in quotes")
    return value


def _flag(origin: str, key: str, value) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{origin}: {key} = {value!r} is not allowed; it must be true or false")
    return value


def _number(origin: str, key: str, value, field_name: str):
    low, low_open, high, integer = _NUMBERS[field_name]
    return checked_number(origin, key, value, low=low, high=high, low_open=low_open, integer=integer, whole_literal=True)


# Keys an older autotune's profile held where they are no more, with their place now: a copy of an older built-in
# profile (docs/calibration.md's way to make one) was refused as if it held a typo (trial73 #8). The CPU Adam rate
# became a simulator constant (commit 3135000); the value is the user's own figure, so it is moved, not dropped.
_MOVED_KEYS = {("cpu", "adam_params_per_s"): ("simulator", "cpu_adam_params_per_s")}


def _section(cls, data: dict, section: str, origin: str):
    names = [f.name for f in fields(cls)]
    for (table, key), (now_table, now_key) in _MOVED_KEYS.items():
        if table == section and isinstance(data.get(section), dict) and key in data[section]:
            raise ConfigError(f"{origin}: [{table}] {key} is an older autotune's key: move it to [{now_table}] as "
                              f"{now_key} (the same value); {SCHEMA}")
    raw = complete_table(origin, f"[{section}]", data.get(section), names, SCHEMA, f"missing [{section}] table")
    values = {}
    for n in names:
        key = f"[{section}] {n}"
        values[n] = _text(origin, key, raw[n]) if n == "name" else _number(origin, key, raw[n], n)
    return cls(**values)


def _not_above(origin: str, low_key: str, low: float, high_key: str, high: float, why: str) -> None:
    if low > high:
        raise ConfigError(f"{origin}: {low_key} = {low:g} is above {high_key} = {high:g}; {why}")


def _check_consistency(origin: str, p: HardwareProfile) -> None:
    """Relations between fields that each look fine alone."""
    if p.cuda and p.gpu.min_sm_clock_mhz <= 0:
        # The simulator models a power limit by the SM clock it forces (hardware/power_model.py): with no
        # clock range every limit would cost no time and save no energy, a flat front that looks measured.
        raise ConfigError(f"{origin}: [gpu] min_sm_clock_mhz = {p.gpu.min_sm_clock_mhz:g} and max_sm_clock_mhz = "
                          f"{p.gpu.max_sm_clock_mhz:g} on a CUDA profile (cuda = true): a power limit acts through the "
                          "SM clock it forces, so both must be the device's supported graphics clocks in MHz "
                          "(`nvidia-smi -q -d SUPPORTED_CLOCKS`: the lowest and the highest), or set cuda = false")
    # Before the relations below: a figure in kW (GHz) is said to be kW, not to be below another figure.
    check_plausible(origin, p)
    _not_above(origin, "[gpu] idle_power_w", p.gpu.idle_power_w, "[gpu] max_power_w", p.gpu.max_power_w,
               "idle power must not exceed max power")
    _not_above(origin, "[cpu] idle_power_w", p.cpu.idle_power_w, "[cpu] max_power_w", p.cpu.max_power_w,
               "idle power must not exceed max power")
    _not_above(origin, "[gpu] min_sm_clock_mhz", p.gpu.min_sm_clock_mhz, "[gpu] max_sm_clock_mhz",
               p.gpu.max_sm_clock_mhz, "the lowest clock must not exceed the highest")
    _not_above(origin, "[power] min_limit_w", p.power.min_limit_w, "[power] module_cap_w", p.power.module_cap_w,
               "the lowest accepted limit must not exceed the default limit")
    # The cap must leave room above idle, or no work could ever run under it.
    idle_w = p.gpu.idle_power_w
    what = "[gpu] idle_power_w"
    if p.module_scope_energy:
        idle_w += p.cpu.idle_power_w
        what += " + [cpu] idle_power_w"
    if idle_w >= p.power.module_cap_w:
        raise ConfigError(f"{origin}: [power] module_cap_w = {p.power.module_cap_w:g} is not above the idle power "
                          f"it caps ({what} = {idle_w:g}); raise the cap or lower the idle figures")


def parse_hardware(data: dict, origin: str, source: str = "") -> HardwareProfile:
    """A HardwareProfile from a TOML document's tables, validated."""
    refuse_unknown_keys(origin, data, _TOP_KEYS, SCHEMA)
    for key in ("name", "gpus_per_node"):
        if key not in data:
            raise ConfigError(f"{origin}: missing '{key}'; {SCHEMA}")
    for table in ("simulator", "simulator_error", "error_measured_on", "calibrated_on"):
        if table in data and not isinstance(data[table], dict):
            raise ConfigError(f"{origin}: '{table}' must be a [{table}] table; {SCHEMA}")
    profile = HardwareProfile(
        name=_text(origin, "name", data["name"]),
        description=_text(origin, "description", data.get("description", ""), required=False),
        gpus_per_node=_number(origin, "gpus_per_node", data["gpus_per_node"], "gpus_per_node"),
        cuda=_flag(origin, "cuda", data.get("cuda", True)),
        module_scope_energy=_flag(origin, "module_scope_energy", data.get("module_scope_energy", False)),
        gpu=_section(GpuSpec, data, "gpu", origin),
        cpu=_section(CpuSpec, data, "cpu", origin),
        host_link=_section(LinkSpec, data, "host_link", origin),
        intra_node=_section(LinkSpec, data, "intra_node", origin),
        inter_node=_section(LinkSpec, data, "inter_node", origin),
        power=_section(PowerSpec, data, "power", origin),
        source=source,
        simulator=simulator_constants(origin, data.get("simulator")),
        simulator_error=simulator_error(origin, data.get("simulator_error")),
        calibrated_from=_text(origin, "calibrated_from", data.get("calibrated_from", ""), required="calibrated_from" in data),
        error_measured_on=_error_scope(origin, data.get("error_measured_on")),
        calibrated_on=_calibrated_on(origin, data.get("calibrated_on")),
    )
    _check_consistency(origin, profile)
    recorded = _figures_hash(origin, data["figures_sha256"]) if "figures_sha256" in data else None
    if profile.calibrated_from:  # as its error is judged: the hash (or an older calibrate's header) vouches for both
        why = _unmeasured_error(profile, source, recorded) or ""
        profile = replace(profile, calibrated_from_unvouched=_BY_HAND if why.startswith(_BY_HAND) else why)
    trusted = _with_trusted_calibrated_on(origin, profile, source, recorded)
    return _with_shipped_scope(_with_trusted_error(origin, trusted, source, recorded,
                                                   calibrated_on_ignored=bool(profile.calibrated_on) and not trusted.calibrated_on),
                               source)


# A SHA-256 as hashlib's hexdigest writes it (and calibrate -o with it): compared as text, so no other spelling.
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _figures_hash(origin: str, value) -> str:
    """figures_sha256 as calibrate -o wrote it: another value (uppercase, cut short, a space) is the line edited, which
    was called "figures edited since" and sent the user to the figures (trial63 #11)."""
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise ConfigError(f"{origin}: figures_sha256 = {value!r} is not a SHA-256 as `autotune calibrate -o` writes it "
                          "(64 lowercase hex digits): the line was edited; restore it from calibrate's output, or calibrate "
                          "again (docs/hardware.md)")
    return value


def _error_scope(origin: str, raw: dict | None) -> dict[str, tuple[str, ...]]:
    """[error_measured_on]: per model and knob, the values the stated error was measured on, as text. A knob's value
    must be one the knob can take: "9", "banana" or "MAX" matched no configuration, and a typo made the error vanish
    from every figure while the header still named the scope (trial63 #10). Model names are free text."""
    if raw is None:
        return {}
    holds = "it holds what `autotune calibrate -o` measured its [simulator_error] on"
    raw = dict(raw)
    by_model = raw.pop(ERROR_SCOPE_BY_MODEL, None)
    _error_scope_lists(origin, "[error_measured_on]", raw, ERROR_SCOPE_KEYS, holds)
    if by_model is None:
        return scope_table(raw)
    # Each model's own lists ("7b": GPUs 4/8), which reports judge that model's figures by (trial72 #3): a model the
    # table does not name, or a value outside the union, is no table calibrate -o wrote.
    if not isinstance(by_model, dict) or not by_model or not all(isinstance(v, dict) for v in by_model.values()):
        raise ConfigError(f"{origin}: [error_measured_on] {ERROR_SCOPE_BY_MODEL} must hold one table per model, as "
                          f"`autotune calibrate -o` writes it; {_SCOPE_FIX}")
    for model, lists in by_model.items():
        table = f"[error_measured_on.{ERROR_SCOPE_BY_MODEL}.{shown(model)}]"
        if model not in raw.get("model", ()):
            raise ConfigError(f"{origin}: {table} names a model its model list lacks; {_SCOPE_FIX}")
        _error_scope_lists(origin, table, lists, ERROR_SCOPE_MODEL_KEYS, holds)
        for key, values in lists.items():
            wider = [v for v in values if v not in raw.get(key, values)]
            if wider:
                raise ConfigError(f"{origin}: {table} {key} has {shown(wider[0])}, which [error_measured_on] {key} lacks; "
                                  f"{_SCOPE_FIX}")
    return scope_table({**raw, ERROR_SCOPE_BY_MODEL: by_model})


def _error_scope_lists(origin: str, table: str, raw: dict, keys: tuple, holds: str) -> None:
    """One table of [error_measured_on]'s lists: known keys, each value one its knob can take (or a whole count, or a
    precision)."""
    _scope_lists(origin, table.strip("[]"), raw, keys, holds)
    for key in ("gpus", "global_batch", "frames", "text_tokens"):  # counts, as [calibrated_on]'s: no knob takes them
        if key in raw:
            _whole_counts(origin, table.strip("[]"), key, raw[key])
    for text in raw.get("precision", ()):
        if text not in PRECISIONS:
            raise ConfigError(f"{origin}: {table} precision has {shown(text)}, which is not one of "
                              f"{', '.join(PRECISIONS)}; {_SCOPE_FIX}")
    for key, values in raw.items():
        for text in values if key in ERROR_SCOPE_MODEL_KEYS and key not in ("gpus", "global_batch") else ():
            why = _not_a_knob_value(key, text)
            if why:
                raise ConfigError(f"{origin}: {table} {key} has {shown(text)}, which {why}; {_SCOPE_FIX}")


_SCOPE_FIX = "restore it from `autotune calibrate -o`'s output, or calibrate again"


def _scope_lists(origin: str, table: str, raw: dict, keys: tuple, holds: str) -> None:
    """What [error_measured_on] and [calibrated_on] share: a table, not empty, of known keys, each a list of non-empty
    strings, its model names printable on one line (a newline in one split the report's one-line sentence: trial65
    #8), and no value twice ("1/1 GPUs": trial65 #14)."""
    if not raw:
        raise ConfigError(f"{origin}: [{table}] is empty; {holds}: {_SCOPE_FIX}")
    refuse_unknown_keys(f"{origin} [{table}]", raw, keys, holds)
    for key, values in raw.items():
        if not (isinstance(values, list) and values and all(isinstance(v, str) and v for v in values)):
            raise ConfigError(f"{origin}: [{table}] {key} = {values!r} is not allowed; it must be a list of "
                              "non-empty strings in quotes, as `autotune calibrate -o` writes it")
        for text in values if key == "model" else ():
            if not text.strip() or len(text) > MAX_NAME_CHARS or not text.isprintable():
                raise ConfigError(f"{origin}: [{table}] model has {shown(text)}, which is not a model name (printable "
                                  f"characters on one line, at most {MAX_NAME_CHARS}); {_SCOPE_FIX}")
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ConfigError(f"{origin}: [{table}] {key} has {shown(repeated[0])} more than once; {_SCOPE_FIX}")


def _calibrated_on(origin: str, raw: dict | None) -> dict[str, tuple[str, ...]]:
    """[calibrated_on]: the models, GPU counts and node counts a calibration fitted, as text. calibrate -o writes all
    three keys and each count as str() of a whole number: a table of the model alone said "calibrated on 1.5b,  GPUs,
     nodes only", and "01" never equals a study's "1" (trial65 #8, #14)."""
    if raw is None:
        return {}
    holds = "it holds what `autotune calibrate -o` fitted the profile on"
    _scope_lists(origin, "calibrated_on", raw, CALIBRATED_ON_KEYS, holds)
    missing = [key for key in CALIBRATED_ON_KEYS if key not in raw]
    if missing:
        raise ConfigError(f"{origin}: [calibrated_on] lacks {', '.join(missing)}; {holds}: {_SCOPE_FIX}")
    for key in ("gpus", "nodes"):
        _whole_counts(origin, "calibrated_on", key, raw[key])
    gpus, nodes = ([int(text) for text in raw[key]] for key in ("gpus", "nodes"))
    if max(nodes) > max(gpus) or min(nodes) > min(gpus):  # each node runs one GPU at least
        raise ConfigError(f"{origin}: [calibrated_on] nodes = {shown(raw['nodes'])} do not fit gpus = {shown(raw['gpus'])} "
                          f"(a configuration on N nodes has N GPUs at least); {_SCOPE_FIX}")
    return {key: tuple(values) for key, values in raw.items()}


def _whole_counts(origin: str, table: str, key: str, values: list[str]) -> None:
    """A scope's counts (GPUs, nodes) as calibrate -o writes them, str() of a whole number: "01" never equals a study's
    "1" (trial65 #14)."""
    for text in values:
        if not (text.isascii() and text.isdigit() and str(int(text)) == text and 0 < int(text) <= MAX_COUNT):
            raise ConfigError(f"{origin}: [{table}] {key} has {shown(text)}, which is not a whole number from 1 "
                              f"to {MAX_COUNT} written as calibrate -o writes it (\"8\", not \"08\"); {_SCOPE_FIX}")


def _not_a_knob_value(knob: str, text: str) -> str | None:
    """Why `text` (a scope's value, as calibrate writes it: str() of the knob's value) is no value of `knob`, or None."""
    from autotune.candidate import knob_value  # here: autotune.candidate imports this package

    value: object = text
    if knob == "power_limit":
        try:
            value = float(text)
        except ValueError:
            pass
    elif text.isascii() and text.isdigit():
        value = int(text)
    try:
        knob_value(knob, value)
    except ValueError as why:
        return str(why)
    return None


def _builtin_name(source: str) -> str | None:
    """The built-in profile `source` names (`gh200`), or None: its name, its file here, or its file in
    another checkout or install of autotune (.../autotune/hardware/gh200.toml), which is what a study
    made there recorded."""
    if source in available_hardware():
        return source
    path = Path(source)
    if path.suffix != ".toml" or path.stem not in available_hardware():
        return None
    here = path.parent.resolve() == PROFILE_DIR.resolve()
    return path.stem if here or path.parent.parts[-2:] == ("autotune", "hardware") else None


def _with_shipped_scope(profile: HardwareProfile, source: str) -> HardwareProfile:
    """The profile, with what its [simulator_error] was measured on taken from the shipped profile it is a copy of,
    where it records none itself.

    A study an older autotune made keeps a copy of gh200.toml from before that file said what its error was measured
    on (the GH200 study: ZeRO 3, power limit 1.0). Read as measured everywhere, its +- 3.4% vouched for every
    power-limited pick, tied picks by it and dropped "probe them before deploying", while the same study made today
    says +- ?% there (trial67 #12). The error is the shipped one where everything it depends on is (figures_sha256
    covers the figures and the error), so its scope is the shipped one too. Any other error without a scope (an older
    calibrate's profile, a copy of an older gh200.toml) is of unknown scope, which report/error_bars.py says."""
    if (not profile.simulator_error or profile.error_measured_on or ERROR_SCOPE_NOTE.search(profile.description)
            or _shipped_file(source)):
        return profile
    scope = _shipped_scopes().get(hashed_figures(profile))
    if scope is None:
        return profile
    table, note = scope
    return replace(profile, error_measured_on=table,
                   description=with_description_note(profile.description, ERROR_SCOPE_NOTE, note))


def _shipped_file(source: str) -> bool:
    """Whether `source` is a built-in profile's file here (which _shipped_scopes reads)."""
    return bool(source) and Path(source).parent.resolve() == PROFILE_DIR.resolve()


# [simulator_error] tables a built-in profile shipped with before, on the figures it has now: a study's copy of one is
# the same calibration on the same measurements, so it reads with the shipped scope too. gh200's TFLOP/s error was
# 4.1% until a respected bound (">512") stopped counting as an exact figure in the mean (trial72 #2: 4.5%).
_FORMER_SHIPPED_ERRORS = {"gh200": ({"time_s_pct": 3.4, "energy_kj_pct": 3.3, "tflops_pct": 4.1, "power_w_pct": 2.3},)}


@functools.cache
def _shipped_scopes() -> dict[str, tuple[dict, str | None]]:
    """{figures_sha256 of a shipped profile without its [error_measured_on], with its error or a former one: (that
    table, its description's scope note)}, for each built-in profile whose [simulator_error] says what it was measured
    on."""
    scopes = {}
    for name in available_hardware():
        shipped = load_hardware(name)
        note = ERROR_SCOPE_NOTE.search(shipped.description)
        if shipped.simulator_error and (shipped.error_measured_on or note):
            for error in (shipped.simulator_error, *_FORMER_SHIPPED_ERRORS.get(name, ())):
                key = hashed_figures(replace(shipped, error_measured_on={}, simulator_error=error))
                scopes[key] = (shipped.error_measured_on, note.group(0) if note else None)
    return scopes


# Files whose ignored [simulator_error] was warned of: once per file in a process, however often a
# command reads the profile (run reads it for the allocation, the settings and the study's copy).
_WARNED_ERROR: set[str] = set()
_WARNED_CALIBRATED_ON: set[str] = set()  # likewise, those whose ignored [calibrated_on] was


def _with_trusted_error(origin: str, profile: HardwareProfile, source: str, figures_sha256: str | None = None,
                        calibrated_on_ignored: bool = False) -> HardwareProfile:
    """The profile, without its [simulator_error] unless that error was measured on these figures.

    The error is a leave-one-out error of the simulator against measurements of one node: it holds for
    the profile it was computed on. Only two kinds of file state it for themselves: a built-in profile
    (its header says what it was calibrated against) and one `autotune calibrate -o` wrote. Any other file got its
    table by copying one of those (docs once said "copy gh200.toml"), and every figure of a never-measured node then
    claimed gh200's +- 3%, its picks called ties by an error that does not apply. Ignored, the figures show +- ?%, as
    any uncalibrated profile's. (A study's or candidate's kept copy is judged by the file it was read from, its
    `source`, or by the hash it carries.) `calibrated_on_ignored`: its [calibrated_on] was dropped for the same hash
    (_with_trusted_calibrated_on), whose own warning then gives way to this one, which must say so."""
    if not profile.simulator_error or _builtin_name(source) == profile.name:
        return profile
    why = _unmeasured_error(profile, source, figures_sha256)
    if why is None:
        return profile
    if source not in _WARNED_ERROR:
        _WARNED_ERROR.add(source)
        # Printed here, not returned: every command (run, space, report, export, calibrate, the probe) reads
        # profiles through this module, and the warning must reach each without each repeating the rule.
        shown = source or profile.name
        # Its [calibrated_on] named here too: the line said only the error was ignored, and a study's report then
        # said what the profile was fitted on is unknown with no warning having said why.
        also = (" (its [calibrated_on] is ignored too: a study on it cannot say whether it lies outside what the "
                "profile was fitted on)") if calibrated_on_ignored else ""
        print(f"warning: {origin}: its [simulator_error] is ignored, and its figures show +- ?%{also}: {why}; calibrate "
              f"this one: autotune calibrate RUN_DIR --hardware {shell_path(shown)} -o FILE; docs/calibration.md",
              file=sys.stderr)
    # The reason kept where a study keeps the profile (its description), for its reports to say.
    return replace(profile, simulator_error={},
                   description=with_description_note(profile.description, IGNORED_ERROR_NOTE, ignored_error_note(why)))


def _with_trusted_calibrated_on(origin: str, profile: HardwareProfile, source: str,
                                figures_sha256: str | None) -> HardwareProfile:
    """The profile, without its [calibrated_on] unless figures_sha256 vouches for it. The table is what drops the
    report's "this study's ... are outside it": widened by hand in a profile with no [simulator_error] (most that
    calibrate -o writes), whose hash was compared for the error alone, it was believed and the caveat vanished
    (trial65 #6). Only calibrate -o writes the table, and always with the hash: without it, or where it differs, the
    table is ignored and a study's report says what the profile was fitted on is unknown (its description's note)."""
    if not profile.calibrated_on or _builtin_name(source) == profile.name:
        return profile
    if figures_sha256 is not None and figures_sha256 == hashed_figures(profile):
        return profile
    why = ("it is not the one `autotune calibrate -o` wrote (figures_sha256 differs: the profile was edited since)"
           if figures_sha256 is not None else "it has no figures_sha256 beside it, which `autotune calibrate -o` writes with it")
    # Said once per file; where its [simulator_error] is ignored for the same hash, that warning names the table.
    if source not in _WARNED_CALIBRATED_ON and not (profile.simulator_error and figures_sha256 is not None):
        _WARNED_CALIBRATED_ON.add(source)
        shown = source or profile.name
        print(f"warning: {origin}: its [calibrated_on] is ignored, so a study on it cannot say whether it lies outside "
              f"what the profile was fitted on: {why}; calibrate again to restore it: autotune calibrate RUN_DIR "
              f"--hardware {shell_path(shown)} -o FILE; docs/calibration.md", file=sys.stderr)
    note = ignored_calibrated_on_note(f"{why}, so what it was fitted on is unknown")
    return replace(profile, calibrated_on={},
                   description=with_description_note(profile.description, IGNORED_CALIBRATED_ON_NOTE, note))


def _unmeasured_error(profile: HardwareProfile, source: str, figures_sha256: str | None) -> str | None:
    """Why the profile's [simulator_error] was not measured on its figures, or None where it was.

    `calibrated_from` names the node a calibrated profile describes (its base's figures calibrate it too); the error
    is vouched for by the hash calibrate -o writes beside it (`figures_sha256`: of the figures, the error, its
    [error_measured_on], [calibrated_on] and calibrated_from) or, in a profile an older calibrate wrote (no hash, no
    [error_measured_on]), by calibrate's first line. A `calibrated_from` written by hand (naming the profile itself,
    or kept in a colleague's calibrated profile edited to other GPUs: trial61 #5) vouches for nothing, nor does a
    current calibrate's profile whose hash was deleted (trial63 #2: the edit the warning names, undone by removing
    the line it was told not to edit). The header rule trusts a comment: a file given calibrate's first line by hand,
    or stripped of its hash and [error_measured_on] to pass for an older one, is a deliberate forgery, which this
    rule does not defend against (nor could a hash anyone can recompute); it catches copies and edits."""
    if figures_sha256 is not None:
        if figures_sha256 == hashed_figures(profile):
            return None
        # Each table the hash covers named: a user who edited [calibrated_on] alone was sent to others (trial65 #15).
        return ("its figures, error, [error_measured_on], [calibrated_on] or calibrated_from are not those "
                "`autotune calibrate -o` wrote (figures_sha256 differs: edited since, or copied onto other hardware)")
    # Only a calibrate that writes the hash records it with calibrated_from: not an older calibrate's file. A copy of
    # gh200.toml (which holds the table, no calibrated_from) is a copy, said below.
    if profile.error_measured_on and profile.calibrated_from:
        return ("its figures_sha256 was removed (a profile with [error_measured_on] is one `autotune calibrate -o` wrote "
                "with that hash), so nothing says its figures are still those the error was measured on")
    if not profile.calibrated_from:
        if _older_calibrate_wrote(source) and not profile.error_measured_on:
            return None  # its error was measured on its own figures, as a newer calibrate's is
        return ("only a built-in profile or one `autotune calibrate -o` wrote (it records calibrated_from) carries an error "
                "computed on its own figures, and this one was computed on the profile it was copied from")
    if _older_calibrate_wrote(source) or not _readable(source):
        return None  # an older calibrate's file (no hash), or a study's kept copy whose file is gone: judged when read
    return f"{_BY_HAND}: only the profile calibrate writes carries an error computed on its own figures"


_BY_HAND = "calibrated_from was written by hand (no figures_sha256 and no header of `autotune calibrate -o`)"


def _readable(source: str) -> bool:
    return bool(source) and Path(source).is_file()


# The first line `autotune calibrate -o` has written since before it recorded `calibrated_from` (trial52 #4).
_CALIBRATE_HEADER = "# Calibrated by `autotune calibrate` from "


def _older_calibrate_wrote(source: str) -> bool:
    """Whether the file `source` is a profile an older `autotune calibrate -o` wrote: its header says so, though it
    records no `calibrated_from` (its error, measured on its own figures, was ignored as a copy's)."""
    try:
        with open(source, encoding="utf-8") as file:
            return file.readline().startswith(_CALIBRATE_HEADER)
    except (OSError, UnicodeDecodeError, ValueError):  # a name, not a file; a kept copy whose file is gone
        return False


def claimed_node_problem(profile: HardwareProfile, node: str) -> str | None:
    """Why figures measured on `node` (a record's or a reference's `hardware`) are not known to be `profile`'s
    node's, or None: it names `node` by its calibrated_from alone, and that was written by hand or edited since. Its
    base_name makes such figures its own, so a profile of H100 figures given calibrated_from = "gh200" by hand
    replayed and calibrated on GH200 measurements without a word."""
    if node == profile.name or node != profile.calibrated_from or not profile.calibrated_from_unvouched:
        return None
    where = f"{profile.source}" if profile.source else f"'{profile.name}'"
    return (f"the profile {where} names '{node}' as its node only by calibrated_from = {node!r}, and nothing vouches "
            f"for that: {profile.calibrated_from_unvouched}")


def hardware_flag(source: str) -> str:
    """What to pass as --hardware for a profile read from `source`: a built-in profile by its name, also
    where `source` is its file in another checkout (a study made there names a path that is not here)."""
    return _builtin_name(source) or source


def _profile_path(name_or_path: str) -> Path:
    """The file a --hardware value names: a built-in profile by its name, else an existing file whatever
    its suffix (`my-cluster`, `my.TOML`: what the user has is read, not called unknown); a missing one is
    said to be missing where the value reads as a path (a directory in it, or a TOML suffix)."""
    if name_or_path in available_hardware():
        return PROFILE_DIR / f"{name_or_path}.toml"
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.exists():
        what = "is a directory" if path.is_dir() else "is not a regular file"  # a checkpoint's or a run's, say so
        raise ConfigError(_mixed_up(path) or f"hardware profile {path} {what}; pass a TOML profile file or one of "
                          f"{', '.join(available_hardware())}{_did_you_mean(name_or_path)}")
    if path.suffix.lower() == ".toml" or "/" in name_or_path:
        raise ConfigError(f"hardware profile {path} does not exist; pass a TOML profile file or one of "
                          f"{', '.join(available_hardware())}{_did_you_mean(name_or_path)}")
    raise ConfigError(
        f"unknown hardware '{name_or_path}': use one of {', '.join(available_hardware())} "
        f"or the path of a TOML profile ({SCHEMA}){_did_you_mean(name_or_path)}"
    )


def _did_you_mean(name_or_path: str) -> str:
    return did_you_mean(name_or_path, "--hardware", available_hardware(), "built in")


def _mixed_up(path: Path) -> str | None:
    """The refusal of another flag's file (a model, a space file, a run's results) given as --hardware, else None."""
    return mixed_up(path, "--hardware", "a hardware profile",
                    f"a built-in profile ({', '.join(available_hardware())}) or a TOML profile ({SCHEMA})")


def load_hardware(name_or_path: str) -> HardwareProfile:
    """Load a named profile (`gh200`, `h100-sxm`, `cpu`) or a TOML file with the same schema."""
    path = _profile_path(name_or_path)
    origin = f"hardware profile {path}"
    try:
        text = read_text(path, origin)
    except OSError as exc:
        raise ConfigError(f"{origin}: cannot be read ({exc.strerror}); check the path and its permissions") from None
    except ConfigError as refusal:  # no UTF-8 text: a run's study.db, say, which no re-encoding makes a profile
        raise ConfigError(_mixed_up(path) or str(refusal)) from None
    try:
        data = parse_toml(text, origin)
        if not data:  # said as such, not as its first missing key
            raise ConfigError(f"{origin} is empty (no key, only comments or blank lines); write a profile in it ({SCHEMA})")
        # Absolute: messages and a study's settings name the file wherever a later command runs.
        return parse_hardware(data, origin, source=str(path.resolve()))
    except ConfigError as refusal:  # another flag's file (a model JSON, a space file, a run's pareto.json): say which
        raise ConfigError(_mixed_up(path) or str(refusal)) from None


def kept_base_name(settings: dict) -> str | None:
    """`HardwareProfile.base_name` of the profile a study's settings kept (`hardware_name` alone in
    studies from before profiles were kept in them), without parsing the profile."""
    kept = settings.get("hardware_profile")
    calibrated_from = kept.get("calibrated_from") if isinstance(kept, dict) else None
    return calibrated_from if isinstance(calibrated_from, str) and calibrated_from else settings.get("hardware_name")


def _recorded_hardware(recorded: str, name: str | None) -> HardwareProfile:
    """The profile a study or candidate from before copies were kept names by path (or name).

    Where that path was a built-in profile's file (a study made in another checkout: the committed
    benchmarks/results/h100_power_study names /work/main/autotune/hardware/h100-sxm.toml), the built-in of that
    name here, whether that file is gone or still there in an older install. Such a study keeps nothing else of its profile to compare (no copy, no
    hash; `hardware_name` only), so this is as safe as reading the path was: that file was this built-in,
    and reading it always gave its current text, never the one the study began with. A path outside a
    checkout's autotune/hardware/, or a stored `hardware_name` other than the file's, is the user's own
    file, and no built-in stands in for it (its figures may be anything)."""
    builtin = _builtin_name(recorded)
    # By what it is, not where it was: the file there is the built-in of whichever autotune is installed there now,
    # refused by this one where its keys have changed since (an older install kept beside the upgrade: trial73 #4).
    if builtin and builtin != recorded and name in (None, builtin):
        return load_hardware(builtin)
    return load_hardware(recorded)


def stored_hardware(data: dict, origin: str) -> HardwareProfile:
    """The profile a study's settings or a candidate file kept: its own copy (`hardware_profile`), so
    that neither needs the profile file again, which may be gone (the run directory copied to another
    machine) or edited since; in files written before copies were kept, loaded by name or path."""
    if "hardware_profile" not in data:
        return _recorded_hardware(str(data["hardware"]), data.get("hardware_name"))
    if not isinstance(data["hardware_profile"], dict):
        raise ConfigError(f"{origin}: its hardware profile is not a table; the file is damaged")
    return parse_hardware(data["hardware_profile"], origin, source=str(data.get("hardware", "")))
