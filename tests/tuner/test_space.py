import re

import pytest

from autotune.candidate import Candidate, Knobs
from autotune.checks import MAX_COUNT
from autotune.errors import ConfigError
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.space import baseline, enumerate_space, load_space, parse_nodes, rule_violation
from autotune.space.files import DEFAULT_SPACE
from autotune.workload import make_workload


@pytest.mark.parametrize(
    "knobs, expected",
    [
        (dict(zero_stage=0, optimizer_offload="sync"), "offload needs ZeRO stage >= 1"),
        (dict(zero_stage=2, optimizer_offload="async"), "needs ZeRO stage 3"),
        (dict(sp_degree=3, nodes=1), "does not divide the 4 GPUs"),
        (dict(sp_degree=16, nodes=4), "does not divide the attention heads"),
        (dict(micro_batch=8, nodes=4), "does not divide the global batch 64"),
    ],
)
def test_rules_give_reasons(make_candidate, knobs, expected):
    assert expected in rule_violation(make_candidate(**knobs))


def test_superoffload_needs_cuda(make_candidate):
    c = make_candidate(model="tiny", hardware="cpu", zero_stage=3, optimizer_offload="async", nodes=1)
    assert "CUDA" in rule_violation(c)


def test_valid_candidate_has_no_reason(make_candidate):
    assert rule_violation(make_candidate(zero_stage=3, optimizer_offload="async", sp_degree=2, micro_batch=2)) is None


def test_global_batch_is_held_fixed(make_candidate):
    for sp, mb in ((1, 1), (2, 2), (4, 1)):
        c = make_candidate(sp_degree=sp, micro_batch=mb)
        assert c.knobs.micro_batch * c.dp_degree * c.grad_accum == c.workload.global_batch


def test_nodes_parsing():
    assert parse_nodes("4") == (4,)
    assert parse_nodes("2-5") == (2, 3, 4, 5)
    for bad in ("0", "x", "5-2"):
        with pytest.raises(ConfigError):
            parse_nodes(bad)


def test_nodes_take_a_list_as_slurm_writes_one_and_say_it_back_so():
    """Trial 48 §16: `--nodes 2,4,8` was refused though a space file may list the counts."""
    from autotune.space import nodes_flag

    assert parse_nodes("2,4,8") == (2, 4, 8) and parse_nodes(" 8, 2 ") == (2, 8) and parse_nodes("1-4,8,4") == (1, 2, 3, 4, 8)
    assert [nodes_flag(parse_nodes(text)) for text in ("4", "2-8", "8,2,4", "1-4,8")] == ["4", "2-8", "2,4,8", "1-4,8"]
    for bad, said in (("2,,4", "'' in --nodes '2,,4' is not a whole number or a range LOW-HIGH"),
                      ("2,4,a", "'a' in --nodes '2,4,a' is not a whole number"),
                      ("8-2,16", "LOW 8 must not exceed HIGH 2; write --nodes 2-8,16"),
                      ("0,2", "must be at least 1"),
                      ("1-256,300", "holds 257 node counts, more than 256"),
                      ("1-99999999", "holds 99999999 node counts, more than 256")):
        with pytest.raises(ConfigError, match=re.escape(said)):
            parse_nodes(bad)


def test_a_whole_number_written_as_a_float_is_refused_in_the_flags_words(tmp_path):
    """Trial 63 #22: --nodes 2.0 and a space file's 1e1 said it otherwise than every whole-number flag does."""
    words = "is not a whole number; write it without a decimal point or an exponent"
    for bad, said in (("2.0", f"--nodes '2.0' {words} (2)"), ("1e1", f"--nodes '1e1' {words} (10)"),
                      ("2.0,4", f"'2.0' in --nodes '2.0,4' {words} (2)"),
                      # past the range, the range, not a number it refuses (1e400 was "not a whole number or a range")
                      ("1e400", f"--nodes '1e400' {words}, and it is too large: it must be a whole number >= 1 and <= {MAX_COUNT}"),
                      ("0.0", f"--nodes '0.0' {words}, and it is too small: it must be a whole number >= 1 and <= {MAX_COUNT}")):
        with pytest.raises(ConfigError) as refused:
            parse_nodes(bad)
        assert str(refused.value) == said
    path = tmp_path / "space.toml"
    path.write_text("micro_batch = [1, 2, 4, 1e1]\n")
    with pytest.raises(ConfigError, match=re.escape(f"'micro_batch' has 1e1, which {words} (10)")):
        load_space(path, (1,))
    path.write_text("micro_batch = [1, 1e13]\n")  # a count past its range: the range, not "(10000000000000)"
    with pytest.raises(ConfigError, match=re.escape(f"{words}, and it is too large: it must be a whole number >= 1 and <= {MAX_COUNT}")):
        load_space(path, (1,))


