"""Findings of trial 30 (docs: report.md "Tuning cost and payback", "How the search ended"): what a
replayed study says against the study it was exported from, and what a resume records.

The studies run in-process through `autotune run` with a stand-in for the launch backend: the
simulator's figures, labelled measured, with the probe cost (whole-probe time, windows' energy) and the
repeats' spread the launch backend writes, and the probe settings it keeps."""

from __future__ import annotations

import json
from dataclasses import replace

import optuna
import pytest

from autotune.backends.simulate import SimulateBackend
from autotune.cli import main
from autotune.report.search import search_sentences

STUDY = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "2", "--hardware", "cpu")


class _WindowProbes(SimulateBackend):
    name, source, launcher = "launch", "measured", "torchrun"

    def __init__(self, probe_steps):
        super().__init__("a stand-in for the launch backend")
        self.probe_steps = probe_steps

    def probe_settings(self) -> dict:
        return {"--probe-steps": self.probe_steps}

    def evaluate(self, candidate, trial_number: int = 0):
        result = super().evaluate(candidate, trial_number)
        # 2 minutes of probe, of which sensors saw 0.2 s: what launch.probe_cost writes.
        cost = {"time_s": 120.0, "energy_kj": result.energy_kj * 1e-3, "energy_scope": "window",
                "energy_provenance": "measured", "parts": {"window_s": 0.2}}
        noise = {"cv": {"time": 0.5, "energy": 0.5}, "repeats": [{"time_s": result.time_s}, {"time_s": result.time_s}]}
        return replace(result, source="measured", energy_source="measured",
                       details={**result.details, "probe_cost": cost, **noise})


@pytest.fixture
def probing(monkeypatch):
    """`autotune run --backend launch` answered by _WindowProbes (the flag's --probe-steps kept)."""
    import autotune.backends.select as select

    chosen = select.choose_backend

    def choose(args, *rest, **kwargs):
        return _WindowProbes(args.probe_steps) if args.backend == "launch" else chosen(args, *rest, **kwargs)

    monkeypatch.setattr(select, "choose_backend", choose)


def _run(out, *flags) -> int:
    return main(["run", *STUDY, "--out", str(out), *flags])


def _study(out) -> optuna.Study:
    return optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")


def _pareto(out) -> dict:
    return json.loads((out / "pareto.json").read_text())


def test_a_replay_of_an_export_reports_the_tuning_cost_and_noise_of_the_original(tmp_path, probing):
    # trial30 #5 and #8: the replayed report said "Totals cover every probe, start-up and warm-up
    # included" (complete: true) of window-only energy, and marked no saving within noise.
    original, measurements, replayed = tmp_path / "a", tmp_path / "m.jsonl", tmp_path / "b"
    assert _run(original, "--backend", "launch", "--trials", "5", "--objectives", "time,energy") == 0
    assert main(["export", str(original), "--measurements", str(measurements)]) == 0
    assert _run(replayed, "--backend", "replay", "--measurements", str(measurements), "--trials", "5") == 0
    before, after = _pareto(original)["tuning_cost"], _pareto(replayed)["tuning_cost"]
    assert after["probes_by_basis"] == before["probes_by_basis"] == {"probe_cost_window_energy": 5}
    assert after["complete"] is before["complete"] is False
    assert after["energy_lower_bound"] is True and after["provenance"] == "measured"
    assert after["whole_probe_energy_kj"] == pytest.approx(before["whole_probe_energy_kj"])
    assert after["note"] == before["note"] and "Totals cover every probe" not in after["note"]
    # Nothing ran here (trial 39 nit 16: "Tuning ran 5 probes"): the cost is what they took where they were measured.
    from autotune.report.payback import cost_sentence

    assert (before["replayed"], after["replayed"]) == (0, 5)
    assert cost_sentence(before, ("kJ", 1.0)).startswith("Tuning ran 5 probes: ")
    assert cost_sentence(after, ("kJ", 1.0)).startswith("The 5 replayed probes took, where they were measured, ")
    for old, new in zip(before["payback"], after["payback"]):
        assert (new["payback_training_hours"], new["payback_lower_bound"]) == pytest.approx(
            (old["payback_training_hours"], old["payback_lower_bound"]))
        assert new["within_noise"] == old["within_noise"] and new["energy_noise_pct"] == pytest.approx(old["energy_noise_pct"])
    assert _pareto(replayed)["noise"] == pytest.approx(_pareto(original)["noise"])
    assert _pareto(replayed)["picks"] == _pareto(original)["picks"]


