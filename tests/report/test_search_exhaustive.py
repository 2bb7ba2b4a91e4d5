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
