import json
import math
import sys

import pytest

from autotune.checks import checked_number, refuse_unknown_keys
from autotune.errors import ConfigError


@pytest.mark.parametrize("value", ["4", None, True, [1], {"a": 1}, math.nan, math.inf])
def test_non_numbers_are_refused_naming_origin_key_and_value(value):
    with pytest.raises(ConfigError) as err:
        checked_number("model m.json", "llm.layers", value, low=1)
    text = str(err.value)
    # The value as the file spells it (JSON's null, true, "4"), not as Python prints it (None, True, '4').
    assert text.startswith(f"model m.json: llm.layers = {json.dumps(value)} ") and "\n" not in text


def test_ranges_and_whole_numbers():
    assert checked_number("f", "k", 3, low=1, integer=True) == 3
    assert checked_number("f", "k", 3.0, low=1, integer=True) == 3
    assert checked_number("f", "k", 2, low=0, low_open=True) == 2.0
    with pytest.raises(ConfigError, match=r"out of range; it must be a number > 0"):
        checked_number("f", "k", 0, low=0, low_open=True)
    with pytest.raises(ConfigError, match=r"is not a whole number"):
        checked_number("f", "k", 2.5, low=1, integer=True)
    with pytest.raises(ConfigError, match=r"must be a number >= 0 and <= 1; use a fraction"):
        checked_number("f", "k", 1.5, low=0, high=1, fix="use a fraction")


def test_unknown_keys_are_named():
    refuse_unknown_keys("f", {"a": 1}, ("a", "b"), "see docs")
    with pytest.raises(ConfigError, match=r"unknown keys c, d; allowed: a, b; see docs"):
        refuse_unknown_keys("f", {"a": 1, "d": 2, "c": 3}, ("a", "b"), "see docs")


def test_a_file_head_cut_inside_a_character_is_still_text(tmp_path):
    """A calibrated profile whose byte 4096 fell inside a "×" was read as no text at all, so calibrate -o
    refused to replace its own earlier output."""
    from autotune.checks import text_head

    path = tmp_path / "profile.toml"
    header = "# Calibrated by `autotune calibrate`\n"
    # "×" is 2 bytes in UTF-8: its first is byte 4096 of the file, its second past the head.
    path.write_text(header + "x" * (4095 - len(header)) + "×" + "tail\n", encoding="utf-8")
    head = text_head(path, 4096)
    assert head is not None and head.startswith("# Calibrated") and head.endswith("x") and len(head) == 4095
    assert text_head(path, 1 << 20).endswith("×tail\n")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\u00e9 au lait\n".encode("latin-1"))
    assert text_head(latin1, 4096) is None  # not UTF-8: not a file autotune wrote
    assert text_head(tmp_path / "absent", 4096) is None


def test_a_whole_number_is_written_in_digits_in_a_flag_as_in_a_file():
    """Trial 61 #21: --frames 1e3 was taken while a model file's "layers": 1e2 was refused: one rule for both."""
    from autotune.checks import flag_number, number_problem

    said = "is not a whole number; write it without a decimal point or an exponent (1000)"
    assert flag_number("1e3", low=1, integer=True) == (None, said)
    assert number_problem(1e3, low=1, integer=True, whole_literal=True) == said  # JSON's 1e3, read as 1000.0
    assert flag_number("2.0", low=1, integer=True)[1].startswith("is not a whole number; write it without")
    assert flag_number("1000", low=1, integer=True) == (1000, None)
    assert flag_number("1e3", low=1) == (1000.0, None)  # a number that may have a fraction takes any spelling
    # An exponent past the range is one too (trial 63 #22: 1e400 was "out of range" alone), said with the range in
    # place of a number to write that the range refuses.
    too_large = "write it without a decimal point or an exponent, and it is too large: it must be a whole number >= 1 and <= 10"
    assert flag_number("1e400", low=1, high=10, integer=True) == (None, f"is not a whole number; {too_large}")
    assert flag_number("1e2", low=1, high=10, integer=True) == (None, f"is not a whole number; {too_large}")
    assert flag_number("0.0", low=0, low_open=True, integer=True)[1].endswith("too small: it must be a whole number > 0")


@pytest.mark.parametrize("text, whole", [
    ("2.0", 2.0), ("1e2", 100.0), (" 1E2 ", 100.0), ("+1e2", 100.0), ("-2.0", -2.0), ("100.", 100.0),
    ("1e400", sys.float_info.max),  # finite as typed: too large, not "not finite"
    ("2", None), ("+5", None), ("1.5", None), ("1e-1", None), ("inf", None), ("nan", None), ("x", None), ("", None),
    ("1_0.0", None), ("２.0", None),  # spelt as no flag takes a number: said otherwise
])
def test_written_whole_is_a_whole_number_written_with_a_point_or_an_exponent(text, whole):
    from autotune.checks import written_whole

    assert written_whole(text) == whole
