"""report.html's chart points reach a keyboard and a touch screen, not a mouse alone (a newcomer's trial: every
point's details were an SVG <title>, shown on hover only). Each point is a link to its row in the table of the
same figures, named by its hover text for a screen reader; its text shows under the plot while it is focused;
the row it links to exists and is marked when reached. Parsed from the page, no browser needed."""

from __future__ import annotations

import re

import pytest

from autotune.report.html import STYLE
from tests.report.html_tree import Element, ids, parse
from tests.report.test_time_only_without_energy import replayed


@pytest.fixture(scope="module")
def time_only_run(tmp_path_factory):
    """A study whose trials have a time and no energy: its plot is time against the trial number."""
    out, done = replayed(tmp_path_factory.mktemp("time-only-points"), "--objectives", "time")
    assert done.returncode == 0, done.stderr
    return out


def _page(run_dir) -> Element:
    return parse((run_dir / "report.html").read_text())


def _chart(page: Element, css_class: str) -> list[Element]:
    return [svg for svg in page.find_all("svg", "chart") if css_class in svg.classes]


def _section(element: Element) -> str:
    return next(a.attrs["id"] for a in element.ancestors() if a.tag == "section")


def assert_point_reachable(shape: Element, known: dict[str, Element], section: str) -> Element:
    """The shape is inside a link a keyboard reaches, named by the shape's hover text, to a row of `section`'s
    table that is not folded away; its text follows it, drawn for the focus. Returns the row."""
    link, tip = shape.parent, shape.title()
    assert tip, "a point without its hover text"
    assert link.tag == "a" and "point" in link.classes and link.attrs.get("href", "").startswith("#"), link.attrs
    assert link.attrs.get("aria-label") == tip
    row = known.get(link.attrs["href"][1:])
    assert row is not None and row.tag == "tr", link.attrs["href"]
    assert _section(row) == section and not any(a.tag == "details" for a in row.ancestors())
    detail = link.next_element()
    assert detail is not None and "point-detail" in detail.classes and detail.text() == " ".join(tip.split())
    assert detail.attrs.get("aria-hidden") == "true"  # a screen reader hears the link's name, once
    return row


@pytest.mark.parametrize("run", ["simulated_run", "failing_run", "measured_run", "time_only_run"])
def test_every_scatter_point_links_to_its_trial_row(run, request):
    page = _page(request.getfixturevalue(run))
    known = ids(page)
    [scatter] = _chart(page, "scatter")
    markers = scatter.find_all(css_class="marker")
    assert markers
    for marker in markers:
        row = assert_point_reachable(marker, known, "trials")
        trial = re.match(r"trial (\d+) ", marker.title()).group(1)
        assert row.elements()[0].text() == trial  # the row of the point's own trial
    # A group, not an image (whose children a screen reader skips), named and described by its legend.
    assert scatter.attrs["role"] != "img" and scatter.attrs["aria-label"] == scatter.title()
    legend = known[scatter.attrs["aria-describedby"]]
    assert "Tab" in legend.text() and "tap" in legend.text() and "Hover a point for its configuration." not in legend.text()


def test_every_row_a_point_may_link_to_has_an_id(failing_run):
    page = _page(failing_run)
    rows = [r for r in page.find_all("tr") if _section(r) == "trials" and r.elements()[0].tag == "td"]
    assert rows and all(r.attrs.get("id") == f"trial-row-{r.elements()[0].text()}" for r in rows)


def _rule(selector_pattern: str, css: str = STYLE) -> str:
    found = re.search(selector_pattern + r"[^{}]*\{([^}]*)\}", css)
    assert found, selector_pattern
    return found.group(1)


def test_a_focused_point_is_ringed_and_its_text_shown_and_a_reached_row_marked():
    assert "display: none" in _rule(r"\.chart \.point-detail ")
    assert "display: inline" in _rule(r"\.point:focus \+ \.point-detail")
    assert "stroke:" in _rule(r"\.chart \.point:focus > \* ")
    assert "background" in _rule(r"tr:target")
    # On paper nothing is focused: never a stray point's text.
    assert "display: none !important" in _rule(r"\.chart \.point-detail ", STYLE[STYLE.index("@media print"):])


def _measured_in_chromium(wrapper_html: str, run_dir, tmp_path, *flags: str) -> list[str]:
    """What a wrapper page's script measured of the run's report.html in headless Chromium (its <output>), split."""
    import subprocess
    from html import unescape

    from tests.report.test_html_browser import FLAGS, _chromium

    wrapper = tmp_path / "wrapper.html"
    wrapper.write_text(wrapper_html.format(src=(run_dir / "report.html").as_uri()))
    dom = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
                          *flags, "--dump-dom", wrapper.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<output id="measured">([^<]*)</output>', dom.stdout)
    assert found, dom.stderr[-2000:]
    return unescape(found.group(1)).split(";")


