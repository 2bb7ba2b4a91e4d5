"""The probe's command line, its refusals and its result file (in-process, no process group)."""

from __future__ import annotations

import argparse
import json
import os

import pytest
import torch

from trainer import result as results
from trainer.probe import candidate_from_args, main, parse_args


def test_knob_flags_build_the_candidate_and_default_gpus_per_node_from_world_size():
    args = parse_args(["--model", "tiny", "--zero-stage", "3", "--sp-degree", "2", "--activation-checkpointing",
                       "offload_sync", "--global-batch", "4", "--frames", "1"])
    candidate = candidate_from_args(args, world_size=2)
    assert candidate.knobs.zero_stage == 3 and candidate.knobs.sp_degree == 2
    assert candidate.knobs.activation_checkpointing == "offload_sync"
    assert candidate.gpus_per_node == 2 and candidate.dp_degree == 1 and candidate.grad_accum == 4
    assert candidate.workload.frames == 1 and candidate.precision == "fp32"


def test_a_candidate_file_round_trips(tmp_path):
    args = parse_args(["--model", "tiny", "--micro-batch", "2", "--hardware", "cpu"])
    candidate = candidate_from_args(args, world_size=2)
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(candidate.to_dict()))
    again = candidate_from_args(parse_args(["--candidate", str(path)]), world_size=2)
    assert again.to_dict() == candidate.to_dict()


def test_file_and_knob_flags_together_are_refused(tmp_path, capsys):
    from tests.trainer.test_probe_inputs import _candidate_file

    with pytest.raises(SystemExit) as exit_:
        parse_args(["--candidate", _candidate_file(tmp_path), "--zero-stage", "1"])
    assert exit_.value.code == 2  # a usage line on every rank, before any process group
    assert capsys.readouterr().err.strip().endswith("--candidate already fixes zero_stage: give either the file or "
                                                    "the flags (see `python -m trainer.probe --help`)")


def test_superoffload_on_cpu_is_refused_before_starting_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    out = tmp_path / "result.json"
    code = main(["--model", "tiny", "--zero-stage", "3", "--optimizer-offload", "async", "--out", str(out)])
    result = json.loads(out.read_text())
    assert code != 0
    assert result["status"] == "failed" and result["refused"] is True
    assert "SuperOffload" in result["error"] and "CUDA" in result["error"] and "choose" in result["error"]
    assert result["candidate"]["knobs"]["optimizer_offload"] == "async" and result["source"] == "measured"
    assert not torch.distributed.is_initialized()


@pytest.mark.parametrize(
    "error, status",
    [
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "oom"),
        (MemoryError(), "oom"),
        (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes"), "oom"),
        (RuntimeError("shapes cannot be multiplied"), "failed"),
    ],
)
def test_failures_are_classified(error, status):
    failure = results.failure_result(results.base_result(None, None, 2, "cpu"), error, rank=1)
    assert failure["status"] == status and failure["failed_rank"] == 1 and failure["error"]


def test_the_first_failure_written_wins(tmp_path):
    out = tmp_path / "result.json"
    assert results.write_result(out, {"status": "oom"}, overwrite=False)
    assert not results.write_result(out, {"status": "failed"}, overwrite=False)
    assert json.loads(out.read_text())["status"] == "oom"
    assert list(tmp_path.iterdir()) == [out]  # no temporary files left behind


@pytest.fixture
def umask():
    """Sets the process umask for one test, and puts the previous one back."""
    previous = os.umask(0o022)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664), (0o077, 0o600)])
