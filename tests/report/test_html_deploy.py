"""report.html states each pick's deployment notes (the exported config's `autotune.not_in_this_config`) as text
beside the pick, and prints each config whole: a PDF cut every config at the box's height, and with it the only
place the page said a power limit is set on every node (trial 49)."""

import json
import re
from html import unescape

from autotune.commands.options import settings_for
from autotune.report.html import STYLE
from autotune.report.html_deploy import deployment_notes_html


def _text_outside_pre(html: str) -> str:
    without_pre = re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", "", without_pre))


def test_each_picks_notes_are_stated_outside_its_config(simulated_run):
    html = (simulated_run / "report.html").read_text()
    text = _text_outside_pre(html)
    configs = [json.loads(path.read_text()) for path in (simulated_run / "configs").glob("*.json")
               if not path.name.endswith(".candidate.json") and not path.name.startswith(".")]
    notes = {note for config in configs for note in config["autotune"]["not_in_this_config"]}
    assert notes
    for note in notes:  # a command in backticks is set as <code>
        assert note.replace("`", "") in text, note
    assert "is code, not config" in text and re.search(r"run it on \d+ ranks", text)


def test_every_article_says_its_notes_before_its_config(simulated_run):
    html = (simulated_run / "report.html").read_text()
    articles = re.findall(r'<article class="pick".*?</article>', html, flags=re.S)
    assert articles
    for article in articles:
        assert article.index('class="deploy"') < article.index("<pre>")


def test_configs_print_whole_and_wrap():
    screen, _, printed = STYLE.partition("@media print")
    pre = re.search(r"(?m)^pre \{[^}]*\}", screen).group(0)
    assert "white-space: pre-wrap" in pre and "overflow-wrap: anywhere" in pre  # no sideways scrolling on screen
    assert re.search(r"pre \{[^}]*max-height: none", printed) and re.search(r"pre \{[^}]*overflow: visible", printed)


def test_a_power_limit_pick_says_it_is_set_on_every_node():
    settings = settings_for("--model", "32b", "--nodes", "4")
    candidate = settings.candidate({"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute",
                                    "sp_degree": 1, "micro_batch": 2, "nodes": 4, "power_limit": 0.7, "sm_clock_mhz": "max"})
    html = deployment_notes_html("{}", candidate)  # a config without the list (edited, or not written): export's notes
    text = unescape(re.sub(r"<[^>]+>", "", html))
    assert "power limit 0.7 x default (476 W per module on the gh200 profile) is set on the modules of every node" in text
    assert "<code>python -m autotune.measure.device_cli apply --power-limit 0.7" in html
    assert "run it on 16 ranks" in text and "is code, not config" in text
