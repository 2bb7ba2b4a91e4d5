"""What `calibrated_from` vouches for: the node a calibrated profile describes, always; its [simulator_error], only
with the hash of the figures that error was measured on (`figures_sha256`, which calibrate -o writes) or, in a profile
an older calibrate wrote, its header. A hand-written `calibrated_from` (trial61 #5: a copy of a100-80.toml calling
itself calibrated from itself) made a copied 1% error trusted on every figure."""

from dataclasses import replace

import pytest

from autotune.hardware import dump_hardware, load_hardware

ERROR = {"time_s_pct": 1.0, "energy_kj_pct": 1.0}


@pytest.fixture
def calibrated_text():
    """A profile as calibrate -o writes it (no header needed: the hash vouches for the error)."""
    profile = replace(load_hardware("h100-sxm"), name="team-cal", calibrated_from="h100-sxm", simulator_error=ERROR)
    return dump_hardware(profile)


def _load(tmp_path, text, name="team-cal.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_hardware(str(path))


def test_the_profile_calibrate_writes_keeps_its_error(tmp_path, calibrated_text, capsys):
    assert "\nfigures_sha256 = " in calibrated_text
    assert _load(tmp_path, calibrated_text).simulator_error == ERROR and capsys.readouterr().err == ""


def test_a_calibrated_profile_edited_to_other_gpus_loses_its_error(tmp_path, calibrated_text, capsys):
    """A colleague's calibrated profile, its [gpu] edited to yours: the error was measured on their figures."""
    edited = calibrated_text.replace("memory_gib = 80.0", "memory_gib = 40.0", 1)
    assert edited != calibrated_text
    profile = _load(tmp_path, edited)
    assert profile.simulator_error == {} and profile.calibrated_from == "h100-sxm"  # still the node it names
    (line,) = capsys.readouterr().err.splitlines()
    assert "its [simulator_error] is ignored" in line and "figures_sha256 differs: edited since, or copied onto other" in line


def test_the_one_warning_of_an_edited_profile_names_its_ignored_calibrated_on(tmp_path, capsys):
    """Its [calibrated_on] is dropped for the same hash, and its own warning gives way to the error's, which named the
    table only among what may have been edited, never as ignored: the report's "what it was fitted on is unknown"
    followed no warning of it."""
    profile = replace(load_hardware("h100-sxm"), name="team-cal", calibrated_from="h100-sxm", simulator_error=ERROR,
                      calibrated_on={"model": ("7b",), "gpus": ("8",), "nodes": ("1",)})
    edited = dump_hardware(profile).replace("memory_gib = 80.0", "memory_gib = 40.0", 1)
    loaded = _load(tmp_path, edited)
    assert loaded.simulator_error == {} and loaded.calibrated_on == {}
    (line,) = capsys.readouterr().err.splitlines()
    assert ("its [simulator_error] is ignored, and its figures show +- ?% (its [calibrated_on] is ignored too: a study on "
            "it cannot say whether it lies outside what the profile was fitted on): its figures, error") in line
    # Without a [calibrated_on] there is none to name.
    _load(tmp_path, dump_hardware(replace(profile, calibrated_on={})).replace("memory_gib = 80.0", "memory_gib = 40.0", 1),
          "other.toml")
    assert "[calibrated_on] is ignored" not in capsys.readouterr().err


def test_a_hand_written_calibrated_from_vouches_for_no_error(tmp_path, calibrated_text, capsys):
    forged = "\n".join(line for line in calibrated_text.splitlines() if not line.startswith("figures_sha256"))
    forged = forged.replace('name = "team-cal"', 'name = "h100-sxm-mine"').replace(
        'calibrated_from = "h100-sxm"', 'calibrated_from = "h100-sxm-mine"')  # itself, as trial61's forgery
    assert _load(tmp_path, forged, "forged.toml").simulator_error == {}
    assert "calibrated_from was written by hand" in capsys.readouterr().err
    # An older calibrate wrote no hash: its header still vouches, as before.
    older = "# Calibrated by `autotune calibrate` from h100-sxm.toml against 40 observations (runs/x).\n" + forged
    assert _load(tmp_path, older, "older.toml").simulator_error == ERROR


@pytest.mark.parametrize("edit", [
    ("time_s_pct = 1.0", "time_s_pct = 0.1"),  # an error lowered by hand turns every tie into a ranking
    ('zero_stage = ["3"]', 'zero_stage = ["0", "1", "2", "3"]'),  # a scope widened to stages never measured
    ('calibrated_from = "h100-sxm"', 'calibrated_from = "gh200"'),  # another node's records would replay onto it
])
def test_what_the_error_is_trusted_by_is_in_the_hash(tmp_path, edit, capsys):
    """trial63 #3, #4: the hash covered the figures alone; the error, its scope and calibrated_from were edited freely."""
    profile = replace(load_hardware("h100-sxm"), name="team-cal", calibrated_from="h100-sxm", simulator_error=ERROR,
                      error_measured_on={"model": ("7b",), "zero_stage": ("3",)})
    text = dump_hardware(profile)
    assert _load(tmp_path, text).simulator_error == ERROR and capsys.readouterr().err == ""
    edited = text.replace(*edit)
    assert edited != text
    assert _load(tmp_path, edited, "edited.toml").simulator_error == {}
    assert "figures_sha256 differs" in capsys.readouterr().err


def test_a_current_calibrate_s_profile_without_its_hash_loses_its_error(tmp_path, capsys):
    """trial63 #2: the warning named the edited figures; deleting the figures_sha256 line it says not to edit made the
    error trusted again, calibrate's header vouching instead. [error_measured_on] is written only beside the hash."""
    profile = replace(load_hardware("h100-sxm"), name="team-cal", calibrated_from="h100-sxm", simulator_error=ERROR,
                      error_measured_on={"model": ("7b",), "zero_stage": ("3",)})
    text = dump_hardware(profile, "Calibrated by `autotune calibrate` from h100-sxm.toml against 40 observations (runs/x).")
    edited = text.replace("memory_gib = 80.0", "memory_gib = 40.0", 1)
    unhashed = "\n".join(line for line in edited.splitlines() if not line.startswith("figures_sha256"))
    assert _load(tmp_path, unhashed).simulator_error == {}
    assert "its figures_sha256 was removed" in capsys.readouterr().err


@pytest.mark.parametrize("written", ["upper", "short", "nonhex", "space", "number"])
def test_a_malformed_hash_is_refused_as_such_not_called_edited_figures(tmp_path, calibrated_text, written, capsys):
    """trial63 #11: the figures were not edited, the hash line was."""
    from autotune.errors import ConfigError

    (line,) = [line for line in calibrated_text.splitlines() if line.startswith("figures_sha256 = ")]
    digest = line.split('"')[1]
    value = {"upper": f'"{digest.upper()}"', "short": f'"{digest[:32]}"', "nonhex": '"' + "z" * 64 + '"',
             "space": f'" {digest}"', "number": "5"}[written]
    with pytest.raises(ConfigError, match=r"figures_sha256 = .* is not a SHA-256 as `autotune calibrate -o` writes it "
                                          r"\(64 lowercase hex digits\): the line was edited"):
        _load(tmp_path, calibrated_text.replace(line, f"figures_sha256 = {value}"))
    assert capsys.readouterr().err == ""  # no "figures_sha256 differs" warning before it


def test_reports_say_why_an_ignored_error_is_unknown_also_from_a_study_s_kept_copy(tmp_path, calibrated_text, capsys):
    """trial63 #7: the reports said "calibrated (from 'h100-sxm'), error not stated: see its header" of a file whose
    header states 3.4%, and pareto.json kept that; now they give the warning's reason, which the study keeps."""
    from autotune.hardware import hardware_to_dict, stored_hardware
    from autotune.report.error_bars import error_sentence, profile_error

    edited = _load(tmp_path, calibrated_text.replace("memory_gib = 80.0", "memory_gib = 40.0", 1))
    kept = stored_hardware({"hardware": edited.source, "hardware_profile": hardware_to_dict(edited)}, "study settings")
    for profile in (edited, kept):
        why = profile_error(profile)["why_unknown"]
        assert why.startswith("read with its [simulator_error] ignored: its figures, error, [error_measured_on], "
                              "[calibrated_on] or calibrated_from are not those `autotune calibrate -o` wrote (figures_sha256 differs")
        assert "not stated" not in why and "header" not in why and why.endswith(f"({edited.source})")
    assert "this hardware profile was read with its [simulator_error] ignored: " in error_sentence(profile_error(kept))
    # A hand-written calibrated_from: the reason is that, not "calibrated (from ...)".
    forged = "\n".join(line for line in calibrated_text.splitlines() if not line.startswith("figures_sha256"))
    assert "calibrated_from was written by hand" in profile_error(_load(tmp_path, forged, "forged.toml"))["why_unknown"]
    # A recalibration drops the stale reason with calibrate's own note.
    from autotune.report.error_unknown import with_calibration_note

    assert with_calibration_note(kept.description, None) == load_hardware("h100-sxm").description