def test_a_resume_that_probes_nothing_keeps_the_probe_settings_the_probes_used(tmp_path, probing, capsys):
    # trial30 #6: a resume with its budget already spent recorded --probe-steps 50, and the next run
    # warned "--probe-steps 50 then, 2 now" though no probe had measured 50 steps.
    out = tmp_path / "run"
    assert _run(out, "--backend", "launch", "--trials", "3", "--probe-steps", "2") == 0
    assert _run(out, "--backend", "launch", "--trials", "3", "--probe-steps", "50") == 0  # budget spent: no probe
    assert _study(out).user_attrs["backend"]["probe_settings"] == {"--probe-steps": 2}
    capsys.readouterr()
    assert _run(out, "--backend", "launch", "--trials", "3", "--probe-steps", "2") == 0
    assert "measure otherwise" not in " ".join(capsys.readouterr().err.split())
    # A resume whose probes ran with other settings records them, and the next one compares with those.
    assert _run(out, "--backend", "launch", "--trials", "4", "--probe-steps", "3") == 0
    assert _study(out).user_attrs["backend"]["probe_settings"] == {"--probe-steps": 3}
    capsys.readouterr()
    assert _run(out, "--backend", "launch", "--trials", "4", "--probe-steps", "2") == 0
    assert "(--probe-steps 3 then, 2 now)" in " ".join(capsys.readouterr().err.split())


def _space_records(tmp_path, keep: int, status: str | None = None):
    """The first `keep` valid candidates of `autotune space --simulate --json`, as a measurements file."""
    from autotune.backends.replay import study_of
    from autotune.commands.options import settings_for
    from autotune.simulator import simulate
    from autotune.study.valid import valid_checks

    settings = settings_for(*STUDY)
    records = []
    for check in [c for c in valid_checks(settings) if c.valid][:keep]:
        candidate = check.candidate
        record = {"params": candidate.knobs.to_dict(), "status": status or "ok", "source": "measured",
                  "study": study_of(candidate)}
        if record["status"] == "ok":
            figures = simulate(candidate)
            record.update(time_s=figures.time_s, energy_kj=figures.energy_kj, tflops=figures.tflops)  # figures that agree
        records.append(record)
    path = tmp_path / f"{status or 'ok'}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_replay_whose_recording_is_exhausted_says_so_not_that_more_trials_resume_it(tmp_path):
    # trial30 #9: "not converged ...; next it would probe X ... The same command with a larger --trials
    # resumes the study", though X had no record and a larger budget added nothing.
    measurements, out = _space_records(tmp_path, keep=3), tmp_path / "run"
    for trials in ("4", "10"):
        assert _run(out, "--backend", "replay", "--measurements", str(measurements), "--trials", trials) == 0
    search = _pareto(out)["search"]
    unfinished = search["unfinished"]
    assert unfinished["exhausted"] is True and unfinished["recorded_left"] == 0 and unfinished["next"]
    said = " ".join(" ".join(search_sentences({**search, "predicted": _pareto(out)["predicted"]})).split())
    assert "larger --trials resumes" not in said
    assert "The recording is exhausted (every recorded candidate is evaluated)" in said
    assert "needs measuring (--backend launch)" in said and "which the replayed file does not record" in said
    # Predictions of candidates with no record are shown, and said to be out of a replay's reach.
    predicted = _pareto(out)["predicted"]
    assert predicted and all(p["recorded"] is False for p in predicted)
    assert all("(no record: replay cannot probe it" in line for line in
               search_sentences({"predicted": predicted}))


