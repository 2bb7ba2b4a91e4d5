"""Search-space files (TOML): one list of values per knob."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autotune.counted import agreeing
from autotune.candidate import KNOBS, UNTOUCHED_DEVICE_SETTINGS, knob_value
from autotune.checks import MAX_COUNT, finite_as_typed, flag_number, whole_literal_problem, written_whole
from autotune.errors import ConfigError
from autotune.file_kind import did_you_mean, mixed_up
from autotune.text_files import WrittenFloat, WrittenInt, as_written, read_toml

# In the package, so that an installed wheel has it too; search_spaces/default.toml links to it for the docs.
DEFAULT_SPACE = Path(__file__).resolve().with_name("default.toml")

# Device settings: optional in a space file (older files have none); absent means untouched.
_DEVICE_KNOBS = {knob: (untouched,) for knob, untouched in UNTOUCHED_DEVICE_SETTINGS.items()}


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


# ASCII digits only: \d also takes other scripts' digits ("５", which int() reads as 5).
_NODES_RANGE = re.compile(r"([0-9]+)-([0-9]+)")
_NODES_HELP = "write e.g. --nodes 4, --nodes 2-8 or --nodes 2,4,8"
# Every node count multiplies the space: 3000 counts take minutes just to enumerate. A study over
# more picks a few (--nodes 64,128,256).
MAX_NODE_COUNTS = 256


def parse_nodes(text: str | int | None) -> tuple[int, ...] | None:
    """`4` -> (4,); `2-8` -> (2, 3, ..., 8); `2,4,8` or `1-4,8` -> the counts listed, sorted (SLURM writes
    node lists so, and a space file lists them). None stays None (the space file decides)."""
    if text is None:
        return None
    raw = str(text).strip()
    counts: set[int] = set()
    for part in raw.split(","):
        low, high = _node_part(part.strip(), raw)
        held = high - low + 1 if high - low + 1 > MAX_NODE_COUNTS else len(counts.union(range(low, high + 1)))
        if held > MAX_NODE_COUNTS:
            raise ConfigError(
                f"--nodes {raw!r} holds {held} node counts, more than {MAX_NODE_COUNTS}; narrow the range, or list a "
                "few counts (--nodes 64,128,256)"
            )
        counts.update(range(low, high + 1))
    return tuple(sorted(counts))


def _node_part(part: str, raw: str) -> tuple[int, int]:
    """One count or LOW-HIGH of --nodes `raw`, checked."""
    if re.fullmatch(r"[+-]?[0-9]+", part):
        low = high = int(part)
    elif match := _NODES_RANGE.fullmatch(part):
        low, high = int(match[1]), int(match[2])
    else:
        raise ConfigError(_part_problem(part, raw))
    if low < 1:
        raise ConfigError(f"--nodes {raw!r} must be at least 1 (a range is LOW-HIGH with 1 <= LOW <= HIGH); {_NODES_HELP}")
    if high > MAX_COUNT:
        raise ConfigError(f"--nodes {raw!r} is more than {MAX_COUNT} nodes; {_NODES_HELP}")
    if low > high:
        fixed = raw.replace(part, f"{high}-{low}") if part != raw else f"{high}-{low}"
        raise ConfigError(f"--nodes {raw!r}: LOW {low} must not exceed HIGH {high}; write --nodes {fixed}")
    return low, high


def _part_problem(part: str, raw: str) -> str:
    """Why `part` of --nodes `raw` is neither a count nor a range LOW-HIGH. A whole number written as a float (2.0,
    1e1, 1e400) is said as the flags say it; so is a range's end that is no count ('1-2.0' was "is not a whole number
    or a range LOW-HIGH", which left the user to find the end meant), named LOW or HIGH."""
    what = f"{part!r} in --nodes {raw!r}" if part != raw else f"--nodes {raw!r}"
    whole = written_whole(part)
    if whole is not None:
        return f"{what} {whole_literal_problem(whole, 1, MAX_COUNT)}"
    low, _, high = part.partition("-")
    if low and high and "-" not in high:  # a range; '1-2-3' and '-2-4' are none, said below
        low_problem, high_problem = (flag_number(text, low=1, high=MAX_COUNT, integer=True)[1] for text in (low, high))
        if low_problem and low_problem == high_problem and low_problem.startswith("is not "):  # 'a-b': the range said once
            said, _, allowed = low_problem.partition("; ")
            return f"{what}: LOW {low!r} {said}, nor is HIGH {high!r}; {allowed}"
        wrong = [f"{end} {text!r} {problem}" for end, text, problem in (("LOW", low, low_problem), ("HIGH", high, high_problem))
                 if problem]
        if wrong:  # both ends said at once: a fix of one must not meet a second refusal
            return f"{what}: {' and '.join(wrong)}"
    return f"{what} is not a whole number or a range LOW-HIGH; {_NODES_HELP}"


