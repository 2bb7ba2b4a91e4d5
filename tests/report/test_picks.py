"""Savings against the baseline, the plain notes, the max power the cost-weighted pick uses."""

import pytest

from autotune.errors import UserError
from autotune.hardware import load_hardware
from autotune.report.front import Point
from autotune.report.picks import (
    PICK_FILES,
    PickParameters,
    check_pick_parameters,
    front_note,
    max_power_per_gpu_w,
    pick_label,
    pick_rows,
    savings,
    short_pick_label,
)


def pt(trial, time_s, energy_kj, tflop_per_kj=None):
    return Point(trial=trial, params={}, time_s=time_s, energy_kj=energy_kj, tflop_per_kj=tflop_per_kj, gpus=8)


def test_savings_signs_and_values():
    base = pt(0, 200.0, 1000.0, tflop_per_kj=50.0)
    row = savings(pt(3, 150.0, 800.0, tflop_per_kj=62.5), base)
    assert row == pytest.approx({"energy_saved_pct": 20.0, "time_change_pct": -25.0, "tflop_per_kj_change_pct": 25.0})
    same = savings(base, base)
    assert same == {"energy_saved_pct": 0.0, "time_change_pct": 0.0, "tflop_per_kj_change_pct": 0.0}
    assert f"{same['energy_saved_pct']:+.1f}" == "+0.0"  # not "-0.0" for the baseline itself


def test_pick_rows_without_feasible_baseline_say_none():
    points = [pt(1, 100.0, 500.0), pt(2, 120.0, 400.0)]
    rows = pick_rows({"fastest": 1, "min_energy": 2}, points, baseline_trial=0)  # trial 0 infeasible
    assert rows == [
        {"name": "fastest", "trial": 1, "energy_saved_pct": None, "time_change_pct": None, "tflop_per_kj_change_pct": None},
        {"name": "min_energy", "trial": 2, "energy_saved_pct": None, "time_change_pct": None, "tflop_per_kj_change_pct": None},
    ]


def test_front_notes():
    assert "No feasible configuration" in front_note([], [], {"oom": 2, "failed": 1})
    assert "2 oom, 1 failed" in front_note([], [], {"oom": 2, "failed": 1})
    assert "Only one feasible configuration (trial 4)" in front_note([pt(4, 1.0, 1.0)], [pt(4, 1.0, 1.0)], {"ok": 1})
    best, worse = pt(1, 1.0, 1.0), pt(2, 2.0, 2.0)
    assert "both the fastest and the least energy" in front_note([best, worse], [best], {"ok": 2})
    assert "estimated" not in front_note([best, worse], [best], {"ok": 2})
    from dataclasses import replace

    guessed = [replace(p, energy_source="estimated") for p in (best, worse)]
    assert ("every pick is that trial. Every energy here is estimated from the hardware profile's power model (no sensor "
            "saw it), which charges nearly the same power") in front_note(guessed, guessed[:1], {"ok": 2})
    three = [pt(3, 0.5, 3.0), pt(5, 0.75, 1.5), best]
    assert front_note(three, three, {"ok": 3}) is None
    # Trial 54 F5: two points have no knee: said, with the tie-break the knee pick is.
    assert front_note([best, pt(3, 0.5, 3.0)], [pt(3, 0.5, 3.0), best], {"ok": 2}) == (
        f"The front holds two configurations (trials {best.trial} and 3): both lie on the line the knee is measured "
        f"from, so there is no knee to choose on; the knee pick is the lower trial, {min(best.trial, 3)} "
        f"({'the fastest' if min(best.trial, 3) == 3 else 'the least energy'}), a tie-break, not a balanced trade: "
        "choose between fastest and min-energy.")


def test_a_front_of_configurations_tied_exactly_offers_no_trade_off_and_says_so():
    tied = [pt(2, 1.0, 1.0), pt(5, 1.0, 1.0)]
    note = front_note(tied + [pt(3, 2.0, 2.0)], tied, {"ok": 3})
    assert note.startswith("2 configurations (trials 2, 5) tie with exactly the same time and energy")
    assert "every pick is the lowest trial, 2" in note


def test_an_exact_tie_among_other_front_points_is_said():
    """Trial 54 F6: two front points of exactly the same time and energy beside others: the picks named the lower
    trial and nothing said the other did as well (a time-only study and an all-tie front said theirs)."""
    tied = [pt(2, 1.0, 2.0), pt(3, 1.0, 2.0)]
    front = [pt(0, 0.5, 3.0), *tied, pt(1, 1.5, 1.0)]
    note = front_note(front, front, {"ok": 4})
    assert note == ("2 configurations on the front (trials 2, 3) tie with exactly the same time and energy: a pick "
                    "among them names the lowest trial, 2, though trial 3 does as well.")
    # With two distinct points, beside the no-knee sentence.
    two = [pt(0, 0.5, 3.0), *tied]
    assert front_note(two, two, {"ok": 3}).endswith("tie with exactly the same time and energy: a pick among them names "
                                                    "the lowest trial, 2, though trial 3 does as well.")
    assert front_note(front[:2] + front[3:], front[:2] + front[3:], {"ok": 3}) is None


def test_max_power_per_gpu():
    # GH200: GPU 600 + Grace 100 + memory 35 W exceed the 680 W module cap, which bounds them all.
    assert max_power_per_gpu_w(load_hardware("gh200")) == 680.0
    # H100 SXM: the 700 W cap bounds the GPU only; the host share and memory come on top.
    h100 = load_hardware("h100-sxm")
    assert max_power_per_gpu_w(h100) == h100.gpu.max_power_w + h100.cpu.max_power_w + h100.power.memory_interconnect_w


def test_labels_name_the_export_pick_and_the_parameters():
    params = PickParameters(max_slowdown=1.1, eta=0.25, max_power_per_gpu_w=680.0)
    assert pick_label("max_slowdown", params) == "max-slowdown (least energy within 10% of fastest)"
    assert pick_label("cost_weighted", params) == "cost-weighted (eta 0.25)"
    assert pick_label("min_energy", params) == "min-energy (least energy)"
    assert pick_label("fastest", params) == "fastest" and pick_label("knee", params) == "knee"
    # Past double, a multiple: a least-energy pick of a scaling study read "within 9.99999e+07% of fastest".
    huge = PickParameters(max_slowdown=1e6, eta=0.5, max_power_per_gpu_w=680.0)
    assert pick_label("max_slowdown", huge) == "max-slowdown (least energy within 1e+06 x the fastest time)"
    assert short_pick_label("max_slowdown", huge) == "within 1e+06 x"
    assert pick_label("max_slowdown", PickParameters(max_slowdown=2.0, eta=0.5, max_power_per_gpu_w=680.0)).endswith("within 2 x the fastest time)")
    assert short_pick_label("max_slowdown", params) == "within 10%"
    for name, stem in PICK_FILES.items():  # every label starts with what `autotune export --pick` takes
        assert pick_label(name, params).split(" (")[0] == stem


@pytest.mark.parametrize(("max_slowdown", "eta", "message"), [(0.9, 0.5, "--max-slowdown"), (1.05, 1.2, "--eta"), (float("nan"), 0.5, "--max-slowdown")])
def test_bad_pick_parameters_name_the_option(max_slowdown, eta, message):
    with pytest.raises(UserError, match=message):
        check_pick_parameters(max_slowdown, eta)
