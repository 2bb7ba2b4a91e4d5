"""A study over a range of node counts says which had no valid candidate, and where to read why (trial 49 #6):
"searchable: 2, 4, 8" alone read as if 3, 5, 6 and 7 nodes were tried and lost. A replay whose file records none
of a count's valid candidates says that instead (trial59 #1: it said none there was valid, of 1012 valid ones)."""

import io

import pytest

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.pareto_json import unsearched_nodes_sentence
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.cli import autotune_main


def test_md_and_the_terminal_say_which_counts_ran_nothing_and_how_to_see_why(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    missing = [n for n in document["node_counts"] if n not in document["searchable_nodes"]]
    assert missing  # 32b on 2-8 GH200 nodes, global batch 64: 3, 5, 6 and 7 nodes of 4 GPUs divide no batch
    said = unsearched_nodes_sentence(document)
    assert said.startswith("No trial ran on 3, 5-7 nodes: none of the candidates there is valid")
    assert "`autotune space --nodes N` (N one of 3, 5-7)" in said
    assert said in markdown_report(view, document)
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    assert said in out.getvalue()


def test_nothing_is_said_where_every_count_was_searchable():
    assert unsearched_nodes_sentence({"node_counts": [4], "searchable_nodes": [4]}) is None
    assert unsearched_nodes_sentence({"node_counts": [2, 4], "searchable_nodes": None}) is None  # no trial recorded them


def test_one_count_is_named_in_the_command_not_as_n_one_of_it():
    said = unsearched_nodes_sentence({"node_counts": [2, 3], "searchable_nodes": [2], "backend": "simulate"})
    assert "`autotune space --nodes 3` with this study's --model" in said and "N one of" not in said


@pytest.fixture(scope="module")
def replay_of_one_node(tmp_path_factory):
    """7b on 1-2 nodes, replayed from a file that records the 1-node candidates alone."""
    where = tmp_path_factory.mktemp("unrecorded")
    space = autotune_main("space", "--model", "7b", "--nodes", "1", "--simulate", "--json")
    assert space.returncode == 0, space.stderr
    (where / "sp7.json").write_text(space.stdout, encoding="utf-8")
    done = autotune_main("run", "--model", "7b", "--backend", "replay", "--measurements", where / "sp7.json",
                         "--nodes", "1-2", "--trials", "4", "--out", where / "run")
    assert done.returncode == 0, done.stderr
    assert "no candidate on 2 nodes is valid" not in done.stderr  # run warned of nothing: 2 nodes has valid ones
    return where / "run"


def test_a_replay_that_records_no_count_of_a_range_says_so_not_that_nothing_there_is_valid(replay_of_one_node):
    view, document = build_report(load_finished_study(replay_of_one_node))
    assert document["searchable_nodes"] == [1]
    [row] = document["search"]["unrecorded_nodes"]
    assert row["nodes"] == 2 and row["valid_candidates"] > 1000
    said = unsearched_nodes_sentence(document)
    assert said == (f"No trial ran on 2 nodes: the replayed file records none of the {row['valid_candidates']:,} valid "
                    "candidates there (measure them with --backend launch).")
    assert said in markdown_report(view, document)
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    assert said in out.getvalue()
    assert out.getvalue().startswith("7b on 1-2 nodes (recorded: 1) of gh200, backend replay")


def test_a_replay_whose_space_cannot_be_rebuilt_names_both_reasons(replay_of_one_node, monkeypatch):
    import autotune.report.search as search

    def refused(*_):
        raise RuntimeError("space not rebuilt")

    monkeypatch.setattr(search, "valid_checks", refused)
    _, document = build_report(load_finished_study(replay_of_one_node))
    said = unsearched_nodes_sentence(document)
    assert "the replayed file records none of the valid candidates there, or none is valid" in said
    assert "warned" not in said


def test_counts_without_records_and_counts_without_valid_candidates_are_told_apart():
    document = {"node_counts": [2, 3, 4, 8], "searchable_nodes": [2], "backend": "replay",
                "search": {"unrecorded_nodes": [{"nodes": 4, "valid_candidates": 1}, {"nodes": 8, "valid_candidates": 1200}]}}
    assert unsearched_nodes_sentence(document) == (
        "No trial ran on 4, 8 nodes: the replayed file records none of the 1,201 valid candidates there (measure them "
        "with --backend launch). No trial ran on 3 nodes: none of the candidates there is valid (`autotune run` warned "
        "of each count); `autotune space --nodes 3` with this study's --model and other flags says why.")