_FOCUS_WRAPPER = """<!DOCTYPE html><html><body>
<iframe id="page" src="{src}" style="width:1200px;height:800px;border:0"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {{
  const doc = document.getElementById("page").contentDocument;
  const seen = [...doc.querySelectorAll(".chart .point")].map(point => {{
    const detail = point.nextElementSibling;
    const shown = () => !detail || !detail.classList.contains("point-detail") ? "-"
                        : getComputedStyle(detail).display === "none" ? "hidden" : "shown";
    const before = shown();
    point.focus();
    const after = shown();
    return [doc.activeElement === point, point.tabIndex, before, after].join(" ");
  }});
  const out = document.createElement("output");
  out.id = "measured";
  out.textContent = seen.join(";");
  document.body.appendChild(out);
}});
</script></body></html>"""


@pytest.mark.slow
def test_in_chromium_each_point_takes_the_focus_and_shows_its_text(simulated_run, tmp_path):
    points = _measured_in_chromium(_FOCUS_WRAPPER, simulated_run, tmp_path)
    scatter = [p for p in points if not p.endswith(" - -")]  # points with a text strip of their own
    assert scatter and all(p == "true 0 hidden shown" for p in scatter), points
    assert all(p.startswith("true 0 ") for p in points), points  # every point, of every chart, in the Tab order


@pytest.mark.parametrize("run", ["measured_run", "time_only_run"])
def test_every_power_limit_point_links_to_its_row_of_the_sweep_table(run, request):
    page = _page(request.getfixturevalue(run))
    known = ids(page)
    panels = _chart(page, "power-limit")
    assert panels  # both fixtures probe the fastest configuration at several limits
    for panel in panels:
        assert panel.attrs["role"] != "img" and panel.attrs["aria-label"] == panel.title()
        points = panel.find_all(css_class="sweep-point")
        assert len(points) >= 2
        for point in points:
            row = assert_point_reachable(point, known, "power-limit")
            assert row.elements()[1].text() == re.match(r"trial (\d+):", point.title()).group(1)
    assert "Tab" in known["power-limit"].find_all("p")[0].text()


def _focusable(point: Element) -> bool:
    return (point.tag == "a" and point.attrs.get("href", "").startswith("#")) or point.attrs.get("tabindex") == "0"


@pytest.mark.parametrize("run", ["simulated_run", "failing_run", "measured_run", "cpu_joule_run", "time_only_run"])
def test_no_chart_keeps_a_text_for_the_mouse_alone(run, request):
    """Every shape with a hover text, in every chart (bars of each pick, its power over one step, the sweep, the
    scatter), is a point a keyboard reaches, named as its hover text, linking to a row that exists where it links;
    but the importance bars, whose shares are drawn as text and said in the chart's name."""
    page = _page(request.getfixturevalue(run))
    known = ids(page)
    charts = page.find_all("svg", "chart")
    assert len(charts) > 1 and any("scatter" in svg.classes for svg in charts)
    for svg in charts:
        assert svg.attrs.get("aria-label", "").startswith(svg.title()), svg.attrs
        titled = [e for e in svg.iter() if e.tag != "title" and e.title() is not None]
        assert titled, svg.attrs
        if "shares" in svg.classes:
            assert svg.attrs["role"] == "img" and all(e.title() in svg.attrs["aria-label"] for e in titled)
            continue
        assert svg.attrs["role"] == "group"  # an image's children are hidden from a screen reader
        for shape in titled:
            point = shape.parent
            assert "point" in point.classes and _focusable(point), (svg.attrs["aria-label"], shape.attrs)
            assert point.attrs["aria-label"] == shape.title()
            if point.tag == "a":
                row = known.get(point.attrs["href"][1:])
                assert row is not None and row.tag == "tr", point.attrs["href"]
                article = next((a for a in svg.ancestors() if a.tag == "article"), None)
                if article is not None:  # a pick's chart links into the pick's own tables, to the part's own row
                    assert article in list(row.ancestors()) and shape.title().startswith(row.elements()[0].text() + ":")
            detail = point.next_element()
            assert "point-detail" in detail.classes and detail.text() == " ".join(shape.title().split())


def _scatter_texts(run_dir) -> dict[int, str]:
    [scatter] = _chart(_page(run_dir), "scatter")
    texts = [m.title() for m in scatter.find_all(css_class="marker")]
    return {int(re.match(r"trial (\d+) ", t).group(1)): t for t in texts}


