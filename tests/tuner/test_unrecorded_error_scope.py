"""A stated simulator error whose profile does not record what it was measured on (trial67 #12): a study an older
autotune made kept a copy of gh200.toml from before its description named the GH200 study's scope, and every figure
of it was shown with +- 3.4% (power-limited picks tied by it, no "probe them before deploying"), while the same study
made today says +- ?% outside that scope. A copy of a shipped profile now reads with the shipped scope."""

from dataclasses import replace

from autotune.hardware import load_hardware
from autotune.hardware.dump import hardware_to_dict
from autotune.hardware.load import stored_hardware
from autotune.report.error_bars import SCOPE_KEY, profile_error

GH200_SCOPE = ("7b/32b/72b with ZeRO 3, optimizer offload async/none/sync, checkpointing offload_async/offload_sync/"
               "recompute, SP 1, micro-batch 1/2/4/8, nodes 1/2/4/8/16, GPUs 4/8/16/32/64, power limit 1.0, SM clock max")
# gh200.toml's description before it named its error's scope (commit d2abca9 and earlier).
OLDER_DESCRIPTION = "JUPITER-like node: 4x GH200 (Hopper + Grace, NVLink-C2C), InfiniBand NDR"


def _older_study_settings(**changes) -> dict:
    """The settings a study an older autotune made keeps: its copy of gh200.toml as that checkout shipped it."""
    kept = hardware_to_dict(replace(load_hardware("gh200"), description=OLDER_DESCRIPTION, **changes))
    return {"hardware": "/elsewhere/autotune/hardware/gh200.toml", "hardware_name": "gh200", "hardware_profile": kept}


def test_a_kept_copy_of_the_shipped_profile_reads_with_the_shipped_scope():
    profile = stored_hardware(_older_study_settings(), "study settings")
    assert profile_error(profile)[SCOPE_KEY] == GH200_SCOPE
    assert profile.description.startswith(OLDER_DESCRIPTION)  # its own words kept, the scope note added


def test_a_copy_whose_error_is_not_the_shipped_one_gets_no_shipped_scope():
    # An older gh200.toml with another error (or other constants) was measured on something this one cannot vouch for.
    error = {**load_hardware("gh200").simulator_error, "time_s_pct": 2.9}
    profile = stored_hardware(_older_study_settings(simulator_error=error), "study settings")
    assert profile_error(profile).get(SCOPE_KEY) != GH200_SCOPE
    assert "error measured on" not in profile.description