def test_a_replay_with_records_left_still_says_a_larger_budget_resumes_it(tmp_path):
    measurements, out = _space_records(tmp_path, keep=12), tmp_path / "run"
    assert _run(out, "--backend", "replay", "--measurements", str(measurements), "--trials", "3") == 0
    unfinished = _pareto(out)["search"]["unfinished"]
    assert unfinished["exhausted"] is False
    recorded = {json.dumps(json.loads(line)["params"], sort_keys=True) for line in measurements.read_text().splitlines()}
    assert json.dumps(unfinished["next"], sort_keys=True) in recorded  # what a resume would replay next
    assert "larger --trials resumes" in " ".join(search_sentences(_pareto(out)["search"]))
    assert _pareto(out)["search"]["unfinished"]["succeeded"] == 3


def test_a_study_none_of_whose_probes_succeeded_asks_for_a_fix_not_a_larger_budget(tmp_path):
    """Trial 37 F8: after `run` stopped on 3 failed probes (the set-up), the report said "The same command with a
    larger --trials resumes the study", which fixes nothing."""
    measurements, out = _space_records(tmp_path, keep=12, status="failed"), tmp_path / "run"
    assert _run(out, "--backend", "replay", "--measurements", str(measurements), "--trials", "10") == 2
    assert main(["report", str(out)]) == 0  # the stop writes no reports: this is the report a user asks for next
    search = _pareto(out)["search"]
    assert search["unfinished"]["succeeded"] == 0
    said = " ".join(search_sentences(search))
    # A replay's failures are recorded, not the set-up's: nothing to fix, the other records are what a resume adds
    # (trial54 F3); a launched study's says "fix what failed them" (test_report_search).
    assert "fix what failed them" not in said and "a larger --trials replays the other recorded candidates" in said


def test_a_replayed_oom_with_a_budget_of_one_is_not_told_to_fix_it_and_resume(tmp_path):
    """Trial 54 F3: `--trials 1` replaying an OOM said "No probe succeeded: fix what failed them ..., then the same
    command resumes the study": the same command probes nothing, and a recorded OOM has nothing to fix."""
    measurements, out = _space_records(tmp_path, keep=3, status="oom"), tmp_path / "run"
    assert _run(out, "--backend", "replay", "--measurements", str(measurements), "--trials", "1") == 2
    search = _pareto(out)["search"]
    assert search["unfinished"]["exhausted"] is False and search["unfinished"]["failed"] == 0
    said = " ".join(search_sentences(search))
    assert "fix what failed them" not in said and "a larger --trials replays the other recorded candidates" in said


def test_a_launched_study_all_of_whose_probes_ran_out_of_memory_is_not_told_to_fix_them():
    unfinished = {"probes": 2, "reason": "fewer than 3 probes succeeded", "next": None, "succeeded": 0, "failed": 0,
                  "replayed": False}
    said = search_sentences({"unfinished": unfinished})[0]
    assert said.endswith("Every probe ran out of memory, which is final (no fix makes that candidate fit): a larger "
                         "--trials probes others, and `autotune space` shows what fits"), said
    # One that failed (a launched probe's failure may be the set-up's): fix it, then resume.
    said = search_sentences({"unfinished": {**unfinished, "failed": 1}})[0]
    assert "No probe succeeded: fix what failed them" in said


def test_an_all_oom_replay_says_the_recording_is_exhausted(tmp_path):
    # trial30 #9: an all-oom file also listed unrecorded candidates with "100% chance to enter the front".
    measurements, out = _space_records(tmp_path, keep=3, status="oom"), tmp_path / "run"
    assert _run(out, "--backend", "replay", "--measurements", str(measurements), "--trials", "10") == 2
    search, predicted = _pareto(out)["search"], _pareto(out)["predicted"]
    assert search["unfinished"]["exhausted"] is True and search["unfinished"]["reason"] == "fewer than 3 probes succeeded"
    assert predicted and all(p["recorded"] is False for p in predicted)
    lines = search_sentences({**search, "predicted": predicted})
    assert not any("larger --trials resumes" in line for line in lines)
    assert all(line.startswith("predicted, not probed (no record: ") for line in lines[1:])


