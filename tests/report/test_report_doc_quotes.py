"""docs/report.md quotes the report's lines: each quote here is built by the code that prints it, so the page
cannot keep an old wording ("488 valid candidate(s)", "-0.7% time", a knee rule the code never applies; trial59 #7,
#14)."""

from __future__ import annotations

import re
from pathlib import Path

from autotune.candidate import power_limit_text
from autotune.hardware import load_hardware
from autotune.report.front import Point
from autotune.report.picks import two_point_note
from autotune.report.units import time_text
from autotune.report.within_noise import labelled_change_text

PAGE = " ".join((Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text(encoding="utf-8").split())


def _point(trial, time_s, energy_kj):
    return Point(trial=trial, params={}, time_s=time_s, energy_kj=energy_kj, tflop_per_kj=None, gpus=8)


def test_the_quoted_figures_are_as_the_report_writes_them():
    assert f"`{time_text(720)} (simulated)`" in PAGE  # 12.0 min, never "12 min"
    within = labelled_change_text({"time_change_pct": -0.7}, "time_change_pct", None, "time", {"time_change_pct": 20})
    assert f"`{within}`" in PAGE
    assert f"power limit {power_limit_text(0.8, load_hardware('gh200'))}" in PAGE


def test_no_quote_hedges_a_known_count_or_signs_a_change():
    assert re.findall(r"\d \w+\(s\)", PAGE) == []
    assert re.findall(r"`[+-]\d+(?:\.\d)?% (?:time|energy)", PAGE) == []


def test_the_two_point_knee_is_said_as_the_code_picks_it():
    """Scaled, the two points of such a front are (0, 1) and (1, 0): as near the ideal corner as each other, so the
    knee is the lower trial (front.knee), and the page says that, not "the one nearer the ideal corner"."""
    note = two_point_note([_point(0, 10.0, 20.0), _point(1, 20.0, 10.0)])
    said = note[note.index("the knee pick is"):note.index(", not a balanced trade") + len(", not a balanced trade")]
    assert f'("{said}")' in PAGE and "nearer the ideal corner" not in PAGE


def test_the_page_says_who_sets_a_limits_watts_as_the_tool_does():
    """Trial75 #17: the page said the watts were what "a SLURM or NVML user sets", where SLURM has no power-limit
    option (docs/launch.md) and every deployment note sends the user to `device_cli apply` (NVML, root)."""
    launch = " ".join((Path(__file__).resolve().parents[2] / "docs" / "launch.md").read_text(encoding="utf-8").split())
    assert "SLURM has no per-step power-limit option" in launch
    section = PAGE[PAGE.index("## Power limit of the fastest configuration"):PAGE.index("## Which knobs mattered")]
    assert "SLURM or NVML user" not in section
    assert "`device_cli apply` sets through NVML, as root or with CAP_SYS_ADMIN, for SLURM has no power-limit option" in section


def test_the_quoted_retry_of_a_failed_trial_is_as_the_report_writes_it():
    from autotune.report.failed_trials import failure_lines

    row = {"trial": 0, "status": "timeout", "reason": "timeout: no result within 45 s: killed the probe's process group",
           "details": {}, "probed_again_as": 3}
    assert f"`{failure_lines([row])[1][0]}`" in PAGE
