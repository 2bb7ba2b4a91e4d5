"""Search-space files (TOML): one list of values per knob."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from autotune.candidate import ACTIVATION_CHECKPOINTING, OPTIMIZER_OFFLOAD, SM_CLOCK_UNTOUCHED
from autotune.checks import MAX_COUNT
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


_NODES_RANGE = re.compile(r"(\d+)-(\d+)")
_NODES_HELP = "write e.g. --nodes 4 or --nodes 2-8"
# Every node count multiplies the space: 3000 counts take minutes just to enumerate. A study over
# more picks a few (nodes = [64, 128, 256] in a space file).
MAX_NODE_COUNTS = 256


def parse_nodes(text: str | int | None) -> tuple[int, ...] | None:
    """`4` -> (4,); `2-8` -> (2, 3, ..., 8). None stays None (the space file decides)."""
    if text is None:
        return None
    raw = str(text).strip()
    if re.fullmatch(r"[+-]?\d+", raw):
        low = high = int(raw)
    elif match := _NODES_RANGE.fullmatch(raw):
        low, high = int(match[1]), int(match[2])
    else:
        raise ConfigError(f"--nodes {raw!r} is not a whole number or a range LOW-HIGH; {_NODES_HELP}")
    if low < 1:
        raise ConfigError(f"--nodes {raw!r} must be at least 1 (a range is LOW-HIGH with 1 <= LOW <= HIGH); {_NODES_HELP}")
    if high > MAX_COUNT:
        raise ConfigError(f"--nodes {raw!r} is more than {MAX_COUNT} nodes; {_NODES_HELP}")
    if low > high:
        raise ConfigError(f"--nodes {raw!r}: LOW {low} must not exceed HIGH {high}; write --nodes {high}-{low}")
    if high - low + 1 > MAX_NODE_COUNTS:
        raise ConfigError(
            f"--nodes {raw!r} spans {high - low + 1} node counts, more than {MAX_NODE_COUNTS}; "
            "narrow the range, or list a few counts in the space file (nodes = [64, 128, 256]) and leave out --nodes"
        )
    return tuple(range(low, high + 1))


def _shown(value) -> str:
    """A value as TOML writes it (true, "none", 1.5), not as Python prints it."""
    return json.dumps(value, default=str)


def _refused(origin: str, knob: str, value, why: str):
    return ConfigError(f"space file {origin}: '{knob}' has {_shown(value)}, {why}; see search_spaces/default.toml")


def _checked_value(origin: str, knob: str, value):
    """One listed value, converted (power_limit to float), or a ConfigError saying what is allowed.
    Python takes `true` for 1 and `1.0` for 1: a space file must say what it means."""
    if knob in _ALLOWED:
        allowed = _ALLOWED[knob]
        if isinstance(value, bool) or type(value) is not type(allowed[0]) or value not in allowed:
            raise _refused(origin, knob, value, f"which is not one of the allowed values {', '.join(map(_shown, allowed))}")
        return value
    if knob in _POSITIVE_INTS:
        if not (_is_int(value) and 1 <= value <= MAX_COUNT):
            raise _refused(origin, knob, value, f"which is not a whole number >= 1 and <= {MAX_COUNT}")
        return value
    if knob == "power_limit":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise _refused(origin, knob, value, "which is not a fraction of the default limit in (0, 1], e.g. [1.0, 0.9, 0.8]")
        return float(value)
    if not (value == SM_CLOCK_UNTOUCHED or (_is_int(value) and 1 <= value <= MAX_COUNT)):  # sm_clock_mhz
        raise _refused(origin, knob, value, f'which is not "{SM_CLOCK_UNTOUCHED}" or a clock in whole MHz >= 1, e.g. ["max", 1600]')
    return value


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _knob_values(data: dict, knob: str, origin: str) -> tuple:
    if knob not in data:
        raise ConfigError(f"space file {origin}: '{knob}' is missing; list its values, see search_spaces/default.toml")
    values = data[knob]
    if not isinstance(values, list) or not values:
        raise ConfigError(
            f"space file {origin}: '{knob}' = {_shown(values) if not isinstance(values, dict) else '{...}'} "
            "is not a non-empty list; write e.g. " + f"{knob} = [...], see search_spaces/default.toml"
        )
    checked = [_checked_value(origin, knob, value) for value in values]
    repeated = [value for i, value in enumerate(checked) if value in checked[:i]]
    if repeated:
        raise ConfigError(f"space file {origin}: '{knob}' lists {_shown(repeated[0])} more than once; list each value once")
    return tuple(checked)


def load_space(path: str | Path | None = None, nodes: tuple[int, ...] | None = None) -> SearchSpace:
    """Read a space file (default: search_spaces/default.toml); `nodes` from --nodes wins over the file."""
    path = Path(path) if path else DEFAULT_SPACE
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "is not a regular file" if path.exists() else "does not exist"
        raise ConfigError(f"space file {path} {what}; pass --space with a TOML file like search_spaces/default.toml")
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"space file {path} cannot be read ({exc.strerror or exc}); pass a readable TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"space file {path} is not valid TOML ({exc}); fix it or start from search_spaces/default.toml") from None
    unknown = set(data) - set(_ALLOWED) - set(_POSITIVE_INTS) - set(_DEVICE_KNOBS)
    if unknown:
        raise ConfigError(f"space file {path}: unknown key(s) {', '.join(sorted(unknown))}; see search_spaces/default.toml")
    if nodes is None and "nodes" not in data:
        raise ConfigError(f"space file {path} lists no 'nodes' and --nodes was not given; pass --nodes N")
    listed_nodes = _knob_values(data, "nodes", str(path)) if "nodes" in data else None  # checked even where --nodes wins
    nodes = nodes or listed_nodes
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
