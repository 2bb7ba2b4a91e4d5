"""A pick that leads another front point by less than the measured noise of the two figures is a tie, not a
ranking, in every output (as a pick within the simulator's error of one is); a lead beyond the noise, or a study
whose noise was not recorded, reads as before. The studies are replays of recorded probes: a record's `noise`
(`autotune export --measurements`) is what a `--repeats 3` probe measured."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.study import load_finished_study
from tests.cli import autotune_main
from tests.report.conftest import profile_measured_on


def knobs(zero_stage, checkpointing, micro_batch, power_limit=1.0):
    return {"zero_stage": zero_stage, "optimizer_offload": "none", "activation_checkpointing": checkpointing,
            "sp_degree": 1, "micro_batch": micro_batch, "nodes": 1, "power_limit": power_limit, "sm_clock_mhz": "max"}


# Four probes of the tiny model: the baseline, the fastest (6 s), the runner-up in time (the same configuration at
# a 0.9 power limit, less energy: on the front), and the least energy.
BASELINE, FASTEST, RUNNER_UP, LEAST_ENERGY = (knobs(2, "none", 1), knobs(1, "recompute", 2),
                                              knobs(1, "recompute", 2, 0.9), knobs(3, "none", 1))
FASTEST_LINE = ("fastest: trial {fastest}, ZeRO-1 optimizer offload none, checkpointing recompute, SP 1, micro-batch 2, "
                "1 node; 6.00 s{bar}, 8.00 kJ{energy_bar}")


def record(params, time_s, energy_kj, time_cv=None, source="measured"):
    """A recorded probe; `time_cv`: the CV of its time over 3 repeats (its energy's: 2%), None: probed once."""
    entry = {"params": params, "status": "ok", "time_s": time_s, "energy_kj": energy_kj, "tflops": 1.0, "source": source}
    if time_cv is not None:
        entry["noise"] = {"runs": 3, "time_cv": time_cv, "energy_cv": 0.02}
    return entry


def replayed(tmp_path, records, hardware=None) -> tuple:
    """(document, trial of each configuration, terminal, Markdown, HTML) of a replay of `records` (on `hardware`, a
    profile file, else gh200's)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    measurements = tmp_path / "measurements.jsonl"
    measurements.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "run"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--backend", "replay", "--measurements", measurements,
                         "--trials", "4", "--out", out, *(("--hardware", hardware) if hardware else ()))
    assert done.returncode == 0, done.stderr
    view, document = build_report(load_finished_study(out))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    trials = {json.dumps(p["params"], sort_keys=True): p["trial"] for p in document["feasible"]}
    trial_of = {name: trials[json.dumps(params, sort_keys=True)] for name, params in
                (("baseline", BASELINE), ("fastest", FASTEST), ("runner_up", RUNNER_UP), ("least", LEAST_ENERGY))}
    assert json.loads((out / "pareto.json").read_text())["picks"] == document["picks"]  # what was written is what is shown
    return document, trial_of, terminal.getvalue(), markdown_report(view, document), (out / "report.html").read_text()


def measured(runner_up_s, fastest_cv=0.031, runner_up_cv=0.028, cv=0.02):
    return [record(BASELINE, 10.0, 10.0, cv), record(FASTEST, 6.0, 8.0, fastest_cv),
            # 5 kJ over 8 s: 156 W per GH200 module, above the 150 W it draws at rest (plausible.idle_power_w).
            record(RUNNER_UP, runner_up_s, 6.0, runner_up_cv), record(LEAST_ENERGY, 8.0, 5.0, cv)]


def picks(document) -> dict:
    return {row["name"]: row for row in document["picks"]}


def line_of(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_a_fastest_pick_ahead_by_less_than_the_noise_is_a_tie_in_every_output(tmp_path):
    # 6.2 s against 6 s is 3.3% slower; the two times scatter 3.1% and 2.8%: sqrt(3.1^2 + 2.8^2) = 4.2% together.
    document, trial, terminal, md, html = replayed(tmp_path, measured(6.2))
    fastest = picks(document)["fastest"]
    assert fastest["trial"] == trial["fastest"]
    assert fastest["tied_within_noise"] == [trial["runner_up"]] and fastest["tied_with"] == []
    assert fastest["tie_noise_cv"] == [{"trial": trial["runner_up"], "time_cv": [0.031, 0.028]}]
    # The other picks rank by energy too, 25% apart or more: no tie.
    assert all(row["tied_within_noise"] == [] for row in document["picks"] if row["name"] != "fastest")
    # Then the marginal trade against the nearest other pick, lopsided here (report.near_ties).
    tie = (f"tie with trial {trial['runner_up']} within measured noise: time CV 3.1% and 2.8%; against "
           "knee/max-slowdown/cost-weighted, the nearest other pick: 3.2% less time for 33% more energy")
    assert line_of(terminal, "fastest:") == (
        FASTEST_LINE.format(fastest=trial["fastest"], bar="", energy_bar="") + "  (against baseline trial "
        f"{trial['baseline']}: 20.0% less energy, 40.0% less time, 25.0% more TFLOP/kJ; {tie})")  # one parenthetical (trial61)
    assert line_of(md, "- **fastest**") == (
        f"- **fastest**: trial {trial['fastest']}, ZeRO-1 optimizer offload none, checkpointing recompute, SP 1, "
        f"micro-batch 2, 1 node; 6.00 s, 8.00 kJ: 20.0% less energy, 40.0% less time, 25.0% more TFLOP/kJ; {tie}")
    assert f'>fastest</a><br><span class="note">{tie[0].upper() + tie[1:]}</span>' in html
    # Said on the pick's line, and where "Which to deploy" would steer a time-minded reader to it (trial57 #2).
    assert terminal.count("within measured noise") == md.count("within measured noise") == 2
    assert ("Here fastest takes 3.2% less time than knee/max-slowdown/cost-weighted, within measured noise: where time "
            "is what costs, knee/max-slowdown/cost-weighted does about as well with 25% less energy.") in md
    # The tie rule as the picks apply it: fastest and min-energy against every feasible point (trial60 #9).
    assert ("Changes within two figures' combined noise are marked, and a pick within it of a point it is ranked "
            "against (any feasible point for fastest and min-energy, a front point for the others) is a tie.") in md


def test_a_lead_beyond_the_noise_is_a_ranking(tmp_path):
    # 6.5 s is 8.3% slower than 6 s: beyond the 4.2% the two times scatter together.
    document, trial, terminal, md, html = replayed(tmp_path, measured(6.5))
    assert all(row["tied_within_noise"] == [] and row["tie_noise_cv"] == [] for row in document["picks"])
    assert line_of(terminal, "fastest:") == (
        FASTEST_LINE.format(fastest=trial["fastest"], bar="", energy_bar="") +
        f"  (against baseline trial {trial['baseline']}: 20.0% less energy, 40.0% less time, 25.0% more TFLOP/kJ)")
    for text in (terminal, md, html):
        assert "tie with" not in text


def test_noisier_figures_tie_a_wider_lead(tmp_path):
    # The same 8.3% lead, from CPU-sized 6% and 7% scatters (9.2% together): a tie again.
    document, trial, terminal, _, _ = replayed(tmp_path, measured(6.5, fastest_cv=0.06, runner_up_cv=0.07))
    assert picks(document)["fastest"]["tied_within_noise"] == [trial["runner_up"]]
    assert f"; tie with trial {trial['runner_up']} within measured noise: time CV 6.0% and 7.0%)" in terminal


def test_probes_without_recorded_noise_tie_nothing(tmp_path):
    """Probed once (records without `noise`): the same 3.3% lead says nothing new; the top line says noise was not
    recorded."""
    records = [{key: value for key, value in r.items() if key != "noise"} for r in measured(6.2)]
    document, _, terminal, md, html = replayed(tmp_path, records)
    assert all(row["tied_within_noise"] == [] for row in document["picks"])
    assert "Measurement noise: not recorded (probed once, no step times kept)" in terminal
    for text in (terminal, md, html):
        assert "tie with" not in text


def test_a_mixed_study_ties_a_measured_pick_with_a_simulated_point_within_the_measured_side_s_noise(tmp_path):
    """A replay of measured and simulated records: the simulated runner-up is 4% slower, beyond the simulator's
    3.4% time error (gh200's), but within the fastest's own 5% measured scatter; a simulated figure adds no
    noise, so 5% is a lower bound of the pair's uncertainty, and the lead cannot be a ranking."""
    records = measured(6.24, fastest_cv=0.05)
    records[2] = record(RUNNER_UP, 6.24, 6.0, source="simulated")
    document, trial, terminal, md, _ = replayed(tmp_path, records)
    fastest = picks(document)["fastest"]
    assert fastest["tied_with"] == [] and fastest["tie_noise_cv"] == [{"trial": trial["runner_up"], "time_cv": [0.05, 0.0]}]
    tie = f"; tie with trial {trial['runner_up']} within measured noise: time CV 5.0% and simulated"  # ; a trade follows
    assert tie in line_of(terminal, "fastest:") and tie in line_of(md, "- **fastest**")


# What a profile's error must have been measured on for these four configurations' figures to carry it.
TINY_SCOPE = ("tiny with ZeRO 1/2/3, optimizer offload none, checkpointing none/recompute, SP 1, micro-batch 1/2, "
              "nodes 1, power limit 0.9/1.0, SM clock max")


def test_a_mixed_pair_within_the_simulator_s_error_is_said_once_as_that(tmp_path):
    """2% apart: within the simulator's 3.4% and within the measured 5%; one tie, the simulator's, whichever side is
    the simulated one (a simulated pick beside a measured point was never called a tie before)."""
    profile = profile_measured_on(tmp_path / "wide.toml", TINY_SCOPE)
    records = measured(6.12, fastest_cv=0.05)
    records[2] = record(RUNNER_UP, 6.12, 6.0, source="simulated")
    document, trial, terminal, _, _ = replayed(tmp_path / "measured-pick", records, profile)
    fastest = picks(document)["fastest"]
    assert fastest["tied_with"] == [trial["runner_up"]] and fastest["tied_within_noise"] == []
    assert f"; tie with trial {trial['runner_up']} within the simulator's error;" in line_of(terminal, "fastest:")
    assert "within measured noise" not in terminal

    records = measured(6.12, runner_up_cv=0.01)
    records[1] = record(FASTEST, 6.0, 8.0, source="simulated")
    document, trial, terminal, _, _ = replayed(tmp_path / "simulated-pick", records, profile)
    assert picks(document)["fastest"]["tied_with"] == [trial["runner_up"]]
    assert line_of(terminal, "fastest:").startswith(
        FASTEST_LINE.format(fastest=trial["fastest"], bar=" +- 3.4%", energy_bar=" +- 3.3%") + "  (against baseline")
    assert f"; tie with trial {trial['runner_up']} within the simulator's error;" in line_of(terminal, "fastest:")


def test_a_simulated_figure_outside_what_the_error_was_measured_on_ties_by_noise_alone(tmp_path):
    """The same pair on the shipped gh200 profile, whose error was measured on 7b-72b: the tiny model's simulated
    figure shows +- ?% and the simulator's error ties nothing; the measured side's 5% scatter still does."""
    records = measured(6.12, fastest_cv=0.05)
    records[2] = record(RUNNER_UP, 6.12, 6.0, source="simulated")
    document, trial, terminal, _, _ = replayed(tmp_path, records)
    # tiny's own workload too: gh200's error was measured at 60 frames, 256 text tokens and global batch 16-128
    # (trial72 #3)
    assert document["simulator_error"]["extrapolated"] == {str(trial["runner_up"]): [
        "model tiny", "ZeRO 1", "power limit 0.9", "global batch 8", "frames 2", "text tokens 32"]}
    fastest = picks(document)["fastest"]
    assert fastest["tied_with"] == [] and fastest["tied_within_noise"] == [trial["runner_up"]]
    assert f"; tie with trial {trial['runner_up']} within measured noise: time CV 5.0% and simulated;" in \
        line_of(terminal, "fastest:")
    row = next(line for line in terminal.splitlines() if line.startswith("│") and f" {trial['runner_up']} │" in line[:10])
    assert "6.12 +- ?%" in row


@pytest.mark.parametrize("runner_up_s, tied", [(6.2, True), (6.5, False)])
def test_the_tie_rule_is_the_one_changes_against_the_baseline_are_marked_by(tmp_path, runner_up_s, tied):
    """The power-limit line compares the same two trials (0.9 against 1.0): its time change is marked within noise
    exactly where the pick is a tie."""
    document, _, terminal, _, _ = replayed(tmp_path, measured(runner_up_s))
    sweep = line_of(terminal, "power limit of the fastest configuration")
    assert ("time (within noise: +- 4.2%)" in sweep) == tied
    assert bool(picks(document)["fastest"]["tied_within_noise"]) == tied
