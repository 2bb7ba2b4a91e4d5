"""report.html names a study not of the default name, escaped, in its title and heading: several studies share
one --storage database, and the name was in pareto.json alone (trial 49)."""

import re

from tests.cli import autotune_main


def test_a_named_study_is_in_the_title_and_heading_escaped(simulated_run, tmp_path):
    assert "(study " not in (simulated_run / "report.html").read_text()  # the default name says nothing
    out = tmp_path / "named"
    hostile = "st<script>alert(1)</script>&\"q\" x"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--study-name", hostile, "--out", out)
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text()
    escaped = re.escape("(study st&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;q&quot; x)")
    assert re.search(rf"<title>[^<]*{escaped}</title>", page)
    assert re.search(rf"<h1>[^<]*{escaped}</h1>", page)
    assert "<script" not in page


def test_the_page_has_one_heading_its_title_the_same(simulated_run):
    """Trial57 #17: `autotune: 32b on gh200` (the <title>) and `autotune report: 32b on 4 node(s) of gh200` (the <h1>)
    read as two headings in a row; the tab and the page now say one."""
    page = (simulated_run / "report.html").read_text()
    title, = re.findall(r"<title>([^<]*)</title>", page[:page.index("<body>")])
    assert re.findall(r"<h1>([^<]*)</h1>", page) == [title]
    assert title.startswith("autotune report: ") and " of gh200" in title
