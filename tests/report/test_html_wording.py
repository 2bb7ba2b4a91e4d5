"""report.html words a pick's figures as the terminal and report.md do (trial 49): a pick that uses more energy
than the baseline says "0.2% more energy", never "energy saved -0.2%" (trial57 #9: words, not signs); an error is written `+-` throughout; a
power limit reads 1.0, not 1; the chart names picks as the tables and `export --pick` do."""

import json
import re
from html import unescape

import pytest

from autotune.report.picks import PICK_FILES
from tests.cli import autotune_main


def _study(tmp_path_factory, nodes: str):
    out = tmp_path_factory.mktemp("wording") / "run"
    done = autotune_main("run", "--model", "32b", "--nodes", nodes, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def range_run(tmp_path_factory):
    """The trial's node-range study, whose fastest pick (8 nodes) uses a little more energy than the baseline."""
    return _study(tmp_path_factory, "2-8")


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """The trial's default study: the fastest configuration at four power limits."""
    return _study(tmp_path_factory, "4")


def _cells(html: str, table: str) -> list[list[str]]:
    body = re.search(rf'<table class="{table}">.*?</table>', html, flags=re.S).group(0)
    return [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, flags=re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S) if "<td>" in row]


def test_a_pick_using_more_energy_says_energy_used(range_run):
    html = (range_run / "report.html").read_text()
    doc = json.loads((range_run / "pareto.json").read_text())
    more = [row for row in doc["picks"] if (row["energy_saved_pct"] or 0) < 0 and row["trial"] != doc["baseline"]]
    assert more  # the fixture's point
    cells = {row[1]: row for row in _cells(html, "picks")}
    for row in more:
        assert cells[str(row["trial"])][7].startswith(f"{-row['energy_saved_pct']:.1f}% more energy")
    assert "energy saved -" not in unescape(html) and "energy saved" not in unescape(html)


def test_one_page_writes_errors_one_way_and_limits_as_one_point_zero(range_run, default_run):
    html = (range_run / "report.html").read_text()
    assert "±" not in html and "+- 3.3%)" in html  # the within-error mark, as the error bars write it
    html = (default_run / "report.html").read_text()
    limits = [row[0].split(" (")[0] for row in _cells(html, "power-limit")]  # "1.0 (680 W)"
    assert "1.0" in limits and "1" not in limits
    assert "power limit 1.0 (680 W)," in html and "power limit 1 " not in html  # the sweep's hover texts
    assert "<th>TFLOP/kJ" in html and "TFLOP /kJ" not in html


def test_the_chart_names_picks_as_the_tables_do(range_run):
    html = (range_run / "report.html").read_text()
    labels = {name for label in re.findall(r'<text class="pick-label"[^>]*>([^<]*)</text>', html)
              for name in label.split(", ")}
    assert labels and labels <= set(PICK_FILES.values()) | {"baseline"}