def test_a_result_file_gets_the_mode_the_umask_gives_and_a_rewritten_file_keeps_its_own(tmp_path, umask, mask, mode):
    """Was 0600 whatever the umask (tempfile.mkstemp): a teammate, or a SLURM job under another account,
    could not read a result. A plain open() gives a new file 0666 less the umask and leaves an existing
    file's mode alone; so does every atomic write."""
    import stat

    from autotune.atomic_write import write_text_atomic

    umask(mask)
    first, failure, text = tmp_path / "result.json", tmp_path / "failure.json", tmp_path / "pareto.json"
    assert results.write_result(first, {"status": "ok"}, overwrite=True)
    assert results.write_result(failure, {"status": "oom"}, overwrite=False)  # the first-writer-wins link
    write_text_atomic(text, "{}\n")
    for path in (first, failure, text):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path.name
    for path in (first, text):
        path.chmod(0o640)
    umask(0o077)
    assert results.write_result(first, {"status": "ok"}, overwrite=True)
    write_text_atomic(text, "[]\n")
    assert stat.S_IMODE(first.stat().st_mode) == stat.S_IMODE(text.stat().st_mode) == 0o640
    write_text_atomic(text, "#!/bin/sh\n", mode=0o755)  # an explicit mode still wins (launch.sh)
    assert stat.S_IMODE(text.stat().st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["failure.json", "pareto.json", "result.json"]


def test_throughput_uses_the_analytic_flops_and_the_profile_peak():
    from autotune.candidate import Candidate, Knobs
    from autotune.flops import flops_per_sample
    from autotune.hardware import load_hardware
    from autotune.models import load_model
    from autotune.workload import make_workload

    spec = load_model("tiny")
    candidate = Candidate(Knobs(), spec, load_hardware("cpu"), make_workload(spec, global_batch=4), gpus_per_node=2)
    stats = results.throughput(candidate, steps=10, window_s=4.0, world_size=2)
    model_flops = flops_per_sample(spec, candidate.workload).model_train
    assert stats["samples_per_s"] == pytest.approx(10.0)
    assert stats["tflops"]["model_total"] == pytest.approx(10.0 * model_flops / 1e12)
    assert stats["mfu"] == pytest.approx(stats["tflops"]["model_per_device"] / 0.1)


def test_a_gpu_profile_on_a_cpu_rank_is_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    out = tmp_path / "result.json"
    code = main(["--model", "tiny", "--hardware", "gh200", "--gpus-per-node", "1", "--out", str(out)])
    result = json.loads(out.read_text())
    assert code != 0 and result["status"] == "failed" and result["refused"] is True
    assert "gh200 describes CUDA GPUs but this rank has none" in result["error"] and "--hardware cpu" in result["error"]
    assert not torch.distributed.is_initialized()


@pytest.mark.parametrize("given, buildable", [("8.0;9.0a", "8.0;9.0"), ("9.0", "9.0"), (None, None)])
def test_the_probe_drops_an_arch_suffix_deepspeed_cannot_read(tmp_path, monkeypatch, capsys, given, buildable):
    """Seen on an H100 image (TORCH_CUDA_ARCH_LIST=9.0a): DeepSpeed's op builder failed every probe
    with "invalid literal for int() with base 10: '0a'" building fused Adam. A list it reads, or none,
    is left as it is, without a word."""
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    if given is None:
        monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    else:
        monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", given)
    main(["--model", "tiny", "--zero-stage", "3", "--optimizer-offload", "async", "--out", str(tmp_path / "r.json")])
    assert os.environ.get("TORCH_CUDA_ARCH_LIST") == buildable
    err = capsys.readouterr().err
    if given == buildable:
        assert "TORCH_CUDA_ARCH_LIST" not in err
    else:
        assert "TORCH_CUDA_ARCH_LIST=8.0;9.0 (was '8.0;9.0a'" in err


@pytest.mark.parametrize("flag, value, said", [
    ("--zero-stage", "4", "'4' is not one of the allowed values 0, 1, 2, 3"),
    ("--zero-stage", "four", "'four' is not one of the allowed values 0, 1, 2, 3"),
    ("--micro-batch", "0", "'0' is not a whole number >= 1"),
    ("--optimizer-offload", "cpu", "'cpu' is not one of the allowed values \"none\", \"sync\", \"async\""),
    ("--power-limit", "1.5", "'1.5' is not a fraction of the default power limit in (0, 1]"),
    ("--sm-clock-mhz", "fast", "'fast' is not \"max\" or a clock in whole MHz"),
])
def test_a_wrong_knob_flag_is_one_usage_line_before_deepspeed_sees_it(capsys, flag, value, said):
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--model", "tiny", flag, value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"python -m trainer.probe: error: argument {flag}: {said}")


def _exported(tmp_path, candidate, **edits):
    from autotune.ds_config import deepspeed_config

    config = deepspeed_config(candidate)
    for path, value in edits.items():
        section = config
        *parents, key = path.split("__")
        for parent in parents:
            section = section.setdefault(parent, {})
        section[key] = value
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config))
    return path


def test_an_edited_deepspeed_config_that_contradicts_the_candidate_is_refused_before_training(tmp_path, monkeypatch):
    """The probe feeds the candidate's micro-batches and labels its figures with its knobs: a config edited
    to ZeRO-3 with another micro-batch would be measured under the candidate's name."""
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    candidate = candidate_from_args(parse_args(["--model", "tiny", "--global-batch", "8"]), world_size=1)
    candidate_file = tmp_path / "candidate.json"
    candidate_file.write_text(json.dumps(candidate.to_dict()))
    edited = _exported(tmp_path, candidate, zero_optimization__stage=3, train_micro_batch_size_per_gpu=4,
                       gradient_accumulation_steps=2)
    out = tmp_path / "result.json"
    assert main(["--candidate", str(candidate_file), "--deepspeed-config", str(edited), "--out", str(out)]) != 0
    error = json.loads(out.read_text())["error"]
    assert ("sets train_micro_batch_size_per_gpu 4 (the candidate's: 1); gradient_accumulation_steps 2 (the "
            "candidate's: 8); zero_optimization.stage 3 (the candidate's: 0): the probe trains and labels") in error
    assert not torch.distributed.is_initialized()


