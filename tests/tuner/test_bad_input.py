"""Bad input of every kind: each wrong value of every field of a model file, a space file and every
numeric or path flag is refused with one line naming where it came from, exit status 2, and no study
created or changed (issue 12).

Three layers, fastest first: the file loaders called directly (hundreds of cases), the command line
in-process (`autotune.cli.main`, every flag), and a representative set through the whole command (main()
in-process too, as the console script calls it), which also proves that no exception escapes it and
that an existing study.db is left byte for byte as it was.
"""

import copy
import json
import math
from pathlib import Path

import pytest

from autotune.cli import main
from tests import cli
from autotune.commands.paths import writable_directory, writable_file
from autotune.errors import ConfigError, UserError
from autotune.models import PRESETS, load_model
from autotune.space import load_space, parse_nodes

# What no user-facing reason may contain: Python's own words about our code.
PYTHON_LEAKS = ("Traceback", "__init__", "positional argument", "keyword argument", "object has no attribute",
                "NoneType", "unhashable", "not subscriptable", "invalid literal", "Error:")


def assert_one_clear_line(text: str, *must_contain: str) -> None:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    for leak in PYTHON_LEAKS:
        assert leak not in lines[0], lines[0]
    for part in must_contain:
        assert part in lines[0], (part, lines[0])


# --- model files -------------------------------------------------------------------------------

NOT_WHOLE_NUMBERS = [True, False, "4", 2.5, 2.0, None, [1], {}, math.nan, math.inf, -math.inf]
BELOW_ONE = [0, -1]
TOO_BIG = [10**13, 10**400]  # past 1e308 no float holds it: the simulator would overflow
MODEL_SIZES = (
    [("llm", key) for key in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab")]
    + [("vision", key) for key in ("hidden", "layers", "heads", "mlp", "patch", "image_size", "pool")]
    + [("default_workload", key) for key in ("frames", "text_tokens", "global_batch", "samples")]
)


def write_model(tmp_path: Path, data, name="m.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))  # NaN/Infinity as Python's json writes them
    return path


def refused_model(tmp_path, data, *must_contain):
    path = write_model(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_model(str(path))
    assert_one_clear_line(str(err.value), str(path), *must_contain)
    return str(err.value)


def tiny() -> dict:
    return copy.deepcopy(PRESETS["tiny"].to_json())


def test_a_preset_written_to_a_file_loads_back_unchanged(tmp_path):
    for name, spec in PRESETS.items():
        data = spec.to_json()
        data.pop("name")
        assert load_model(str(write_model(tmp_path, data, f"{name}.json"))) == spec


@pytest.mark.parametrize("part, key", MODEL_SIZES)
@pytest.mark.parametrize("value", NOT_WHOLE_NUMBERS + BELOW_ONE + TOO_BIG)
def test_model_size_wrong_type_or_range(tmp_path, part, key, value):
    data = tiny()
    data[part][key] = value
    message = refused_model(tmp_path, data, f"{part}.{key} = ", "whole number")
    assert ("out of range" in message) == (value in BELOW_ONE + TOO_BIG and not isinstance(value, bool))


@pytest.mark.parametrize("value", NOT_WHOLE_NUMBERS + BELOW_ONE)
def test_mrope_section_wrong_type_or_range(tmp_path, value):
    data = tiny()
    data["llm"]["mrope_sections"][1] = value
    refused_model(tmp_path, data, "llm.mrope_sections[1] = ")


@pytest.mark.parametrize("value", [[2, 6], [2, 3, 3, 0], "2,3,3", 8, None, {}])
def test_mrope_sections_not_three_numbers(tmp_path, value):
    data = tiny()
    data["llm"]["mrope_sections"] = value
    refused_model(tmp_path, data, "llm.mrope_sections = ", "three whole numbers")


@pytest.mark.parametrize("key, value, allowed", [
    ("rope_theta", 0, "> 0"), ("rope_theta", -1e6, "> 0"), ("rope_theta", True, "a number"),
    ("rope_theta", "1e6", "a number"), ("rope_theta", None, "a number"), ("rope_theta", math.nan, "finite"),
    ("rope_theta", math.inf, "finite"), ("tie_embeddings", 1, "true or false"), ("tie_embeddings", "false", "true or false"),
    ("tie_embeddings", None, "true or false"),
])
def test_llm_optional_values(tmp_path, key, value, allowed):
    data = tiny()
    data["llm"][key] = value
    refused_model(tmp_path, data, f"llm.{key} = ", allowed)


@pytest.mark.parametrize("value", [3, "", "  ", None, [], {}])
def test_model_name_must_be_a_string(tmp_path, value):
    data = tiny()
    data["name"] = value
    refused_model(tmp_path, data, "name = ", "non-empty string")


@pytest.mark.parametrize("value", ["tiny\nfaked: line", "a\tb", "bell\x07", "x" * 201])
def test_model_name_is_one_printable_line(tmp_path, value):
    """A newline in the name split every report's header and the run's log line in two."""
    data = tiny()
    data["name"] = value
    refused_model(tmp_path, data, "name = ", "printable characters on one line, at most 200")


@pytest.mark.parametrize("change, words", [
    (lambda d: d["llm"].update(heads=3), ["llm.hidden 64", "multiple of llm.heads 3"]),
    (lambda d: d["llm"].update(kv_heads=3), ["multiple of llm.kv_heads 3"]),
    (lambda d: d["llm"].update(mrope_sections=[2, 2, 2]), ["mrope_sections [2, 2, 2]", "head_dim/2", "= 8"]),
    (lambda d: d["llm"].update(hidden=60, heads=4, mrope_sections=[3, 4, 4]), ["head_dim/2", "7.5"]),
    (lambda d: d["vision"].update(hidden=33), ["vision.hidden 33", "vision.heads 2"]),
    (lambda d: d["vision"].update(image_size=50), ["vision.image_size 50", "= 28"]),
    (lambda d: d["vision"].update(pool=3), ["vision.image_size 56", "= 42"]),
    (lambda d: d["vision"].update(patch=100), ["vision.image_size 56", "= 200"]),
    (lambda d: d["default_workload"].update(samples=4), ["default_workload.samples = 4", "global batch"]),
])
def test_model_shape_rules(tmp_path, change, words):
    data = tiny()
    change(data)
    refused_model(tmp_path, data, *words)


@pytest.mark.parametrize("where", ["", "llm", "vision", "default_workload"])
def test_unknown_key_at_every_level(tmp_path, where):
    data = tiny()
    (data[where] if where else data)["layer"] = 2
    refused_model(tmp_path, data, "unknown key layer", "allowed:")


@pytest.mark.parametrize("part, key", [("", "llm"), ("", "vision")] + [
    ("llm", k) for k in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "mrope_sections")
] + [("vision", k) for k in ("hidden", "layers", "heads", "mlp", "patch", "image_size")])
def test_missing_key(tmp_path, part, key):
    data = tiny()
    (data[part] if part else data).pop(key)
    refused_model(tmp_path, data, key, "missing")


@pytest.mark.parametrize("part", ["llm", "vision", "default_workload"])
@pytest.mark.parametrize("value", [[1], 3, "x", None])
def test_part_is_not_an_object(tmp_path, part, value):
    data = tiny()
    data[part] = value
    refused_model(tmp_path, data, f"{part} = ", "is not an object")


@pytest.mark.parametrize("text, words", [
    ("[1, 2]", ["the top level = [1, 2]", "not an object"]),
    ("3", ["not an object"]),
    ('"tiny"', ["not an object"]),
    ("null", ["not an object"]),
    ("{", ["not valid JSON"]),
    ("", ["not valid JSON"]),
    ('{"llm": {}, "llm": {}}', ["not valid JSON", "key llm appears more than once"]),
    (b"\xff\xfe{".decode("latin-1"), ["not valid JSON"]),
])
def test_model_file_that_is_not_a_model(tmp_path, text, words):
    refused_model(tmp_path, text, *words)


def test_model_file_missing_or_a_directory(tmp_path):
    for gone in ("gone.json", "GONE.JSON"):
        with pytest.raises(ConfigError) as err:
            load_model(str(tmp_path / gone))
        assert_one_clear_line(str(err.value), f"{gone} does not exist")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ConfigError) as err:
        load_model(str(tmp_path / "dir.json"))
    assert_one_clear_line(str(err.value), "dir.json is a directory without a config.json")
    # Trial 41: a model file of another name was an "unknown model", which named the path of a JSON model file as the fix.
    (tmp_path / "mine.txt").write_text("{}")
    with pytest.raises(ConfigError) as err:
        load_model(str(tmp_path / "mine.txt"))
    assert_one_clear_line(str(err.value), "model files are read by a .json name; give the file one (mine.json;")


def test_hardware_file_missing_or_a_directory(tmp_path):
    from autotune.hardware import load_hardware

    (tmp_path / "dir.toml").mkdir()
    for name, words in (("gone.toml", "gone.toml does not exist"), ("dir.toml", "dir.toml is a directory")):
        with pytest.raises(ConfigError) as err:
            load_hardware(str(tmp_path / name))
        assert_one_clear_line(str(err.value), f"hardware profile {tmp_path / name}", words, "one of cpu, gh200, h100-sxm")



@pytest.mark.parametrize("name", ["my-cluster", "my.TOML", "profile.txt", "my.toml.bak"])
def test_a_hardware_file_is_read_whatever_its_suffix(tmp_path, name):
    """Trial 31 #11: an existing profile named without `.toml` (or `.TOML`) was 'unknown hardware'."""
    from autotune.hardware import load_hardware
    from autotune.hardware.load import PROFILE_DIR

    (tmp_path / name).write_text((PROFILE_DIR / "cpu.toml").read_text())
    assert load_hardware(str(tmp_path / name)) == load_hardware(str(PROFILE_DIR / "cpu.toml"))


def test_a_hardware_value_that_is_no_profile_says_which_it_is(tmp_path):
    from autotune.hardware import load_hardware

    (tmp_path / "notes").write_text("just = 'notes'\n")
    (tmp_path / "binary").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "junk").write_text("not toml at all\n")
    cases = [
        (str(tmp_path / "gone"), "does not exist; pass a TOML profile file or one of cpu, gh200, h100-sxm"),
        (str(tmp_path / "gone.TOML"), "does not exist"),
        (str(tmp_path), "is a directory"),
        ("/dev/null", "hardware profile /dev/null is not a regular file"),
        ("gh2000", "unknown hardware 'gh2000': use one of cpu, gh200, h100-sxm or the path of a TOML profile"),
        ("GH200", "unknown hardware 'GH200'"),
        (str(tmp_path / "notes"), "unknown key"),
        (str(tmp_path / "binary"), "is UTF-16 text (byte-order mark FF FE), not UTF-8: save it as UTF-8"),
        (str(tmp_path / "junk"), "not valid TOML"),
    ]
    for value, words in cases:
        with pytest.raises(ConfigError) as err:
            load_hardware(value)
        assert_one_clear_line(str(err.value), words)


