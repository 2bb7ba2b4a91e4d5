"""How a replay file fits its study (trial33 #3): the refusal of another study's records names flags that
work (a model file where the model is no preset, --nodes, --space), and records the study cannot use are
said in one line, by why, not dropped without a word."""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

import pytest

from autotune.backends.replay import ReplayBackend, model_sizes
from autotune.errors import ConfigError
from autotune.models import PRESETS
from tests.cli import autotune_main

REPO = Path(__file__).resolve().parents[2]
MEASURED = "benchmarks/results/h100_power_study/measurements.jsonl"  # as a user in the checkout types it
MODEL_FILE, SPACE_FILE = "benchmarks/models/qwen2.5-1.5b.json", "benchmarks/spaces/one_gpu_power.toml"
STUDY_1_5B = ("--hardware h100-sxm --gpus-per-node 1 --frames 8 --global-batch 4 --samples 64 --nodes 1").split()
UNUSED_POWER_LIMITS = (f"warning: measurements {MEASURED}: 5 of its 10 records are not replayed: they hold knob values "
                       "this space lacks (power_limit 0.35, 0.5); pass the --space they were measured with")
# A valid candidate of 7b on one 4-GPU GH200 node (the defaults), and of the default space.
VALID_7B = {"zero_stage": 1, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
            "micro_batch": 1, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}
STUDY_7B = {"model": "7b", "hardware": "gh200", "gpus_per_node": 4, "frames": 60, "text_tokens": 256, "global_batch": 64,
            "samples": 2048, "precision": "bf16"}


def _run(tmp_path, *flags):
    return autotune_main("run", "--backend", "replay", "--measurements", MEASURED, "--out", tmp_path / "run", *flags, cwd=REPO)


def _pick_power_limit(run_dir: Path, pick: str) -> float:
    document = json.loads((run_dir / "pareto.json").read_text())
    trial = document["recommendations"][pick]
    return next(p for p in document["feasible"] if p["trial"] == trial)["params"]["power_limit"]


def test_the_committed_study_s_hint_names_flags_that_replay_it_whole(tmp_path):
    refused = _run(tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "run").exists()
    assert refused.stderr.strip().splitlines() == [
        f"autotune run: error: measurements {MEASURED} line 1 holds figures for model 1.5b, hardware h100-sxm, "
        "gpus_per_node 1, frames 8, global_batch 4, samples 64, not this study's 32b, gh200, 4, 60, 64, 2048; replay it "
        "with --model MODEL.json --hardware h100-sxm --gpus-per-node 1 --frames 8 --global-batch 4 --samples 64 --nodes 1 "
        "--space SPACE.toml, where MODEL.json is the model file named '1.5b' (no preset has that name), of the sizes the records' "
        "study.model_sizes hold; and SPACE.toml is the space file they were measured with (this one lacks their "
        "power_limit 0.35, 0.5)"]
    # The hint, its two files filled in, replays every record: min-energy at the 0.35 limit (3.85 kJ).
    hinted = refused.stderr.split("replay it with ")[1].split(", where")[0]
    flags = [{"MODEL.json": MODEL_FILE, "SPACE.toml": SPACE_FILE}.get(word, word) for word in shlex.split(hinted)]
    replayed = _run(tmp_path, *flags)
    assert replayed.returncode == 0, replayed.stderr
    assert "not replayed" not in replayed.stderr
    assert _pick_power_limit(tmp_path / "run", "min_energy") == 0.35


def test_the_committed_study_over_the_default_space_says_which_records_it_leaves_out(tmp_path):
    # trial33: "--nodes 1" added, the run left 5 of 10 records out without a word, and min-energy moved from
    # the 0.35 limit (3.85 kJ) to 0.7 (4.55 kJ).
    done = _run(tmp_path, "--model", MODEL_FILE, *STUDY_1_5B)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines.count(UNUSED_POWER_LIMITS) == 1 and sum("not replayed" in line for line in lines) == 1
    assert _pick_power_limit(tmp_path / "run", "min_energy") == 0.7
    # The backend's line counts what it replays too (trial 37 F18: "10 recorded candidates" under the warning).
    assert any(line.startswith(f"backend: replay (10 recorded candidates from {MEASURED}, 5 of them valid in this "
                               "study's space;") for line in lines), lines


