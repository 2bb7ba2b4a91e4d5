"""What a stated error was measured on is judged per model, and with the workload (trial72 #3): gh200's scope was a
list of values per knob across models, so 7b on 64 GPUs at micro-batch 1 (measured on 4-8 GPUs at micro-batch 4-8;
64 GPUs and micro-batch 1 were 72b's) carried +- 3.4% and tied picks by it, and so did any frames, text tokens or
precision, while every figure of the GH200 study was bf16 at 60 frames and 256 text tokens."""

import json

import pytest

from autotune.errors import ConfigError
from autotune.hardware import load_hardware
from autotune.report.error_bars import profile_error
from autotune.report.error_scope import measured_scope, outside_scope
from tests import cli

autotune = cli.autotune_main
SPACE = """zero_stage = [3]
optimizer_offload = ["none", "async"]
activation_checkpointing = ["recompute"]
sp_degree = [1]
micro_batch = [1, 2, 4]
power_limit = [1.0]
"""
KNOBS = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
         "power_limit": 1.0, "sm_clock_mhz": "max"}
MEASURED_WORKLOAD = {"frames": "60", "text_tokens": "256", "precision": "bf16"}


@pytest.fixture(scope="module")
def gh200_scope():
    return measured_scope(profile_error(load_hardware("gh200")))


def test_a_model_is_judged_by_its_own_gpu_counts_and_micro_batches(gh200_scope):
    def outside(model, micro_batch, nodes, workload=MEASURED_WORKLOAD):
        return outside_scope(gh200_scope, model, {**KNOBS, "micro_batch": micro_batch, "nodes": nodes}, gpus=4 * nodes,
                             workload=workload)

    assert outside("7b", 4, 1) == [] and outside("72b", 2, 16) == []
    # Each value was measured, on another model: said with the model it was not measured on.
    assert outside("7b", 1, 16) == ["7b with micro-batch 1", "7b with nodes 16", "7b with GPUs 64"]
    assert outside("72b", 4, 4) == ["72b with micro-batch 4", "72b with nodes 4", "72b with GPUs 16"]
    # A value no model was measured on is said as before.
    assert outside("32b", 4, 32) == ["nodes 32", "GPUs 128"]


def test_the_workload_the_error_was_measured_at_bounds_it(gh200_scope):
    config = {**KNOBS, "micro_batch": 4, "nodes": 1}
    assert outside_scope(gh200_scope, "7b", config, gpus=4, workload={**MEASURED_WORKLOAD, "frames": "30"}) == ["frames 30"]
    assert outside_scope(gh200_scope, "7b", config, gpus=4, workload={**MEASURED_WORKLOAD, "text_tokens": "512",
                                                                      "precision": "fp32"}) == [
        "text tokens 512", "precision fp32"]


def _errors(tmp_path, *flags) -> list[dict]:
    space = tmp_path / "sp3.toml"
    space.write_text(SPACE)
    done = autotune("space", "--model", "7b", "--space", space, "--simulate", "--json", *flags)
    assert done.returncode == 0, done.stderr
    return [(row["params"]["micro_batch"], row["params"]["nodes"], row["simulator_error_pct"]["time_s"])
            for row in json.loads(done.stdout) if row["valid"]]


def test_space_states_the_error_only_where_the_model_and_workload_were_measured(tmp_path):
    rows = _errors(tmp_path, "--nodes", "1,16")
    assert {(mb, nodes): error for mb, nodes, error in rows} == {(1, 1): None, (2, 1): None, (4, 1): 3.4, (1, 16): None}
    assert {error for _, _, error in _errors(tmp_path, "--nodes", "1", "--frames", "30")} == {None}
    assert {error for _, _, error in _errors(tmp_path, "--nodes", "1", "--precision", "fp32")} == {None}


