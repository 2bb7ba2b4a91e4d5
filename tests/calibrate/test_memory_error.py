"""`autotune calibrate` states the memory estimate's error against the peak device memory measured probes
reported (not fitted): measured / estimated, its median and its two ends with their probes. The committed
H100 study is the measured case; the estimates come from `autotune space --json`, another path than
calibrate's own."""

import json
import statistics
from pathlib import Path

from autotune.calibrate.measured import peaks_without_copies
from autotune.calibrate.memory_error import MeasuredPeak, memory_document, memory_lines
from autotune.candidate import Candidate, Knobs
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.workload import make_workload
from tests.cli import autotune_main
from tests.report.test_unmeasured_floor import H100_STUDY

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "benchmarks" / "results" / "h100_power_study"
SPACE_ARGS = ("--model", REPO / "benchmarks/models/qwen2.5-1.5b.json", "--hardware", "h100-sxm", "--gpus-per-node", "1",
              "--frames", "8", "--global-batch", "4", "--samples", "64", "--nodes", "1",
              "--space", REPO / "benchmarks/spaces/one_gpu_power.toml")


def _expected_ratios() -> list[float]:
    """measured / estimated for each ok probe of the study: its recorded peak against `autotune space`'s estimate."""
    space = autotune_main("space", *SPACE_ARGS, "--json")
    assert space.returncode == 0, space.stderr
    estimated = {json.dumps(row["params"], sort_keys=True): row["peak_mem_gib"] for row in json.loads(space.stdout)}
    records = [json.loads(line) for line in (STUDY / "measurements.jsonl").read_text().splitlines() if line.strip()]
    return [r["peak_mem_gib"] / estimated[json.dumps(r["params"], sort_keys=True)] for r in records if r["status"] == "ok"]


def test_the_measured_h100_study_states_the_memory_estimates_error():
    ratios = _expected_ratios()
    assert len(ratios) == 10 and min(ratios) < 1 < max(ratios)  # the estimate is off both ways on this study
    result = autotune_main("calibrate", STUDY, "--hardware", "h100-sxm", "--json")
    assert result.returncode == 0, result.stderr
    memory = json.loads(result.stdout)["memory_estimate"]
    assert memory["probes"] == 10
    assert memory["median_ratio"] == round(statistics.median(ratios), 3)
    assert memory["lowest"]["ratio"] == round(min(ratios), 3) and memory["highest"]["ratio"] == round(max(ratios), 3)
    assert memory["highest"]["id"] == "h100_power_study#7" and "checkpointing recompute" in memory["highest"]["configuration"]
    text = autotune_main("calibrate", STUDY, "--hardware", "h100-sxm")
    assert text.returncode == 0, text.stderr
    assert "memory estimate against the peak device memory of 10 ok probes" in text.stdout
    assert f"  measured / estimated: median {statistics.median(ratios):.2f}" in text.stdout
    assert f"  highest {max(ratios):.2f} (h100_power_study#7, " in text.stdout
    docs = " ".join((REPO / "docs" / "benchmarks.md").read_text().split())  # as quoted there, lines joined
    assert (f"measured / estimated median {statistics.median(ratios):.2f}, from {min(ratios):.2f} (trial "
            f"{memory['lowest']['id'].rsplit('#', 1)[1]}," in docs)
    assert f"to {max(ratios):.2f} (trial 7, ZeRO-0 with recomputation: {memory['highest']['measured_gib']:.1f} measured" in docs


def test_a_replay_of_the_study_given_beside_it_counts_each_peak_once(tmp_path):
    replay = autotune_main(*H100_STUDY, "--out", tmp_path / "replayed")
    assert replay.returncode == 0, replay.stderr
    alone = autotune_main("calibrate", tmp_path / "replayed", "--hardware", "h100-sxm", "--json", "--no-loo")
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["memory_estimate"]["probes"] == 10  # a replay's figures are still measurements
    both = autotune_main("calibrate", STUDY, tmp_path / "replayed", "--hardware", "h100-sxm", "--json", "--no-loo")
    assert both.returncode == 0, both.stderr
    assert json.loads(both.stdout)["memory_estimate"]["probes"] == 10


def test_no_device_peak_no_paragraph_and_a_replayed_peak_of_its_own_is_kept():
    assert memory_document([]) is None and memory_lines(None) == []
    spec = load_model("7b")
    candidate = Candidate(Knobs(), spec, load_hardware("h100-sxm"), make_workload(spec, global_batch=16), gpus_per_node=4)
    measured = MeasuredPeak("a#0", "a", candidate, 50.0, 55.0)
    copy = MeasuredPeak("b#3", "b", candidate, 50.0, 55.0)
    other = MeasuredPeak("b#4", "b", candidate, 52.0, 55.0)  # the same configuration measured again, in the replay only
    assert peaks_without_copies([copy, measured, other], replayed={"b"}) == [measured, other]
    assert peaks_without_copies([copy, measured], replayed=set()) == [copy, measured]