def _write(tmp_path, params_list, study=None, name="m.jsonl"):
    path = tmp_path / name
    # 7b on a GH200 node: 300 TFLOP/s per GPU is what ~1330 s give its workload, 3000 kJ ~560 W per module.
    records = [{"params": {**VALID_7B, **params}, "status": "ok", "time_s": 1330.0 + i, "energy_kj": 3000.0 - i, "tflops": 300.0,
                **({"study": study} if study else {})} for i, params in enumerate(params_list)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _checks(*flags):
    from autotune.commands.options import settings_for
    from autotune.study.valid import valid_checks

    return valid_checks(settings_for("--model", "7b", *flags))


OFFLOAD_WITHOUT_ZERO = {"zero_stage": 0, "optimizer_offload": "sync"}


def test_each_cause_is_counted_with_its_values_and_fix(tmp_path):
    path = _write(tmp_path, [{}, {"power_limit": 0.5}, {"power_limit": 0.35, "sm_clock_mhz": 1400}, {"nodes": 4},
                             OFFLOAD_WITHOUT_ZERO, {**OFFLOAD_WITHOUT_ZERO, "micro_batch": 2}])
    checks = _checks("--nodes", "1-2")
    reason = next(c.reason for c in checks if c.candidate.knobs.to_dict() == {**VALID_7B, **OFFLOAD_WITHOUT_ZERO})
    assert ReplayBackend(path).unused_records(checks) == (
        f"measurements {path}: 5 of its 6 records are not replayed: 2 hold knob values this space lacks (power_limit "
        "0.35, 0.5 and sm_clock_mhz 1400; pass the --space they were measured with), 1 is for node counts outside this "
        "study's 1-2 (4 nodes; pass --nodes 1-4), 2 are candidates this study rules out (first, line 5: "
        f"{reason}; `autotune space` gives each candidate's reason)")


@pytest.mark.parametrize("params, said", [
    ({"nodes": 2}, "1 of its 2 records is not replayed: it is for node counts outside this study's 1 (2 nodes); "
                   "pass --nodes 1-2"),
    ({"sm_clock_mhz": 1400}, "1 of its 2 records is not replayed: it holds knob values this space lacks "
                             "(sm_clock_mhz 1400); pass the --space they were measured with"),
    ({"micro_batch": 16}, "1 of its 2 records is not replayed: it holds knob values this space lacks (micro_batch 16); "
                          "pass the --space they were measured with"),
    (OFFLOAD_WITHOUT_ZERO, "1 of its 2 records is not replayed: it is a candidate this study rules out (line 2: "
                           "optimizer offload needs ZeRO stage >= 1"),
])
def test_one_unused_record_is_said_in_the_singular(tmp_path, params, said):
    path = _write(tmp_path, [{}, params])
    assert ReplayBackend(path).unused_records(_checks("--nodes", "1")).startswith(f"measurements {path}: {said}")


def test_a_record_with_two_causes_gets_both_fixes_in_one_line(tmp_path):
    path = _write(tmp_path, [{}, {"power_limit": 0.5, "nodes": 4}])
    assert ReplayBackend(path).unused_records(_checks("--nodes", "1")) == (
        f"measurements {path}: 1 of its 2 records is not replayed: 1 holds knob values this space lacks (power_limit 0.5; "
        "pass the --space they were measured with), 1 is for node counts outside this study's 1 (4 nodes; pass --nodes 1-4)")


def test_a_file_whose_every_record_the_study_can_use_says_nothing(tmp_path):
    path = _write(tmp_path, [{}, {"power_limit": 0.7}, {"nodes": 2}])
    assert ReplayBackend(path).unused_records(_checks("--nodes", "1-2")) is None


def test_the_node_fix_holds_every_record_s_count_those_replayed_too(tmp_path):
    path = _write(tmp_path, [{"nodes": 4}, {"nodes": 1}, {"nodes": 8}])
    said = ReplayBackend(path).unused_records(_checks("--nodes", "2-4"))
    assert said.endswith("2 of its 3 records are not replayed: they are for node counts outside this study's 2-4 "
                         "(1, 8 nodes); pass --nodes 1-8")


def test_a_file_the_study_can_use_none_of_is_refused_by_why(tmp_path):
    path = _write(tmp_path, [{"power_limit": 0.5}, {"power_limit": 0.35, "micro_batch": 2}])
    backend = ReplayBackend(path)
    with pytest.raises(ConfigError) as refused:
        backend.check_candidates(_checks("--nodes", "1"))
    assert str(refused.value) == (f"measurements {path}: none of its 2 records is a valid candidate of this study: they "
                                  "hold knob values this space lacks (power_limit 0.35, 0.5); pass the --space they were "
                                  "measured with")


def test_run_prints_the_unused_records_once_and_replays_the_rest(tmp_path):
    # A file name rich would read as markup ("[bold]") is printed as it is.
    path = _write(tmp_path, [{}, {"power_limit": 0.7}, {"power_limit": 0.5}], study=STUDY_7B, name="[bold]m.jsonl")
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", path,
                         "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    said = (f"warning: measurements {path}: 1 of its 3 records is not replayed: it holds knob values this space lacks "
            "(power_limit 0.5); pass the --space they were measured with")
    assert done.stderr.splitlines().count(said) == 1
    assert (f"searching the 2 of 980 valid candidates the replay backend can evaluate; the others: no record in {path} "
            "(replay evaluates only recorded candidates)") in done.stderr.splitlines()
    evaluated = json.loads((tmp_path / "run" / "pareto.json").read_text())["feasible"]
    assert sorted(p["params"]["power_limit"] for p in evaluated) == [0.7, 1.0]