def test_a_study_of_7b_on_64_gpus_calls_no_tie_by_an_error_measured_on_4_to_8(tmp_path):
    space = tmp_path / "sp3.toml"
    space.write_text(SPACE)
    done = autotune("run", "--model", "7b", "--nodes", "16", "--space", space, "--backend", "simulate",
                    "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert all(pick["tied_with"] == [] for pick in document["picks"])
    text = " ".join(done.stdout.split())
    assert ("lie where the simulator's error was not measured (7b with micro-batch 1, 7b with nodes 16, 7b with GPUs "
            "64): their error is unknown (+- ?%); probe them before deploying.") in text
    assert "within the simulator's error" not in text


def test_calibrate_records_each_model_s_scope_as_the_shipped_profile_holds_it(tmp_path):
    written = tmp_path / "gh200-cal.toml"
    done = autotune("calibrate", "--reference", "gh200-study", "-o", written)
    assert done.returncode == 0, done.stderr
    assert '[error_measured_on.by_model."7b"]' in written.read_text()
    assert load_hardware(str(written)).error_measured_on == load_hardware("gh200").error_measured_on


@pytest.mark.parametrize("edit, words", [
    (('gpus = ["4", "8"]', 'gpus = ["4", "8", "128"]'), '[error_measured_on.by_model."7b"] gpus has "128", which '
                                                         '[error_measured_on] gpus lacks'),
    (('by_model."72b"]', 'by_model."14b"]'), '[error_measured_on.by_model."14b"] names a model its model list lacks'),
    (('frames = ["60"]', 'frames = ["sixty"]'), '[error_measured_on] frames has "sixty", which is not a whole number'),
    (('precision = ["bf16"]', 'precision = ["fp16"]'), '[error_measured_on] precision has "fp16", which is not one of'),
])
def test_a_scope_table_written_otherwise_than_calibrate_writes_it_is_refused_in_one_line(tmp_path, edit, words):
    text = open(load_hardware("gh200").source).read()
    assert edit[0] in text
    path = tmp_path / "gh200.toml"  # the built-in's text, read as a file of its own
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ConfigError, match="restore it from `autotune calibrate -o`'s output") as refused:
        load_hardware(str(path))
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_the_scope_sentence_says_each_model_s_values_then_only_what_all_models_add():
    """The sentence said each model's micro-batches, nodes and GPU counts, then their union again (~400 characters of
    scope, trial72 #3): a knob every model says its own values of is said once per model, and the rest after "with"."""
    from autotune.report.error_bars import error_sentence

    sentence = error_sentence(profile_error(load_hardware("gh200")))
    assert ("That error was measured on 7b (micro-batch 4/8, nodes 1/2, GPUs 4/8, global batch 16/32/64), 32b (micro-batch "
            "2/4, nodes 4/8, GPUs 16/32, global batch 32/64/128), 72b (micro-batch 1/2, nodes 8/16, GPUs 32/64, global "
            "batch 32/64/128) with ZeRO 3, optimizer offload async/none/sync, "
            "checkpointing offload_async/offload_sync/recompute, SP 1, power limit 1.0, SM clock max, frames 60, text "
            "tokens 256, precision bf16: other configurations' figures extrapolate it.") in sentence
    assert "micro-batch 1/2/4/8" not in sentence and "not recorded" not in sentence
    # the union is said where some model has no list of its own (a by_model table naming only 7b)
    scope = {"model": ["7b", "32b"], "micro_batch": ["2", "4"], "gpus": ["4"], "frames": ["60"],
             "by_model": {"7b": {"micro_batch": ["4"], "gpus": ["4"]}}}
    from autotune.report.error_scope import scope_words

    assert scope_words(scope) == "7b (micro-batch 4), 32b with micro-batch 2/4, GPUs 4, frames 60"


def test_the_global_batch_is_judged_by_its_model_s_own_values(gh200_scope, tmp_path):
    """A study at another --global-batch got the error as if measured there (trial72 #3): gh200's 7b ran at global
    batch 16-64, 32b and 72b at 32-128 (local batch x GPUs, one micro-step per step)."""
    config = {**KNOBS, "micro_batch": 4, "nodes": 1}

    def outside(global_batch):
        return outside_scope(gh200_scope, "7b", config, gpus=4, workload={**MEASURED_WORKLOAD,
                                                                            "global_batch": global_batch})

    assert outside("64") == [] and outside("128") == ["7b with global batch 128"]
    assert outside("1024") == ["global batch 1024"]
    assert {error for _, _, error in _errors(tmp_path, "--nodes", "1", "--global-batch", "512")} == {None}


def test_a_scope_recorded_before_the_global_batch_says_so_and_judges_no_figure_by_it():
    from dataclasses import replace

    from autotune.report.error_bars import error_sentence

    gh200 = load_hardware("gh200")
    older = {key: values for key, values in gh200.error_measured_on.items() if key != "global_batch"}
    older["by_model"] = {model: {k: v for k, v in lists.items() if k != "global_batch"}
                         for model, lists in older["by_model"].items()}
    error = profile_error(replace(gh200, error_measured_on=older))
    config = {**KNOBS, "micro_batch": 4, "nodes": 1}
    assert outside_scope(measured_scope(error), "7b", config, gpus=4,
                         workload={**MEASURED_WORKLOAD, "global_batch": "1024"}) == []
    assert ("precision bf16 (its global batch not recorded: the profile predates that record, so no figure is judged by "
            "it; calibrate again to record it): other configurations' figures extrapolate it.") in error_sentence(error)


def test_a_scope_recorded_before_each_model_s_own_lists_says_so():
    """An older table (no by_model) judges every model by all models' values, 7b on 64 GPUs because 72b ran there, and
    said nothing of it (trial72 #3). A one-model scope's lists are its model's own: nothing to say there."""
    from dataclasses import replace

    from autotune.report.error_bars import error_sentence

    gh200 = load_hardware("gh200")
    older = {key: values for key, values in gh200.error_measured_on.items() if key != "by_model"}
    sentence = error_sentence(profile_error(replace(gh200, error_measured_on=older)))
    assert ("precision bf16 (its values not recorded per model: the profile predates that record, so a value measured "
            "on one of its models counts for all of them; calibrate again to record it): other configurations' figures "
            "extrapolate it.") in sentence
    assert "per model" not in error_sentence(profile_error(replace(gh200, error_measured_on={**older, "model": ("7b",)})))
