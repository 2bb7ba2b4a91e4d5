"""Text Python took from the operating system (the command line, a file's name) read as what the user typed.

Under an ASCII locale with Python's UTF-8 mode off (`LC_ALL=C PYTHONUTF8=0 PYTHONCOERCECLOCALE=0`), and for any
byte that is not UTF-8 in any locale, Python decodes a name's bytes it cannot read into surrogate escapes: a
UTF-8 'é' typed on the command line arrives as '\\udcc3\\udca9' (trial 45). A path keeps them (the file system
wants those bytes back), but a name autotune keeps and shows (a study's, a model's) must be text: SQLite and
UTF-8 files cannot hold the escapes, and the same study must be the same name whatever the locale.
"""

from __future__ import annotations

import codecs

_ESCAPES = range(0xDC80, 0xDD00)  # what the surrogateescape error handler makes of the bytes 0x80-0xFF


def has_escapes(text: str) -> bool:
    return any(ord(c) in _ESCAPES for c in text)


def escaped_bytes(text: str) -> str:
    """The bytes the escapes of `text` stand for, as `\\xe9`, for a message that says which ones are not text."""
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" for c in text if ord(c) in _ESCAPES)


def os_text(text: str, errors: str = "strict") -> str:
    """`text` with its surrogate escapes read back as the UTF-8 they stand for ('\\udcc3\\udca9' -> 'é').
    errors="strict": UnicodeDecodeError where they are not UTF-8 (a Latin-1 byte); "replace": each such byte
    becomes U+FFFD."""
    if not has_escapes(text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", errors)


ERRORS = "autotune-as-typed"


def _as_typed(error: UnicodeError):
    """An output error handler for a stream whose encoding lacks a character (an ASCII locale): a surrogate
    escape goes out as the byte it stands for, so a path is shown exactly as the user typed it (their terminal
    showed it when they typed it), not as Python's '\\udcc3\\udca9'; any other character becomes '?'."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    chunk = error.object[error.start:error.end]
    return b"".join(bytes([ord(c) - 0xDC00]) if ord(c) in _ESCAPES else b"?" for c in chunk), error.end


codecs.register_error(ERRORS, _as_typed)


def texts_of(value):
    """`value` (a JSON document: dicts, lists, strings, numbers) with every string made text by os_text (a byte
    that is not UTF-8 becomes U+FFFD): a path recorded in a report (a profile's or a replayed file's, typed under
    an ASCII locale) is its name in UTF-8, as every reader of the file takes it, not '\\udcc3\\udca9'."""
    if isinstance(value, str):
        return os_text(value, errors="replace")
    if isinstance(value, dict):
        return {texts_of(k): texts_of(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(texts_of(v) for v in value)
    return value


def shell_text(text: str, stream=None) -> str:
    """`text` as one shell word that gives it back when typed, whatever the terminal: shlex-quoted where `stream`
    (default: standard error, where messages go) can show it, else bash's `$'...'` with the UTF-8 bytes as \\xNN.
    Under an ASCII locale a study named 'étude' was shown as '?tude' in the fix of a refusal, and `--study-name
    '?tude'` named another study, which was refused again (trial 58 F1). A control character (a newline in a path)
    is written so too: shlex-quoted, a terminal showed it as a space or a line break (trial 63 #23)."""
    import shlex

    if shows(text, stream) and text.isprintable():
        return shlex.quote(text)
    word = []
    for byte in text.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        word.append("\\" + char if char in "\\'" else char if 0x20 <= byte < 0x7F else f"\\x{byte:02x}")
    return "$'" + "".join(word) + "'"


def shows(text: str, stream=None) -> bool:
    """Whether `stream` (default: standard error) can write `text` as it is, not as '?' (an ASCII locale)."""
    import sys

    encoding = getattr(stream if stream is not None else sys.stderr, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def shown_name(name: str, stream=None, quoted: bool = True) -> str:
    """A name in a message, as repr() writes it ('étude'; `quoted` False: as it is) where `stream` can show it,
    else as the shell word that gives it back ($'\\xc3\\xa9tude'), not '?tude', another name (trial 58 F1)."""
    if not shows(name, stream):
        return shell_text(name, stream)
    return repr(name) if quoted else name
