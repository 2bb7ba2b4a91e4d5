"""pareto.json, the terminal table, Markdown and `autotune report --format/--html` on finished runs,
including runs with one feasible point and none."""

import io
import json

import pytest
from rich.console import Console

from autotune.cli import main
from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.picks import pick_label
from autotune.report.table import print_report
from autotune.study import load_finished_study

EXISTING_KEYS = ("model", "nodes", "gpus", "hardware", "backend", "source", "trials", "front", "recommendations")


def _document(run_dir):
    return json.loads((run_dir / "pareto.json").read_text())


def _terminal(run_dir) -> str:
    view, document = build_report(load_finished_study(run_dir))
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=260))  # a pick line with its limit in watts, whole
    return out.getvalue()


def test_report_json_is_every_key_of_pareto_json_and_takes_the_json_flag_the_other_commands_take(tmp_path, capsys):
    """Trial 37 F11: `report --json` was refused where space, sensors and calibrate take it; `storage` was left out
    of a pareto.json whose study is the directory's own study.db (README lists it among the keys)."""
    out = tmp_path / "run"
    assert main(["run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["storage"] is None and printed == _document(out)


def test_pareto_json_picks_and_parameters(simulated_run):
    doc = _document(simulated_run)
    assert all(key in doc for key in EXISTING_KEYS)
    assert set(doc["recommendations"]) == {"fastest", "min_energy", "knee", "max_slowdown", "cost_weighted"}
    assert doc["recommendation_parameters"] == {"max_slowdown": 1.05, "eta": 0.5, "max_power_per_gpu_w": 680.0}
    assert [row["name"] for row in doc["picks"]] == list(doc["recommendations"])
    fastest_time = min(p["time_s"] for p in doc["front"])
    by_trial = {p["trial"]: p for p in doc["feasible"]}
    assert by_trial[doc["recommendations"]["max_slowdown"]]["time_s"] <= 1.05 * fastest_time
    base = by_trial[doc["baseline"]]
    for row in doc["picks"]:
        point = by_trial[row["trial"]]
        assert row["energy_saved_pct"] == pytest.approx(100 * (1 - point["energy_kj"] / base["energy_kj"]))
        assert row["time_change_pct"] == pytest.approx(100 * (point["time_s"] / base["time_s"] - 1))
        assert row["tflop_per_kj_change_pct"] == pytest.approx(100 * (point["tflop_per_kj"] / base["tflop_per_kj"] - 1))
    for stem in ("fastest", "min-energy", "knee", "max-slowdown", "cost-weighted"):
        assert (simulated_run / "configs" / f"{stem}.json").is_file()
    # A trade-off: no note, but for a front of two points, which has no knee (trial54 F5).
    assert doc["note"] is None if len(doc["front"]) != 2 else doc["note"].startswith("The front holds two configurations")


def test_single_feasible_point_says_so_everywhere(single_point_run):
    doc = _document(single_point_run)
    assert len(doc["feasible"]) == 1 and doc["trials_by_status"]["oom"] == 3
    assert set(doc["recommendations"].values()) == {doc["feasible"][0]["trial"]}
    assert doc["note"].startswith("Only one feasible configuration")
    assert "Only one feasible configuration" in _terminal(single_point_run)
    assert "Only one feasible configuration" in (single_point_run / "report.html").read_text()


def test_no_feasible_point_says_so_everywhere(infeasible_run):
    doc = _document(infeasible_run)
    assert doc["front"] == [] and doc["recommendations"] == {} and doc["picks"] == []
    assert doc["note"].startswith("No feasible configuration") and "oom" in doc["note"]
    terminal = _terminal(infeasible_run)
    assert "No feasible configuration" in terminal and "Pareto front" not in terminal.split("\n", 2)[2]
    # No figures at all: the header says so, instead of "time is none, energy is none".
    assert "no trial has time or energy figures yet" in terminal.splitlines()[0] and "is none" not in terminal
    html = (infeasible_run / "report.html").read_text()
    assert "No feasible configuration" in html and "status-oom" in html and "status-failed" in html
    assert not (infeasible_run / "configs").exists()


def test_report_format_table(simulated_run, capsys):
    assert main(["report", str(simulated_run)]) == 0
    out = capsys.readouterr().out
    assert "Pareto front" in out and "max-slowdown (least energy within 5% of fastest)" in out and "cost-weighted (eta 0.5)" in out


def test_report_format_json_is_the_pareto_document(simulated_run, capsys):
    assert main(["report", str(simulated_run), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == _document(simulated_run)


def test_report_format_md(simulated_run, capsys):
    assert main(["report", str(simulated_run), "--format", "md"]) == 0
    md = capsys.readouterr().out
    doc = _document(simulated_run)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(doc["front"])  # header, alignment row, one row per front point
    assert all(line.count("|") == table[0].count("|") for line in table)
    assert "**Picks** (vs baseline trial" in md and md.count("\n- **") == len(doc["picks"])
    assert "simulated by the analytic model" in md


def test_report_options_change_the_picks_and_every_file_follows(simulated_run, capsys):
    assert main(["report", str(simulated_run), "--format", "json", "--eta", "1", "--max-slowdown", "100"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["recommendations"]["cost_weighted"] == doc["recommendations"]["min_energy"]  # eta 1: energy only
    assert doc["recommendations"]["max_slowdown"] == doc["recommendations"]["min_energy"]
    assert _document(simulated_run) == doc and "was out of date: rewrote pareto.json" in err
    exported = json.loads((simulated_run / "configs" / "max-slowdown.json").read_text())
    assert exported["autotune"]["trial"] == doc["recommendations"]["max_slowdown"]
    assert "eta 1" in (simulated_run / "report.html").read_text()
    # Kept: a later report and `export --pick` choose what pareto.json and configs/ now name.
    assert main(["report", str(simulated_run)]) == 0 and "out of date" not in capsys.readouterr().err
    (simulated_run / "configs" / "max-slowdown.json").unlink()
    assert main(["export", str(simulated_run), "--pick", "max-slowdown"]) == 0
    exported = json.loads((simulated_run / "configs" / "max-slowdown.json").read_text())
    assert exported["autotune"]["trial"] == doc["recommendations"]["max_slowdown"]
    assert main(["report", str(simulated_run), "--eta", "0.5", "--max-slowdown", "1.05"]) == 0  # the run's own, for the other tests
    assert "out of date" in capsys.readouterr().err and _document(simulated_run)["recommendation_parameters"]["eta"] == 0.5


@pytest.mark.parametrize("damage", ["{ half a docu", "", "\x00\xff\xfe"])
def test_a_damaged_pareto_json_is_rebuilt_with_every_output_and_said_so(tmp_path, simulated_run, capsys, damage):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(simulated_run, run)
    (run / "pareto.json").write_bytes(damage.encode("latin-1"))
    (run / "configs" / "knee.json").write_text("{")  # a damaged config too: rewritten with the rest
    assert main(["report", str(run), "--format", "md"]) == 0
    err = capsys.readouterr().err
    assert "pareto.json in" in err and "was damaged" in err and "rebuilt pareto.json, configs/, report.html" in err
    doc = _document(run)  # valid again, and the same document the report showed
    assert doc == build_report(load_finished_study(run))[1]
    assert json.loads((run / "configs" / "knee.json").read_text())["autotune"]["trial"] == doc["recommendations"]["knee"]
    assert not list(run.glob(".*.tmp")) and not list((run / "configs").glob(".*.tmp"))
    assert main(["report", str(run)]) == 0 and "pareto.json" not in capsys.readouterr().err  # in step: nothing to say


def test_reports_state_the_workload_and_use_plain_words(simulated_run):
    doc = _document(simulated_run)
    assert doc["workload"]["precision"] == "bf16"  # what the candidates ran (GH200: bf16), never null
    view, document = build_report(load_finished_study(simulated_run))
    for text in (_terminal(simulated_run), markdown_report(view, document), (simulated_run / "report.html").read_text()):
        assert "Workload held fixed for every trial" in text and "bf16 precision" in text
        assert f"global batch {doc['workload']['global_batch']}" in text
        assert "repaid never" not in text
    for text in (_terminal(simulated_run), markdown_report(view, document)):  # the page quotes configs' JSON
        assert "time_to_solution_s" not in text and "energy_to_solution_kj" not in text
    assert "knobs that mattered for time to solution" in _terminal(simulated_run)


def test_every_report_names_each_pick_as_export_takes_it(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    md = markdown_report(view, document)
    terminal = _terminal(simulated_run)
    html = (simulated_run / "report.html").read_text()
    for stem in ("fastest", "min-energy (least energy)", "knee", "max-slowdown (least energy", "cost-weighted (eta"):
        assert stem in md and stem in terminal and stem in html


def test_report_markdown_escapes_pipes(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    document = {**document, "model": "a|b"}
    assert "a\\|b" in markdown_report(view, document)


@pytest.mark.parametrize("flags", [["--json", "--format", "md"], ["--format", "md", "--json"],
                                   ["--format", "table", "--json"]])
def test_two_output_formats_are_refused_in_one_line(simulated_run, capsys, flags):
    """trial78 #6: --json with --format md printed whichever came last, without a word."""
    with pytest.raises(SystemExit) as stopped:
        main(["report", str(simulated_run), *flags])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and len(err.splitlines()) == 1, err
    assert "not allowed with argument" in err and "--json" in err and "--format" in err


@pytest.mark.parametrize(("option", "value"), [
    ("--max-slowdown", "0.5"), ("--max-slowdown", "nan"), ("--max-slowdown", "inf"), ("--max-slowdown", "1.05x"),
    ("--eta", "-0.1"), ("--eta", "1.5"), ("--eta", "nan"),
])
def test_bad_pick_options_exit_2(simulated_run, capsys, option, value):
    """Checked where the flag is read: argparse's one line and exit 2, before any report is rewritten."""
    before = (simulated_run / "pareto.json").read_bytes()
    with pytest.raises(SystemExit) as stopped:
        main(["report", str(simulated_run), option, value])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith(f"autotune report: error: argument {option}: ") and len(err.splitlines()) == 1
    assert (simulated_run / "pareto.json").read_bytes() == before


def test_report_html_option_writes_the_page(simulated_run, capsys):
    page = simulated_run / "report.html"
    page.unlink()
    assert main(["report", str(simulated_run), "--html", "--format", "md"]) == 0
    assert page.is_file() and "wrote" in capsys.readouterr().err


def test_only_simulated_figures_carry_the_simulators_error_bar(tmp_path, capsys):
    """A replayed file of measured and simulated records: the measured figures are given bare, in the
    pick lines too (which before gave a measured study's picks no figures at all)."""
    assert main(["space", "--model", "7b", "--nodes", "1", "--simulate", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    valid = [entry for entry in listed if entry["valid"]]
    for number, entry in enumerate(valid):
        entry["source"] = "measured" if number % 2 else "simulated"
    measured = tmp_path / "mixed.json"
    measured.write_text(json.dumps(valid))
    out = tmp_path / "run"
    assert main(["run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", str(measured),
                 "--out", str(out), "--trials", "12"]) == 0
    capsys.readouterr()
    view, document = build_report(load_finished_study(out))
    sources = {p.source for p in view.front}
    assert sources == {"measured", "simulated"}, sources  # the case under test: a front of both
    text = _terminal(out)
    header = next(line for line in text.splitlines() if "time min" in line)
    assert "+-" not in header
    for row in document["picks"]:
        p = view.point(row["trial"])
        line = next(line for line in text.splitlines() if line.startswith(pick_label(row["name"], view.pick_parameters) + ":"))
        # Simulated: the stated error, or "+- ?%" where the configuration lies outside what it was measured on.
        bar = " min +- ?%" if str(p.trial) in document["simulator_error"]["extrapolated"] else " min +- 3.4%"
        assert (bar in line) == (p.source == "simulated") and " min" in line, line
    assert main(["report", str(out), "--format", "md"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "+-" in line]
    assert {int(row.split("|")[1]) for row in rows} == {p.trial for p in view.front if p.source == "simulated"}


def _replayed_run(tmp_path, capsys, source_of) -> tuple:
    """A replay of 7b on 1 node whose records' sources are `source_of(number)`, its energy ranked though estimated."""
    assert main(["space", "--model", "7b", "--nodes", "1", "--simulate", "--json"]) == 0
    valid = [entry for entry in json.loads(capsys.readouterr().out) if entry["valid"]]
    for number, entry in enumerate(valid):
        entry["source"] = source_of(number)
    (tmp_path / "m.json").write_text(json.dumps(valid))
    out = tmp_path / "run"
    assert main(["run", "--model", "7b", "--nodes", "1", "--backend", "replay", "--measurements", str(tmp_path / "m.json"),
                 "--out", str(out), "--trials", "12", "--allow-estimated-energy"]) == 0
    capsys.readouterr()
    return out, *build_report(load_finished_study(out))


def _cells(html: str, table_class: str) -> list[list[str]]:
    import re
    from html import unescape

    body = re.search(rf'<table class="{table_class}">(.*?)</table>', html, re.S).group(1)
    return [[unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def test_an_estimated_energy_says_so_in_every_table_and_on_the_plot(tmp_path, capsys):
    """Measured and estimated records mixed: each estimated energy is marked where it stands, and so is each
    saving against the (estimated) baseline; the plot's energy axis names its sources."""
    out, view, document = _replayed_run(tmp_path, capsys, lambda number: "estimated" if number % 3 else "measured")
    estimated = {p.trial for p in view.front if p.energy_source == "estimated"}
    assert estimated and estimated != {p.trial for p in view.front}  # the case under test: a front of both
    assert view.point(view.baseline_trial).energy_source == "estimated"
    text = _terminal(out)
    for p in view.front:  # the front table: a row per point, its trial first
        row = next(line for line in text.splitlines() if line.startswith(f"│ {p.trial:>5} │"))
        assert ("(estimated)" in row) == (p.trial in estimated), row
    savings = [line for line in text.splitlines() if "% less energy" in line and "against baseline trial" in line]  # pick lines
    assert savings and all("% less energy (estimated)" in line for line in savings)
    assert main(["report", str(out), "--format", "md"]) == 0
    md = capsys.readouterr().out
    for p in view.front:
        row = next(line for line in md.splitlines() if line.startswith(f"| {p.trial} |"))
        assert ("(estimated)" in row) == (p.trial in estimated), row
    picked = [line for line in md.splitlines() if line.startswith("- **") and "% less energy" in line]
    assert picked and all("(estimated)" in line for line in picked), picked
    html = (out / "report.html").read_text()
    picks = _cells(html, "picks")
    saved = picks[0].index("energy change")
    assert all(row[saved].endswith("(estimated)") for row in picks[1:] if not row[saved].endswith("n/a")), picks
    payback = _cells(html, "payback")
    assert all("(estimated) per run of the workload" in row[2] for row in payback[1:]), payback  # the terminal's words
    trials = _cells(html, "trials")
    energy = next(i for i, title in enumerate(trials[0]) if title.startswith("energy"))
    marked = {int(row[0]) for row in trials[1:] if row[energy].endswith("(estimated)")}
    assert marked == {r["trial"] for r in view.trials if r.get("energy_source") == "estimated" and r.get("time_s") is not None}
    assert "energy to solution (kJ, estimated and measured)" in html and "time to solution (min)" in html


def test_a_column_of_estimates_says_so_once_in_its_header(tmp_path, capsys):
    out, view, _ = _replayed_run(tmp_path, capsys, lambda number: "estimated")
    text = _terminal(out)
    header = next(line for line in text.splitlines() if "time min" in line)
    assert "energy kJ (estimated)" in " ".join(header.split()), header
    assert not [line for line in text.splitlines() if line.startswith("│") and "(estimated)" in line]
    assert "energy to solution (kJ, estimated)" in (out / "report.html").read_text()


@pytest.fixture
def read_only_run(tmp_path, simulated_run):
    """A copy of a finished run that nobody may write in (tests/read_only.py)."""
    import shutil

    from tests.read_only import read_only_view

    run = tmp_path / "run"
    shutil.copytree(simulated_run, run)
    with read_only_view(run, tmp_path, also=(run / "configs",)) as view:
        yield view


def test_a_read_only_run_directory_is_reported_and_left_as_it_was(read_only_run, capsys):
    """A colleague's run on a read-only file system: the report is shown, one line says nothing was
    written, and --html (which must write) is refused in one line."""
    before = {p.relative_to(read_only_run): p.read_bytes() for p in read_only_run.rglob("*") if p.is_file()}
    assert main(["report", str(read_only_run), "--eta", "1"]) == 0
    out, err = capsys.readouterr()
    assert "backend simulate" in out and "min-energy" in out
    lines = [line for line in err.splitlines() if line]
    assert len(lines) == 1 and "cannot write in" in lines[0] and "the report is shown, and pareto.json" in lines[0]
    assert "--eta 1 picked this report only, not kept in the study" in lines[0]  # the README says they are kept
    assert {p.relative_to(read_only_run): p.read_bytes() for p in read_only_run.rglob("*") if p.is_file()} == before
    assert main(["report", str(read_only_run), "--html"]) == 2
    assert "drop --html or copy the run directory" in capsys.readouterr().err
    from autotune.atomic_write import write_text_atomic
    from autotune.errors import UserError

    with pytest.raises(UserError, match="cannot write"):  # the clean-up of its temporary file is refused too
        write_text_atomic(read_only_run / "pareto.json", "{}")


def test_the_markdown_report_says_how_the_search_ended(tmp_path, capsys):
    """Trial 39 #9: `report --format md` (for an issue) said nothing of whether the study converged, where the
    terminal and the page did."""
    out = tmp_path / "run"
    assert main(["run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--format", "md"]) == 0
    markdown = capsys.readouterr().out
    assert "**Search**" in markdown and "- not converged: stopped after 3 probes while" in markdown


def test_a_pareto_json_nested_too_deeply_reads_as_damaged(tmp_path):
    """Trial 41: a few KB of [[[...]]] ended `report` in a RecursionError traceback; damaged, it is rebuilt as above."""
    from autotune.commands.finish import pareto_json_state

    path = tmp_path / "pareto.json"
    path.write_text("[" * 3000 + "]" * 3000)
    assert pareto_json_state(path, {}).startswith("damaged (RecursionError: maximum recursion depth exceeded")


def test_a_read_only_study_db_in_a_writable_directory_is_reported_and_its_picks_left_as_they_were(simulated_run, tmp_path,
                                                                                                  capsys):
    """Trial 45 #7: `report --eta` on a study.db the user cannot write (a colleague's, shared 0644) blamed a run
    directory "moved or deleted while the command ran" and showed no report."""
    import shutil

    from autotune.study import load_finished_study
    from tests.read_only import read_only_file

    run = tmp_path / "run"
    shutil.copytree(simulated_run, run)
    before = {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    kept = load_finished_study(run).user_attrs.get("pick_parameters")
    with read_only_file(run / "study.db"):
        assert main(["report", str(run), "--eta", "0.2", "--max-slowdown", "1.3"]) == 0
    out, err = capsys.readouterr()
    assert "min-energy" in out and "cost-weighted (eta 0.2)" in out
    lines = [line for line in err.splitlines() if line]
    assert len(lines) == 1 and "its study database cannot be written (read-only: study.db)" in lines[0]
    assert "--max-slowdown 1.3 and --eta 0.2 picked this report only, not kept in the study" in lines[0]
    assert {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert load_finished_study(run).user_attrs.get("pick_parameters") == kept


def test_export_takes_a_pick_as_pareto_json_names_it(simulated_run, tmp_path):
    """Trial 48 §3: `export --pick min_energy`, the key `jq` shows in pareto.json, was an invalid choice."""
    doc = _document(simulated_run)
    for name in ("min_energy", "min-energy"):
        out = tmp_path / f"{name}.json"
        assert main(["export", str(simulated_run), "--pick", name, "-o", str(out)]) == 0
        assert json.loads(out.read_text())["autotune"]["trial"] == doc["recommendations"]["min_energy"]


def test_every_pick_is_defined_and_the_eta_help_says_gpu_time():
    """Trial 49 #3, #4: `knee` was defined nowhere, and --eta's help said 0 = time only where, across node counts,
    the cost's second term is GPU time (max power per GPU x GPUs x time)."""
    from autotune.commands.report import add_pick_options
    from autotune.report.picks import PickParameters, pick_definitions

    said = pick_definitions(PickParameters(1.1, 0.25, 680.0), ["fastest", "min_energy", "knee", "max_slowdown", "cost_weighted"])
    assert [line.split(":")[0] for line in said] == ["fastest", "min-energy", "knee", "max-slowdown", "cost-weighted"]
    assert "at most 1.1 x the fastest" in said[3] and "eta 0.25" in said[4] and "farthest below the straight line" in said[2]
    assert pick_definitions(PickParameters(), ["fastest"]) == ["fastest: the least time to solution"]
    import argparse

    parser = argparse.ArgumentParser()
    add_pick_options(parser)
    eta = next(a for a in parser._actions if "--eta" in a.option_strings)
    assert "0 = GPU time only" in eta.help and "0 = time only" not in eta.help
