"""Reading the files a user writes by hand (a hardware profile, a space file, a model file, a reference): their
text, and a TOML document with its problems said in the file's words.

One reading for all of them, so that what one learned reaches the others: a byte-order mark a Windows editor
writes is no part of the text; a UTF-16 file (Windows PowerShell 5.1's `>` and Out-File write one) is said to be
UTF-16, not "'utf-8' codec can't decode byte 0xff"; a TOML key or table written twice is named with its lines,
not tomllib's "Cannot overwrite a value (at line 4, column 18)".
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from autotune.checks import shown
from autotune.errors import ConfigError

# The byte-order marks of UTF-16 (and of UTF-32, which begins as UTF-16LE's does), as a hex dump shows them.
_UTF16_MARKS = {b"\xff\xfe": "FF FE", b"\xfe\xff": "FE FF"}
_AT_LINE = re.compile(r"\(at line (\d+), column \d+\)$")
_TABLE_TWICE = re.compile(r"^Cannot declare \((.*)\) twice")


def decoded_text(data: bytes, origin: str) -> str:
    """`data` as UTF-8 text, a byte-order mark dropped; ConfigError, naming the encoding where it is UTF-16, else
    the first byte that is not UTF-8."""
    mark = _UTF16_MARKS.get(data[:2])
    if mark:
        raise ConfigError(f"{origin} is UTF-16 text (byte-order mark {mark}), not UTF-8: save it as UTF-8 (Windows "
                          "PowerShell: Out-File -Encoding utf8)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # a Latin-1 name, say, or a binary file
        raise ConfigError(f"{origin} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
                          "save it as UTF-8") from None


def read_text(path: Path, origin: str) -> str:
    """The text of a file a user wrote (decoded_text); OSError as it comes, for the caller's words on the path."""
    return decoded_text(Path(path).read_bytes(), origin)


def _first_copy(lines: list[str], line: int, key: str) -> int | None:
    """The line of `key`'s first copy: the same key earlier in the same table (up to its [header]), else None."""
    for number in range(line - 1, 0, -1):
        before = lines[number - 1]
        if before.lstrip().startswith("["):
            return None
        if "=" in before and before.split("=", 1)[0].strip() == key:
            return number
    return None


def _table_name(header: str) -> str:
    """A [table] header's dotted name as tomllib's "Cannot declare" names it ("gpu", "a.b"): quotes and spaces off."""
    return ".".join(part.strip().strip("'\"") for part in header.split(".") if part.strip())


def _first_header(lines: list[str], line: int, name: str) -> int | None:
    """The line of table `name`'s first [header] before `line` (a table written twice), else None."""
    for number in range(1, line):
        header = re.match(r"\s*\[([^\[\]]+)\]", lines[number - 1])
        if header and _table_name(header.group(1)) == name:
            return number
    return None


def toml_problem(text: str, exc: Exception, fix: str = "fix the file") -> str:
    """What is wrong, and the fix: tomllib's error in the file's words: a key or table written twice named, with its
    lines (tomllib says only "Cannot overwrite a value (at line 4, column 18)"); else tomllib's own message."""
    message = str(exc)
    at = _AT_LINE.search(message)
    if not isinstance(exc, tomllib.TOMLDecodeError) or not at:
        return f"not valid TOML ({message}); {fix}"
    line = int(at.group(1))
    lines = text.splitlines()
    table = _TABLE_TWICE.match(message)
    if table:
        name = ".".join(part.strip().strip("'\"") for part in table.group(1).split(",") if part.strip())
        first = _first_header(lines, line, name)  # both lines, as for a key (trial 63 #19: only the second)
        where = f"lines {first} and {line}" if first else f"again at line {line}"
        return f"[{name}] is written twice ({where}): write each table once, its keys together"
    if message.startswith("Cannot overwrite a value") and line <= len(lines) and "=" in lines[line - 1]:
        key = lines[line - 1].split("=", 1)[0].strip()
        first = _first_copy(lines, line, key)
        where = f"lines {first} and {line}" if first else f"again at line {line}"
        return f"{key} is written twice ({where}): keep the one you mean"
    return f"not valid TOML ({message}); {fix}"


class WrittenFloat(float):
    """A TOML float that keeps the text it was written as ('1e1', '1_0.5', 'inf', '1e400'): a refusal quotes what the
    user wrote (as_written), where Python's reading of it (10.0, 10.5, inf) is another spelling the file never held,
    and 1e400, a finite number too large for a float, is not told from `inf` once read."""

    written: str

    def __new__(cls, text: str):
        value = super().__new__(cls, text)
        value.written = text
        return value


class WrittenInt(int):
    """A TOML integer of a top-level list written otherwise than in decimal digits (0x4, 0o17, 1_6, +1): tomllib keeps
    no integer's spelling, so "lists 4 more than once" was said of [4, 0x4] (trial68 #10). Recovered from the text
    (_integers_as_written); a reader that checks a value's type exactly takes int(value)."""

    written: str

    def __new__(cls, value: int, text: str):
        number = super().__new__(cls, value)
        number.written = text
        return number


# One top-level `key = [...]` on its lines: its items are told apart by commas where it holds no string or table.
_TOP_LIST = re.compile(r'^[ \t]*"?([A-Za-z0-9_-]+)"?[ \t]*=[ \t]*\[([^\]"\'{}\[]*)\]', re.MULTILINE)


def _integers_as_written(data: dict, text: str) -> dict:
    """`data` with the integers of its top-level lists that are written otherwise than in decimal digits as
    WrittenInt, where the list's text tells its items apart (no string, table or nested list); else as read."""
    for key, body in _TOP_LIST.findall(text):
        values = data.get(key)
        items = [item.strip() for item in re.sub(r"#[^\n]*", "", body).split(",")]
        items = items[:-1] if items and not items[-1] else items  # a trailing comma
        if not isinstance(values, list) or len(items) != len(values):
            continue
        for i, (value, item) in enumerate(zip(values, items)):
            if type(value) is int and item != str(value) and _int_text(item) == value:
                values[i] = WrittenInt(value, item)
    return data


def _int_text(item: str) -> int | None:
    try:
        return int(item.replace("_", ""), 0)
    except ValueError:
        return None


def as_written(value) -> str:
    """A value of a TOML document read with floats_as_written, as the file writes it: a float in its own text, a
    top-level list's integer too (WrittenInt), a list or table of them; anything else as checks.shown writes it
    (true, "none", 4)."""
    if isinstance(value, (WrittenFloat, WrittenInt)):
        return value.written
    if isinstance(value, list):
        return f"[{', '.join(map(as_written, value))}]"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{shown(key)}: {as_written(item)}' for key, item in value.items())}}}"
    return shown(value)


def parse_toml(text: str, origin: str, fix: str = "fix the file", *, floats_as_written: bool = False) -> dict:
    """The TOML document of `text`; ConfigError "{origin}: {toml_problem}" where it is none. `floats_as_written`:
    its floats as WrittenFloat and its top-level lists' integers in another spelling as WrittenInt, for a reader whose
    refusals quote them (as_written)."""
    try:
        data = tomllib.loads(text, parse_float=WrittenFloat if floats_as_written else float)
        return _integers_as_written(data, text) if floats_as_written else data
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # nested too deep: RecursionError
        raise ConfigError(f"{origin}: {toml_problem(text, exc, fix)}") from None


def read_toml(path: Path, origin: str, fix: str = "fix the file", *, floats_as_written: bool = False) -> dict:
    """The TOML document of a file a user wrote (read_text, parse_toml); OSError as it comes."""
    return parse_toml(read_text(path, origin), origin, fix, floats_as_written=floats_as_written)
