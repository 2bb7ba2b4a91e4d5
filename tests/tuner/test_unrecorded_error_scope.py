"""A stated simulator error whose profile does not record what it was measured on (trial67 #12): a study an older
autotune made kept a copy of gh200.toml from before its description named the GH200 study's scope, and every figure
of it was shown with +- 3.4% (power-limited picks tied by it, no "probe them before deploying"), while the same study
made today says +- ?% outside that scope. A copy of a shipped profile now reads with the shipped scope; any other error
without one (a profile an older `calibrate -o` wrote) vouches for no figure, and the reports say why."""

import json
import re
from dataclasses import replace
from pathlib import Path

from autotune.cli import main
from autotune.hardware import load_hardware
from autotune.hardware.dump import hardware_to_dict
from autotune.hardware.load import stored_hardware
from autotune.report.error_bars import profile_error
from autotune.report.error_scope import SCOPE_KEY, UNRECORDED_SCOPE

GH200_SCOPE = ("7b (micro-batch 4/8, nodes 1/2, GPUs 4/8, global batch 16/32/64), 32b (micro-batch 2/4, nodes 4/8, GPUs "
               "16/32, global batch 32/64/128), 72b (micro-batch 1/2, nodes 8/16, GPUs 32/64, global batch 32/64/128) with ZeRO 3, optimizer offload async/none/sync, checkpointing offload_async/"
               "offload_sync/recompute, SP 1, power limit 1.0, SM clock max, frames 60, text tokens 256, precision bf16")
# gh200.toml's description before it named its error's scope (commit d2abca9 and earlier).
OLDER_DESCRIPTION = "JUPITER-like node: 4x GH200 (Hopper + Grace, NVLink-C2C), InfiniBand NDR"


def _older_study_settings(**changes) -> dict:
    """The settings a study an older autotune made keeps: its copy of gh200.toml as that checkout shipped it."""
    kept = hardware_to_dict(replace(load_hardware("gh200"), description=OLDER_DESCRIPTION, error_measured_on={},
                                    **changes))
    return {"hardware": "/elsewhere/autotune/hardware/gh200.toml", "hardware_name": "gh200", "hardware_profile": kept}


def test_a_kept_copy_of_the_shipped_profile_reads_with_the_shipped_scope():
    profile = stored_hardware(_older_study_settings(), "study settings")
    assert profile_error(profile)[SCOPE_KEY] == GH200_SCOPE
    assert profile.description.startswith(OLDER_DESCRIPTION)  # its own words kept, the scope note added


def test_a_copy_whose_error_is_not_the_shipped_one_gets_no_shipped_scope():
    # An older gh200.toml with another error (or other constants) was measured on something this one cannot vouch for.
    error = {**load_hardware("gh200").simulator_error, "time_s_pct": 2.9}
    profile = stored_hardware(_older_study_settings(simulator_error=error), "study settings")
    assert profile_error(profile)[SCOPE_KEY] == UNRECORDED_SCOPE  # not measured everywhere: shown to hold nowhere
    assert "error measured on" not in profile.description


# As `autotune calibrate -o` wrote a profile before it recorded the scope (d2abca9's, from the gh200 reference): a
# header, calibrated_from, the error, and no scope in any form. The README's Upgrading section says a newer autotune
# reads it; its error was measured on configurations it does not name.
OLDER_CALIBRATE_HEADER = "# Calibrated by `autotune calibrate` from gh200.toml against 65 observations (gh200-study).\n"


def _older_calibrated_profile(path):
    text = Path(load_hardware("gh200").source).read_text()
    text = text[:text.index("\n# What that error was measured on")] + "\n"  # no [error_measured_on] either
    text = re.sub(r"; error measured on [^\"]*", "", text).replace('name = "gh200"', 'name = "oldcal"\ncalibrated_from = "gh200"')
    path.write_text(OLDER_CALIBRATE_HEADER + text)
    return path


def test_an_error_whose_scope_is_not_recorded_vouches_for_no_figure(tmp_path, capsys):
    profile = _older_calibrated_profile(tmp_path / "oldcal.toml")
    assert profile_error(load_hardware(str(profile)))[SCOPE_KEY] == UNRECORDED_SCOPE
    out = tmp_path / "run"
    assert main(["run", "--model", "7b", "--nodes", "2", "--hardware", str(profile), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    text = " ".join(printed.split())
    document = json.loads((out / "pareto.json").read_text())
    error = document["simulator_error"]
    # Every simulated point lies outside it, so no figure shows +- 3.4%, no pick is tied by it, and the picks are to be probed.
    assert error["time_s_pct"] == 3.4 and error[SCOPE_KEY] == UNRECORDED_SCOPE
    assert len(error["extrapolated"]) == 5  # the 5 trials, baseline included
    assert all(error["extrapolated"][str(pick["trial"])] == [UNRECORDED_SCOPE] for pick in document["picks"])
    assert all(pick["tied_with"] == [] for pick in document["picks"])
    assert ("That error was measured on configurations not recorded (the profile predates that record, so no figure is "
            "shown to lie within it; calibrate again to record it): every simulated figure extrapolates it.") in text
    assert ("lie where the simulator's error is not known to hold (the profile did not record what it was measured on): "
            "their error is unknown (+- ?%); probe them before deploying.") in text
    assert "within the simulator's error" not in text
    figures = [line for line in printed.splitlines() if line.startswith(("baseline (trial", "fastest:", "min-energy"))]
    assert len(figures) == 3 and all("min +- ?%" in line and "+- 3.4%" not in line for line in figures), figures