def test_a_builtin_profile_name_is_the_profile_even_beside_a_file_of_that_name(tmp_path, monkeypatch):
    from autotune.hardware import load_hardware

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cpu").write_text("not a profile\n")
    assert load_hardware("cpu").name == "cpu"


# --- space files -------------------------------------------------------------------------------

SPACE = {
    "zero_stage": "[0, 1]", "optimizer_offload": '["none"]', "activation_checkpointing": '["none"]',
    "sp_degree": "[1]", "micro_batch": "[1, 2]", "nodes": "[1]", "power_limit": "[1.0]", "sm_clock_mhz": '["max"]',
}
WRONG_SPACE_VALUES = {
    "zero_stage": ["true", "false", "1.0", '"1"', "4", "-1", "[1]"],
    "optimizer_offload": ["true", '"cpu"', "1", '["none"]', '"None"'],
    "activation_checkpointing": ["true", '"full"', "0"],
    "sp_degree": ["0", "-1", "true", "2.0", '"2"', "[2]", "1.5", "10000000000000", "2e0", "1_6.0"],
    "micro_batch": ["0", "-2", "true", "2.0", '"2"', "[2]", "inf"],
    "nodes": ["0", "-1", "true", "2.0", '"2"', "[2]", "nan", "1" + "0" * 30],
    "power_limit": ["0", "1.5", "-0.5", "true", '"0.9"', "nan", "inf", "[0.9]"],
    "sm_clock_mhz": ['"min"', "0", "-1", "1600.5", "1600.0", "true", '["max"]', '"MAX"', "1", "49", "5001", "1500000"],
}


def write_space(tmp_path: Path, **changes) -> Path:
    values = {**SPACE, **changes}
    path = tmp_path / "space.toml"
    path.write_text("".join(f"{knob} = {value}\n" for knob, value in values.items() if value is not None))
    return path


def refused_space(path: Path, *must_contain, nodes=None):
    with pytest.raises(ConfigError) as err:
        load_space(path, nodes)
    assert_one_clear_line(str(err.value), str(path), *must_contain)
    return str(err.value)


def test_the_sample_space_loads(tmp_path):
    space = load_space(write_space(tmp_path))
    assert space.zero_stage == (0, 1) and space.power_limit == (1.0,) and space.nodes == (1,)


@pytest.mark.parametrize("knob, value", [(k, v) for k, values in WRONG_SPACE_VALUES.items() for v in values])
def test_space_value_of_wrong_type_or_range(tmp_path, knob, value):
    path = write_space(tmp_path, **{knob: f"[{value}]"})
    read = __import__("tomllib").loads(f"v = {value}")["v"]
    shown = value if isinstance(read, float) else json.dumps(read)  # a float as written: inf, not Infinity
    refused_space(path, f"'{knob}' has {shown}, which is not")


@pytest.mark.parametrize("value, reads", [("1500000", "kHz (1500000 kHz = 1500 MHz)"), ("2", "GHz (2 GHz = 2000 MHz)"),
                                           ("0", None), ("20000", None)])
