"""docs/calibration.md's recipe ("Calibrate on your own cluster") says what each part of its study pins: held to what
the fit does with that study (trial72 #6: its power limits 1.0 and 0.7 were said to pin "the clock and voltage
constants", and the fit on it reports min_voltage_fraction "(not fitted)")."""

import re

from autotune.calibrate.fit import Calibration
from autotune.calibrate.observations import Observation
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.simulator import simulate
from autotune.space import enumerate_space, load_space
from autotune.workload import make_workload
from tests.report.test_unmeasured_floor import REPO

DOC = (REPO / "docs" / "calibration.md").read_text()


def _recipe_calibration(tmp_path) -> Calibration:
    """The recipe's space (the doc's own TOML) on 7b, nodes 1-2, h100-sxm: every valid candidate's simulated time
    and energy, as a study of it would measure them."""
    space_toml = re.search(r"```toml\n(   # calibration-space\.toml.*?)```", DOC, re.S).group(1)
    path = tmp_path / "calibration-space.toml"
    path.write_text("\n".join(line.strip() for line in space_toml.splitlines()) + "\n")
    model, hardware = load_model("7b"), load_hardware("h100-sxm")
    checks = enumerate_space(load_space(path, (1, 2)), model, hardware, make_workload(model))
    candidates = [check.candidate for check in checks if check.valid]
    assert len(candidates) == 32  # as the doc counts them
    observations = []
    for n, candidate in enumerate(candidates):
        step = simulate(candidate)
        observations += [Observation(f"c{n}-time", candidate, "time_s", step.time_s, "recipe"),
                         Observation(f"c{n}-energy", candidate, "energy_kj", step.energy_kj, "recipe")]
    return Calibration(observations, hardware)


def test_the_recipes_power_limits_inform_the_clock_sensitivity_not_the_voltage_floor(tmp_path):
    informed = _recipe_calibration(tmp_path).informed()
    assert {"clock_sensitivity_compute", "clock_sensitivity_link"} <= set(informed)
    assert "min_voltage_fraction" not in informed  # the clock at 0.7 stays above the floor: calibrate says "(not fitted)"
    words = " ".join(DOC.split())
    assert "the clock and voltage constants" not in words
    assert "They do not pin `min_voltage_fraction`, the voltage floor" in words
    # Nor does it pin the per-step cost (trial72 #1): every configuration runs the same optimizer steps.
    assert "That pins `step_overhead_s`" not in words and "It does **not** pin `step_overhead_s`" in words
