"""The shipped GH200 study figures: every record loads, and the derived figures follow from the published ones."""

import json
import math

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