def test_space_clock_no_gpu_has_is_refused_with_the_unit_it_reads_as(tmp_path, value, reads):
    """trial75 #6: a kHz clock passed (checked only to 10^12 MHz), and the device's range then dropped it silently."""
    said = refused_space(write_space(tmp_path, sm_clock_mhz=f'["max", {value}]'), "whole MHz from 50 to 5000")
    assert (f"it reads as {reads}: write it in MHz" in said) if reads else "reads as" not in said
    assert "1000000000000" not in said


@pytest.mark.parametrize("knob", list(SPACE))
@pytest.mark.parametrize("value", ["1", '"none"', "[]", "{a = 1}", "true", "2026-01-01"])
def test_space_knob_is_not_a_list(tmp_path, knob, value):
    refused_space(write_space(tmp_path, **{knob: value}), f"'{knob}' = ", "is not a non-empty list")


@pytest.mark.parametrize("knob, value", [
    ("zero_stage", "[1, 0, 1]"), ("optimizer_offload", '["none", "none"]'), ("micro_batch", "[2, 2]"),
    ("power_limit", "[0.9, 0.9]"), ("sm_clock_mhz", '["max", 1600, 1600]'), ("nodes", "[1, 1]"),
])
def test_space_value_listed_twice(tmp_path, knob, value):
    refused_space(write_space(tmp_path, **{knob: value}), f"'{knob}' lists", "more than once")


@pytest.mark.parametrize("value, said", [("[1, 1.0]", "lists 1 and 1.0, one value"), ("[0.8, 8e-1]", "lists 0.8 and 8e-1, one value"),
                                         ("[8e-1, 0.9, 8e-1]", "lists 8e-1 more than once")])
def test_space_value_listed_twice_in_two_spellings_says_both(tmp_path, value, said):
    """A value written twice in two spellings was quoted once, as Python reads it ('lists 1.0 more than once' of
    [1, 1.0]; '0.8' of 8e-1): a text the file need not hold."""
    refused_space(write_space(tmp_path, power_limit=value), f"'power_limit' {said}; list each value once")


@pytest.mark.parametrize("knob, value, said", [
    ("micro_batch", "[4, 0x4]", "lists 4 and 0x4, one value"), ("micro_batch", "[0x10, 1_6]", "lists 0x10 and 1_6, one value"),
    ("zero_stage", "[+1, 0b1]", "lists +1 and 0b1, one value"), ("micro_batch", "[0x0]", "has 0x0, which is not a whole number"),
    ("micro_batch", "[\n  0o17,  # a comment, with a comma\n  0o17,\n]", "lists 0o17 more than once"),
])
def test_space_integers_are_quoted_as_written(tmp_path, knob, value, said):
    """trial68 #10: tomllib keeps no integer's spelling: [4, 0x4] was "lists 4 more than once", a text the file holds
    once; the integers of a list are quoted as written, as its floats are."""
    refused_space(write_space(tmp_path, **{knob: value}), f"'{knob}' {said}")


def test_space_integers_written_otherwise_are_read_as_plain_integers(tmp_path):
    space = load_space(write_space(tmp_path, micro_batch="[0x10, 1_6_0]", zero_stage="[+1]"), (1,))
    assert space.micro_batch == (16, 160) and space.zero_stage == (1,)
    assert all(type(v) is int for v in space.micro_batch + space.zero_stage)


@pytest.mark.parametrize("knob", ["zero_stage", "optimizer_offload", "activation_checkpointing", "sp_degree", "micro_batch"])
def test_space_required_knob_missing(tmp_path, knob):
    refused_space(write_space(tmp_path, **{knob: None}), f"'{knob}' is missing", "copy search_spaces/default.toml")


def test_a_space_file_of_one_knob_names_every_missing_one(tmp_path):
    space = tmp_path / "narrow.toml"
    space.write_text("zero_stage = [2, 3]\n")
    refused_space(space, "'optimizer_offload', 'activation_checkpointing', 'sp_degree', 'micro_batch' are missing; "
                         "a space file lists the values of every knob")


def test_space_nodes_are_checked_even_where_the_flag_wins(tmp_path):
    refused_space(write_space(tmp_path, nodes="[true]"), "'nodes' has true", nodes=(2,))
    assert load_space(write_space(tmp_path, nodes="[8]"), (2,)).nodes == (2,)



def test_space_nodes_list_is_limited_as_the_flag_is(tmp_path):
    """Trial 31 #6: a file's `nodes` had no limit (2000 counts ran past two minutes), where --nodes has 256."""
    from autotune.space import listed_nodes
    from autotune.space.files import MAX_NODE_COUNTS

    many = write_space(tmp_path, nodes=str(list(range(1, MAX_NODE_COUNTS + 2))))
    words = (f"'nodes' lists {MAX_NODE_COUNTS + 1} node counts, more than {MAX_NODE_COUNTS}; list at most "
             f"{MAX_NODE_COUNTS}, a few that matter (nodes = [64, 128, 256])")
    refused_space(many, words)
    refused_space(many, words, nodes=(2,))  # the file is wrong whatever --nodes says
    with pytest.raises(ConfigError, match="more than 256"):
        listed_nodes(many)
    most = write_space(tmp_path, nodes=str(list(range(1, MAX_NODE_COUNTS + 1))))
    assert len(load_space(most).nodes) == MAX_NODE_COUNTS == len(listed_nodes(most))
    assert listed_nodes(write_space(tmp_path, nodes=None)) is None

@pytest.mark.parametrize("text, words", [
    ("zero_stage = [0]\nzero_stages = [1]\n", ["unknown key zero_stages"]),
    ("[space]\nzero_stage = [0]\n", ["unknown key space"]),
    ("zero_stage = ", ["not valid TOML"]),
    ("zero_stage = [0]\nzero_stage = [1]\n", ["zero_stage is written twice (lines 1 and 2): keep the one you mean"]),
])
def test_space_file_that_is_not_a_space(tmp_path, text, words):
    path = tmp_path / "space.toml"
    path.write_text(text)
    refused_space(path, *words)


def test_space_file_missing_or_not_a_file(tmp_path):
    refused_space(tmp_path / "gone.toml", "does not exist")
    refused_space(tmp_path, "is a directory")
    refused_space(Path("/dev/null"), "is not a regular file")


@pytest.mark.parametrize("text, words", [
    ("0", ["must be at least 1"]), ("-3", ["must be at least 1"]), ("0-4", ["must be at least 1"]),
    ("8-2", ["LOW 8 must not exceed HIGH 2", "--nodes 2-8"]), ("2-", ["not a whole number or a range"]),
    ("-2", ["must be at least 1"]), ("a-b", ["LOW 'a' is not a whole number, nor is HIGH 'b'; it must be a whole number >= 1"]), ("1.5", ["not a whole number or a range"]),
    ("", ["not a whole number or a range"]), ("1--2", ["not a whole number or a range"]), ("4,,8", ["'' in --nodes '4,,8' is not a whole number"]),
    ("1-3000", ["3000 node counts", "more than 256"]), ("x", ["not a whole number"]),
    ("1" + "0" * 30, ["more than 1000000000000 nodes"]),
    # digits of other scripts, which int() reads as 5 and 2-8: a node count is written in ASCII by every tool
    ("\uff15", ["not a whole number or a range"]), ("\u0662-\u0668", ["LOW '\u0662' has characters other than ASCII", "HIGH '\u0668' has"]),
])
def test_nodes_flag(text, words):
    with pytest.raises(ConfigError) as err:
        parse_nodes(text)
    assert_one_clear_line(str(err.value), f"--nodes {text!r}", *words)


