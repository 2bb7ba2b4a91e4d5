"""trial57 #11: the picks of a study that differ in their power limit alone had the five-line note on setting it said
once per pick, 0.7/0.8/0.9 the only difference. The terminal, report.md and report.html now give the command once,
the limit written LIMIT, and which pick uses which (deploy_notes.shared_device_notes)."""

from __future__ import annotations

import io
import re
from html import unescape

import pytest
from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.cli import autotune_main

WHOSE = ("LIMIT: 0.7 (476 W) for min-energy, 0.8 (544 W) for knee and cost-weighted, 0.9 (612 W) for max-slowdown "
         "(x default, W per module on the gh200 profile)")


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """The README's first study: the fastest configuration at power limits 1.0, 0.9, 0.8 and 0.7, each a pick."""
    out = tmp_path_factory.mktemp("limit-once") / "run"
    done = autotune_main("run", "--model", "32b", "--nodes", "4", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def test_the_terminal_gives_the_power_limit_command_once_with_each_picks_limit(default_run):
    view, document = build_report(load_finished_study(default_run))
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=160, soft_wrap=True))
    deploy = out.getvalue()[out.getvalue().index("To deploy a pick"):]
    assert deploy.count("device_cli apply") == 1 and "device_cli apply --power-limit LIMIT --sm-clock-mhz max" in deploy
    assert "--power-limit 0." not in deploy
    assert deploy.count(WHOSE) == 1
    assert "  min-energy, knee, cost-weighted, max-slowdown (trials 2, 3, 4):" in deploy


def test_report_md_and_html_say_it_under_the_first_pick_and_point_there_from_the_others(default_run):
    view, document = build_report(load_finished_study(default_run))
    md = markdown_report(view, document)
    html = (default_run / "report.html").read_text()
    page = unescape(re.sub(r"<[^>]+>", "", re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)))  # the configs' own notes aside
    for said in (md, page):
        assert said.count("device_cli apply") == 1 and said.count(WHOSE) == 1
        for pick, limit in (("knee", "0.8"), ("max-slowdown", "0.9")):
            assert (f"its power limit is set as the note under min-energy above says, with LIMIT {limit} (its line above "
                    "gives the watts)") in said, pick