@pytest.mark.parametrize("theirs, flags, hint", [
    # A preset and a built-in profile by name, as before; --nodes where the records' counts are not the study's.
    ({"model": "7b"}, ("--model", "tiny", "--nodes", "1"),
     "replay it with --model 7b --frames 60 --text-tokens 256 --global-batch 64 --samples 2048"),
    ({"model": "7b"}, ("--model", "tiny", "--nodes", "2"),
     "replay it with --model 7b --frames 60 --text-tokens 256 --global-batch 64 --samples 2048 --nodes 1"),
    ({"hardware": "h100-sxm", "gpus_per_node": 8}, ("--model", "7b", "--nodes", "1"),
     "replay it with --hardware h100-sxm --gpus-per-node 8"),
    # Names no flag takes: a placeholder, and what it must be.
    ({"model": "my-13b"}, ("--model", "7b", "--nodes", "1"),
     "replay it with --model MODEL.json, where MODEL.json is the model file named 'my-13b' (no preset has that name)"),
    # Records that keep the model's sizes (an export since trial61 #4) say the file is of those sizes.
    ({"model": "my-13b", "model_sizes": model_sizes(PRESETS["7b"])}, ("--model", "7b", "--nodes", "1"),
     "replay it with --model MODEL.json, where MODEL.json is the model file named 'my-13b' (no preset has that name), "
     "of the sizes the records' study.model_sizes hold"),
    ({"hardware": "a100-80"}, ("--model", "7b", "--nodes", "1"),
     "replay it with --hardware PROFILE.toml, where PROFILE.toml is the hardware profile named (or calibrated from) "
     "'a100-80' (no built-in profile has that name)"),
    # A file's path where the name belongs: the fix is in the records, not the flag the user passed (trial61 #7).
    ({"model": "my-7b.json"}, ("--model", "7b", "--nodes", "1"),
     "not this study's 7b; study.model 'my-7b.json' is a file's path where records hold a name: if they are this "
     "study's, write '7b' there (the model's name as autotune prints it)"),
    ({"model": "m/7b.json", "hardware": "gh200.toml", "frames": 30}, ("--model", "7b", "--nodes", "1"),
     "study.model 'm/7b.json' and study.hardware 'gh200.toml' are files' paths where records hold a name: if they are "
     "this study's, write '7b' and 'gh200' there (the model's name as autotune prints it and the profile's `name`); "
     "else replay it with --frames 30"),
])
def test_another_study_s_records_are_refused_with_flags_that_work(tmp_path, theirs, flags, hint):
    path = _write(tmp_path, [{}], study={**STUDY_7B, **theirs})
    refused = autotune_main("run", *flags, "--backend", "replay", "--measurements", path, "--out", tmp_path / "run")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and lines[0].endswith(hint), refused.stderr