def test_nodes_flag_accepts_numbers_and_ranges():
    assert parse_nodes("4") == (4,) and parse_nodes(" 2-4 ") == (2, 3, 4) and parse_nodes(None) is None


# --- flags, in-process -------------------------------------------------------------------------

STUDY = ["--model", "tiny", "--hardware", "cpu", "--nodes", "1"]
NOT_WHOLE = ["x", "1.5", "nan", "inf", "", "1e400", "1" + "0" * 400]


def flag_cases():
    cases = []
    for flag, low in [("--trials", 1), ("--seed", 0), ("--warmup-steps", 0), ("--probe-steps", 1), ("--repeats", 1),
                      ("--gpus-per-node", 1), ("--frames", 1), ("--text-tokens", 1), ("--global-batch", 1), ("--samples", 1)]:
        cases += [("run", flag, value) for value in [*NOT_WHOLE, str(low - 1), "-5"]]
    for flag in ("--probe-timeout", "--probe-seconds"):
        cases += [("run", flag, value) for value in ["x", "nan", "inf", "-inf", "-1"]]
    cases += [("run", "--probe-timeout", "0"), ("run", "--seed", str(2**32))]
    cases += [("run", "--max-slowdown", v) for v in ["x", "0.99", "0", "nan", "inf", "-1"]]
    cases += [("run", "--eta", v) for v in ["x", "-0.1", "1.01", "nan", "inf"]]
    cases += [("space", flag, v) for flag in ("--gpus-per-node", "--frames", "--samples") for v in ["0", "x", "2.5"]]
    cases += [("sensors", flag, v) for flag in ("--sample", "--period") for v in ["0", "-1", "x", "nan", "inf", "1e9"]]
    return cases


def run_main(argv, capsys) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses while parsing
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2, captured
    return captured.err


@pytest.mark.parametrize("command, flag, value", flag_cases())
def test_numeric_flag_wrong_type_or_range(tmp_path, capsys, command, flag, value):
    out = tmp_path / "run"
    extra = [*STUDY, "--out", str(out)] if command == "run" else STUDY if command == "space" else []
    err = run_main([command, *extra, flag, value], capsys)
    assert_one_clear_line(err, flag)
    assert not out.exists()  # refused before any study or run directory was made


@pytest.mark.parametrize("command, flag, value, words", [
    ("run", "--probe-timeout", "1_0", "'1_0' has an underscore"), ("run", "--trials", "1_000", "'1_000' has an underscore"),
    ("run", "--eta", "0_5", "'0_5' has an underscore"), ("run", "--trials", "３", "'３' has characters other than ASCII"),
    ("run", "--probe-timeout", "١٠", "'١٠' has characters other than ASCII"),
    ("sensors", "--sample", "１.５", "'１.５' has characters other than ASCII"),
])
def test_a_number_python_reads_but_a_flag_does_not_take_is_refused(tmp_path, capsys, command, flag, value, words):
    """float() and int() read '1_0' as 10 and full-width or Arabic-Indic digits as ASCII ones: accepted without a
    word (trial 58 F10), where 1_0 may as well be a typo of 1.0."""
    out = tmp_path / "run"
    extra = [*STUDY, "--out", str(out)] if command == "run" else []
    err = run_main([command, *extra, f"{flag}={value}"], capsys)
    assert_one_clear_line(err, f"argument {flag}: {words}", "; it must be a ")
    assert not out.exists()


@pytest.mark.parametrize("flag, value, words", [
    ("--probe-timeout", "1e400", "'1e400' is out of range; it must be a number >= 1 and <= 604800"),
    ("--probe-timeout", "-1E999", "'-1E999' is out of range; it must be a number >= 1 and <= 604800"),
    ("--trials", "1e400", "'1e400' is not a whole number; write it without a decimal point or an exponent, and it is "
                          "too large: it must be a whole number >= 1 and <= 1000000000000"),  # as 1e3 is (trial 63 #22)
    ("--max-slowdown", "1e400", "'1e400' is out of range (past 1.8e+308, the largest number autotune computes with); "
                                "it must be a number >= 1"),
    ("--probe-timeout", "-inf", "'-inf' is not finite"), ("--max-slowdown", "Infinity", "'Infinity' is not finite"),
])
def test_a_finite_number_too_large_for_a_float_is_out_of_range_not_infinite(tmp_path, capsys, flag, value, words):
    """float('1e400') is inf: the user typed a finite number and read that it "is not finite" (trial 58 F10)."""
    err = run_main(["run", *STUDY, "--out", str(tmp_path / "run"), f"{flag}={value}"], capsys)
    assert_one_clear_line(err, f"argument {flag}: {words}")


def test_spaces_around_a_number_flag_are_still_taken():
    from autotune.commands.flags import number_flag, whole_number_flag

    assert number_flag(low=1)(" 5 ") == 5.0 and whole_number_flag(low=1)("\t3\n") == 3


def test_minus_zero_is_zero():
    """Trial71 #7: `--eta -0` was kept as -0.0: "eta -0" in every report and compare, -0.0 in pareto.json."""
    import math

    from autotune.commands.flags import number_flag

    taken = number_flag(low=0.0, high=1.0)("-0")
    assert taken == 0 and math.copysign(1, taken) == 1 and f"{taken:g}" == "0"


@pytest.mark.parametrize("argv, word", [(["report", "-dash2"], "-dash2"), (["export", "-dash2", "--pick", "knee"], "-dash2"),
                                        (["compare", "base", "-dash2"], "-dash2")])
