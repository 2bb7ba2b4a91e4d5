"""Writing a hardware profile back as TOML (`autotune calibrate -o my-cluster.toml`), and validated copies.

`load_hardware(path)` of what `dump_hardware(profile)` wrote gives an equal profile: floats are
written with `repr` (exact), strings with JSON escapes (valid TOML basic strings).
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import fields, replace

from autotune.hardware.profile import ERROR_SCOPE_BY_MODEL, HardwareProfile
from autotune.hardware.simulator_constants import (
    SIMULATOR_CONSTANTS,
    SIMULATOR_ERROR_KEYS,
    simulator_constants,
    simulator_error,
)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def _table(name: str, spec) -> list[str]:
    lines = ["", f"[{name}]"]
    lines += [f"{f.name} = {_value(getattr(spec, f.name))}" for f in fields(spec)]
    return lines


def dump_hardware(profile: HardwareProfile, header: str = "", figures_hash: bool = True) -> str:
    """The profile as a TOML document; `header` becomes leading comment lines (e.g. how it was fitted). A calibrated
    profile's carries `figures_sha256` (`figures_hash: False` leaves it out: the text it is the hash of)."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [
        f"name = {_value(profile.name)}",
        *([f"calibrated_from = {_value(profile.calibrated_from)}"] if profile.calibrated_from else []),
        *([f"figures_sha256 = {_value(figures_sha256(profile))}"] if profile.calibrated_from and figures_hash else []),
        f"description = {_value(profile.description)}",
        f"gpus_per_node = {_value(profile.gpus_per_node)}",
        f"cuda = {_value(profile.cuda)}",
        f"module_scope_energy = {_value(profile.module_scope_energy)}",
    ]
    for section in ("gpu", "cpu", "host_link", "intra_node", "inter_node", "power"):
        lines += _table(section, getattr(profile, section))
    lines += ["", "# The simulator's constants (docs/simulator.md): value, then [low, high] bounds and meaning.",
              "[simulator]"]
    for spec in SIMULATOR_CONSTANTS:
        lines.append(f"# [{spec.low:g}, {spec.high:g}] {spec.meaning}")
        lines.append(f"{spec.name} = {_value(profile.simulator[spec.name])}")
    if profile.simulator_error:
        lines += ["", "# Leave-one-out error of the simulator with these constants, percent per metric.",
                  "[simulator_error]"]
        lines += [f"{key} = {_value(profile.simulator_error[key])}"
                  for key in SIMULATOR_ERROR_KEYS if key in profile.simulator_error]
    if profile.error_measured_on:
        lines += ["", "# The models, knob values, GPU counts and workload of the configurations that error was measured on",
                  "# (by_model: each model's own knob values and GPU counts).",
                  "[error_measured_on]"]
        lines += [f"{key} = {json.dumps(list(values))}" for key, values in profile.error_measured_on.items()
                  if key != ERROR_SCOPE_BY_MODEL]
        for model, lists in profile.error_measured_on.get(ERROR_SCOPE_BY_MODEL, {}).items():
            lines += ["", f"[error_measured_on.{ERROR_SCOPE_BY_MODEL}.{json.dumps(model)}]"]
            lines += [f"{key} = {json.dumps(list(values))}" for key, values in lists.items()]
    if profile.calibrated_on:
        lines += ["", "# The models, GPU counts and node counts of the configurations the constants were fitted on.",
                  "[calibrated_on]"]
        lines += [f"{key} = {json.dumps(list(values))}" for key, values in profile.calibrated_on.items()]
    return "\n".join(lines) + "\n"


def hardware_to_dict(profile: HardwareProfile) -> dict:
    """The profile as the tables of its TOML document (JSON-able): what a study and a candidate file keep,
    so that a report, an export or a probe needs no profile file (it may be gone, or edited since)."""
    return tomllib.loads(dump_hardware(profile))


# What a profile's figures do not depend on: its names, its wording and its stated error.
_NOT_FIGURES = ("name", "calibrated_from", "figures_sha256", "description", "simulator_error", "error_measured_on",
                "calibrated_on")
# What the trust in a calibrated profile's [simulator_error] does not depend on: its name (a label for reports) and its
# wording. The error itself, what it was measured on and the node it was calibrated from are calibrate's output as
# much as the figures are: left out, a hand-lowered error, a widened [error_measured_on] or a calibrated_from naming
# another node (whose recorded figures then replay onto it) kept a matching hash (trial63 #3, #4).
_NOT_HASHED = ("name", "figures_sha256", "description")


def figures_sha256(profile: HardwareProfile) -> str:
    """The hash of everything a calibrated profile's stated error is vouched for by (every table but its name and
    wording: its figures, [simulator_error], [error_measured_on], [calibrated_on] and calibrated_from), which calibrate -o writes
    beside them: the error was measured on these figures, and a copy edited to other hardware (a colleague's
    calibrated profile, say), or whose error or its scope was edited, no longer matches it (hardware/load.py)."""
    tables = tomllib.loads(dump_hardware(profile, figures_hash=False))
    figures = {key: value for key, value in tables.items() if key not in _NOT_HASHED}
    return hashlib.sha256(json.dumps(figures, sort_keys=True).encode()).hexdigest()


def simulation_sha256(profile: HardwareProfile) -> str:
    """The hash of what a profile's simulated and estimated figures depend on (every table but its names, wording and
    stated error: what figure_differences compares), which a simulated record names its profile by: a built-in whose
    [simulator_error] or [error_measured_on] changed between versions gives the same figures, and its older records
    were refused as another profile's (trial73 #1). Edited constants still change it."""
    tables = hardware_to_dict(profile)
    return hashlib.sha256(json.dumps({k: v for k, v in tables.items() if k not in _NOT_FIGURES}, sort_keys=True)
                          .encode()).hexdigest()


def figure_differences(stored: dict, current: dict) -> list[str]:
    """The keys (`[simulator] step_overhead_s`) on which two profiles' dicts differ in what a figure
    depends on; empty when every simulated or estimated figure would be the same."""
    differences = []
    for key in sorted(set(stored) | set(current)):
        if key in _NOT_FIGURES:
            continue
        old, new = stored.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [f"[{key}] {k}" for k in sorted(set(old) | set(new)) if not _same(old.get(k), new.get(k))]
        elif not _same(old, new):
            differences.append(key)
    return differences


def _same(old, new) -> bool:
    # A constant written back by calibrate may differ from its source's literal in the last digit.
    if isinstance(old, float) and isinstance(new, float):
        return math.isclose(old, new, rel_tol=1e-9)
    return old == new


def with_simulator_constants(profile: HardwareProfile, values: dict, error: dict | None = None) -> HardwareProfile:
    """A copy of `profile` with some simulator constants replaced (checked against their bounds);
    `error`, when given, replaces its [simulator_error] figures."""
    origin = f"simulator constants for hardware '{profile.name}'"
    constants = simulator_constants(origin, {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                                             for k, v in values.items()}, base=profile.simulator)
    changes = {"simulator": constants}
    if error is not None:
        changes["simulator_error"] = simulator_error(origin, error)
    return replace(profile, **changes)
