"""Display units follow the figures down as well as up: a tiny model's simulated job on many nodes read
"1.52e-05 s" and "0.000178 kJ" (trial 46)."""

from autotune.report.units import energy_text, energy_unit, figure, time_text, time_unit


def test_durations_and_energies_below_one_second_and_one_joule_get_a_unit_of_their_own():
    assert time_unit([1.52e-05, 2e-05]) == ("ms", 1e-3) and time_text(1.52e-05) == "0.0152 ms"
    assert time_text(0.25) == "250 ms" and time_text(27.7) == "27.7 s" and time_text(5400.0) == "1.50 h"
    assert energy_unit([1.78e-04 / 1000]) == ("mJ", 1e-6) and energy_text(3.49e-3) == "3.49 J"
    assert energy_text(2e-7) == "0.200 mJ" and energy_text(7200.0) == "2.00 kWh"
    assert "e-" not in figure(1.52e-05, time_unit([1.52e-05])[1])


def test_three_significant_figures_keep_their_trailing_zeros_but_no_trailing_dot():
    """Trial57 #13: 12.0 min read "12" beside "12.1" and "12.6", a coarser figure at a glance."""
    assert [figure(v) for v in (12.0, 12.1, 0.5, 100.0, 100.4)] == ["12.0", "12.1", "0.500", "100", "100"]
    assert figure(0.0) == "0" and figure(999.7) == "1,000" and figure(-3.0) == "-3.00" and figure(1234.5) == "1,234"
    assert time_text(720.0) == "12.0 min"
