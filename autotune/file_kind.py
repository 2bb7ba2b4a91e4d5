"""What a file given to the wrong flag is, and which flag (or command) takes it.

--model, --hardware and --space each take a file, and a newcomer passes one to another's flag (a space file as
--hardware, a hardware profile as --space, a run's pareto.json as --model). Each loader, where a file does not
read as its own kind, asks here what the file is, so that its refusal says "a space file: pass it as --space", not
which TOML line broke or which forty keys are unknown (trial 61 #23, trial 63 #16). A value that names no file gets
a "did you mean" from here too: a file beside it with the suffix left off or other letter case, or a built-in name
written in other case or nearly (trial 63 #18).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from autotune.errors import ConfigError
from autotune.shell import shell_path
from autotune.text_files import read_text


@dataclass(frozen=True)
class FileKind:
    what: str  # "a hardware profile (TOML with [gpu])"
    flag: str | None  # the flag that takes it; None for a file a command reads
    use: str  # "pass it as --hardware", or the command: "read it with autotune report r1"


def _taken_by(flag: str, what: str) -> FileKind:
    return FileKind(what, flag, f"pass it as {flag}")


def _document(path: Path) -> object:
    """The file's JSON or TOML document, or None where it is neither (or cannot be read)."""
    try:
        text = read_text(path, str(path))
    except (OSError, ConfigError):
        return None
    for parse in (json.loads, tomllib.loads):
        try:
            return parse(text)
        except (ValueError, RecursionError):  # JSONDecodeError and TOMLDecodeError are ValueErrors
            continue
    return None


# The first bytes of every SQLite database (a run's study.db): no text, so no document to read keys from.
_SQLITE_HEADER = b"SQLite format 3\x00"
# A DeepSpeed config's own keys (DeepSpeed requires a batch size), and the section autotune export adds to one.
_DEEPSPEED_KEYS = {"train_batch_size", "train_micro_batch_size_per_gpu", "zero_optimization", "autotune"}


def _bytes_kind(path: Path) -> FileKind | None:
    """What a file that is no JSON or TOML document is, by its first bytes: a study database, a report."""
    try:
        with open(path, "rb") as file:
            head = file.read(512)
    except OSError:
        return None
    if head.startswith(_SQLITE_HEADER):
        return FileKind("a study database (a run directory's study.db, written by autotune run)", None,
                        f"read it with autotune report {shell_path(path.parent)}")
    if head.lstrip().lower().startswith((b"<!doctype html", b"<html")):
        return FileKind("a run directory's report (report.html)", None, "open it in a browser")
    return None


def _document_kind(document: object, path: Path) -> FileKind | None:
    """What a file holding `document` is, by the keys only its kind has."""
    # Lazily: candidate and models_hf read hardware profiles and models, whose loaders ask here.
    from autotune.candidate import KNOBS
    from autotune.models_hf import is_hf_config

    if not isinstance(document, dict):
        return None
    # Before the space file's test: a DeepSpeed config has an activation_checkpointing section, as a space has a knob.
    if set(document) & _DEEPSPEED_KEYS:
        return FileKind("a DeepSpeed config (as autotune export writes configs/<pick>.json)", None,
                        "DeepSpeed reads it (the export's launch.sh passes it), no autotune flag does")
    if isinstance(document.get("knobs"), dict) and "workload" in document:
        return FileKind("a candidate file (as autotune export writes <pick>.candidate.json)", None,
                        f"run the probe on it with python -m trainer.probe --candidate {shell_path(path)}")
    if "llm" in document or is_hf_config(document):  # autotune's schema, or a Hugging Face config.json
        return _taken_by("--model", "a model file (JSON with llm or model_type)")
    if isinstance(document.get("gpu"), dict):
        return _taken_by("--hardware", "a hardware profile (TOML with [gpu])")
    if "front" in document and "trials" in document:
        return FileKind("a run directory's results (pareto.json, written by autotune run)", None,
                        f"read them with autotune report {shell_path(path.parent)}")
    if set(document) & set(KNOBS):
        return _taken_by("--space", "a space file (TOML of knob lists, like search_spaces/default.toml)")
    return None


def file_kind(path: Path) -> FileKind | None:
    """What the file or directory at `path` is, of the files autotune's flags and commands take; None where it
    reads as none of them (a broken file of the flag's own kind, say: then its loader's own words apply)."""
    if path.is_dir():
        from autotune.models_hf import is_hf_config

        if is_hf_config(_document(path / "config.json")):
            return _taken_by("--model", "a Hugging Face checkpoint's directory (with its config.json)")
        if (path / "pareto.json").is_file() or (path / "study.db").is_file():
            return FileKind("a run directory (autotune run's --out)", None,
                            f"read it with autotune report {shell_path(path)}")
        return None
    return _document_kind(_document(path), path) or _bytes_kind(path)