@pytest.mark.parametrize("run", ["simulated_run", "measured_run", "time_only_run"])
def test_a_points_text_names_its_picks_and_the_baseline(run, request):
    """The labels beside the points are hidden from a screen reader (and one may sit on another point): the
    point's own text, which the reader hears, says it is the knee or the baseline."""
    import json

    from autotune.report.picks import PICK_FILES

    run_dir = request.getfixturevalue(run)
    doc = json.loads((run_dir / "pareto.json").read_text())
    texts = _scatter_texts(run_dir)
    for trial, text in texts.items():
        names = [PICK_FILES[n] for n, t in doc["recommendations"].items() if t == trial]
        names += ["baseline"] if trial == doc["baseline"] else []
        head = text.split(":")[0]  # `trial 3 (ok; knee, cost-weighted)`
        said = head[:-1].split("; ", 1)[1].split(", ") if "; " in head else []
        assert sorted(said) == sorted(names), text


def test_a_time_only_points_text_labels_its_time(time_only_run):
    """Every figure with its label, as the time-vs-energy plot's points have them: `6 s (measured)`."""
    import json

    from autotune.report.units import time_text

    doc = json.loads((time_only_run / "pareto.json").read_text())
    texts = _scatter_texts(time_only_run)
    assert texts
    for point in doc["feasible"]:
        assert texts[point["trial"]].endswith(f"; {time_text(point['time_s'])} ({point['source']}), energy unavailable")


@pytest.mark.parametrize("run", ["simulated_run", "failing_run", "measured_run"])
def test_a_small_point_has_a_finger_sized_target_under_every_marker(run, request):
    """A 4.5 px point drawn at half size on a phone is hit by luck: each has a disc of 10 px or more linking to the
    same row, drawn before any marker (never over a neighbour), out of the Tab order and of a screen reader's way."""
    assert "fill: transparent" in _rule(r"\.chart \.hit ")  # unpainted: SVG's default fill is black
    page = _page(request.getfixturevalue(run))
    for svg in _chart(page, "scatter") + _chart(page, "power-limit"):
        points = [e for e in svg.find_all(css_class="point") if e.tag == "a"]
        [layer] = svg.find_all("g", "hit-areas")
        assert layer.attrs["aria-hidden"] == "true"
        drawn = svg.elements()
        assert drawn.index(layer) < min(drawn.index(p) for p in points)
        discs = []
        for link in layer.elements():
            [disc] = link.elements()
            assert link.attrs["tabindex"] == "-1" and float(disc.attrs["r"]) >= 10
            discs.append((float(disc.attrs["cx"]), float(disc.attrs["cy"]), link.attrs["href"]))
        for point in points:
            shape = next(e for e in point.elements() if e.tag in ("circle", "rect"))
            if shape.tag == "circle":
                x, y = float(shape.attrs["cx"]), float(shape.attrs["cy"])
            else:  # an infeasible square, 10 px wide
                x, y = float(shape.attrs["x"]) + 5, float(shape.attrs["y"]) + 5
            assert any(abs(x - cx) < 0.2 and abs(y - cy) < 0.2 and href == point.attrs["href"] for cx, cy, href in discs)


_TAP_WRAPPER = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" src="{src}" style="width:390px;height:800px;border:0"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {{
  const doc = document.getElementById("page").contentDocument;
  const seen = [...doc.querySelectorAll(".chart.scatter a.point, .chart.power-limit a.point")].map(point => {{
    point.scrollIntoView({{block: "center"}});
    const box = point.firstElementChild.getBoundingClientRect();
    const hit = doc.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    return hit && hit.closest("a") === point ? "self" : (hit ? hit.outerHTML.slice(0, 60) : "none");
  }});
  const out = document.createElement("output");
  out.id = "measured";
  out.textContent = seen.join(";");
  document.body.appendChild(out);
}});
</script></body></html>"""


@pytest.mark.slow
def test_in_chromium_at_phone_width_a_tap_on_a_point_is_the_points(simulated_run, tmp_path):
    """No label drawn over a neighbouring point takes its tap (a 7b study's `fastest` sat under `max-slowdown`'s)."""
    taps = _measured_in_chromium(_TAP_WRAPPER, simulated_run, tmp_path, "--window-size=800,900")
    # A point drawn under another (a tie, the baseline on a trial of its figures) is the other's to tap: never a label's.
    assert taps.count("self") > len(taps) / 2 and all(t == "self" or 'class="marker ' in t for t in taps), taps
    assert "pointer-events: none" in _rule(r"\.chart \.pick-labels ")
