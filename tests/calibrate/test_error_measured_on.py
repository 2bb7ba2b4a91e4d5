"""What a profile's stated error was measured on is recorded as data ([error_measured_on]) and read as such: read
back from the description's words, a Hugging Face config's model name ("... SigLIP so400m/14") split at its "/"
and was never "measured", and a name holding " with " stopped the words parsing, so the error held for every
model (trial61 #1)."""

import re
from dataclasses import replace

from autotune.hardware import dump_hardware, load_hardware
from autotune.report.error_bars import profile_error, simulator_error
from autotune.report.error_scope import measured_scope, outside_scope, scope_values
from autotune.workload import Workload

WORKLOAD = Workload(frames=60, text_tokens=256, global_batch=64, samples=2048)  # the study's, as simulator_error reads it

HF_NAME = "Meta-Llama-3-8B + SigLIP so400m/14"
INSIDE = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
          "micro_batch": 4, "nodes": 2, "power_limit": 1.0, "sm_clock_mhz": "max"}
SCOPE = {"model": (HF_NAME,), "zero_stage": ("3",), "optimizer_offload": ("none",),
         "activation_checkpointing": ("recompute",), "sp_degree": ("1",), "micro_batch": ("4",), "nodes": ("2",),
         "power_limit": ("1.0",), "sm_clock_mhz": ("max",)}


def _calibrated(tmp_path, scope, description="my node"):
    base = load_hardware("h100-sxm")
    profile = replace(base, name="my-cal", calibrated_from="h100-sxm", description=description,
                      simulator_error={"time_s_pct": 3.0, "energy_kj_pct": 4.0}, error_measured_on=scope)
    path = tmp_path / "my-cal.toml"
    path.write_text(dump_hardware(profile, "Calibrated by `autotune calibrate` from h100-sxm"))
    return load_hardware(str(path))


def test_a_model_name_holding_a_slash_or_with_is_inside_the_scope_it_was_measured_on(tmp_path):
    for name in (HF_NAME, "team/model-14b", "vlm with video"):
        profile = _calibrated(tmp_path, {**SCOPE, "model": (name,)})
        assert profile.error_measured_on["model"] == (name,)  # written and read back as data
        scope = measured_scope(profile_error(profile))
        assert outside_scope(scope, name, INSIDE) == []
        # And nothing else is: the error is not applied to a model or a power limit never measured.
        assert outside_scope(scope, "72b", {**INSIDE, "power_limit": 0.9}) == ["model 72b", "power limit 0.9"]


def test_the_words_of_the_scope_stay_in_the_error_a_report_keeps(tmp_path):
    error = profile_error(_calibrated(tmp_path, SCOPE))
    assert error["measured_on"].startswith(f"{HF_NAME} with ZeRO 3, optimizer offload none")

    class View:  # the study's points: none simulated, so no error at all; with one, the words and no data
        points = [type("P", (), {"source": "simulated", "energy_source": "simulated", "trial": 0, "params": INSIDE,
                                 "gpus": 8})()]
        settings = type("S", (), {"hardware": _calibrated(tmp_path, SCOPE), "model": type("M", (), {"name": HF_NAME})(),
                                  "workload": WORKLOAD})()
        profile_recorded = True
    kept = simulator_error(View)
    assert kept == {"time_s_pct": 3.0, "energy_kj_pct": 4.0, "measured_on": error["measured_on"], "extrapolated": {}}


def test_an_older_profile_s_words_read_with_a_slash_or_with_in_the_model_name():
    """A profile from before [error_measured_on] has the note alone: read as well as its words allow."""
    knobs = ("ZeRO 3, optimizer offload none, checkpointing recompute, SP 1, micro-batch 4, nodes 2, power limit 1.0, "
             "SM clock max")
    for models, measured in ((HF_NAME, [HF_NAME]), ("vlm with video", ["vlm with video"]),
                             (f"7b/{HF_NAME}", ["7b", HF_NAME])):
        scope = scope_values(f"{models} with {knobs}")
        assert scope is not None
        assert all(outside_scope(scope, name, INSIDE) == [] for name in measured)
        assert outside_scope(scope, "72b", INSIDE) == ["model 72b"]


def test_a_hand_written_scope_of_the_wrong_shape_is_refused_with_one_line(tmp_path):
    import pytest

    from autotune.errors import ConfigError

    path = _calibrated(tmp_path, SCOPE).source
    text = open(path).read().replace('zero_stage = ["3"]', "zero_stage = 3")
    open(path, "w").write(text)
    with pytest.raises(ConfigError, match=r"\[error_measured_on\] zero_stage = 3 is not allowed"):
        load_hardware(path)