def test_a_run_directory_starting_with_a_dash_is_named_with_its_spelling(tmp_path, capsys, monkeypatch, argv, word):
    """Trial69 #6: `autotune report -dash2` (a directory made with `--out ./-dash2`) said "required: RUN_DIR", which
    neither named the word nor how to give it; `compare base -dash2` said "unrecognized arguments: -dash2"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-dash2").mkdir()
    err = run_main(argv, capsys)
    assert_one_clear_line(err, f"'{word}' starts with '-', so it reads as an option: give a name starting with '-' as ./{word}")


def test_a_mistyped_flag_gets_no_path_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = run_main(["report", "--bogus"], capsys)
    assert_one_clear_line(err, "required: RUN_DIR")
    assert "./--bogus" not in err


@pytest.mark.parametrize("argv", [
    ["run", "--out", ""], ["run", "--model", ""], ["run", "--hardware", " "], ["run", "--space", ""],
    ["run", "--storage", ""], ["run", "--hostfile", ""], ["space", "--model", ""], ["report", ""],
    ["report", "x", "--storage", ""], ["export", ""], ["export", "x", "-o", ""], ["export", "x", "--storage", ""],
])
def test_empty_name_or_path_is_refused_not_taken_as_here_or_default(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    err = run_main(argv, capsys)
    assert_one_clear_line(err, "is empty")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, words", [
    (["run", *STUDY, "--out", "~/x"], "starts with ~, a home folder the shell did not expand"),
    (["run", *STUDY, "--out", "~"], "give $HOME, or ./~ for a folder really named ~"),
    (["export", "~/run", "-o", "k.json"], "give $HOME/run, or ./~/run for a folder really named ~"),
    (["export", "run", "-o", "~root/k.json"], "give /root/k.json, or ./~root/k.json"),
    (["run", *STUDY, "--model", "~/m.json"], "argument --model: starts with ~"),
])
def test_a_tilde_the_shell_did_not_expand_is_refused_not_made_a_folder(tmp_path, capsys, monkeypatch, argv, words):
    """`--out=~/x`: bash leaves that ~ alone, and a folder ./~ was made that every message named ~/x (trial 45 §12)."""
    monkeypatch.chdir(tmp_path)
    err = run_main(argv, capsys)
    assert_one_clear_line(err, words)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_really_named_tilde_is_named_by_its_whole_path(tmp_path, monkeypatch):
    from autotune.commands.flags import path_flag

    monkeypatch.chdir(tmp_path)
    assert path_flag("./~/x") == tmp_path / "~" / "x"  # not Path("~/x"), which messages would print as home's


@pytest.mark.parametrize("argv, words", [
    (["--gpus-per-node", "3"], ["--gpus-per-node 3 is outside 1..2", "'cpu'"]),
    # Trial 65 #10, #17: past 10**12 was "not a whole number; write it without a decimal point", 0 "out of range; ...
    # <= 1000000000000": one wording, the profile's range, for every whole number outside it.
    (["--gpus-per-node", "99999999999999"], ["--gpus-per-node 99999999999999 is outside 1..2, the GPUs of a node of "
                                             "hardware 'cpu'"]),
    (["--gpus-per-node", "0"], ["--gpus-per-node 0 is outside 1..2, the GPUs of a node of hardware 'cpu'"]),
    (["--gpus-per-node", "nan"], ["'nan' is not a whole number; it must be a whole number 1..N, N the GPUs of a node "
                                  "of the --hardware profile"]),
    # Trial 63 #22: '1e3' was told to write 1000, which the profile's node then refused: its range is said instead.
    (["--gpus-per-node", "1e3"], ["--gpus-per-node '1e3' is not a whole number; write it without a decimal point or an "
                                  "exponent, and it is too large: it must be 1..2, the GPUs of a node of hardware 'cpu'"]),
    (["--gpus-per-node", "2.0"], ["--gpus-per-node '2.0' is not a whole number; write it without a decimal point or an "
                                  "exponent (2)"]),
    (["--samples", "4"], ["--samples 4 is less than one global batch", "global_batch 8 from the default_workload of model tiny"]),
    (["--global-batch", "128"], ["samples 64 from the default_workload of model tiny", "--global-batch 128"]),
    (["--samples", "16", "--global-batch", "32"], ["--samples 16", "--global-batch 32"]),
    (["--nodes", "8-2"], ["LOW 8 must not exceed HIGH 2"]),
    (["--hostfile", "missing-hostfile"], ["--hostfile missing-hostfile is not a file"]),
    (["--hostfile", "/etc/passwd"], ["hostfile /etc/passwd, line 1", "HOST slots=N"]),
])
def test_flags_that_disagree_with_each_other_or_the_profile(tmp_path, capsys, argv, words):
    out = tmp_path / "run"
    err = run_main(["run", *STUDY, "--out", str(out), *argv], capsys)
    assert_one_clear_line(err, *words)
    assert not out.exists()


def test_gpus_per_node_left_out_means_the_profile_node(tmp_path, capsys):
    from autotune.cli import build_parser
    from autotune.commands.options import build_settings

    args = build_parser().parse_args(["space", *STUDY])
    assert args.gpus_per_node is None and build_settings(args).gpus_per_node == 2


def test_model_or_space_errors_name_the_file_never_a_flag(tmp_path, capsys):
    data = tiny()
    data["default_workload"]["frames"] = 0
    model = write_model(tmp_path, data)
    err = run_main(["run", "--model", str(model), "--hardware", "cpu", "--nodes", "1", "--out", str(tmp_path / "r")], capsys)
    assert_one_clear_line(err, str(model), "default_workload.frames = 0")
    assert "--frames" not in err
    space = write_space(tmp_path, micro_batch="[0]")
    err = run_main(["space", "--model", "tiny", "--hardware", "cpu", "--space", str(space)], capsys)
    assert_one_clear_line(err, str(space), "'micro_batch' has 0")
    assert "--" not in err.split("see ")[0]


# --- output paths ------------------------------------------------------------------------------

def unwritable_dirs(tmp_path: Path) -> list[tuple[Path, str]]:
    afile = tmp_path / "afile"
    afile.write_text("")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")  # trial 43 F9: mkdir's "File exists" of a path that does not
    return [(afile, "afile is a file"), (afile / "sub", "afile is a file"), (Path("/proc/autotune-x"), "cannot write in"),
            (dangling, f"dangling is a link to {tmp_path / 'nowhere'}, which does not exist (make it, or remove the link)"),
            (dangling / "run", "dangling is a link to")]


def test_output_directory_that_cannot_be_written(tmp_path):
    for path, words in unwritable_dirs(tmp_path):
        with pytest.raises(UserError) as err:
            writable_directory(path, "--out")
        assert_one_clear_line(str(err.value), f"--out {path}", words)
    assert writable_directory(tmp_path / "a" / "b", "--out").is_dir()


def test_output_file_that_cannot_be_written(tmp_path):
    for path, words in [*unwritable_dirs(tmp_path), (tmp_path, "is a directory")]:
        with pytest.raises(UserError) as err:
            writable_file(path / "x.json" if "file" in words or "write" in words else path, "-o")
        assert_one_clear_line(str(err.value), "-o", words)


def test_a_directory_named_as_the_file_gets_a_name_beside_it(tmp_path):
    """Trial 37 F10: a directory configs/knee.json was told "give a file name such as .../knee.json/knee.json"."""
    (tmp_path / "knee.json").mkdir()
    (tmp_path / "out").mkdir()
    for path, suggested in [(tmp_path / "knee.json", tmp_path / "knee-1.json"), (tmp_path / "out", tmp_path / "out" / "knee.json")]:
        with pytest.raises(UserError) as err:
            writable_file(path, "-o")
        assert str(err.value) == f"-o {path} is a directory; give a file name such as {suggested}"


def test_an_output_that_is_a_device_is_refused_and_a_link_is_written_through(tmp_path):
    """A rename would replace /dev/null (as root) or the link itself with a plain file."""
    import os

    from autotune.atomic_write import write_text_atomic

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(UserError) as err:
        writable_file(fifo, "-o")
    assert_one_clear_line(str(err.value), f"-o {fifo} is not a regular file", "give a file name such as")
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("{}")
    link.symlink_to(target.name)
    write_text_atomic(writable_file(link, "-o"), "new")
    assert link.is_symlink() and target.read_text() == "new"
    # Trial 41: a dangling link (its target's folder gone) was refused naming the target alone, which the user cannot
    # find in the run directory: the link is what is in the way.
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "gone" / "x.json")
    with pytest.raises(UserError) as err:
        write_text_atomic(dangling, "new")
    assert_one_clear_line(str(err.value), f"(through the link {dangling})", "move what is in its way")


def test_what_a_run_writes_in_its_directory_is_checked_before_the_study(tmp_path):
    from autotune.atomic_write import write_text_atomic
    from autotune.commands.paths import check_run_outputs

    (tmp_path / "pareto.json").mkdir()
    with pytest.raises(UserError) as err:
        check_run_outputs(tmp_path, "--out")
    assert_one_clear_line(str(err.value), "pareto.json is not a regular file", "move it out of the way")
    (tmp_path / "pareto.json").rmdir()
    (tmp_path / "configs").write_text("")
    with pytest.raises(UserError) as err:
        check_run_outputs(tmp_path, "--out")
    assert_one_clear_line(str(err.value), "configs is not a directory", "move it out of the way")
    (tmp_path / "configs").unlink()
    check_run_outputs(tmp_path, "--out")
    (tmp_path / "configs" / "knee.json").mkdir(parents=True)  # deeper: the writer says it in one line
    with pytest.raises(UserError) as err:
        write_text_atomic(tmp_path / "configs" / "knee.json", "{}")
    assert_one_clear_line(str(err.value), "cannot write", "knee.json", "kept in its database")
    assert [p.name for p in (tmp_path / "configs").iterdir()] == ["knee.json"]  # no temporary file left


@pytest.mark.parametrize("mark", ["study.db", "pareto.json"])  # its own storage, or the reports of a --storage study
def test_a_run_directory_inside_another_run_is_refused(tmp_path, capsys, mark):
    """`--out OTHER_RUN/trials` would mix a study with that run's probe folders and configs."""
    other = tmp_path / "runs" / "32b-4n"
    (other / "trials").mkdir(parents=True)
    (other / mark).write_text("")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for out in (other / "trials", other / "trials" / "a" / "b"):
        err = run_main(["run", *STUDY, "--out", str(out)], capsys)
        assert_one_clear_line(err, f"--out {out} is inside the run directory {other}", f"holds {mark}",
                              "pass --out a directory outside it")
        assert err.startswith("autotune run: error: ")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing made, nothing touched
    assert main(["run", *STUDY, "--trials", "1", "--out", str(tmp_path / "runs" / "other")]) == 0  # beside it: fine
    capsys.readouterr()


