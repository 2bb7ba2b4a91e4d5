"""The scatter's axes: logarithmic where the values span more than 10x (a node-range study's times span
50-200x and crowded the whole front into the first pixel column), linear otherwise, each axis on its own."""

import re

from autotune.report import svg as charts
from autotune.report.svg import Frame, Marker, scatter_svg


def _ticks(svg):
    return re.findall(r'<text class="tick" [^>]*>([^<]+)</text>', svg)


def _axis_labels(svg):
    return re.findall(r'<text class="axis-label" [^>]*>([^<]+)</text>', svg)


def _circle_xy(svg):
    return [(float(x), float(y)) for x, y in re.findall(r'<circle class="marker [^"]*" cx="([^"]+)" cy="([^"]+)"', svg)]


def test_an_axis_spanning_more_than_ten_times_gets_round_logarithmic_ticks():
    assert charts.axis_ticks(1.0, 20.0) == ([1.0, 2.0, 5.0, 10.0, 20.0], True)
    assert charts.axis_ticks(19.8, 1800.0) == ([10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0], True)
    assert charts.log_ticks(1.0, 5000.0) == [1.0, 10.0, 100.0, 1000.0, 10000.0]  # 1-2-5 would be 13 ticks: decades
    assert charts.log_ticks(0.0012, 0.9)[:3] == [0.001, 0.002, 0.005]  # exact, so their labels print as given
    # At most 10x, or a value not above 0: the linear ticks, as before.
    for lo, hi in ((1.0, 10.0), (3.0, 7.0), (0.0, 100.0), (-5.0, 100.0)):
        ticks, log = charts.axis_ticks(lo, hi)
        assert not log and ticks[0] <= lo and ticks[-1] >= hi


def test_a_log_frame_spaces_decades_evenly():
    frame = Frame(300, 200, left=60, right=20, top=10, bottom=40, x_ticks=[1.0, 10.0, 100.0],
                  y_ticks=[1.0, 10.0, 100.0], x_log=True, y_log=True)
    assert [frame.px(v) for v in (1.0, 10.0, 100.0)] == [60, 170, 280]
    assert [frame.py(v) for v in (1.0, 10.0, 100.0)] == [160, 85, 10]


def test_a_scatter_whose_times_span_20x_has_a_log_time_axis_with_its_points_spread():
    # Picks at 1-2 s beside a slow baseline at 20 s: on a linear axis 0-20 the picks were crowded at its start.
    xs = [1.0, 1.2, 1.5, 2.0, 10.0, 20.0]
    markers = [Marker(x, 3.0 + i * 0.1, "front" if x < 10 else "baseline", f"t{i}") for i, x in enumerate(xs)]
    svg = scatter_svg(markers, [], "time to solution (s)", "energy to solution (kJ)", "t")
    assert _ticks(svg)[:5] == ["1", "2", "5", "10", "20"]
    assert _axis_labels(svg) == ["time to solution (s) (log scale)", "energy to solution (kJ)"]  # energy: 1.2x, linear
    by_tip = dict(re.findall(r'<circle class="marker [^"]*" cx="([^"]+)"[^>]*><title>([^<]+)</title>', svg))
    cx = [float(x) for x in sorted(by_tip, key=lambda x: by_tip[x])]  # in the markers' order (tooltips t0-t5)
    left, right = cx[0], cx[-1]  # the first and last tick: 1 and 20
    assert cx[3] - left > 0.2 * (right - left)  # 2 s a fifth of the way along, not in the first pixels
    assert abs((cx[4] - left) / (right - left) - 1 / (1 + 0.30103)) < 1e-2  # 10 s at log(10)/log(20)


def test_log_ticks_at_1_10_100_are_evenly_spaced_in_the_scatter():
    markers = [Marker(x, 5.0, "feasible", "") for x in (1.0, 10.0, 100.0)]
    svg = scatter_svg(markers, [], "time (s)", "energy (kJ)", "t")
    xs = [float(x) for x, text in re.findall(r'<text class="tick" x="([^"]+)" [^>]*>([^<]+)</text>', svg)
          if text in ("1", "10", "100")]
    assert len(xs) == 3 and abs((xs[1] - xs[0]) - (xs[2] - xs[1])) < 0.2
    assert [round(x, 1) for x, _ in _circle_xy(svg)] == [round(x, 1) for x in xs]


def test_a_scatter_spanning_2x_stays_linear():
    markers = [Marker(x, y, "feasible", "") for x, y in ((1.0, 2.0), (1.5, 3.0), (2.0, 4.0))]
    svg = scatter_svg(markers, [], "time (s)", "energy (kJ)", "t")
    assert "log scale" not in svg
    assert _axis_labels(svg) == ["time (s)", "energy (kJ)"]
    assert _ticks(svg)[:5] == ["1", "1.2", "1.4", "1.6", "1.8"]  # nice_ticks(1, 2), as before


def test_each_axis_is_judged_on_its_own_and_trial_numbers_stay_linear():
    markers = [Marker(x, y, "feasible", "") for x, y in ((1.0, 100.0), (1.5, 3.0), (2.0, 4000.0))]
    svg = scatter_svg(markers, [], "time (s)", "energy (kJ)", "t")
    assert _axis_labels(svg) == ["time (s)", "energy (kJ) (log scale)"]
    # The time-only plot: trials 1..30 span 30x but are counted, never logarithmic; its times may be.
    markers = [Marker(t, 1.0 if t < 30 else 50.0, "feasible", "") for t in range(1, 31)]
    svg = scatter_svg(markers, [], "trial", "time (s)", "t", log_allowed=(False, True))
    assert _axis_labels(svg) == ["trial", "time (s) (log scale)"]