def test_a_scope_value_no_knob_can_take_is_refused_with_one_line(tmp_path):
    """trial63 #10: "9", "MAX" or "1.0" matched no configuration, so a typo made the error vanish from every figure while
    the header still named the scope; now each is refused naming the knob, its value and what the knob takes."""
    import pytest

    from autotune.errors import ConfigError

    path = _calibrated(tmp_path, SCOPE).source
    text = open(path).read()
    for written, allowed in (('zero_stage = ["9"]', "is not one of the allowed values 0, 1, 2, 3"),
                             ('sm_clock_mhz = ["MAX"]', 'is not "max" or a clock in whole MHz'),
                             ('micro_batch = ["1.0"]', "is not a whole number >= 1"),
                             ('optimizer_offload = ["None"]', 'is not one of the allowed values "none", "sync", "async"'),
                             ('power_limit = ["1.5"]', "is not a fraction of the default power limit")):
        key = written.split(" = ")[0]
        edited = re.sub(rf"^{key} = .*$", written, text, count=1, flags=re.M)
        open(path, "w").write(edited)
        with pytest.raises(ConfigError, match=rf"\[error_measured_on\] {key} has \".*\", which {re.escape(allowed)}"):
            load_hardware(path)
    open(path, "w").write(text.replace('model = ["Meta', 'model = ["any free text, Meta'))  # a model's name is free
    assert load_hardware(path).error_measured_on["model"] == ("any free text, Meta-Llama-3-8B + SigLIP so400m/14",)
    open(path, "w").write(re.sub(r"(\[error_measured_on\]\n)(.*\n)*", r"\1", text))  # an empty table: refused too
    with pytest.raises(ConfigError, match=r"\[error_measured_on\] is empty"):
        load_hardware(path)


def _view(hardware, model: str, params: dict, gpus: int, workload: Workload = WORKLOAD):
    """A study's view with one simulated point (`gpus`: all its nodes'), as simulator_error reads it."""
    point = type("P", (), {"source": "simulated", "energy_source": "simulated", "trial": 0, "params": params,
                           "gpus": gpus})()
    settings = type("S", (), {"hardware": hardware, "model": type("M", (), {"name": model})(), "workload": workload})()
    return type("View", (), {"points": [point], "settings": settings, "profile_recorded": True})()


def test_the_gpu_count_an_error_was_measured_on_is_recorded_and_judged(tmp_path):
    """An error calibrate -o measured on 1 GPU vouched for a figure on 8 GPUs of the same node: [error_measured_on]
    recorded model and nodes, no GPU count, so only another node count or model was called outside it."""
    from pathlib import Path

    from tests.cli import autotune_main

    study = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h100_power_study"
    path = tmp_path / "cal.toml"
    holds = [word for name in ("clock_sensitivity_compute", "gemm_half_efficiency_width", "attention_efficiency",
                               "half_efficiency_tokens", "gpu_adam_bytes_per_param") for word in ("--hold", name)]
    done = autotune_main("calibrate", study, "--hardware", "h100-sxm", *holds, "-o", path)
    assert done.returncode == 0, done.stderr
    assert '\nnodes = ["1"]\ngpus = ["1"]\n' in path.read_text()
    profile = load_hardware(str(path))
    assert profile.simulator_error and profile.error_measured_on["gpus"] == ("1",)
    assert "nodes 1, GPUs 1, power limit" in profile.description  # the note's words say it too
    inside = {knob: values[0] for knob, values in profile.error_measured_on.items() if knob in INSIDE}
    measured = profile.error_measured_on  # the study's own workload: inside it
    workload = Workload(int(measured["frames"][0]), int(measured["text_tokens"][0]), int(measured["global_batch"][0]), 2048,
                        measured["precision"][0])
    for gpus, outside in ((1, {}), (8, {"0": ["GPUs 8"]})):
        error = simulator_error(_view(profile, "1.5b", inside, gpus, workload))
        assert error["extrapolated"] == outside
        assert "GPU count not recorded" not in error["measured_on"]


def test_an_older_profile_without_a_gpu_count_says_it_is_not_recorded(tmp_path):
    """A profile an older calibrate -o wrote ([error_measured_on] without gpus) still reads, its figures judged by the
    rest; the sentence says its GPU count is unknown rather than vouch for every one."""
    from autotune.report.error_bars import error_sentence

    profile = _calibrated(tmp_path, SCOPE)
    error = simulator_error(_view(profile, HF_NAME, INSIDE, 64))
    assert error["extrapolated"] == {}
    assert ("nodes 2, power limit 1.0, SM clock max (its GPU count, global batch and workload (frames, text tokens, "
            "precision) not recorded: the profile predates that record, so no figure is judged by them; calibrate again "
            "to record it): other configurations' figures extrapolate it.") in error_sentence(error)
    recorded = _calibrated(tmp_path, {**SCOPE, "gpus": ("8",), "global_batch": ("64",), "frames": ("60",),
                                      "text_tokens": ("256",), "precision": ("bf16",)})
    assert "not recorded" not in error_sentence(simulator_error(_view(recorded, HF_NAME, INSIDE, 8)))
    assert simulator_error(_view(recorded, HF_NAME, INSIDE, 64))["extrapolated"] == {"0": ["GPUs 64"]}


def test_a_gpu_count_written_otherwise_than_calibrate_writes_it_is_refused(tmp_path):
    import pytest

    from autotune.errors import ConfigError

    path = _calibrated(tmp_path, {**SCOPE, "gpus": ("8",)}).source
    text = open(path).read()
    assert 'gpus = ["8"]' in text
    open(path, "w").write(text.replace('gpus = ["8"]', 'gpus = ["08"]'))
    with pytest.raises(ConfigError, match=r'\[error_measured_on\] gpus has "08", which is not a whole number from 1'):
        load_hardware(path)