def test_a_partial_file_converges_among_its_recorded_candidates_and_says_so(tmp_path, capsys):
    """Trial 39 #2: "converged: no unprobed valid candidate has a 5% chance ..." above unrecorded candidates listed at
    "100% chance to enter the front": the rule weighed the recorded candidates only, and now says so."""
    measurements, out = _space_records(tmp_path, keep=24), tmp_path / "run"
    assert _run(out, "--backend", "replay", "--measurements", str(measurements), "--trials", "40") == 0
    printed = capsys.readouterr()
    said = " ".join((printed.err + printed.out).split())  # the run's lines on stderr, its report on stdout
    converged = _pareto(out)["search"]["converged"]
    assert converged["recorded"] == 24 and converged["unrecorded"] > 0
    line = (f"converged after {converged['probes']} probes among the 24 recorded candidates: the model (simulator x "
            "correction learnt from the probes) gives no unprobed recorded candidate a 5% or higher chance")
    assert line in said and "unprobed valid candidate" not in said
    assert (f"the other {converged['unrecorded']} valid candidates, which the replayed file does not record, were not "
            "measured, so the front is the recorded candidates' front only") in said
    # pareto.json's rule too: "no unprobed valid candidate" was said of candidates the rule never weighed.
    assert converged["rule"].startswith("no unprobed recorded candidate has a 5% or higher chance")
    # Once, in the report (trial57 #10: it was said again as the run ended); the run's own line points there.
    assert said.count(line) == 1 and line in " ".join(printed.out.split())
    assert (f"converged after {converged['probes']} probes among the 24 recorded candidates; the report's `search:` "
            "line says why it stopped") in " ".join(printed.err.split())


def test_a_file_without_the_baseline_names_the_baseline_it_lacks(tmp_path):
    """Trial 39 #5: every saving and payback read "n/a: this space holds no baseline", which the space does: only the
    replayed file lacked its record."""
    from autotune.candidate import knobs_sentence
    from autotune.commands.options import settings_for
    from autotune.space.baseline import baseline
    from autotune.study.valid import valid_checks

    path, out = _space_records(tmp_path, keep=60), tmp_path / "run"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records = [r for r in records if not (r["params"]["optimizer_offload"] == "none" and r["params"]["sp_degree"] == 1
                                          and r["params"]["activation_checkpointing"] in ("none", "recompute"))]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert _run(out, "--backend", "replay", "--measurements", str(path), "--trials", "6") == 0
    base = baseline(valid_checks(settings_for(*STUDY)))
    said = (f"n/a: the space's baseline ({knobs_sentence(base.candidate.knobs.to_dict())}) was not evaluated (a replayed "
            "file holds no record of it: measure it to compare with it), so there is no saving to measure against")
    assert {row["text"] for row in _pareto(out)["tuning_cost"]["payback"]} == {said}
    assert "was not evaluated" in (out / "report.html").read_text()


def test_a_replay_of_a_converged_studys_export_says_it_stopped_at_the_end_of_its_recording(tmp_path):
    """Trial 40 #5: the replay evaluated every record, ended there before asking its stop rule, and said nothing of
    how its search ended (every `search` field null, no line in any report). Then it said "converged: ... no unprobed
    valid candidate ...", the words of a study that searched its whole space, of a file recording a few of them."""
    original, measurements, replayed = tmp_path / "a", tmp_path / "m.jsonl", tmp_path / "b"
    assert _run(original, "--trials", "30") == 0
    converged = _pareto(original)["search"]["converged"]
    assert converged is not None
    assert main(["export", str(original), "--measurements", str(measurements)]) == 0
    assert _run(replayed, "--backend", "replay", "--measurements", str(measurements), "--trials", "30") == 0
    again = _pareto(replayed)["search"]
    assert again["converged"]["probes"] == converged["probes"] and again["converged"]["at_end_of_recording"] is True
    assert again["unfinished"] is None
    recorded, unrecorded = again["converged"]["recorded"], again["converged"]["unrecorded"]
    assert recorded == converged["probes"] and unrecorded > 0
    line = search_sentences(again)[0]
    assert line.startswith(f"stopped after {recorded} probes: no recorded candidate is left to replay ({recorded} of the "
                           f"{recorded + unrecorded} valid candidates were recorded; the other {unrecorded} were not "
                           "measured, so the front is the recorded candidates' front only, not exhaustive); a prediction, "
                           "not a measurement: ")
    assert "converged" not in line
    # Nor is a larger --trials the way to more trials for importance (trial 40 nit 16): the file records no more.
    assert all("every record of the replayed file is evaluated: measure more candidates" in reason
               for reason in _pareto(replayed)["importance"].values())