@pytest.mark.parametrize("knob", ["micro_batch", "sp_degree", "nodes"])
@pytest.mark.parametrize("written, side", [("1e400", "large"), ("-1E+400", "small")])
def test_a_number_past_a_float_in_a_space_file_is_said_as_1e13_is(tmp_path, knob, written, side):
    """TOML reads 1e400 as inf: it was "has Infinity, which is not a whole number >= 1 and <= ...", the wording of
    `inf`, where 1e13 in the same file says what to write and the range. Now as 1e13, and as --nodes 1e400."""
    path = tmp_path / "space.toml"
    path.write_text(f"{knob} = [{written}]\n")
    with pytest.raises(ConfigError) as refused:
        load_space(path, (1,))
    assert str(refused.value) == (f"space file {path}: '{knob}' has {written}, which is not a whole number; write it "
                                  f"without a decimal point or an exponent, and it is too {side}: it must be a whole "
                                  f"number >= 1 and <= {MAX_COUNT}; see search_spaces/default.toml")


@pytest.mark.parametrize("text, said", [
    ("1-2.0", "--nodes '1-2.0': HIGH '2.0' is not a whole number; write it without a decimal point or an exponent (2)"),
    ("1e0-4", "--nodes '1e0-4': LOW '1e0' is not a whole number; write it without a decimal point or an exponent (1)"),
    ("1.0-2.0", "--nodes '1.0-2.0': LOW '1.0' is not a whole number; write it without a decimal point or an exponent (1) "
                "and HIGH '2.0' is not a whole number; write it without a decimal point or an exponent (2)"),
    ("1-2.5", f"--nodes '1-2.5': HIGH '2.5' is not a whole number; it must be a whole number >= 1 and <= {MAX_COUNT}"),
    ("x-4", f"--nodes 'x-4': LOW 'x' is not a whole number; it must be a whole number >= 1 and <= {MAX_COUNT}"),
    ("1.5-x", f"--nodes '1.5-x': LOW '1.5' is not a whole number, nor is HIGH 'x'; it must be a whole number >= 1 and "
              f"<= {MAX_COUNT}"),
    ("1-1e400", "--nodes '1-1e400': HIGH '1e400' is not a whole number; write it without a decimal point or an exponent, "
                f"and it is too large: it must be a whole number >= 1 and <= {MAX_COUNT}"),
    ("1-1_0", "--nodes '1-1_0': HIGH '1_0' has an underscore"),
    ("2,1-2.0", "'1-2.0' in --nodes '2,1-2.0': HIGH '2.0' is not a whole number"),
    # no range: said as before
    ("1-2-3", "--nodes '1-2-3' is not a whole number or a range LOW-HIGH"),
    ("1_0", "--nodes '1_0' is not a whole number or a range LOW-HIGH"),  # not "write it without ... (10)"
])
def test_a_range_with_an_end_that_is_no_count_names_the_end(text, said):
    """`--nodes 1-2.0` was "is not a whole number or a range LOW-HIGH": the end at fault, and what it must be, unsaid."""
    with pytest.raises(ConfigError) as refused:
        parse_nodes(text)
    assert str(refused.value).startswith(said)


