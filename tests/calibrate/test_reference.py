"""The shipped GH200 study figures: every record loads, and the derived figures follow from the published ones."""

import json
import math

import pytest

from autotune.calibrate.reference import REFERENCE_DIR, load_reference
from autotune.flops import flops_per_sample
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import Workload

DATA = json.loads((REFERENCE_DIR / "gh200-study.json").read_text())


def test_every_figure_loads_as_an_observation():
    observations = load_reference("gh200-study", load_hardware("gh200"))
    assert len(observations) == len(DATA["figures"])
    assert {o.metric for o in observations} == {"time_s", "energy_kj", "tflops", "power_w", "module_power_w"}
    # Savings are relative observations; approximate figures say so.
    saved = [o for o in observations if o.id.endswith("energy-saved")]
    assert len(saved) == 6 and all(o.relative_to is not None and o.value < 1 for o in saved)
    assert any(o.approximate for o in observations) and any(o.bound == "lower" for o in observations)


def test_samples_follow_from_published_throughput_time_and_gpus():
    for name, group in DATA["groups"].items():
        spec = load_model(group["model"])
        per_sample = flops_per_sample(spec, Workload(group["frames"], group["text_tokens"], 1, 1)).model_train
        used = [r for r in group["derivation"] if r["used"]]
        totals = [r["tflops_per_gpu"] * 1e12 * r["wall_min"] * 60 * r["gpus"] for r in used]
        mean = math.exp(sum(map(math.log, totals)) / len(totals))
        assert group["samples"] == round(mean / per_sample), name
        for config, c in DATA["configurations"].items():
            if c["group"] == name:
                assert c["workload"]["samples"] == group["samples"]
                gpus = c["knobs"]["nodes"] * 4
                assert c["workload"]["global_batch"] == c["knobs"]["micro_batch"] * gpus


def test_configurations_follow_the_study_set_up():
    configs = DATA["configurations"]
    for model, (batch, nodes) in {"7b": (4, 1), "32b": (2, 4), "72b": (1, 8)}.items():
        base = configs[f"{model}-baseline"]["knobs"]
        assert base == {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute",
                        "sp_degree": 1, "micro_batch": batch, "nodes": nodes}
        scaled = configs[f"{model}-scaled"]["knobs"]
        assert (scaled["nodes"], scaled["micro_batch"]) == (2 * nodes, 2 * batch)
        offload = configs[f"{model}-optimizer-offload-async"]["knobs"]
        assert (offload["optimizer_offload"], offload["nodes"], offload["micro_batch"]) == ("async", nodes, 2 * batch)


def test_time_figures_are_the_published_minutes():
    by_id = {f["id"]: f for f in DATA["figures"]}
    assert by_id["7b-baseline-time"]["value"] == 20.8 * 60
    assert by_id["32b-optimizer-offload-async-tflops"]["bound"] == "lower"
    # Activation-offload energies are published per node: x nodes for the whole run.
    assert by_id["72b-checkpoint-recompute-energy"]["value"] == round(3367.6 * 8, 1)


