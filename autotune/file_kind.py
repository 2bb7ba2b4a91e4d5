"""What a file given to the wrong flag is, and which flag (or command) takes it.

--model, --hardware and --space each take a file, and a newcomer passes one to another's flag (a space file as
--hardware, a hardware profile as --space, a run's pareto.json as --model). Each loader, where a file does not
read as its own kind, asks here what the file is, so that its refusal says "a space file: pass it as --space", not
which TOML line broke or which forty keys are unknown (trial 61 #23, trial 63 #16).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
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


def _document_kind(document: object, path: Path) -> FileKind | None:
    """What a file holding `document` is, by the keys only its kind has."""
    # Lazily: candidate and models_hf read hardware profiles and models, whose loaders ask here.
    from autotune.candidate import KNOBS
    from autotune.models_hf import is_hf_config

    if not isinstance(document, dict):
        return None
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
    return _document_kind(_document(path), path)


def mixed_up(path: Path, flag: str, expected: str, takes: str) -> str | None:
    """The one line for a file of another flag's kind given as `flag`, or None where it is not one:
    `--hardware x.toml is a space file (...), not a hardware profile: pass it as --space; --hardware takes ...`."""
    kind = file_kind(path)
    if kind is None or kind.flag == flag:
        return None
    return f"{flag} {path} is {kind.what}, not {expected}: {kind.use}; {flag} takes {takes}"

