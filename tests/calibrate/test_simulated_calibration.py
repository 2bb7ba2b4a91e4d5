"""A fit to simulated figures (--allow-simulated, a test of the fit) writes no [simulator_error]: its "0%" left-out
error is the simulator against itself, and written, every study on the profile quoted it as a measured "+- 0%",
called no tie and said "error measured on ..." (trial61 #2)."""

from pathlib import Path

from autotune.commands.calibrate import _written_profile
from autotune.hardware import dump_hardware, load_hardware
from autotune.report.error_bars import error_sentence, profile_error

SCOPE = {"model": ["7b"], "zero_stage": ["3"]}


def _document(simulated: list[str]) -> dict:
    """What calibrate's fit of 20 configurations for 13 constants, none on a bound, reports (no warning)."""
    return {"loo_mape": {"time_s": 0.0, "energy_kj": 0.0, "tflops": 0.0}, "reliability_warning": None,
            "configurations": 20, "fitted": ["c"] * 13, "at_bound": [], "measured_on": "error measured on 7b with ZeRO 3",
            "measured_on_values": SCOPE, "held": [], "observations": 60, "sources": ["runs/plan"], "loo_worst": None,
            "simulated": simulated}


def _written(tmp_path: Path, simulated: list[str]):
    base = load_hardware("h100-sxm")
    profile, header = _written_profile(tmp_path / "plan-cal.toml", base, {}, _document(simulated))
    path = tmp_path / "plan-cal.toml"
    path.write_text(dump_hardware(profile, header))
    return load_hardware(str(path)), path.read_text()


def test_a_fit_to_simulated_figures_writes_no_error_and_says_why(tmp_path):
    profile, text = _written(tmp_path, ["runs/plan"])
    assert profile.simulator_error == {} and "\n[simulator_error]" not in text and "\n[error_measured_on]" not in text
    assert "error measured on" not in profile.description
    assert "Not a calibration of the node: fitted to simulated figures" in text
    # Every study on it says so on its error line (terminal, report.html, markdown, pareto.json's why_unknown).
    sentence = error_sentence(profile_error(profile))
    assert "+- ?%" in sentence and "error not measured (fitted to simulated figures, a test of the fit)" in sentence


def test_a_fit_to_measured_figures_still_writes_its_error(tmp_path):
    profile, text = _written(tmp_path, [])
    assert profile.simulator_error == {"time_s_pct": 0.0, "energy_kj_pct": 0.0, "tflops_pct": 0.0}
    assert profile.description.endswith("error measured on 7b with ZeRO 3")