def _with_figure(tmp_path, figure_id: str, factor: float):
    import copy

    data = copy.deepcopy(DATA)
    (figure,) = [f for f in data["figures"] if f["id"] == figure_id]
    figure["value"] = figure["value"] * factor
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("figure_id, factor, words", [
    ("7b-baseline-gpu-power", 4, "power_w 1960 W is outside the 90-900 W one GPU of 'gh200' can draw: a figure per node"),
    # A GPU's NVML power is held to its own idle draw (90 W); a module's to the module's at rest (GPU 90 + CPU 40 +
    # 0.5846 x 35 memory: 150.461 W): a module of the study at work drew 547-635 W.
    ("7b-baseline-gpu-power", 1 / 6, "power_w 81.6667 W is outside the 90-900 W"),
    ("7b-checkpoint-recompute-module-power", 1e-3, "module_power_w 0.627 W is outside the 150.461-1102.5 W"),
    ("7b-checkpoint-recompute-module-power", 1 / 4.5, "module_power_w 139.333 W is outside the 150.461-1102.5 W"),
    ("7b-baseline-tflops", 1000, "tflops 428210 per GPU is above the dense peak of 989 TFLOP/s of 'gh200'"),
    ("7b-baseline-time", 1 / 60, "time_s 20.8 is shorter than the configuration's work at the dense peak"),
    ("7b-baseline-time", 1000, "time_s 1.248e+06 means 0.418 TFLOP/s per GPU, 4.2e-04 of the peak: a time in milliseconds"),
    ("7b-baseline-energy", 1000, "energy_kj 3.02e+06 over time_s 1248 on 4 GPUs is 6.05e+05 W per GPU"),
    ("32b-baseline-energy", 1 / 16, "energy_kj 685.75 over time_s 1176 on 16 GPUs is 36.45 W per GPU"),
    # Trial72 #8: a quarter of the job's energy (one node's of four) is 146 W per module, above half the GPU's idle
    # draw (the floor was 45 W) and below what a module draws at rest.
    ("32b-baseline-energy", 1 / 4, "energy_kj 2743 over time_s 1176 on 16 GPUs is 145.8 W per GPU, outside the "
                                   "150.461-1102.5 W"),
])
def test_a_figure_in_the_wrong_unit_is_refused_naming_it(tmp_path, figure_id, factor, words):
    """Each passes its own check (a positive number) and would drag the fit's constants to their bounds."""
    from autotune.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        load_reference(_with_figure(tmp_path, figure_id, factor), load_hardware("gh200"))
    message = str(refused.value)
    assert f"figure '{figure_id}': " in message and words in message and "\n" not in message
    assert message.endswith("or, if the figure is right, the profile 'gh200' is not the hardware it was measured "
                            "on (pass --hardware)")


def test_a_profile_estimate_off_by_a_quarter_is_not_a_unit_mistake(tmp_path):
    for figure_id, factor in (("7b-baseline-gpu-power", 1.25), ("7b-baseline-energy", 0.75), ("7b-baseline-time", 1.3)):
        assert load_reference(_with_figure(tmp_path, figure_id, factor), load_hardware("gh200"))


def _edited(tmp_path, edit):
    import copy

    data = copy.deepcopy(DATA)
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return str(path)


def _first_figure(data):
    return data["figures"][0]


@pytest.mark.parametrize("edit, words", [
    (lambda d: _first_figure(d).update(id=5), ["figure 0 id = 5 is not a name on one line", "or leave it out"]),
    (lambda d: _first_figure(d).update(id=""), ['figure 0 id = ""', "--exclude names a figure by it"]),
    (lambda d: _first_figure(d).update(id="a\nb"), ['figure 0 id = "a\\nb"']),
    (lambda d: _first_figure(d).update(relative_to=_first_figure(d)["configuration"]),
     ["is relative to its own configuration '7b-optimizer-offload-sync'", "always 1", "name the baseline"]),
    (lambda d: d["configurations"]["7b-baseline"].update(group=["7b-optimizer-offload"]),
     ["configuration '7b-baseline' group = [\"7b-optimizer-offload\"] is not a name"]),
    (lambda d: d["configurations"]["7b-baseline"].update(group=" "), ['group = " " is not a name']),
])
def test_a_figure_id_relative_to_or_group_that_means_nothing_is_refused(tmp_path, edit, words):
    """An id --exclude cannot name, a ratio to itself (always 1, fitted against 0.93), a group that is no name."""
    from autotune.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        load_reference(_edited(tmp_path, edit), load_hardware("gh200"))
    message = str(refused.value)
    assert all(w in message for w in words) and "\n" not in message, message