def test_nothing_of_a_refused_directory_is_left_behind(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes in a read-only directory")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(UserError, match="cannot write in"):
        writable_directory(locked / "a" / "b", "--out")
    assert list(locked.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ("export", "{run}", "-o", "{new}/knee.json"),
    ("export", "{run}", "--measurements", "{new}/measurements.jsonl"),
    ("calibrate", "{run}", "-o", "{new}/mine.toml"),
])
def test_a_command_refused_after_its_output_was_checked_leaves_no_folder_it_made(tmp_path, argv):
    """The output check creates a path's missing folders (as mkdir -p) to prove it can write there; the input read
    next (here a directory that holds no study) was refused, and `new/deeper/` stayed behind, empty."""
    from tests.cli import autotune_main

    (tmp_path / "run").mkdir()
    args = [a.format(run=tmp_path / "run", new=tmp_path / "new" / "deeper") for a in argv]
    refused = autotune_main(*args)
    assert refused.returncode == 2 and "not a run directory" in refused.stderr, refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


_DEEP_JSON = "[" * 3000 + "]" * 3000  # a few KB: Python's decoders recurse once per level
_DEEP_TOML = "x = " + "[" * 600 + "]" * 600 + "\n"


@pytest.mark.parametrize("name, text, argv, words", [
    ("m.json", f'{{"x": {_DEEP_JSON}}}', ("space", "--model", "{f}", "--nodes", "1"), "model file"),
    ("hf/config.json", f'{{"model_type": "qwen2", "x": {_DEEP_JSON}}}', ("space", "--model", "{d}/hf", "--nodes", "1"),
     "model file"),
    ("s.toml", _DEEP_TOML, ("space", "--model", "7b", "--nodes", "1", "--space", "{f}"), "space file"),
    ("h.toml", _DEEP_TOML, ("space", "--model", "7b", "--nodes", "1", "--hardware", "{f}"), "hardware profile"),
    ("r.jsonl", f'{{"params": {_DEEP_JSON}}}\n',
     ("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", "{f}", "--out", "{d}/run"), "measurements"),
    ("ref.json", f'{{"x": {_DEEP_JSON}}}', ("calibrate", "--reference", "{f}", "--no-loo"), "reference"),
])
def test_a_file_nested_too_deeply_is_one_line_not_a_traceback(tmp_path, name, text, argv, words):
    """Trial 41: a 6 KB file of nested lists ended every reader in a RecursionError traceback (rc 1)."""
    from tests.cli import autotune_main

    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    refused = autotune_main(*(a.format(f=path, d=tmp_path) for a in argv))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert words in refused.stderr and "maximum recursion depth" in refused.stderr


# --- the probe options: one table for the command line and the launch backend ------------------

@pytest.mark.parametrize("keyword, value, flag", [
    ("repeats", 0, "--repeats"), ("probe_steps", 0, "--probe-steps"), ("warmup_steps", -1, "--warmup-steps"),
    ("probe_timeout_s", 0, "--probe-timeout"), ("probe_seconds", math.nan, "--probe-seconds"), ("repeats", True, "--repeats"),
    ("probe_timeout_s", 1e20, "--probe-timeout"), ("probe_seconds", 1e9, "--probe-seconds"),
])
def test_launch_backend_refuses_what_the_flag_refuses(tmp_path, capsys, keyword, value, flag):
    from autotune.backends.launch import LaunchBackend

    with pytest.raises(ConfigError) as err:
        LaunchBackend(run_dir=tmp_path, **{keyword: value})
    assert_one_clear_line(str(err.value), f"{flag} = {json.dumps(value)}")  # as a JSON or TOML file would spell it
    assert_one_clear_line(run_main(["run", *STUDY, "--out", str(tmp_path / "r"), flag, str(value)], capsys), flag)


@pytest.mark.parametrize("seconds, timeout", [(900, 900), (60, 30)])
def test_a_window_the_timeout_would_cut_short_is_refused(tmp_path, seconds, timeout):
    from autotune.backends.launch import LaunchBackend

    with pytest.raises(ConfigError) as err:
        LaunchBackend(run_dir=tmp_path, probe_seconds=seconds, probe_timeout_s=timeout)
    assert_one_clear_line(str(err.value), f"--probe-seconds {seconds} is not shorter than --probe-timeout {timeout}",
                          "raise --probe-timeout")


# --- through the command's main(), as a user runs it ----------------------------------------------
# In this process: each case checks only the one line, the status and the files (the console script adds
# nothing to a refusal; tests/tuner/test_cli.py runs it as a subprocess).

autotune = cli.autotune_main


@pytest.fixture(scope="module")
def existing_run(tmp_path_factory):
    """A finished study: bad input pointed at it must leave study.db byte for byte as it was."""
    out = tmp_path_factory.mktemp("existing") / "run"
    done = autotune("run", *STUDY, "--trials", "2", "--backend", "simulate", "--out", out, cwd=out.parent)
    assert done.returncode == 0, done.stderr
    return out


