"""report.html defines every pick it offers and says how to choose among them (picks.pick_definitions and
CHOOSING_A_PICK, as report.md states them): `knee` was defined nowhere, and five picks stood with nothing
saying which to deploy (trial 49)."""

import json
import re
from html import unescape

from autotune.commands.finish import build_report
from autotune.report.choosing import choosing_a_pick
from autotune.report.picks import CHOOSING_A_PICK, PickParameters, pick_definitions
from autotune.study import load_finished_study
from tests.cli import autotune_main


def _picks_section(html: str) -> str:
    section = re.search(r'<section id="picks">.*?</section>', html, flags=re.S).group(0)
    return unescape(re.sub(r"<[^>]+>", "", section))


def test_every_pick_is_defined_once_with_how_to_choose(simulated_run):
    html = (simulated_run / "report.html").read_text()
    doc = json.loads((simulated_run / "pareto.json").read_text())
    params = PickParameters(**doc["recommendation_parameters"])
    text = _picks_section(html)
    definitions = pick_definitions(params, doc["recommendations"])
    assert len(definitions) == 5
    for definition in definitions:
        assert definition in text, definition
    assert "knee: the front point farthest below" in text
    view, _ = build_report(load_finished_study(simulated_run))
    assert choosing_a_pick(view) in text
    # The old partial footnote repeated what the definitions say.
    assert "(Zeus cost)" not in text and "least energy with time at most" not in text
    assert f"max power: {params.max_power_per_gpu_w:g} W per GPU x the configuration's GPUs" in text


def test_a_time_only_study_defines_its_one_pick_without_a_choice(tmp_path):
    out = tmp_path / "time"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--objectives", "time", "--out", out)
    assert done.returncode == 0, done.stderr
    text = _picks_section((out / "report.html").read_text())
    assert "fastest: the least time to solution" in text
    assert CHOOSING_A_PICK not in text and "knee:" not in text
