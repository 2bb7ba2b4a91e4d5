"""A pick's power limit in watts, where its probe read the NVML default (launch.measured_default_limit): the report's
pick lines gave it of that default, while the deploy notes (the terminal's, report.md's, report.html's) and what export
hands over (configs/*.json's not_in_this_config, launch.sh, export's stderr) gave it of the profile's default."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.cli import autotune_main

# One configuration at two limits: min-energy alone is limited (0.7), so its note is its own, not a shared LIMIT one.
SPACE = """zero_stage = [3]
optimizer_offload = ["async"]
activation_checkpointing = ["recompute"]
sp_degree = [1]
micro_batch = [4]
power_limit = [1.0, 0.7]
sm_clock_mhz = ["max"]
"""
MEASURED = "462 W per module: of the 660 W default NVML reported on the probe's devices"  # 0.7 x 660
PROFILES = "476 W per module on the gh200 profile"  # 0.7 x the gh200 profile's 680 W


def _measured_run(out, *flags):
    """A simulated study whose probes read a 660 W default, as the launch backend keeps it where a probe set a limit."""
    ran = autotune_main("run", "--model", "32b", "--nodes", "4", "--backend", "simulate", "--out", out, "-q", *flags)
    assert ran.returncode == 0, ran.stderr
    with sqlite3.connect(out / "study.db") as db:
        rows = db.execute("SELECT trial_id, value_json FROM trial_user_attributes WHERE key = 'result'").fetchall()
        for trial_id, value in rows:
            result = json.loads(value)
            result["details"] = {**(result.get("details") or {}), "default_power_limit_w": 660.0}
            db.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND key = 'result'",
                       (json.dumps(result), trial_id))
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("measured-limit")
    (tmp / "space.toml").write_text(SPACE)
    return _measured_run(tmp / "run", "--trials", "4", "--space", tmp / "space.toml")


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_reports_deploy_notes_give_the_limit_of_the_measured_default(run_dir):
    reported = autotune_main("report", run_dir)
    assert reported.returncode == 0, reported.stderr
    terminal = _words(reported.stdout)
    assert f"min-energy (least energy): trial 1, " in terminal and f"power limit 0.7 x default ({MEASURED})" in terminal
    notes = terminal.split("min-energy, cost-weighted (trial 1):", 1)[1]  # the deploy notes' group of the limited pick
    assert f"the power limit 0.7 x default ({MEASURED}) is set on the modules" in notes, notes
    as_markdown = autotune_main("report", run_dir, "--format", "md")
    assert as_markdown.returncode == 0, as_markdown.stderr
    markdown, html = _words(as_markdown.stdout), _words((run_dir / "report.html").read_text())
    assert f"the power limit 0.7 x default ({MEASURED}) is set on the modules" in markdown
    assert f"the power limit 0.7 x default ({MEASURED.replace(chr(39), '&#x27;')}) is set on the modules" in html
    for said in (terminal, markdown, html):
        assert PROFILES not in said


def test_export_hands_over_the_limit_of_the_measured_default(run_dir, tmp_path):
    config = tmp_path / "min-energy.json"
    exported = autotune_main("export", run_dir, "--pick", "min-energy", "-o", config)
    assert exported.returncode == 0, exported.stderr
    note = f"the power limit 0.7 x default ({MEASURED}) is set on the modules"
    assert note in _words(exported.stderr), exported.stderr
    handed = json.loads(config.read_text())["autotune"]["not_in_this_config"]
    assert any(note in n for n in handed), handed
    launch = (tmp_path / "min-energy.launch.sh").read_text()
    assert note in launch and PROFILES not in launch + exported.stderr + json.dumps(handed)


def test_report_html_says_a_shared_limit_note_once_where_the_default_was_measured(tmp_path):
    """Picks that differ in the limit alone share one note (deploy_notes.shared_device_notes), put in place of each
    pick's own: report.html found a pick's own note by the profile's watts, and with the measured default in its
    config's notes it found none, and said the whole note under every pick again."""
    import re
    from html import unescape

    run_dir = _measured_run(tmp_path / "run", "--trials", "8")
    assert autotune_main("report", run_dir).returncode == 0
    page = (run_dir / "report.html").read_text()
    items = [_words(unescape(re.sub("<[^>]+>", "", item))) for item in re.findall(r"<li>(.*?)</li>", page, flags=re.S)]
    limits = [item for item in items if "power limit" in item]
    assert len(limits) == 3 and limits[0].startswith("the power limit LIMIT x default is set on the modules"), limits
    assert all(item.startswith("its power limit is set as the note under min-energy above says") for item in limits[1:])