def test_the_exported_config_and_edits_the_knobs_do_not_fix_are_accepted(tmp_path):
    from autotune.ds_config import knob_contradictions

    candidate = candidate_from_args(parse_args(["--model", "tiny", "--zero-stage", "2", "--optimizer-offload", "sync"]),
                                    world_size=2)
    assert knob_contradictions(json.loads(_exported(tmp_path, candidate).read_text()), candidate) == []
    tuned = _exported(tmp_path, candidate, zero_optimization__reduce_bucket_size=5e7, steps_per_print=1)
    assert knob_contradictions(json.loads(tuned.read_text()), candidate) == []
    offload_dropped = json.loads(tuned.read_text())
    del offload_dropped["zero_optimization"]["offload_optimizer"]
    assert knob_contradictions(offload_dropped, candidate) == [
        'zero_optimization.offload_optimizer.device "none" (the candidate\'s: "cpu")']


def test_a_hugging_face_config_the_probe_models_otherwise_is_one_warning_line(tmp_path, monkeypatch, capsys):
    """A Qwen2.5-VL-style config's own vision tower and activation are replaced (SigLIP, SiLU): the probe says so
    once, on rank 0, before it trains (here it stops at the CPU's refusal of SuperOffload)."""
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    checkpoint = tmp_path / "Small-VL"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps({
        "model_type": "qwen2_5_vl", "vision_config": {"depth": 32, "hidden_size": 1280},
        "text_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": None,
                        "intermediate_size": 128, "vocab_size": 256, "hidden_act": "gelu"}}))
    args = parse_args(["--model", str(checkpoint)])
    assert args.model.spec.llm.kv_heads == 4 and args.model.spec.name == "Small-VL + SigLIP so400m/14"
    main(["--model", str(checkpoint), "--zero-stage", "3", "--optimizer-offload", "async", "--global-batch", "1",
          "--frames", "1", "--out", str(tmp_path / "result.json")])
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [f"probe: warning: model file {checkpoint / 'config.json'} (a Hugging Face config): autotune "
                        "reads its decoder's sizes but replaces vision_config with the presets' SigLIP so400m/14 at 392 "
                        "px (the tower the trainer builds: 196 visual tokens a frame, which --frames scales); "
                        "text_config.hidden_act \"gelu\" with SiLU (autotune's SwiGLU MLP: the same gate, up and down "
                        "matrices); see docs/model-schema.md"]
    assert not torch.distributed.is_initialized()
    assert parse_args(["--model", "tiny"]).model.warning is None


@pytest.mark.parametrize("flags, unknown", [
    (["--model", "tiny", "--probe", "10"], "--probe 10"),  # a user meaning steps got --probe-seconds 10
    (["--mod", "tiny"], "--mod tiny"),
    (["--model", "tiny", "--zero", "3"], "--zero 3"),
])
def test_a_flag_prefix_is_refused_not_taken_for_the_whole_flag(capsys, flags, unknown):
    """Trial 48 #14: abbreviations were on, as `autotune` deliberately has them off; `--probe 10` parsed as
    --probe-seconds 10."""
    with pytest.raises(SystemExit) as exit_:
        parse_args(flags)
    assert exit_.value.code == 2
    assert f"unrecognized arguments: {unknown}" in capsys.readouterr().err


@pytest.mark.parametrize("flags, said", [
    (["--model", "tiny", "--bogus"], "unrecognized arguments: --bogus"),
    (["--zero-stage", "3"], "give --candidate FILE or --model (plus knob flags)"),
    (["--model", "tiny", "--zero-stage"], "argument --zero-stage: expected one argument"),
])
def test_a_usage_mistake_is_one_line_as_autotune_says_it(capsys, flags, said):
    """Trial 48 #14: the probe printed argparse's whole usage block (on every rank) before its error; `autotune`
    says one line naming the problem and where the flags are listed."""
    with pytest.raises(SystemExit) as exit_:
        parse_args(flags)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (f"python -m trainer.probe: error: {said} "
                                       "(see `python -m trainer.probe --help`)\n")


def test_help_gives_every_knob_flags_allowed_values_and_default_from_the_candidates_tables(capsys):
    """Trial 48 #14: `--help` listed --zero-stage, --optimizer-offload, --activation-checkpointing, --sp-degree,
    --micro-batch, --power-limit and others with no allowed values and no default."""
    from autotune.candidate import KNOBS, Knobs, knob_allowed
    from trainer.probe import _parser

    shown = [action for action in _parser()._actions if action.help != argparse.SUPPRESS]
    assert [action.option_strings for action in shown if not action.help] == []
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for knob in KNOBS:
        assert f"--{knob.replace('_', '-')} {knob.upper()} " in text, knob
        assert f"{knob_allowed(knob)} (default: {getattr(Knobs, knob)})" in text, knob
    for said in ("one of 0, 1, 2, 3 (default: 0)", "one of none, sync, async (default: none)",
                 "one of none, recompute, offload_sync, offload_async (default: none)",
                 "a fraction in (0, 1] (default: 1.0)", "training precision (default: bf16 on CUDA GPUs, fp32 on CPU)"):
        assert said in text, said