def _bad_model(tmp_path):
    data = tiny()
    data["llm"]["layers"] = 0
    return write_model(tmp_path, data)


CLI_CASES = [
    (["run", "--model", "{model}"], "llm.layers = 0"),
    (["run", "--model", "{tmp}/gone.json"], "does not exist"),
    (["run", "--space", "{space}"], "'zero_stage' has true"),
    (["space", "--space", "{space}"], "'zero_stage' has true"),
    (["run", "--nodes", "8-2"], "LOW 8 must not exceed HIGH 2"),
    (["run", "--nodes", "0"], "--nodes '0' must be at least 1"),
    (["run", "--nodes", "a-b"], "--nodes 'a-b': LOW 'a' is not a whole number, nor is HIGH 'b'"),
    (["run", "--gpus-per-node", "0"], "--gpus-per-node 0 is outside 1..2"),
    (["run", "--gpus-per-node", "3"], "outside 1..2"),
    (["run", "--samples", "4"], "less than one global batch"),
    (["run", "--frames", "0"], "--frames"),
    (["run", "--text-tokens", "-1"], "--text-tokens"),
    (["run", "--global-batch", "1.5"], "--global-batch"),
    (["run", "--trials", "0"], "--trials"),
    (["run", "--trials", "x"], "--trials: 'x' is not a whole number"),
    (["run", "--seed", "-1"], "--seed"),
    (["run", "--probe-timeout", "nan"], "--probe-timeout: 'nan' is not finite"),
    (["run", "--probe-seconds", "-1"], "--probe-seconds"),
    (["run", "--repeats", "0"], "--repeats"),
    (["run", "--warmup-steps", "-1"], "--warmup-steps"),
    (["run", "--probe-steps", "0"], "--probe-steps"),
    (["run", "--max-slowdown", "0.9"], "--max-slowdown"),
    (["run", "--eta", "1.5"], "--eta"),
    (["run", "--bogus-flag", "1"], "unrecognized arguments"),
    (["report", "{existing}", "--eta", "nan"], "--eta"),
    (["report", "{existing}", "--max-slowdown", "x"], "--max-slowdown"),
    (["export", "{existing}", "--trial", "-1"], "--trial"),
    (["export", "{existing}", "--trial", "99"], "trial 99 is not a feasible"),
    (["export", "{existing}", "-o", "{tmp}"], "is a directory"),
    (["export", "{existing}", "-o", "{tmp}/ds.yaml"], "written as JSON; give it a .json name such as ds.json"),
    (["export", "{existing}", "-o", "{tmp}/ds.toml"], "give it a .json name such as ds.json"),
    (["export", "{existing}", "--measurements", "{tmp}"], "measurements.jsonl"),  # not the config's knee.json
    (["export", "{existing}", "--measurements", "{tmp}/m.jsonl", "-o", "{tmp}/x.json"], "is the file it writes: drop -o"),
    (["export", "{existing}", "--measurements", "{tmp}/m.jsonl", "--launcher", "srun"], "no launch.sh: drop --launcher"),
    (["export", "{existing}", "-o", "{tmp}/afile/x.json"], "afile is a file"),
    (["export", "{existing}", "-o", "/proc/autotune-x/x.json"], "cannot write in"),
    (["sensors", "--sample", "0"], "--sample"),
    (["sensors", "--period", "inf"], "--period"),
    (["sensors", "--period", "0.5"], "add --sample"),
    (["sensors", "--sample", "0.2", "--period", "1"], "--period 1 is longer than --sample 0.2"),
]


