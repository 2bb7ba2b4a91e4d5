"""report.html opened in headless Chromium: it renders, the scatter and the picks are in the DOM,
and the page logs no script error. Needs the Debian package `chromium`; skipped without it."""

import shutil
import subprocess
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def _browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )


def _page_errors(stderr: str, page: Path) -> list[str]:
    # Chromium's own noise (dbus, GPU, sandbox) is not our page's. A page's console messages are
    # logged as `...:INFO:CONSOLE:1] "text", source: file:///...`; uncaught errors say "Uncaught".
    return [
        line for line in stderr.splitlines()
        if "Uncaught" in line or (":CONSOLE" in line and page.as_uri() in line) or "console(" in line.lower()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("run", ["simulated_run", "failing_run", "measured_run"])
def test_report_renders_in_chromium(run, request, tmp_path):
    run_dir = request.getfixturevalue(run)
    page = run_dir / "report.html"
    dom = _browse(page, tmp_path / "profile-dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart scatter"' in dom.stdout
    assert 'class="pick-label"' in dom.stdout and 'id="picks"' in dom.stdout
    assert "Where the figures come from" in dom.stdout
    assert 'id="importance"' in dom.stdout and 'id="tuning-cost"' in dom.stdout
    if run == "measured_run":  # a power-over-one-step chart per distinct pick, phases shaded
        assert dom.stdout.count('class="chart power"') == dom.stdout.count('<article class="pick"') >= 1
        assert 'class="band phase-backward"' in dom.stdout
    assert _page_errors(dom.stderr, page) == []

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / ("report.png" if run == "simulated_run" else f"report-{run}.png")
    shot.unlink(missing_ok=True)
    result = _browse(page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000")
    assert result.returncode == 0 and shot.stat().st_size > 10_000, result.stderr[-2000:]
    assert _page_errors(result.stderr, page) == []


@pytest.mark.slow
def test_console_check_catches_a_broken_page(tmp_path):
    """The check above must be able to fail: a page that logs and throws is caught."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><script>console.error("boom"); throw new Error("kaput")</script></body></html>')
    result = _browse(page, tmp_path / "profile", "--dump-dom")
    errors = _page_errors(result.stderr, page)
    assert any("boom" in line for line in errors) and any("Uncaught Error: kaput" in line for line in errors)
