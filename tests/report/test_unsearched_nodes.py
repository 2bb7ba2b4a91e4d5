"""A study over a range of node counts says which had no valid candidate, and where to read why (trial 49 #6):
"searchable: 2, 4, 8" alone read as if 3, 5, 6 and 7 nodes were tried and lost."""

import io

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.pareto_json import unsearched_nodes_sentence
from autotune.report.table import print_report
from autotune.study import load_finished_study


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
