"""A study of --objectives time ranks by time alone: its front is the fastest, `fastest` its one pick,
and no pick chosen by energy (which it never ranked, and may only have estimated) is made or exported."""

from __future__ import annotations

import hashlib
import json

import pytest

from autotune.report.front import Point, pareto_front, recommendations
from autotune.report.picks import front_note
from tests.cli import autotune_main


def pt(trial, time_s, energy_kj, **params):
    return Point(trial=trial, params=params or {"k": trial}, time_s=time_s, energy_kj=energy_kj, gpus=4)


def test_a_time_only_front_is_the_fastest_whatever_the_energy():
    points = [pt(0, 10.0, 5.0), pt(1, 12.0, 1.0), pt(2, 10.0, 9.0), pt(3, 11.0, 2.0)]
    # By time and energy, 1 and 3 trade time for energy; by time alone only the two fastest are left.
    assert {p.trial for p in pareto_front(points)} == {0, 1, 3}
    fastest = pareto_front(points, time_only=True)
    assert [p.trial for p in fastest] == [0, 2]
    # A tie at the fastest time goes to the lower trial, not to the lower energy (trial 2 has more, trial 0 less:
    # swap them so energy would pick the other way).
    swapped = [pt(0, 10.0, 9.0), pt(2, 10.0, 5.0)]
    assert recommendations(pareto_front(swapped, time_only=True), max_power_w=700.0, time_only=True) == {"fastest": 0}
    assert recommendations(fastest, max_power_w=700.0, time_only=True) == {"fastest": 0}
    assert recommendations([], time_only=True) == {}


def test_a_tie_in_time_goes_to_the_least_peak_memory_then_the_fewest_gpus():
    """Trial61: a time-only study picked trial 1 at 69.6 GiB per GPU over trial 2 at 31.0 GiB, the same time."""
    def at(trial, gpus, peak_mem_gib):
        return Point(trial=trial, params={"k": trial}, time_s=10.0, energy_kj=1.0, gpus=gpus, peak_mem_gib=peak_mem_gib)

    tied = [at(1, 16, 69.6), at(2, 16, 31.0), at(3, 8, 31.0), at(4, 4, None)]
    front = pareto_front(tied, time_only=True)
    assert recommendations(front, time_only=True) == {"fastest": 3}  # 31.0 GiB on 8 GPUs; no figure is no reason
    assert recommendations(front[:2], time_only=True) == {"fastest": 2}
    note = front_note(tied, front, {"ok": 4}, time_only=True)
    assert "the one pick is the fastest of 4 feasible configurations, trial 3; 4 configurations" in note
    assert "the pick is the one of least peak memory (then fewest devices, then lowest trial)" in note


@pytest.fixture(scope="module")
def time_only_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "time"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "6", "--objectives", "time", "--out", out)
    assert done.returncode == 0, done.stderr
    return out, done


def test_a_time_only_study_reports_and_exports_the_fastest_alone(time_only_run):
    out, done = time_only_run
    document = json.loads((out / "pareto.json").read_text())
    assert document["objectives"] == ["time"]
    fastest_s = min(p["time_s"] for p in document["feasible"])
    tied = [p for p in document["feasible"] if p["time_s"] == fastest_s]
    assert document["recommendations"] == {"fastest": min(tied, key=lambda p: (p["peak_mem_gib"], p["gpus"], p["trial"]))["trial"]}
    assert [row["name"] for row in document["picks"]] == ["fastest"]
    assert document["front"] and all(p["time_s"] == fastest_s for p in document["front"])
    assert "ranks by time only (--objectives time)" in document["note"] and "no energy pick" in document["note"]
    assert sorted(p.name for p in (out / "configs").iterdir() if not p.name.startswith(".")) == [
        "fastest.candidate.json", "fastest.json", "fastest.launch.sh"]
    printed = " ".join(done.stdout.split())
    assert "Fastest (ranked by time only" in printed
    beyond_note = printed.replace(" ".join(document["note"].split()), "")
    assert not any(word in beyond_note for word in ("min-energy", "knee", "max-slowdown", "cost-weighted"))
    html = (out / "report.html").read_text()
    assert "least energy with time at most" not in html and "Zeus cost" not in html


def test_export_of_a_time_only_study_takes_the_fastest_and_refuses_energy_picks(time_only_run, tmp_path):
    out, _ = time_only_run
    # Named as configs/ names it: the config keeps the SHA-256 of the two files beside it, which name it
    exported = autotune_main("export", out, "-o", tmp_path / "fastest.json")  # no --pick: the default
    assert exported.returncode == 0, exported.stderr
    fastest = json.loads((out / "configs" / "fastest.json").read_text())
    assert json.loads((tmp_path / "fastest.json").read_text()) == fastest
    for pick in ("knee", "min-energy", "max-slowdown", "cost-weighted"):
        refused = autotune_main("export", out, "--pick", pick, "-o", tmp_path / f"{pick}.json")
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert f"--pick {pick} ranks by energy" in refused.stderr and "--pick fastest" in refused.stderr
        assert not (tmp_path / f"{pick}.json").exists()


def test_a_report_removes_the_energy_picks_an_earlier_report_exported_unless_edited(time_only_run):
    """A time-only study reported before this fix has min-energy, knee, ... configs in configs/: autotune's
    own are removed, one the user edited stays."""
    out, _ = time_only_run
    configs = out / "configs"
    record = json.loads((configs / ".written.json").read_text())
    for name, text in (("knee.json", "{}\n"), ("min-energy.json", "{}\n")):
        (configs / name).write_text(text)
        record[name] = hashlib.sha256(text.encode()).hexdigest()
    (configs / ".written.json").write_text(json.dumps(record))
    (configs / "min-energy.json").write_text('{"lr": 1}\n')  # edited since autotune wrote it
    done = autotune_main("report", out)
    assert done.returncode == 0, done.stderr
    assert not (configs / "knee.json").exists() and (configs / "min-energy.json").read_text() == '{"lr": 1}\n'
    assert "knee.json" not in json.loads((configs / ".written.json").read_text())


def test_pick_flags_on_a_time_only_study_are_warned_of_and_change_nothing(time_only_run, tmp_path):
    """trial78 #7: --eta and --max-slowdown on a study of --objectives time were kept without a word, and a report
    rewrote pareto.json and configs/ "out of date" for them: they choose picks such a study does not have."""
    out, _ = time_only_run
    before = (out / "pareto.json").read_bytes()
    reported = autotune_main("report", out, "--eta", "0.3")
    assert reported.returncode == 0, reported.stderr
    assert ("warning: --eta is not read by a study ranked by time only (--objectives time): its one pick is the "
            "fastest, which it does not choose; ignored") in reported.stderr
    assert "out of date" not in reported.stderr and (out / "pareto.json").read_bytes() == before
    run = autotune_main("run", "--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--backend", "simulate", "-q",
                        "--trials", "2", "--objectives", "time", "--eta", "0.2", "--max-slowdown", "1.3",
                        "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    assert "warning: --max-slowdown and --eta are not read by a study ranked by time only" in run.stderr
    parameters = json.loads((tmp_path / "run" / "pareto.json").read_text())["recommendation_parameters"]
    assert (parameters["max_slowdown"], parameters["eta"]) == (1.05, 0.5)  # the defaults: nothing kept of them