def test_a_reference_file_s_errors_name_its_path_and_its_name(tmp_path):
    """"reference gh200-study: ..." for a copy in a user's directory did not say which file to open (trial61 #16)."""
    from autotune.errors import ConfigError

    path = _edited(tmp_path, lambda d: d["configurations"]["7b-baseline"]["knobs"].update(zero_stage=5))
    with pytest.raises(ConfigError) as refused:
        load_reference(path, load_hardware("gh200"))
    assert str(refused.value).startswith(f"reference {path} (gh200-study): configuration '7b-baseline' knobs.zero_stage = 5")
    named = _edited(tmp_path, lambda d: d.update(name="edited", hold=[]))  # its name is its file's: said once
    with pytest.raises(ConfigError, match=f"^reference {named}: hold must be an object"):
        from autotune.calibrate.reference import reference_holds

        reference_holds(named)


def test_a_model_file_is_read_relative_to_the_reference_file(tmp_path, monkeypatch):
    """A figures file kept beside its model broke when calibrate ran from another directory: the model's path was
    read relative to the working directory (trial61 #10)."""
    import copy
    import shutil

    from autotune.errors import ConfigError

    repo = REFERENCE_DIR.parents[1]
    (tmp_path / "figs" / "models").mkdir(parents=True)
    shutil.copy(repo / "benchmarks/models/qwen2.5-1.5b.json", tmp_path / "figs" / "models" / "mine.json")
    data = copy.deepcopy(DATA)
    data["configurations"]["7b-baseline"]["model"] = "models/mine.json"
    # 7B's TFLOP/s is 2.65x what its time gives the 1.5B's FLOPs (refused as at odds with its time): left out.
    data["figures"] = [f for f in data["figures"] if f["id"] != "7b-baseline-tflops"]
    path = tmp_path / "figs" / "figures.json"
    path.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)  # not the reference's directory
    observations = load_reference(str(path), load_hardware("gh200"))
    assert {o.candidate.model.name for o in observations if o.id.startswith("7b-baseline")} == {
        load_model(str(tmp_path / "figs" / "models" / "mine.json")).name}
    data["configurations"]["7b-baseline"]["model"] = "models/gone.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as refused:
        load_reference(str(path), load_hardware("gh200"))
    assert f"beside the reference ({tmp_path / 'figs' / 'models' / 'gone.json'})" in str(refused.value)


@pytest.mark.parametrize("name", ["meas.jsonl", "meas.json"])
def test_a_measurements_file_given_as_reference_says_how_to_calibrate_it(tmp_path, name):
    """"unknown reference 'meas.jsonl'" read as "not found" for a file that exists (trial61 #14)."""
    from tests import cli

    path = tmp_path / name
    path.write_text(json.dumps({"params": {"zero_stage": 3}, "status": "ok", "time_s": 9.0}) + "\n")
    refused = cli.autotune_main("calibrate", "--reference", path, "--no-loo")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"--reference {path} is a measurements file" in refused.stderr
    assert f"autotune run --backend replay --measurements {path}" in refused.stderr and "then `autotune calibrate DIR`" in refused.stderr


def test_a_tflops_its_own_time_does_not_give_is_refused_without_blaming_the_hardware(tmp_path):
    """Trial72 #4: a TFLOP/s was held to the device's peak alone. 7B's baseline at 2.5x (1070.5, under 1.1 x 989) is
    2.56x what its 20.8 min give the group's model FLOPs: a figure of several GPUs' work, on any hardware."""
    from autotune.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        load_reference(_with_figure(tmp_path, "7b-baseline-tflops", 2.5), load_hardware("gh200"))
    assert str(refused.value) == (
        f"reference {tmp_path / 'figures.json'} (gh200-study): figure '7b-baseline-tflops': tflops 1070.52 per GPU is "
        "2.56x the 418 TFLOP/s that time_s 1248 gives the workload's model FLOPs (2685 samples on 4 GPUs), more than the "
        "2x another FLOP count explains: a TFLOP/s per node or of every GPU, or a time of more samples than the workload's? "
        "Give model TFLOP/s per GPU and seconds for the whole workload")