def mixed_up(path: Path, flag: str, expected: str, takes: str) -> str | None:
    """The one line for a file of another flag's kind given as `flag`, or None where it is not one:
    `--hardware x.toml is a space file (...), not a hardware profile: pass it as --space; --hardware takes ...`."""
    kind = file_kind(path)
    if kind is None or kind.flag == flag:
        return None
    return f"{flag} {path} is {kind.what}, not {expected}: {kind.use}; {flag} takes {takes}"


# How many entries of a folder are looked through for a file of the value's name in other case.
_MOST_ENTRIES = 10_000


def _files_beside(path: Path) -> list[Path]:
    """Files in `path`'s folder named as `path`, a suffix left off (.toml, .json) or in other case:
    `sub/a100-80` -> sub/a100-80.toml; `B` -> B.TOML; `A100-80.toml` -> a100-80.toml."""
    as_written = {path.name + suffix for suffix in (".toml", ".json")}
    wanted = {name.lower() for name in as_written | {path.name}}
    folder = path.parent
    try:
        with os.scandir(folder) as entries:
            found = [entry.name for entry in islice(entries, _MOST_ENTRIES)
                     if entry.name.lower() in wanted and entry.name != path.name and entry.is_file()]
    except OSError:  # no such folder, or one that cannot be listed: nothing to suggest
        return []
    # The value as written with a suffix first: `cal2` beside cal2.toml and Cal2.TOML means cal2.toml (trial 65 #16).
    return [folder / name for name in sorted(found, key=lambda name: (name not in as_written, name))]


def _digits(name: str) -> list[str]:
    return re.findall(r"[0-9]+", name)


def _near_name(value: str, names: Sequence[str]) -> str | None:
    """The name `value` misspells: the same in other case (H100-SXM, 7B), or close (h100 -> h100-sxm) with the
    same first letter and the same numbers: names of hardware and models differ by those (h200 is no gh200, nor
    7b a 72b), so a guess that changes them would name another machine or model; and not by dropping what the value
    adds to a name (gh200-nvl, two superchips a node, is no gh200)."""
    lowered = {name.lower(): name for name in names}
    if value.lower() in lowered:
        return lowered[value.lower()]
    for close in difflib.get_close_matches(value.lower(), list(lowered), n=3, cutoff=0.6):
        if value.lower().startswith(close):  # a suffix the name lacks: gh200-nvl is another machine than gh200
            continue
        if close[:1] == value[:1].lower() and _digits(close) == _digits(value):
            return lowered[close]
    return None


# The suffix of each flag's own files: a file beside the value with it, of no kind known here (broken, say), is still
# the one the value left the suffix off.
_OWN_SUFFIX = {"--model": ".json", "--hardware": ".toml", "--space": ".toml"}


def did_you_mean(value: str, flag: str, names: Sequence[str] = (), names_are: str = "") -> str:
    """'; did you mean ...?' for a `flag` value that names no file of its kind, or "" where nothing is certain
    enough to say: a file beside it (what it is, and the flag that takes it), else a built-in name (`names`,
    which `names_are`: "built in", "a preset") that the value, or its file name without the suffix, writes in
    other case or nearly."""
    path = Path(value)
    for beside in _files_beside(path):
        kind = file_kind(beside)
        if kind is None or kind.flag == flag:  # c8dec21: the suffix left off a file of this flag's kind
            if kind is None and beside.suffix.lower() != _OWN_SUFFIX[flag]:
                continue
            return f"; {beside} is here: did you mean {flag} {shell_path(beside)}?"
        if kind.flag:
            return f"; {beside} is here, {kind.what}: did you mean {kind.flag} {shell_path(beside)}?"
        return f"; {beside} is here, {kind.what}: {kind.use}"
    if other := _builtin_of_another_flag(value, flag):
        return other
    for written in dict.fromkeys([path.name, path.stem]):
        if written and (name := _near_name(written, names)) and name != value:
            return f"; did you mean {flag} {name} ({names_are})?"
    return ""


def _builtin_of_another_flag(value: str, flag: str) -> str | None:
    """'; h100-sxm is a built-in hardware profile: did you mean --hardware h100-sxm?' for another flag's built-in name,
    as a file of another flag's kind is named (trial 65 #22: `--model h100-sxm` was only an unknown model)."""
    # Lazily: both loaders import this module.
    from autotune.hardware import available_hardware
    from autotune.models import PRESETS

    for other, names, what in (("--hardware", available_hardware(), "a built-in hardware profile"),
                               ("--model", list(PRESETS), "a preset model")):
        if other != flag and value in names:
            return f"; {value} is {what}: did you mean {other} {value}?"
    return None