@pytest.mark.parametrize("left_out, said", [
    # 32b (the default model) on one H100 fits nothing: "needs 626.2 GiB per GPU ... more --nodes, or ZeRO-3".
    ("--model", "holds figures for model 1.5b, not this study's 32b; replay it with --model MODEL.json"),
    # 8 GPUs (the profile's) of micro-batch 2 divide no global batch 4: "pass --global-batch 16".
    ("--gpus-per-node", "holds figures for gpus_per_node 1, not this study's 8; replay it with --gpus-per-node 1"),
])
def test_a_replay_missing_a_flag_is_refused_by_it_before_the_space_s_own_refusals(tmp_path, left_out, said):
    """trial64 #3: the space's memory or batch refusal came first, with advice for a study the records are not of."""
    flags = ["--model", MODEL_FILE, *STUDY_1_5B, "--space", SPACE_FILE]
    at = flags.index(left_out)
    refused = _run(tmp_path, *flags[:at], *flags[at + 2:])
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and said in lines[0], refused.stderr


def test_the_records_the_space_left_out_stay_in_the_report_and_compare_says_why_their_points_are_missing(tmp_path):
    """trial64 #6: only the run's start-up warning said 5 of 10 records were left out; its report read "converged
    among the 5 recorded candidates", and compare listed min-energy at 0.7 against 0.35 with no word on why."""
    left_out = ("5 of the replayed file's 10 records were not replayed: they hold knob values this space lacks "
                "(power_limit 0.35, 0.5); pass the --space they were measured with")
    assert _run(tmp_path, "--model", MODEL_FILE, *STUDY_1_5B).returncode == 0
    full = autotune_main("run", "--backend", "replay", "--measurements", MEASURED, "--model", MODEL_FILE, *STUDY_1_5B,
                         "--space", SPACE_FILE, "--out", tmp_path / "full", cwd=REPO)
    assert full.returncode == 0, full.stderr
    reported = autotune_main("report", tmp_path / "run")
    assert reported.returncode == 0 and f"search: {left_out}" in reported.stdout.splitlines(), reported.stdout
    assert html.escape(left_out) in (tmp_path / "run" / "report.html").read_text()
    assert "not replayed" not in autotune_main("report", tmp_path / "full").stdout
    compared = autotune_main("compare", tmp_path / "full", tmp_path / "run", "--json")
    document = json.loads(compared.stdout)
    assert "measurements" in document["inputs"]["same"]  # the same file: what each space left out of it is the caveat
    assert ("Study 2's space lacks 2 configurations of study 1's front (power_limit 0.35, 0.5 not searched there), so its "
            "picks could not be them: a change against study 1 there is the spaces' difference as much as the "
            "configurations'; its replayed file holds records it left out (5 of its 10 records are not replayed: they hold "
            "knob values this space lacks (power_limit 0.35, 0.5); pass the --space they were measured with).") \
        in document["caveats"], document["caveats"]