def test_malformed_space_file_is_refused(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text("zero_stage = [0, 5]\n")
    with pytest.raises(ConfigError, match="allowed values"):
        load_space(path, (1,))
    path.write_text("zero_stage = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_space(path, (1,))


def test_every_candidate_listed_and_invalid_ones_explained():
    model = load_model("32b")
    checks = list(enumerate_space(load_space(None, (4,)), model, load_hardware("gh200"), make_workload(model)))
    assert len(checks) == 4 * 3 * 4 * 4 * 4 * 4  # zero, opt offload, ckpt, sp, micro-batch, power limit
    assert any(c.valid for c in checks)
    assert all(c.reason for c in checks if not c.valid)
    assert any("GiB per GPU" in (c.reason or "") for c in checks)  # the memory estimate prunes too


def test_baseline_has_no_offload_and_no_sp():
    model = load_model("32b")
    checks = list(enumerate_space(load_space(None, (4,)), model, load_hardware("gh200"), make_workload(model)))
    base = baseline(checks)
    assert base is not None and base.valid
    k = base.candidate.knobs
    assert (k.optimizer_offload, k.sp_degree) == ("none", 1) and k.activation_checkpointing in ("none", "recompute")
    assert (k.power_limit, k.sm_clock_mhz) == (1.0, "max")  # what a user runs untuned: the device as it is


def _space_file(tmp_path, extra: str) -> str:
    text = DEFAULT_SPACE.read_text().replace("power_limit = [1.0, 0.9, 0.8, 0.7]\n", "").replace('sm_clock_mhz = ["max"]\n', "")
    path = tmp_path / "space.toml"
    path.write_text(text + extra)
    return str(path)


@pytest.mark.parametrize(
    "line",
    [
        "power_limit = [1.2]",
        "power_limit = [0]",
        "power_limit = [-0.5]",
        'power_limit = ["0.9"]',
        "power_limit = [true]",
        "power_limit = []",
        "sm_clock_mhz = [0]",
        'sm_clock_mhz = ["fast"]',
        "sm_clock_mhz = [1500.5]",
        "sm_clock_mhz = [false]",
    ],
)
def test_device_knob_values_are_checked(tmp_path, line):
    with pytest.raises(ConfigError, match=line.split(" =")[0]):
        load_space(_space_file(tmp_path, line + "\n"), (1,))


def test_device_knobs_default_to_untouched_when_a_space_file_omits_them(tmp_path):
    space = load_space(_space_file(tmp_path, ""), (1,))
    assert space.power_limit == (1.0,) and space.sm_clock_mhz == ("max",)


def test_power_limit_below_device_minimum_is_invalid_with_reason():
    model = load_model("32b")
    hardware = load_hardware("h100-sxm")  # 700 W default, 200 W minimum
    low = Candidate(Knobs(zero_stage=3, micro_batch=1, power_limit=0.25), model, hardware, make_workload(model))
    assert "below the device's minimum of 200 W" in rule_violation(low)
    ok = Candidate(Knobs(zero_stage=3, micro_batch=1, power_limit=0.3), model, hardware, make_workload(model))
    assert rule_violation(ok) is None


def test_device_knobs_need_cuda_and_a_clock_in_range():
    model = load_model("tiny")
    cpu = load_hardware("cpu")
    assert "needs NVIDIA GPUs" in rule_violation(Candidate(Knobs(power_limit=0.9), model, cpu, make_workload(model)))
    assert "needs NVIDIA GPUs" in rule_violation(Candidate(Knobs(sm_clock_mhz=1200), model, cpu, make_workload(model)))
    gh200 = load_hardware("gh200")
    assert "outside the device's" in rule_violation(Candidate(Knobs(sm_clock_mhz=5000), model, gh200, make_workload(model)))
    assert rule_violation(Candidate(Knobs(sm_clock_mhz=1400), model, gh200, make_workload(model))) is None


def test_nothing_fits_names_the_candidate_nearest_to_fitting(tmp_path):
    # The message took the first three reasons in alphabetical order, cut at " (" (so "async optimizer
    # offload" alone); what tells the user how far off the space is, is its nearest candidate.
    from autotune.commands.options import settings_for
    from autotune.errors import UserError
    from autotune.study.valid import valid_checks

    with pytest.raises(UserError) as too_big:
        valid_checks(settings_for("--model", "72b", "--nodes", "1"))
    message = str(too_big.value)
    assert "the closest, zero_stage 3," in message and "GiB per GPU, more than the 86.4 GiB usable" in message
    assert "power_limit" not in message
    space = tmp_path / "space.toml"
    space.write_text('nodes = [1]\nzero_stage = [0]\noptimizer_offload = ["sync"]\nactivation_checkpointing = ["none"]\n'
                     "sp_degree = [1]\nmicro_batch = [8]\n")
    with pytest.raises(UserError) as broken:
        valid_checks(settings_for("--model", "7b", "--space", str(space)))
    # a rule is the cause: its values are the fix, not more memory (no "widen it: ... offload")
    assert str(broken.value) == ("nothing in the space is valid: every candidate breaks a rule: optimizer offload needs "
                                 "ZeRO stage >= 1 (1 of 1); change those values in the --space file (`autotune space "
                                 "--space FILE` gives each candidate's reason)")
    space.write_text('nodes = [1]\nzero_stage = [0, 1]\noptimizer_offload = ["sync"]\nactivation_checkpointing = ["none"]\n'
                     "sp_degree = [3]\nmicro_batch = [8]\n")
    with pytest.raises(UserError) as broken:
        valid_checks(settings_for("--model", "7b", "--space", str(space)))
    assert ("every candidate breaks a rule: optimizer offload needs ZeRO stage >= 1 (1 of 2); SP degree 3 does not "
            "divide the 4 GPUs (1 of 2); change those values") in str(broken.value)


@pytest.mark.parametrize("flags, said", [
    (["--global-batch", "3"], "warning: nothing in the space is valid: no micro-batch (1, 2, 4, 8) x "
                              "data-parallel size (2, 4, 8, 16 on these GPUs) divides the global batch 3: pass "
                              "--global-batch 16"),
    (["--frames", "1000000000"], "warning: nothing in the space fits in memory (the closest, "),
    (["--nodes", "2-3"], "warning: no candidate on 3 nodes is valid: no micro-batch (1, 2, 4, 8) x "
                         "data-parallel size (3, 6, 12 on these GPUs) divides the global batch 64"),
])
def test_space_says_why_nothing_or_a_node_count_is_valid(flags, said):
    """Seen in a newcomer's trial: `space --valid` printed an empty table, exit 0, and no reason, where `run`
    refuses the same flags naming the fix. The listing stays data on stdout; the reason goes to stderr."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "autotune.cli", "space", "--model", "32b", *flags, "--valid", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(said), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert bool(json.loads(done.stdout)) == (flags[0] == "--nodes")  # 2 nodes still has candidates


def test_a_space_file_without_nodes_takes_the_default_of_4_as_leaving_it_out_does(tmp_path):
    """Seen in a newcomer's trial: `--space search_spaces/default.toml` (or a copy) was refused for lack of --nodes,
    though leaving --space out studies 4 nodes and --help says "the space file's list, ..., else 4"."""
    from autotune.commands.options import settings_for

    copy = tmp_path / "mine.toml"
    copy.write_text(DEFAULT_SPACE.read_text())
    assert settings_for("--model", "7b", "--space", str(copy)).space.nodes == (4,)
    assert settings_for("--model", "7b").space.nodes == (4,)
    assert settings_for("--model", "7b", "--space", str(copy), "--nodes", "2").space.nodes == (2,)
    listed = tmp_path / "listed.toml"
    listed.write_text(DEFAULT_SPACE.read_text() + "nodes = [1, 2]\n")
    assert settings_for("--model", "7b", "--space", str(listed)).space.nodes == (1, 2)
    with pytest.raises(ConfigError, match="lists no 'nodes' and --nodes was not given"):
        load_space(copy)  # a caller with no default of its own still hears it


def test_the_default_space_is_installed_with_the_package():
    """Trial 37 F17: it lived beside the checkout (search_spaces/), so `pip install .` or a wheel in a container
    image ran into "space file ... does not exist" on a plain `autotune run`."""
    import fnmatch
    import tomllib
    from pathlib import Path

    import autotune

    package = Path(autotune.__file__).resolve().parent
    inside = DEFAULT_SPACE.relative_to(package).as_posix()  # raises where it lies outside the package
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["autotune"]
    assert any(fnmatch.fnmatch(inside, pattern) for pattern in shipped), (inside, shipped)
    checkout = package.parent / "search_spaces" / "default.toml"  # the path the docs name, for a checkout
    assert checkout.resolve() == DEFAULT_SPACE and load_space(checkout, (4,)).nodes == (4,)


def test_many_node_counts_without_a_valid_candidate_are_said_in_a_few_lines():
    """Trial 41: `--nodes 1-256` printed 249 lines, one per node count, before anything else."""
    from autotune.commands.options import settings_for
    from autotune.study.valid import NODE_COUNT_LINES, node_counts_without_candidates, valid_checks

    lines = node_counts_without_candidates(valid_checks(settings_for("--model", "7b", "--nodes", "1-40")))
    assert len(lines) == NODE_COUNT_LINES + 1
    assert lines[0].startswith("no candidate on 3 nodes is valid")
    assert lines[-1] == ("no candidate is valid on 29 more node counts either (10-15, 17-31, 33-40); "
                         "`autotune space --nodes N` says why for each")


def test_simulated_json_records_carry_the_error_the_table_shows(capsys):
    """`space --simulate --json` gave figures without the "+- 3.4%" or "+- ?%" the table puts beside them."""
    import json

    from autotune.cli import main
    from autotune.report.error_bars import profile_error

    def listed(*flags):
        assert main(["space", "--model", "7b", "--nodes", "1", "--simulate", "--json", *flags]) == 0
        return [r for r in json.loads(capsys.readouterr().out) if r["valid"]]

    stated = profile_error(load_hardware("gh200"))
    rows = listed()
    # The shipped error was measured at the full power limit and clock: a capped candidate's is not known.
    full = [r for r in rows if r["params"]["power_limit"] == 1.0 and r["params"]["zero_stage"] == 3
            and r["params"]["activation_checkpointing"] == "recompute" and r["params"]["sp_degree"] == 1
            and r["params"]["micro_batch"] in (4, 8)]  # 7b's own micro-batches in gh200's [error_measured_on]
    capped = [r for r in rows if r["params"]["power_limit"] < 1.0]
    assert full and capped
    assert all(r["simulator_error_pct"] == {m: stated[f"{m}_pct"] for m in ("time_s", "energy_kj", "tflops")} for r in full)
    assert all(r["simulator_error_pct"] == {"time_s": None, "energy_kj": None, "tflops": None} for r in capped)
    # An uncalibrated profile states no error for any figure.
    assert {json.dumps(r["simulator_error_pct"]) for r in listed("--hardware", "h100-sxm")} == {
        '{"time_s": null, "energy_kj": null, "tflops": null}'}


def test_the_listing_names_the_parameters_of_the_model_as_built(capsys):
    """Trial 44: no command showed a parameter count, so a config read otherwise than its checkpoint (a 21.8B
    mixture of experts as a dense 3.3B model) looked right."""
    from autotune.cli import main

    assert main(["space", "--model", "32b", "--nodes", "4", "--valid"]) == 0
    title = " ".join(capsys.readouterr().out.split("┏")[0].split())
    model = load_model("32b")
    from autotune.models import params_text

    assert title.endswith(f"as built: {params_text(model.params())} parameters (decoder {params_text(model.llm.params())}, "
                          f"vision tower and projector {params_text(model.params() - model.llm.params())})"), title
    assert f"{model.params() / 1e9:.2f}B parameters" in title
    assert 32 < model.llm.params() / 1e9 < 33.5  # Qwen2.5-32B's decoder, as published: 32.8B


def test_a_space_too_big_for_a_table_lists_its_valid_candidates_and_says_so(capsys, monkeypatch):
    """Trial 46: --nodes 1-64 of 72b made a 310,000-line table after 4 minutes, 99% of it invalid rows; --nodes
    1-256 printed nothing in 5 minutes."""
    import json

    from autotune.cli import main
    from autotune.commands import space

    monkeypatch.setattr(space, "TABLE_ROWS_MAX", 1000)
    assert main(["space", "--model", "32b", "--nodes", "4", "--json"]) == 0
    every = json.loads(capsys.readouterr().out)  # --json still lists every candidate
    valid = [r for r in every if r["valid"]]
    assert len(every) > 1000 > len(valid) > 0
    assert main(["space", "--model", "32b", "--nodes", "4"]) == 0
    out, err = capsys.readouterr()
    assert (f"{len(every):,} candidates are too many for a table: listing the {len(valid):,} valid ones (as --valid); "
            "--json lists every candidate with its reason") in " ".join(err.split())
    assert f"{len(valid)} of {len(every)} valid (listed: the valid ones)" in " ".join(out.split())
    assert "needs" not in out and out.count("│ valid") == len(valid)


def test_a_space_from_standard_input_is_refused_saying_to_save_it():
    """Trial 48 §22: `--space -` said "space file - does not exist", where `--measurements -` reads standard input."""
    from tests.cli import autotune_main

    done = autotune_main("space", "--model", "7b", "--nodes", "1", "--space", "-")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("--space -: a space file is read from a file, not standard input; save it "
                                        "(e.g. space.toml) and pass --space space.toml")


def test_previewing_a_simulate_run_lists_its_simulated_figures():
    """Trial 48 §4: `space --backend simulate` listed no simulated figures; `--simulate` did."""
    import json

    from tests.cli import autotune_main

    previews = [autotune_main("space", "--model", "7b", "--nodes", "1", "--valid", "--json", *flags)
                for flags in (("--backend", "simulate"), ("--simulate",), ())]
    assert all(done.returncode == 0 for done in previews)
    by_backend, by_flag, plain = (json.loads(done.stdout) for done in previews)
    assert by_backend == by_flag and by_backend[0]["time_s"] > 0
    assert "time_s" not in plain[0]


def test_nothing_fits_names_the_binding_limit_and_only_what_the_space_lacks():
    """Trial 54 F4: 72B on one node was told "the closest ... needs 319.8 GiB per GPU; widen it: more --nodes, ZeRO-3,
    offload or checkpointing" of a space holding all three, whose offloading candidates fit the GPU and fail on host
    memory."""
    from autotune.commands.options import settings_for
    from autotune.space import enumerate_space
    from autotune.study.valid import nothing_valid

    settings = settings_for("--model", "72b", "--nodes", "1")
    checks = list(enumerate_space(settings.space, settings.model, settings.hardware, settings.workload,
                                  settings.gpus_per_node))
    said = nothing_valid(checks)
    assert said.startswith("nothing in the space fits in memory (the closest on GPU memory, zero_stage 3, "
                           "optimizer_offload none, "), said
    assert "fit the GPU but not host memory: the closest, " in said and "GiB host memory per GPU for offload" in said
    assert said.endswith("the space already holds ZeRO-3, optimizer offload and activation checkpointing: more --nodes "
                         "(offload's host memory per GPU shrinks with them too) (see `autotune space`)"), said
    # A space without offload: offload is what it lacks, and ZeRO-3, which it holds, is not advised.
    no_offload = [c for c in checks if c.candidate.knobs.optimizer_offload == "none"]
    said = nothing_valid(no_offload)
    assert said.endswith("widen it: more --nodes, or optimizer offload in the --space file (see `autotune space`)"), said
    assert "host memory" not in said


def test_a_parameter_count_reads_in_its_own_unit():
    """Trial 54 F11: the tiny test model was "0.00B parameters (decoder 0.00B, ...)"."""
    from autotune.models import params_text

    assert [params_text(n) for n in (32.76e9, 675.3e6, 12_400, 512)] == ["32.76B", "675.3M", "12.4K", "512"]
