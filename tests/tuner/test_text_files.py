"""Trial 63 #13, #15: the files a user writes by hand are read alike (autotune/text_files.py). A UTF-16 file (Windows
PowerShell 5.1's `>` and Out-File) got Python's "'utf-8' codec can't decode byte 0xff"; a space file or reference
with a byte-order mark got "Invalid statement" / "Unexpected UTF-8 BOM", and a space file's key written twice
tomllib's "Cannot overwrite a value", where model files and hardware profiles were already read."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from autotune.backends.replay import ReplayBackend
from autotune.calibrate.reference import REFERENCE_DIR, read_reference
from autotune.errors import ConfigError
from autotune.hardware import PROFILE_DIR, load_hardware
from autotune.models import PRESETS, load_model
from autotune.space.files import DEFAULT_SPACE, load_space

BOM = b"\xef\xbb\xbf"
SPACE = DEFAULT_SPACE.read_text(encoding="utf-8")
REFERENCE = (REFERENCE_DIR / "gh200-study.json").read_text(encoding="utf-8")
MEASUREMENT = json.dumps({"params": {"zero_stage": 0, "optimizer_offload": "none", "activation_checkpointing": "none",
                                     "sp_degree": 1, "micro_batch": 1, "nodes": 1}, "status": "ok", "time_s": 1.0})


def _read(kind: str, path):
    return {"hardware profile": lambda: load_hardware(str(path)), "space file": lambda: load_space(path, (1,)),
            "model file": lambda: load_model(str(path)), "reference": lambda: read_reference(str(path)),
            "measurements": lambda: ReplayBackend(path)}[kind]()


FILES = [("hardware profile", "p.toml", (PROFILE_DIR / "h100-sxm.toml").read_text(encoding="utf-8")),
         ("space file", "s.toml", SPACE), ("model file", "m.json", json.dumps(PRESETS["tiny"].to_json())),
         ("reference", "r.json", REFERENCE), ("measurements", "x.jsonl", MEASUREMENT + "\n")]


@pytest.mark.parametrize("encoding, mark", [("utf-16", "FF FE"), ("utf-16-be", None)])
@pytest.mark.parametrize("kind, name, text", FILES, ids=[f[0] for f in FILES])
def test_a_utf16_file_is_said_to_be_one(tmp_path, kind, name, text, encoding, mark):
    path = tmp_path / name
    path.write_bytes(b"\xfe\xff" + text.encode("utf-16-be") if mark is None else text.encode(encoding))
    with pytest.raises(ConfigError) as refused:
        _read(kind, path)
    assert str(refused.value) == (f"{kind} {path} is UTF-16 text (byte-order mark {mark or 'FE FF'}), not UTF-8: save "
                                  "it as UTF-8 (Windows PowerShell: Out-File -Encoding utf8)")


@pytest.mark.parametrize("kind, name, text", FILES, ids=[f[0] for f in FILES])
def test_a_byte_order_mark_is_no_part_of_any_file(tmp_path, kind, name, text):
    plain, marked = tmp_path / f"plain-{name}", tmp_path / f"marked-{name}"
    plain.write_bytes(text.encode())
    marked.write_bytes(BOM + text.encode())
    if kind == "measurements":  # the records, not the backends (which name their file)
        assert ReplayBackend(marked).records.keys() == ReplayBackend(plain).records.keys()
    elif kind == "hardware profile":
        assert load_hardware(str(marked)).gpu == load_hardware(str(plain)).gpu
    elif kind == "space file":  # each names its own file
        assert replace(load_space(marked, (1,)), source="") == replace(load_space(plain, (1,)), source="")
    else:
        assert _read(kind, marked) == _read(kind, plain)


def test_a_space_file_key_written_twice_is_named_with_its_lines(tmp_path):
    path = tmp_path / "space.toml"
    lines = SPACE.splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.startswith("micro_batch"))
    path.write_text("\n".join(lines[:line] + ["micro_batch = [1]"] + lines[line:]) + "\n")
    with pytest.raises(ConfigError) as refused:
        load_space(path, (1,))
    assert str(refused.value) == f"space file {path}: micro_batch is written twice (lines {line} and {line + 1}): keep the one you mean"


def test_a_space_file_that_is_no_toml_says_how_to_start_one(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text("zero_stage = [\n")
    with pytest.raises(ConfigError, match=r"^space file .*space\.toml: not valid TOML \(.*\); fix it or start from "
                                          r"search_spaces/default\.toml$"):
        load_space(path, (1,))


@pytest.mark.parametrize("written, said", [
    ("[1e1]", "has 1e1, which"), ("[1E1]", "has 1E1, which"), ("[inf]", "has inf, which"), ("[-inf]", "has -inf, which"),
    ("[nan]", "has nan, which"), ("[1_6.0]", "has 1_6.0, which"), ("[1.5]", "has 1.5, which"),
    ("[[1e1]]", "has [1e1], which"), ("[{a = 1e1}]", 'has {"a": 1e1}, which'), ("1e1", "= 1e1 is not a non-empty list"),
])
def test_a_space_files_numbers_are_quoted_as_written(tmp_path, written, said):
    """A space file's 1e1 was quoted back as 10.0, its inf as Infinity (JSON's word), its 1_6.0 as 16.0: the
    refusal quotes what the file holds, in a list or not a list."""
    path = tmp_path / "s.toml"
    path.write_text(SPACE.replace("micro_batch = [1, 2, 4, 8]", f"micro_batch = {written}"))
    with pytest.raises(ConfigError) as refused:
        load_space(path, (1,))
    assert f"'micro_batch' {said}" in str(refused.value)


def test_as_written_quotes_floats_as_their_text_and_the_rest_as_shown():
    from autotune.text_files import as_written, parse_toml

    data = parse_toml('a = [1e1, 2, "x", true, {b = -0.0}]\nc = 1.0', "t", floats_as_written=True)
    assert as_written(data["a"]) == '[1e1, 2, "x", true, {"b": -0.0}]' and as_written(data["c"]) == "1.0"
    assert data["a"][0] == 10.0 and parse_toml("c = 1e1", "t")["c"].__class__ is float  # opt-in only
