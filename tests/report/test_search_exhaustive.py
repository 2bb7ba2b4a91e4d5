"""A measured study that evaluated every valid candidate it could says so in its search line (trial54 F10): it used
to print none, where a simulated study says "exhaustive: ..."."""

import json

from autotune.cli import main
from autotune.report.search import search_sentences

SPACE = ('zero_stage = [3]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["recompute"]\nsp_degree = [1]\n'
         'micro_batch = [1]\npower_limit = [1.0, 0.8]\nsm_clock_mhz = ["max"]\n')


def test_a_replay_of_the_whole_space_says_it_was_exhaustive(tmp_path):
    space, measurements = tmp_path / "pl.toml", tmp_path / "m.jsonl"
    space.write_text(SPACE)
    study = ("--model", "32b", "--nodes", "4", "--space", str(space))
    assert main(["run", *study, "--backend", "simulate", "--out", str(tmp_path / "a"), "-q"]) == 0
    assert main(["export", str(tmp_path / "a"), "--measurements", str(measurements)]) == 0
    assert main(["run", *study, "--backend", "replay", "--measurements", str(measurements), "--out", str(tmp_path / "b"),
                 "-q"]) == 0
    search = json.loads((tmp_path / "b" / "pareto.json").read_text())["search"]
    assert search["exhaustive"] is True and search["converged"] is None
    assert search_sentences(search) == ["exhaustive: every one of the 2 valid candidates of the space was replayed from "
                                        "its record"]


def test_a_replay_of_a_file_recording_every_valid_candidate_says_whether_its_front_is_exhaustive(tmp_path, capsys):
    """Trial57 #15: a replay of `space --simulate --json` had every candidate's figures, and did not say what the
    simulate study it copies says ("exhaustive: all N valid candidates were simulated ..."). Only where the file
    records every valid candidate: a partial file's others are unknown."""
    from autotune.candidate import params_key
    from autotune.study import load_finished_study
    from autotune.study.retries import evaluated_trials

    study = ("--model", "tiny", "--nodes", "1")
    assert main(["space", *study, "--simulate", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    valid = [e for e in entries if e["valid"]]
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(entries))
    assert main(["run", *study, "--backend", "replay", "--measurements", str(whole), "--out", str(tmp_path / "b"), "-q"]) == 0
    report = " ".join(capsys.readouterr().out.split())
    search = json.loads((tmp_path / "b" / "pareto.json").read_text())["search"]
    assert search["converged"] and search["exhaustive"] is True
    assert (f"search: exhaustive: all {len(valid)} valid candidates were recorded and none beats this front by more than "
            "1% in time or energy") in report
    # A file without one candidate the study never evaluated: what that one would do is not known.
    evaluated = set(evaluated_trials(load_finished_study(tmp_path / "b")))
    unprobed = next(e for e in valid if params_key(e["params"]) not in evaluated)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps([e for e in entries if e is not unprobed]))
    assert main(["run", *study, "--backend", "replay", "--measurements", str(partial), "--out", str(tmp_path / "c"), "-q"]) == 0
    report = " ".join(capsys.readouterr().out.split())
    assert json.loads((tmp_path / "c" / "pareto.json").read_text())["search"]["exhaustive"] is None
    assert "exhaustive" not in report and "were recorded" not in report