def node_span(nodes) -> tuple[int, int] | None:
    """(LOW, HIGH) when the node counts, in their order, are one unbroken range as `--nodes LOW-HIGH`
    gives them (one count: LOW == HIGH); else None. How every message and name writes node counts."""
    nodes = list(nodes)
    return (nodes[0], nodes[-1]) if nodes and nodes == list(range(nodes[0], nodes[-1] + 1)) else None


def spans_text(numbers) -> str:
    """`0, 2, 5-7`: whole numbers sorted, consecutive ones as ranges (node counts, trial numbers)."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


def nodes_flag(nodes) -> str:
    """The counts as --nodes takes them (parse_nodes' inverse): `4`, `2-8` for a range, `2,4,8` or `1-4,8`
    for counts that are no range (a space file's)."""
    return spans_text(nodes).replace(", ", ",")


def _checked_value(origin: str, knob: str, value):
    """One listed value, converted (power_limit to float), or a ConfigError saying what is allowed. A float too large
    for one (1e400, which TOML reads as inf) is checked as the finite number written: refused as 1e13 is ("too
    large: it must be ..."), where it was "not a whole number >= 1", the wording of `inf`."""
    finite = (finite_as_typed(value.written, value) if isinstance(value, WrittenFloat)
              else int(value) if isinstance(value, WrittenInt) else value)  # knob_value checks the type exactly
    try:
        return knob_value(knob, finite)
    except ValueError as why:
        raise ConfigError(f"space file {origin}: '{knob}' has {as_written(value)}, which {why}; see search_spaces/default.toml") from None


def _knob_values(data: dict, knob: str, origin: str) -> tuple:
    values = data[knob]
    if not isinstance(values, list) or not values:
        raise ConfigError(
            f"space file {origin}: '{knob}' = {as_written(values) if not isinstance(values, dict) else '{...}'} "
            "is not a non-empty list; write e.g. " + f"{knob} = [...], see search_spaces/default.toml"
        )
    checked = [_checked_value(origin, knob, value) for value in values]
    again = next((i for i, value in enumerate(checked) if value in checked[:i]), None)
    if again is not None:
        first, second = as_written(values[checked.index(checked[again])]), as_written(values[again])
        twice = f"{first} more than once" if first == second else f"{first} and {second}, one value"  # 0.8 and 8e-1
        raise ConfigError(f"space file {origin}: '{knob}' lists {twice}; list each value once")
    return tuple(checked)


def _read_space_file(path: Path) -> dict:
    """The TOML document of a space file, its keys checked (values are checked knob by knob)."""
    if str(path) == "-":  # `--measurements -` reads standard input; a space is read more than once (its nodes first)
        raise ConfigError("--space -: a space file is read from a file, not standard input; save it (e.g. space.toml) "
                          "and pass --space space.toml")
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "is not a regular file" if path.exists() else "does not exist"
        raise ConfigError(_mixed_up(path) or f"space file {path} {what}; pass --space with a TOML file like "
                          f"search_spaces/default.toml{did_you_mean(str(path), '--space')}")
    try:
        data = read_toml(path, f"space file {path}", "fix it or start from search_spaces/default.toml", floats_as_written=True)
    except OSError as exc:
        raise ConfigError(f"space file {path} cannot be read ({exc.strerror or exc}); pass a readable TOML file") from None
    except ConfigError as refusal:  # a model JSON or a run's pareto.json is no TOML: say which file it is
        raise ConfigError(_mixed_up(path) or str(refusal)) from None
    unknown = set(data) - set(KNOBS)
    if unknown:
        raise ConfigError(_mixed_up(path) or f"space file {path}: unknown {agreeing(len(unknown), 'key', 'keys')} "
                          f"{', '.join(sorted(unknown))}; see search_spaces/default.toml")
    return data


def _mixed_up(path: Path) -> str | None:
    """The refusal of another flag's file (a hardware profile, a model, a run's results) given as --space."""
    return mixed_up(path, "--space", "a space file", "a TOML file of knob lists like search_spaces/default.toml")


def _listed_nodes(data: dict, knob: str, origin: str) -> tuple[int, ...]:
    """The file's `nodes`, at most MAX_NODE_COUNTS of them as --nodes allows: each count is another copy of
    the whole space to enumerate (counted before the values are, which a long list makes slow too)."""
    values = data[knob]
    if isinstance(values, list) and len(values) > MAX_NODE_COUNTS:
        raise ConfigError(f"space file {origin}: '{knob}' lists {len(values)} node counts, more than {MAX_NODE_COUNTS}; "
                          f"list at most {MAX_NODE_COUNTS}, a few that matter (nodes = [64, 128, 256])")
    return _knob_values(data, knob, origin)


def _checked_lists(data: dict, path: Path) -> dict[str, tuple]:
    """Every list the file holds, checked, and every knob it must list there."""
    # What the file lists is checked first: a wrong value is what its writer looks at.
    listed = {knob: (_listed_nodes if knob == "nodes" else _knob_values)(data, knob, str(path)) for knob in KNOBS if knob in data}
    missing = [knob for knob in KNOBS if knob not in data and knob != "nodes" and knob not in _DEVICE_KNOBS]
    if missing:
        # Explicit on purpose: a study's space is what its file says, not a mix with defaults that may change.
        raise ConfigError(f"space file {path}: {', '.join(repr(k) for k in missing)} {'is' if len(missing) == 1 else 'are'} "
                          "missing; a space file lists the values of every knob: copy search_spaces/default.toml and "
                          "narrow the lists you want to narrow")
    return listed


def listed_nodes(path: str | Path | None = None) -> tuple[int, ...] | None:
    """The node counts a space file lists, or None where it lists none: then the nodes come from --nodes,
    the allocation or the default, as without --space. The whole file is checked as load_space checks it,
    so that its errors come before anything is said of its nodes."""
    path = Path(path) if path else DEFAULT_SPACE
    return _checked_lists(_read_space_file(path), path).get("nodes")


def load_space(path: str | Path | None = None, nodes: tuple[int, ...] | None = None,
               default_nodes: tuple[int, ...] | None = None) -> SearchSpace:
    """Read a space file (default: search_spaces/default.toml); `nodes` from --nodes wins over the file's
    list, and `default_nodes` is taken where neither gives one."""
    path = Path(path) if path else DEFAULT_SPACE
    data = _read_space_file(path)
    listed = _checked_lists(data, path)
    if nodes is None and "nodes" not in data:
        if default_nodes is None:
            raise ConfigError(f"space file {path} lists no 'nodes' and --nodes was not given; pass --nodes N")
        nodes = default_nodes
    return SearchSpace(**{**listed, "nodes": tuple(nodes or listed["nodes"])}, source=str(path))
