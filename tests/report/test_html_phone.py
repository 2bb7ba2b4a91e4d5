"""report.html at phone width (390 px): nothing widens the page past the screen (the scatter's fixed 760 px
and the picks table made it 842 px wide, trial 49); charts scale, wide tables scroll in their own box. Measured
in headless Chromium, the report in a 390 px iframe (a headless window is never narrower than 500 px)."""

import re
import subprocess

import pytest

from tests.report.test_html_browser import FLAGS, _chromium

_WRAPPER = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" src="{src}" style="width:390px;height:800px;border:0"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {{
  const root = document.getElementById("page").contentDocument.documentElement;
  const out = document.createElement("output");
  out.id = "measured";
  out.textContent = root.scrollWidth + " " + root.clientWidth;
  document.body.appendChild(out);
}});
</script></body></html>"""


def _page_width(page, tmp_path) -> tuple[int, int]:
    wrapper = tmp_path / "phone.html"
    wrapper.write_text(_WRAPPER.format(src=page.as_uri()))
    dom = subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
         "--window-size=800,900", "--dump-dom", wrapper.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    found = re.search(r'<output id="measured">(\d+) (\d+)</output>', dom.stdout)
    assert found, dom.stderr[-2000:]
    return int(found.group(1)), int(found.group(2))


@pytest.mark.slow
@pytest.mark.parametrize("run", ["simulated_run", "measured_run"])
def test_the_page_fits_a_phone_width(run, request, tmp_path):
    page = request.getfixturevalue(run) / "report.html"
    scroll_px, client_px = _page_width(page, tmp_path)
    assert client_px <= 390 and scroll_px <= client_px


def test_the_page_asks_phones_for_their_own_width_and_scales_its_charts(simulated_run):
    html = (simulated_run / "report.html").read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert re.search(r"svg\.chart \{[^}]*max-width: 100%[^}]*height: auto", html)
    assert all("viewBox=" in svg for svg in re.findall(r"<svg [^>]*>", html))
    # Every table in a box that scrolls sideways.
    assert html.count('<div class="table-scroll"><table') == html.count("<table")
    assert re.search(r"\.table-scroll \{[^}]*overflow-x: auto", html)
