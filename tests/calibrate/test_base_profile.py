"""Without --hardware, calibrate starts from the profile the studies ran on: where a study names a built-in profile's
file in another checkout (a colleague's committed study names /their/checkout/autotune/hardware/h100-sxm.toml), this
install's built-in of that name is the base, not whatever that path now holds, and the output says which file was
the base (trial64 #16: a stale checkout at the recorded path silently became the base)."""

import json
import shutil
import sqlite3
from pathlib import Path

from autotune.hardware import load_hardware
from tests.cli import autotune_main

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "benchmarks" / "results" / "h100_power_study"


def _study_naming(profile: Path, tmp_path: Path) -> Path:
    """A copy of the committed H100 study (it keeps no copy of its profile) whose settings name `profile`."""
    run = tmp_path / "study"
    run.mkdir()
    shutil.copy(STUDY / "study.db", run / "study.db")
    with sqlite3.connect(run / "study.db") as db:
        (value,) = db.execute("select value_json from study_user_attributes where key = 'settings'").fetchone()
        settings = json.loads(value)
        assert "hardware_profile" not in settings  # the case where the recorded file was read
        db.execute("update study_user_attributes set value_json = ? where key = 'settings'",
                   (json.dumps({**settings, "hardware": str(profile)}),))
    return run


def test_a_built_in_profile_of_another_checkout_is_read_from_this_install_and_named(tmp_path):
    here = load_hardware("h100-sxm")
    stale = tmp_path / "old-checkout" / "autotune" / "hardware" / "h100-sxm.toml"
    stale.parent.mkdir(parents=True)
    text = Path(here.source).read_text()
    assert "\nstep_overhead_s = 0.2 " in text
    stale.write_text(text.replace("\nstep_overhead_s = 0.2 ", "\nstep_overhead_s = 0.4 "))
    run = _study_naming(stale, tmp_path)
    result = autotune_main("calibrate", run, "--no-loo", "--json", "-o", tmp_path / "mine.toml")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["defaults"]["step_overhead_s"] == 0.2  # this install's, not the stale checkout's 0.4
    # The study's profile is read as the built-in it names (hardware/load.py, trial73 #4), so the base is this
    # install's file, named, and the stale checkout's path is nowhere.
    assert document["base_profile"] == here.source
    header = (tmp_path / "mine.toml").read_text().splitlines()[0]
    assert header.startswith(f"# Calibrated by `autotune calibrate` from {here.source}")
    text = autotune_main("calibrate", run, "--no-loo").stdout
    assert f"\n  base profile: {here.source}\n" in text and str(stale) not in text + header


def test_a_profile_of_ones_own_is_the_base_as_recorded_and_named(tmp_path):
    own = tmp_path / "my-h100.toml"  # a file of the user's (not a checkout's autotune/hardware/): read as recorded
    own.write_text(Path(load_hardware("h100-sxm").source).read_text().replace("\nstep_overhead_s = 0.2 ", "\nstep_overhead_s = 0.4 "))
    run = _study_naming(own, tmp_path)
    result = autotune_main("calibrate", run, "--no-loo")
    assert result.returncode == 0, result.stderr
    assert f"\n  base profile: {own}\n" in result.stdout and "step_overhead_s                         0.4" in result.stdout
