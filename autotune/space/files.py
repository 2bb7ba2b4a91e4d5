"""Search-space files (TOML): one list of values per knob."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from autotune.candidate import ACTIVATION_CHECKPOINTING, OPTIMIZER_OFFLOAD, SM_CLOCK_UNTOUCHED
from autotune.errors import ConfigError

DEFAULT_SPACE = Path(__file__).resolve().parents[2] / "search_spaces" / "default.toml"

_ALLOWED = {
    "zero_stage": (0, 1, 2, 3),
    "optimizer_offload": OPTIMIZER_OFFLOAD,
    "activation_checkpointing": ACTIVATION_CHECKPOINTING,
}
_POSITIVE_INTS = ("sp_degree", "micro_batch", "nodes")
# Device settings: optional in a space file (older files have none); absent means untouched.
_DEVICE_KNOBS = {"power_limit": (1.0,), "sm_clock_mhz": (SM_CLOCK_UNTOUCHED,)}


@dataclass(frozen=True)
class SearchSpace:
    zero_stage: tuple[int, ...]
    optimizer_offload: tuple[str, ...]
    activation_checkpointing: tuple[str, ...]
    sp_degree: tuple[int, ...]
    micro_batch: tuple[int, ...]
    nodes: tuple[int, ...]
    power_limit: tuple[float, ...] = _DEVICE_KNOBS["power_limit"]
    sm_clock_mhz: tuple[int | str, ...] = _DEVICE_KNOBS["sm_clock_mhz"]
    source: str = ""

    def values(self, knob: str) -> tuple:
        return getattr(self, knob)


def parse_nodes(text: str | int | None) -> tuple[int, ...] | None:
    """`4` -> (4,); `2-8` -> (2, 3, ..., 8). None stays None (the space file decides)."""
    if text is None:
        return None
    raw = str(text).strip()
    try:
        if "-" in raw:
            low, high = (int(part) for part in raw.split("-", 1))
            nodes = tuple(range(low, high + 1))
        else:
            nodes = (int(raw),)
    except ValueError:
        raise ConfigError(f"--nodes {raw!r} is not a number or a range; write e.g. --nodes 4 or --nodes 2-8") from None
    if not nodes or min(nodes) < 1:
        raise ConfigError(f"--nodes {raw!r} must be at least 1 (a range is LOW-HIGH with 1 <= LOW <= HIGH)")
    return nodes


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _knob_values(data: dict, knob: str, origin: str) -> tuple:
    values = data.get(knob)
    if not isinstance(values, list) or not values:
        raise ConfigError(f"space file {origin}: '{knob}' must be a non-empty list; see search_spaces/default.toml")
    if knob in _ALLOWED:
        bad = [v for v in values if v not in _ALLOWED[knob]]
        if bad:
            allowed = ", ".join(map(str, _ALLOWED[knob]))
            raise ConfigError(f"space file {origin}: '{knob}' has {bad}; allowed values are {allowed}")
    if knob in _POSITIVE_INTS and not all(_is_int(v) and v >= 1 for v in values):
        raise ConfigError(f"space file {origin}: '{knob}' must list whole numbers >= 1 (got {values})")
    if knob == "power_limit":
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1 for v in values):
            raise ConfigError(
                f"space file {origin}: 'power_limit' must list fractions of the default limit in (0, 1], e.g. [1.0, 0.9, 0.8] (got {values})"
            )
        values = [float(v) for v in values]
    if knob == "sm_clock_mhz" and not all(v == SM_CLOCK_UNTOUCHED or (_is_int(v) and v >= 1) for v in values):
        raise ConfigError(
            f"space file {origin}: 'sm_clock_mhz' must list \"max\" or clocks in whole MHz >= 1, e.g. [\"max\", 1600] (got {values})"
        )
    return tuple(dict.fromkeys(values))  # keep order, drop repeats


def load_space(path: str | Path | None = None, nodes: tuple[int, ...] | None = None) -> SearchSpace:
    """Read a space file (default: search_spaces/default.toml); `nodes` from --nodes wins over the file."""
    path = Path(path) if path else DEFAULT_SPACE
    if not path.is_file():
        raise ConfigError(f"space file {path} does not exist; pass --space with a TOML file like search_spaces/default.toml")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"space file {path} is not valid TOML ({exc}); fix it or start from search_spaces/default.toml") from None
    unknown = set(data) - set(_ALLOWED) - set(_POSITIVE_INTS) - set(_DEVICE_KNOBS)
    if unknown:
        raise ConfigError(f"space file {path}: unknown key(s) {', '.join(sorted(unknown))}; see search_spaces/default.toml")
    if nodes is None:
        if "nodes" not in data:
            raise ConfigError(f"space file {path} lists no 'nodes' and --nodes was not given; pass --nodes N")
        nodes = _knob_values(data, "nodes", str(path))
    return SearchSpace(
        zero_stage=_knob_values(data, "zero_stage", str(path)),
        optimizer_offload=_knob_values(data, "optimizer_offload", str(path)),
        activation_checkpointing=_knob_values(data, "activation_checkpointing", str(path)),
        sp_degree=_knob_values(data, "sp_degree", str(path)),
        micro_batch=_knob_values(data, "micro_batch", str(path)),
        nodes=tuple(nodes),
        **{knob: _knob_values(data, knob, str(path)) for knob in _DEVICE_KNOBS if knob in data},
        source=str(path),
    )
