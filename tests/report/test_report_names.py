"""Names a user chose (the model's, the study's) shown as written in report.md and the terminal report:
never rendered as Markdown, HTML or rich markup (trial 49 #8, #9, #10)."""

import io
import json

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from autotune.backends.simulate import SimulateBackend
from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report, md_text
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.report.conftest import finished_run

ODD_NAME = "my|<b>model</b> & \"q\" `tick` *star* _u_ [l](http://e.com) <!-- hidden # h"
TINY = {"llm": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256, "mrope_sections": [2, 3, 3]},
        "vision": {"hidden": 32, "layers": 2, "heads": 2, "mlp": 64, "patch": 14, "image_size": 56},
        "default_workload": {"frames": 2, "text_tokens": 32, "global_batch": 8, "samples": 64}}


def _run(tmp_path_factory, name: str):
    where = tmp_path_factory.mktemp("names")
    model = where / "model.json"
    model.write_text(json.dumps({"name": name, **TINY}))
    finished_run(where / "run", SimulateBackend(), 3, nodes="1", study_flags=("--model", str(model)))
    return build_report(load_finished_study(where / "run"))


@pytest.fixture(scope="module")
def odd_report(tmp_path_factory):
    return _run(tmp_path_factory, ODD_NAME)


def _rendered(md: str) -> str:
    """As GitHub renders it: CommonMark with tables and raw HTML."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def test_md_text_leaves_nothing_for_markdown_or_html_to_read():
    html = _rendered(md_text(ODD_NAME))
    assert "<b>" not in html and "<em>" not in html and "<code>" not in html and "<a " not in html and "<!--" not in html
    assert "&lt;b&gt;model&lt;/b&gt;" in html and "*star*" in html and "[l](http://e.com)" in html


def test_markdown_shows_the_model_name_as_written_everywhere(odd_report):
    view, document = odd_report
    md = markdown_report(view, document)
    html = _rendered(md)
    for rendered in ("<b>", "<em>", "<code>tick", "<a ", "<!--"):
        assert rendered not in html
    assert ODD_NAME not in md  # not one raw copy, in the heading or in a sentence quoting it (the simulator's error)
    assert html.count("&lt;b&gt;model&lt;/b&gt;") >= 2
    table = [line.count("|") - line.count("\\|") for line in md.splitlines() if line.startswith("| ")]
    assert table and len(set(table)) == 1  # no name split a row


def test_the_terminal_prints_rich_markup_in_a_name_as_written(tmp_path_factory):
    view, document = _run(tmp_path_factory, "bad[/]name [red]x")
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=200))
    assert out.getvalue().splitlines()[0].startswith("bad[/]name [red]x on 1 node")


ODD_STUDY = 'st<script>alert(1)</script>&"q"|x *s*'


def test_a_named_study_is_named_in_the_markdown_header_and_the_terminal(odd_report):
    view, document = odd_report
    assert ", study" not in markdown_report(view, document).splitlines()[0]  # the default name, "autotune", says nothing
    named = {**document, "study_name": ODD_STUDY}
    heading = markdown_report(view, named).splitlines()[0]
    assert heading.endswith(f", study {md_text(ODD_STUDY)}")
    assert "st&lt;script&gt;alert(1)&lt;/script&gt;" in _rendered(heading)
    out = io.StringIO()
    print_report(view, named, Console(file=out, width=400))
    assert f", study {ODD_STUDY}, backend simulate" in out.getvalue().splitlines()[0]
