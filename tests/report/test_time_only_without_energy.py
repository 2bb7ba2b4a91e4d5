"""A time-only study (--objectives time) on a machine with no energy sensor and no estimate: its trials carry a
time and no energy, and they are its feasible points, ranked by time. Energy reads "unavailable" wherever it
would stand (never 0, never a blank), the fastest is the one pick, and every pick chosen by energy says it
cannot be made. A study of time and energy still has no point without an energy, and says why."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli import autotune_main


def knobs(zero_stage, checkpointing, micro_batch, power_limit=1.0):
    return {"zero_stage": zero_stage, "optimizer_offload": "none", "activation_checkpointing": checkpointing,
            "sp_degree": 1, "micro_batch": micro_batch, "nodes": 1, "power_limit": power_limit, "sm_clock_mhz": "max"}


# Four recorded probes of the tiny model: trial 0 is the baseline (8 s), the fastest (6 s) was also probed at a
# 0.9 power limit, so the report draws its power-limit sweep. No record has an energy figure.
BASELINE, FASTEST, FASTEST_AT_09, SLOWEST = (knobs(2, "none", 1), knobs(1, "recompute", 2),
                                             knobs(1, "recompute", 2, 0.9), knobs(3, "none", 1))
TIMES_S = ((BASELINE, 8.0), (FASTEST, 6.0), (FASTEST_AT_09, 6.5), (SLOWEST, 9.0))


def write_measurements(path, energies_kj=None):
    """A replay file of TIMES_S; `energies_kj` {index: kJ} gives those records an estimated energy."""
    with path.open("w") as out:
        for index, (params, time_s) in enumerate(TIMES_S):
            record = {"params": params, "status": "ok", "time_s": time_s, "tflops": 1.0}
            if index in (energies_kj or {}):
                record.update(energy_kj=energies_kj[index], source="estimated")
            out.write(json.dumps(record) + "\n")
    return path


def replayed(tmp_path, *flags, energies_kj=None):
    measurements = write_measurements(tmp_path / "measurements.jsonl", energies_kj)
    out = tmp_path / "run"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--backend", "replay", "--measurements", measurements,
                         "--trials", "4", "--out", out, *flags)
    return out, done


def said(text: str) -> str:
    return " ".join(text.split())  # rich wraps lines at its width


def zero_energy(text: str) -> list[str]:
    """Energies that read as zero: `0 J`, `0 kJ`, `0.0 kWh`."""
    return re.findall(r"(?<![\d.])0(?:\.0+)? (?:J|kJ|kWh|MWh)\b", text)


@pytest.fixture(scope="module")
def no_energy_run(tmp_path_factory):
    out, done = replayed(tmp_path_factory.mktemp("no-energy"), "--objectives", "time")
    assert done.returncode == 0, done.stderr
    return out, done


def test_trials_without_energy_are_the_points_of_a_time_only_study(no_energy_run):
    out, done = no_energy_run
    document = json.loads((out / "pareto.json").read_text())
    assert document["trials_by_status"] == {"ok": 4}
    assert len(document["feasible"]) == 4 and all(p["energy_kj"] is None and p["tflop_per_kj"] is None
                                                  and p["energy_source"] == "unavailable" for p in document["feasible"])
    assert (document["source"], document["energy_source"]) == ("measured", "unavailable")
    assert [p["params"] for p in document["front"]] == [FASTEST]
    fastest = document["front"][0]["trial"]
    assert document["recommendations"] == {"fastest": fastest}
    [pick] = document["picks"]
    assert pick["time_change_pct"] == pytest.approx(-25.0)  # 6 s against the baseline's 8 s
    assert pick["energy_saved_pct"] is None and pick["tflop_per_kj_change_pct"] is None
    assert "Energy is unavailable" in document["note"] and "no energy pick" in document["note"]
    [payback] = document["tuning_cost"]["payback"]
    assert payback["saved_kj_per_training_hour"] is None and "energy is unavailable" in payback["text"]

    printed = said(done.stdout)
    assert "No feasible configuration" not in printed and "time is measured, energy is unavailable" in printed
    assert "Fastest (ranked by time only; energy unavailable" in printed
    assert "6.00 s, energy unavailable" in printed and "energy unavailable, 25.0% less time, TFLOP/kJ unavailable" in printed
    assert "0.9 (612 W): trial" in printed and "(energy unavailable, 8.3% more time)" in printed  # the power-limit sweep
    # The search outlook predicts time alone: the model's unprobed candidates carry no energy either.
    assert document["search"]["unfinished"]["exhausted"] and document["predicted"]
    assert all(p["energy_kj"] is None for p in document["predicted"]) and "search: predicted, not probed" in printed
    assert not zero_energy(printed), zero_energy(printed)


def test_report_html_and_markdown_say_unavailable_where_energy_would_be(no_energy_run):
    out, _ = no_energy_run
    html = (out / "report.html").read_text()
    assert "Time to solution of every evaluated trial (measured time; energy unavailable)" in html
    assert "No trial has figures to plot" not in html and html.count('class="marker ') == 4
    trials = html[html.index('<section id="trials">'):]
    # Every trial's row: its time, then its energy as unavailable (a blank cell there read as 0).
    assert trials.count("<td>unavailable</td>") == 4 and "<td></td><td></td>" not in trials
    assert "Energy unavailable for this trial" in html
    sweep = html[html.index('<section id="power-limit">'):html.index("</section>", html.index('<section id="power-limit">'))]
    assert "energy to solution" not in sweep and "time to solution" in sweep and "<td>unavailable</td>" in sweep
    assert not zero_energy(re.sub(r"<[^>]+>", " ", html))

    markdown = autotune_main("report", out, "--format", "md")
    assert markdown.returncode == 0, markdown.stderr
    front_row = next(line for line in markdown.stdout.splitlines() if line.endswith("| fastest |"))
    assert "| unavailable |" in front_row
    assert "energy unavailable, 25.0% less time, TFLOP/kJ unavailable" in markdown.stdout


def test_an_energy_column_with_no_figure_names_no_unit(no_energy_run):
    # trial60 #10: "energy kJ" over "unavailable" cells, a unit chosen from no figure at all.
    out, done = no_energy_run
    html = (out / "report.html").read_text()
    markdown = autotune_main("report", out, "--format", "md").stdout
    header = next(line for line in markdown.splitlines() if line.startswith("| trial |"))
    assert "| energy |" in header, header
    assert "<th>energy</th>" in html and not re.search(r"<th>energy (m?J|kJ|kWh)", html)
    assert " energy " in said(done.stdout) and not re.search(r"energy (m?J|kJ|kWh) ?┃", done.stdout)


def test_export_writes_the_fastest_and_refuses_energy_picks_for_want_of_energy(no_energy_run, tmp_path):
    out, _ = no_energy_run
    config = json.loads((out / "configs" / "fastest.json").read_text())
    assert config["autotune"]["energy_to_solution_kj"] is None and config["autotune"]["energy_source"] == "unavailable"
    assert config["autotune"]["candidate"] == FASTEST
    assert config["autotune"]["on_front"] is None and config["autotune"]["beaten_by"] == []  # no energy ranking
    # Named as configs/ names it: the config keeps the SHA-256 of the two files beside it, which name it
    exported = autotune_main("export", out, "-o", tmp_path / "fastest.json")  # no --pick: the default
    assert exported.returncode == 0, exported.stderr
    assert json.loads((tmp_path / "fastest.json").read_text()) == config
    for pick in ("knee", "min-energy", "max-slowdown", "cost-weighted"):
        refused = autotune_main("export", out, "--pick", pick, "-o", tmp_path / f"{pick}.json")
        assert refused.returncode == 2 and "has no energy figure (unavailable" in refused.stderr, refused.stderr
        assert "--pick fastest" in refused.stderr and not (tmp_path / f"{pick}.json").exists()


def test_some_trials_with_estimated_energy_and_some_without(tmp_path):
    """The fastest has an estimated energy, the baseline none: the pick's saving cannot be stated, and the plot
    of time against energy leaves out (and counts) the trials it cannot place."""
    out, done = replayed(tmp_path, "--objectives", "time", energies_kj={1: 4.0, 3: 6.0})  # 167 W per GPU each, above gh200's 150 W at rest
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert document["energy_source"] == ["estimated", "unavailable"]
    assert [p["params"] for p in document["front"]] == [FASTEST] and document["front"][0]["energy_kj"] == 4.0
    assert document["picks"][0]["energy_saved_pct"] is None
    assert "unavailable for 2 of them" in document["note"]
    printed = said(done.stdout)
    assert "6.00 s, 4.00 kJ (estimated; against baseline trial 0, its time measured, energy unavailable: energy unavailable, 25.0% less time" in printed
    # Trial60 #3: the baseline's line said "energy unavailable" twice, its figures' and its kinds'.
    assert "8.00 s, energy unavailable, time measured fastest:" in printed
    assert "the baseline's (trial 0) energy is unavailable" in printed
    html = (out / "report.html").read_text()
    assert "2 trials with a time but energy unavailable" in html and html.count('class="marker ') == 2
    trials = html[html.index('<section id="trials">'):]
    # Mixed labels: each estimate says so in its cell, and the header does not call the unavailable ones estimated.
    assert "energy J (estimated)" not in trials and "<td>4.00 (estimated)</td>" in trials


def test_a_two_objective_replay_of_records_without_energy_is_refused_before_the_study_opens(tmp_path):
    """Trial60 #4: such a replay ran its probes, stopped saying they "all failed or timed out" (nothing had), and
    sent the user to run the same command again, which --objectives time then could not resume (a study ranked by
    energy too). It is one line now, naming --objectives time, and leaves no run directory behind."""
    out, done = replayed(tmp_path)
    [refusal] = [line for line in done.stderr.splitlines() if line.startswith("autotune run: error:")]
    assert done.returncode == 2 and done.stderr.rstrip().endswith(refusal), done.stderr  # the last line, after warnings
    assert "no record has an energy figure" in refusal and "--objectives time" in refusal
    assert not (out / "study.db").exists()