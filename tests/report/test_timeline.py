"""Power over one step: the step chosen from an energy block, its phase bands, the SVG in the page,
and the simulated phase bar in its place when nothing was measured."""

import re

import pytest

from autotune.report.timeline import phase_bands, power_profile
from tests.report.energy_block import PHASE_POWER_W, energy_block


def test_profile_takes_a_middle_step_from_zero():
    profile = power_profile({"energy": energy_block()})
    assert profile.step == 1 and profile.provenance == "measured" and profile.node == 0
    assert profile.samples[0][0] == 0.0
    assert {phase for _, _, phase in profile.samples} == set(PHASE_POWER_W)
    assert max(p for _, p, _ in profile.samples) == pytest.approx(PHASE_POWER_W["backward"])
    assert "hwmon Module Power Socket 0" in profile.sensors and "Grace" not in profile.sensors  # counted only


def test_short_steps_draw_the_whole_window_and_no_timeline_draws_nothing():
    block = energy_block()
    block["timeline"] = [{**s, "step": i} for i, s in enumerate(block["timeline"])]  # one sample per step
    profile = power_profile({"energy": block})
    assert profile.step is None and len(profile.samples) == len(block["timeline"])
    assert power_profile({"energy": {**block, "timeline": []}}) is None
    assert power_profile({"energy": {**block, "provenance": "unavailable"}}) is None
    assert power_profile({}) is None


def test_bands_split_halfway_between_samples():
    samples = [(0.0, 1.0, "a"), (0.1, 1.0, "a"), (0.2, 2.0, "b"), (0.3, 1.0, "a")]
    bands = phase_bands(samples)
    assert [phase for _, _, phase in bands] == ["a", "b", "a"]
    assert [edge for start, end, _ in bands for edge in (start, end)] == pytest.approx([0.0, 0.15, 0.15, 0.25, 0.25, 0.3])


def test_measured_picks_draw_power_with_phases(measured_run):
    html = (measured_run / "report.html").read_text()
    picks = html.count('<article class="pick"')
    assert picks >= 1 and html.count('class="chart power"') == picks
    svg = html[html.index('class="chart power"'):]
    svg = svg[:svg.index("</svg>")]
    for phase in PHASE_POWER_W:
        assert f'class="band phase-{phase}"' in svg
    assert "measured with sensors" in svg and '<polyline class="power-line"' in svg
    assert "Power of node 0 over step 1, measured with sensors (hwmon Module Power Socket 0" in html


def test_simulated_picks_draw_the_simulated_phase_bar(simulated_run):
    html = (simulated_run / "report.html").read_text()
    assert 'class="chart power"' not in html
    picks = html.count('<article class="pick"')
    assert html.count("Simulated by the analytic model (nothing was measured): the phases of one") == picks
    assert re.search(r'<rect class="band phase-compute"', html)


def test_a_cpu_probes_estimate_sources_are_named_cpu_ranks_in_the_caption():
    # The power model labels its per-device estimates `gpu N (model)` (a JSON value tools read); on a CPU
    # profile those devices are CPU ranks, and the caption said "estimate gpu 0 (model)".
    block = {**energy_block(), "provenance": "estimated", "sources": [
        {"kind": "estimate", "label": f"{scope} {i} (model)", "scope": scope, "index": i, "role": "counted"}
        for i in (0, 1) for scope in ("gpu", "cpu")]}
    from autotune.report.device_words import CPU_RANK_WORDS, GPU_WORDS

    cpu = power_profile({"energy": block}, CPU_RANK_WORDS)
    assert "estimate CPU rank 0 (model)" in cpu.sensors and "gpu" not in cpu.sensors
    assert "estimate cpu 0 (model)" in cpu.sensors  # the host's share stays the host's
    assert "estimate GPU 0 (model)" in power_profile({"energy": block}, GPU_WORDS).sensors
    assert block["sources"][0]["label"] == "gpu 0 (model)"  # the stored result is not changed
