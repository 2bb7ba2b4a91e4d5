"""Trial 39 #1, #4, #7: figures a replay file cannot hold for this study are said before the study opens: a
peak memory in MiB (the study "converged" on the untuned baseline), times in ms or energy in J (warned), a
damaged figure (refused), and records of two studies in one file (the fixes asked for each in turn)."""

from __future__ import annotations

import json

import pytest

from autotune.backends.replay import ReplayBackend, study_of
from autotune.commands.options import settings_for
from autotune.errors import ConfigError
from autotune.simulator import simulate
from autotune.study.valid import valid_checks

CHECKS = valid_checks(settings_for("--model", "32b", "--nodes", "4"))
VALID = [c.candidate for c in CHECKS if c.valid][:6]


def _backend(tmp_path, scale=None, **figures) -> ReplayBackend:
    """A file of six of the study's candidates at their simulated figures, times `scale` for its keys."""
    lines = []
    for candidate in VALID:
        simulated = simulate(candidate)
        record = {"params": candidate.knobs.to_dict(), "status": "ok", "study": study_of(candidate),
                  "time_s": simulated.time_s, "energy_kj": simulated.energy_kj, "peak_mem_gib": simulated.peak_mem_gib}
        record.update({key: record[key] * factor for key, factor in (scale or {}).items()}, **figures)
        lines.append(json.dumps(record))
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return ReplayBackend(path)


def test_figures_as_simulated_or_ten_times_off_pass_without_a_word(tmp_path):
    for scale in (None, {"time_s": 10.0, "energy_kj": 0.1}):  # a CPU probe is 6-12x off the simulator
        backend = _backend(tmp_path, scale)
        backend.check_candidates(CHECKS)
        assert backend.figure_warning is None


@pytest.mark.parametrize("scale, said", [
    ({"time_s": 1000.0}, ["time_s = ", " s is 1,000x the ", "(6 records 100x or more from the simulator in time_s): "
                          "ms for s? they are replayed as they are"]),
    ({"energy_kj": 1000.0}, ["energy_kj = ", " kJ is 1,000x the ", "J for kJ?"]),
    ({"time_s": 0.001}, [" s is 1/1,000 of the ", "ms for s?"]),
])
def test_a_unit_slip_is_warned_of_once(tmp_path, scale, said):
    backend = _backend(tmp_path, scale)
    backend.check_candidates(CHECKS)
    line = backend.unchecked_records(CHECKS)[0]
    assert "\n" not in line and all(words in line for words in said), line


@pytest.mark.parametrize("figures, said", [
    ({"time_s": 1e-9}, "time_s = 1e-09 s is 1/"),  # (1e-300 is below the least time a record is read with)
    ({"time_s": 1e11}, "time_s = 1e+11 s is "),
    ({"peak_mem_gib": 70951.0}, "peak_mem_gib = 70951 is more than the 96 GiB a GPU of gh200 holds, for a probe that "
                                "finished (6 such records): figures in MiB? (GiB = MiB / 1024): fix the records; or, if "
                                "the figure is right, the profile 'gh200' is not the hardware it was measured on (pass "
                                "--hardware)"),
])
def test_a_figure_no_node_could_give_is_refused(tmp_path, figures, said):
    with pytest.raises(ConfigError) as refused:
        _backend(tmp_path, **figures).check_candidates(CHECKS)
    assert said in str(refused.value) and "m.jsonl line " in str(refused.value)


def test_a_file_of_two_studies_is_refused_as_such(tmp_path):
    backend = _backend(tmp_path)
    lines = backend.path.read_text().splitlines()
    other = json.loads(lines[3])
    other["study"]["model"] = "7b"
    lines[3] = json.dumps(other)
    backend.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as refused:
        ReplayBackend(backend.path).check_candidates(CHECKS)
    assert str(refused.value).endswith('mixes the records of 2 studies (their "study" differs: 32b on gh200: 5 records, '
                                       "first line 1; 7b on gh200: 1 record, first line 4); split it into one file per "
                                       "study and replay each")