@pytest.mark.parametrize("argv, words", CLI_CASES)
def test_through_the_command_line_leaves_the_study_untouched(tmp_path, existing_run, argv, words):
    model, space = _bad_model(tmp_path), write_space(tmp_path, zero_stage="[true]")
    (tmp_path / "afile").write_text("")
    fill = {"{model}": model, "{space}": space, "{tmp}": tmp_path, "{existing}": existing_run}
    argv = [_filled(part, fill) for part in argv]
    if argv[0] == "run":  # the study options not given in the case, and the existing study as --out
        pairs = zip(STUDY[::2], STUDY[1::2])
        argv += [*(part for flag, value in pairs if flag not in argv for part in (flag, value)), "--out", str(existing_run)]
    before = (existing_run / "study.db").read_bytes()
    result = autotune(*argv, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert_one_clear_line(result.stderr, words)
    assert (existing_run / "study.db").read_bytes() == before


@pytest.mark.parametrize("out", ["{tmp}/afile", "{tmp}/afile/run", "/proc/autotune-x"])
def test_unwritable_out_is_refused_before_a_study_exists(tmp_path, out):
    (tmp_path / "afile").write_text("")
    out = out.replace("{tmp}", str(tmp_path))
    result = autotune("run", *STUDY, "--trials", "1", "--out", out, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert_one_clear_line(result.stderr, f"--out {out}")
    assert not list(tmp_path.rglob("study.db"))


def _filled(part: str, fill: dict) -> str:
    for key, value in fill.items():
        part = part.replace(key, str(value))
    return part


def test_a_directory_where_export_writes_beside_the_config_is_one_line(tmp_path):
    run = tmp_path / "run"
    done = autotune("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", run)
    assert done.returncode == 0, done.stderr
    (tmp_path / "out" / "knee.launch.sh").mkdir(parents=True)
    result = autotune("export", run, "--pick", "knee", "-o", tmp_path / "out" / "knee.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "knee.launch.sh is a directory" in result.stderr
    assert not (tmp_path / "out" / "knee.json").exists()  # nothing half-written


@pytest.mark.parametrize("name, words", [
    ("-", "-o -: export writes a DeepSpeed config and two files beside it (NAME.candidate.json, NAME.launch.sh), not "
          "standard output; give a file name such as knee.json"),
    ("-x.json", "-o -x.json: launch.sh passes the file names to the probe, which reads one starting with '-' as an "
                "option; give a name such as x.json"),
])
def test_an_export_file_named_with_a_leading_dash_is_refused(tmp_path, existing_run, name, words):
    """Trial 45 §4: `-o -` wrote files named -, -.candidate.json and -.launch.sh, and `bash -.launch.sh` failed."""
    result = autotune("export", existing_run, "--pick", "knee", f"--output={name}", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_clear_line(result.stderr, words)
    assert list(tmp_path.iterdir()) == []


def test_a_config_name_whose_files_beside_it_would_be_too_long_is_one_line(tmp_path, existing_run):
    """Trial 45 §10: a legal 250-byte name, whose NAME.candidate.json would be 260 bytes, ended in ENAMETOOLONG."""
    output = tmp_path / "out" / ("b" * 245 + ".json")
    result = autotune("export", existing_run, "--pick", "knee", "-o", output, cwd=tmp_path)
    assert result.returncode == 2
    assert_one_clear_line(result.stderr, "the candidate file export writes beside it, bbbbbbbbbbbbbbbbbbbb....candidate.json, "
                                         "would have a name of 260 bytes, longer than a file system takes (255); give -o a "
                                         "shorter name")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, flag", [(["run", "--model", "7b", "--nodes", "2", "--trial", "3"], "--trial 3"),
                                        (["export", "RUN", "--meas", "x.jsonl"], "--meas x.jsonl"),
                                        (["report", "RUN", "--form", "json"], "--form json")])
def test_a_flag_prefix_is_refused_not_taken_for_another_flag(tmp_path, capsys, argv, flag):
    """Trial 37 F4: `run --trial 3` (export's flag) silently ran a study with a budget of 3."""
    with pytest.raises(SystemExit) as refused:
        main([str(tmp_path) if a == "RUN" else a for a in argv] + ["--out", str(tmp_path / "o")] * (argv[0] == "run"))
    assert refused.value.code == 2
    assert f"unrecognized arguments: {flag}" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_python_dash_m_autotune_is_the_autotune_command():
    """Trial 37 F5: batch scripts call a venv's python rather than its PATH."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "autotune", "--version"], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout.startswith("autotune "), done.stderr


def test_a_closed_stdout_is_said_once_not_a_traceback():
    """Trial 37 F16: `autotune ... >&-` ended in AttributeError ('NoneType' object has no attribute 'isatty')."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "autotune", "space", "--model", "7b", "--nodes", "1", "--valid"],
                          preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stderr.startswith("autotune: standard output is closed"), done.stderr


LONG = "a" * 300
PATH_FLAGS = [["run", "--model", "7b", "--nodes", "2", "--out", "{bad}"], ["report", "{bad}"], ["export", "{bad}", "--pick", "knee"],
              ["space", "--model", "7b", "--nodes", "2", "--space", "{bad}.toml"], ["run", "--model", "{bad}.json", "--nodes", "2"],
              ["run", "--model", "7b", "--nodes", "2", "--hardware", "{bad}.toml"], ["calibrate", "{bad}"],
              ["calibrate", "--reference", "gh200-study", "--no-loo", "-o", "{bad}.toml"]]


# A name made from the loop's (loop1.toml) is no loop: those flags are tried with the long name alone.
@pytest.mark.parametrize("argv, bad", [(argv, bad) for argv in PATH_FLAGS for bad in ("long", "loop")
                                       if bad == "long" or "{bad}" in argv],
                         ids=lambda v: v if isinstance(v, str) else " ".join(v[:1] + [a for a in v if a.startswith("-")][-1:]))
def test_a_path_that_cannot_exist_is_one_line_not_a_traceback(tmp_path, capsys, argv, bad):
    """Trial 37 F1: a name past the file system's 255 bytes, or a loop of links, raised OSError or RuntimeError from
    the checks that look at the path: a traceback, exit 1, for every command and path flag."""
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    path = str(tmp_path / (LONG if bad == "long" else "loop1"))
    try:
        status = main([a.replace("{bad}", path) for a in argv])
    except SystemExit as refused:  # argparse's refusal
        status = refused.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "longer than a file system takes (255)" in err or "cannot be followed" in err or "Symlink loop" in err, err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device that is always full")
def test_stdout_on_a_full_disk_is_one_line_not_a_traceback(tmp_path):
    """Trial 37 F16: a SLURM job's output file on a full quota ended `report` and `export` in an OSError traceback."""
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    assert main(["run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", str(run_dir)]) == 0
    # A rich table, JSON on sys.stdout, and print(): the three ways commands write (space stands for report: cheaper).
    for argv in (["space", "--model", "7b", "--nodes", "1", "--valid"], ["space", "--model", "7b", "--nodes", "1", "--json"],
                 ["export", str(run_dir), "--pick", "fastest", "-o", str(tmp_path / "fastest.json")], ["sensors"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "autotune", *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=120, cwd=Path(__file__).resolve().parents[2])
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        said = done.stderr.strip().splitlines()[-1]
        assert said.startswith("autotune: cannot write its output (No space left on device)")
        # Trial 45 §14: space and sensors keep nothing in a study; export's run directory does.
        assert ("the study and its run directory keep" in said) == (argv[0] == "export"), said


def test_a_folder_of_other_files_is_refused_as_the_run_directory(tmp_path, capsys):
    """`--out ~/project` (or `/`) would put a study's files among the project's; an empty folder made
    beforehand is fine, as is a run's own."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    for name in ("README.md", "setup.py", "train.py"):
        (project / name).write_text("x\n")
    before = sorted(project.rglob("*"))
    err = run_main(["run", *STUDY, "--out", str(project)], capsys)
    assert_one_clear_line(err, f"--out {project} is a folder of other files (README.md, setup.py, src and 1 more)",
                          "no autotune run", f"pass --out a new or empty directory, such as {project / 'autotune-run'}")
    assert sorted(project.rglob("*")) == before  # nothing written there
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", *STUDY, "--trials", "1", "--out", str(empty)]) == 0
    assert main(["run", *STUDY, "--trials", "2", "--out", str(empty)]) == 0  # its own run: resumed
    capsys.readouterr()


def test_a_file_name_near_the_file_system_s_limit_is_written_whole(tmp_path):
    """Trial 43 F9: `export -o` of a legal 241-byte name failed: its temporary name passed 255 bytes."""
    from autotune.atomic_write import write_text_atomic

    for length in (241, 255):
        path = tmp_path / ("k" * (length - 5) + ".json")
        write_text_atomic(path, "{}\n")
        assert path.read_text() == "{}\n" and [p.name for p in tmp_path.iterdir()] == [path.name]
        path.unlink()


@pytest.mark.parametrize("command", [["run", *STUDY, "--out", "{long}"], ["report", "{long}"], ["export", "{long}"]])
def test_a_path_longer_than_the_system_takes_is_one_line(tmp_path, capsys, command):
    """Trial 43 F9: every part of it short enough, the whole past PATH_MAX: an OSError traceback."""
    long = str(tmp_path / "/".join(["d" * 200] * 25))
    err = run_main([part.replace("{long}", long) for part in command], capsys)
    assert_one_clear_line(err, "bytes, longer than the system takes (4095); give a shorter one")


@pytest.mark.parametrize("value", ['"MAX"', "1500.5", "true", "20", "10000000"])
def test_space_clock_refusals_state_one_range(tmp_path, value):
    """trial78 #1: 20 was refused as outside 50 to 5000, "MAX" and 1500.5 with "whole MHz >= 1 and <= 1000000000000":
    two ranges for one knob. Every reader of sm_clock_mhz (a space file, a candidate or measurement file, the probe's
    flag and its --help) states the one range, hardware/plausible.py's."""
    from autotune.candidate import knob_allowed, knob_value

    said = refused_space(write_space(tmp_path, sm_clock_mhz=f'["max", {value}]'), "whole MHz from 50 to 5000")
    assert "1000000000000" not in said
    assert knob_allowed("sm_clock_mhz") == "max (untouched) or whole MHz from 50 to 5000"
    with pytest.raises(ValueError, match="whole MHz from 50 to 5000"):  # as a candidate file's value
        knob_value("sm_clock_mhz", __import__("tomllib").loads(f"v = {value}")["v"])
