"""The top line of every report names the node counts the search could take where some of the study's had no valid
candidate: 32b on 2-8 GH200 nodes (4 GPUs each) at global batch 64 runs on 2, 4 and 8 only (the others' data-parallel
sizes cannot divide the batch; `autotune run` warns of each), and "on 2-8 nodes" alone would claim a search of all
seven. The counts are the ones the study's trials were offered, read back from the study, not found again."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.html import render_report_html
from autotune.report.markdown import markdown_report
from autotune.report.pareto_json import nodes_header
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.cli import autotune_main


def reports(run_dir) -> tuple[dict, str, str, str]:
    """(pareto.json as `autotune report` writes it, terminal, Markdown, HTML) of a finished run."""
    view, document = build_report(load_finished_study(run_dir))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    return document, terminal.getvalue(), markdown_report(view, document), render_report_html(view, document, run_dir)


@pytest.fixture(scope="module")
def gapped_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gapped") / "run"
    done = autotune_main("run", "--model", "32b", "--nodes", "2-8", "--trials", "3", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "no candidate on 3 nodes is valid" in done.stderr  # the warning the header now agrees with
    assert done.stdout.startswith("32b on 2-8 nodes (searchable: 2, 4, 8) of gh200, backend simulate")
    return out


def test_a_range_with_counts_that_have_no_candidate_names_the_searchable_ones_in_every_output(gapped_run):
    document, terminal, md, html = reports(gapped_run)
    assert document["nodes"] == [2, 3, 4, 5, 6, 7, 8] and document["searchable_nodes"] == [2, 4, 8]
    assert document["node_counts"] == document["nodes"] and document["gpu_counts"] == [8, 12, 16, 20, 24, 28, 32]
    assert json.loads((gapped_run / "pareto.json").read_text())["searchable_nodes"] == [2, 4, 8]
    assert terminal.splitlines()[0].startswith("32b on 2-8 nodes (searchable: 2, 4, 8) of gh200, backend simulate")
    assert md.splitlines()[0] == "### autotune: 32b on 2-8 nodes (searchable: 2, 4, 8) of gh200"
    assert "<h1>autotune report: 32b on 2-8 nodes (searchable: 2, 4, 8) of gh200</h1>" in html


def test_the_report_reads_the_counts_from_the_study_not_from_checking_the_space_again(gapped_run, monkeypatch):
    """The trials record what they were offered; a report of a replay or a resumed study pays nothing for them."""
    import autotune.report.search as search

    def refused(*_):
        raise RuntimeError("space checked again")

    monkeypatch.setattr(search, "valid_checks", refused)  # the report's one other reader of the space
    document, terminal, _, _ = reports(gapped_run)
    assert document["searchable_nodes"] == [2, 4, 8] and "(searchable: 2, 4, 8)" in terminal


def test_a_range_every_count_of_which_is_searchable_reads_as_before(tmp_path):
    done = autotune_main("run", "--model", "7b", "--nodes", "1-2", "--trials", "2", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    document, terminal, md, html = reports(tmp_path / "run")
    assert document["searchable_nodes"] == [1, 2]
    assert terminal.splitlines()[0].startswith("7b on 1-2 nodes of gh200, backend simulate")
    assert md.splitlines()[0] == "### autotune: 7b on 1-2 nodes of gh200"
    assert "searchable" not in terminal + md + html


@pytest.mark.parametrize("nodes, searchable, said", [
    (4, [4], "4 nodes"),
    ([2, 3], [2], "2-3 nodes (searchable: 2)"),
    ([2, 4, 8], [2, 8], "2, 4, 8 nodes (searchable: 2, 8)"),
    ([1, 2, 3, 4, 5], [1, 2, 3], "1-5 nodes (searchable: 1-3)"),
    ([2, 3], None, "2-3 nodes"),  # a study with no trial yet, or a pareto.json from before the key
])
def test_nodes_header(nodes, searchable, said):
    document = {"nodes": nodes} if searchable is None else {"nodes": nodes, "searchable_nodes": searchable}
    assert nodes_header(document) == said


@pytest.mark.parametrize("nodes, recorded, unrecorded, said", [
    ([1, 2], [1], [2], "1-2 nodes (recorded: 1)"),
    ([2, 3, 4, 5, 6, 7, 8], [2, 4], [8], "2-8 nodes (searchable: 2, 4, 8; recorded: 2, 4)"),
])
def test_a_replay_s_header_names_the_recorded_counts_apart_from_the_searchable_ones(nodes, recorded, unrecorded, said):
    """A replayed file that records none of a count's valid candidates (trial59 #1): searchable, but not recorded."""
    document = {"nodes": nodes, "searchable_nodes": recorded,
                "search": {"unrecorded_nodes": [{"nodes": n, "valid_candidates": 10} for n in unrecorded]}}
    assert nodes_header(document) == said
