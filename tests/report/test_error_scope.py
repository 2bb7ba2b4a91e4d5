"""A stated simulator error holds for the configurations it was measured on (the scope note `calibrate -o`
writes, gh200's: power limit 1.0 alone). Outside them a figure shows "+- ?%", ties nothing and marks no change
as within the error, in every output; inside them it reads as before."""

import html
import io
import json

import pytest
from rich.console import Console

from autotune.cli import main
from autotune.commands.finish import build_report
from autotune.report.error_scope import outside_scope, scope_note, scope_values
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.study import load_finished_study

GH200_SCOPE = ("7b/32b/72b with ZeRO 3, optimizer offload async/none/sync, checkpointing offload_async/offload_sync/"
               "recompute, SP 1, micro-batch 1/2/4/8, nodes 1/2/4/8/16, GPUs 4/8/16/32/64, power limit 1.0, SM clock max")


def test_the_scope_reads_back_as_calibrate_writes_it():
    from autotune.hardware import load_hardware
    from autotune.models import load_model
    from autotune.space.enumerate import enumerate_space
    from autotune.space.files import load_space
    from autotune.workload import make_workload

    model = load_model("7b")
    checks = enumerate_space(load_space(None, (1, 2)), model, load_hardware("gh200"), make_workload(model))
    candidates = [check.candidate for _, check in zip(range(40), checks)][::7]
    scope = scope_values(scope_note(candidates).removeprefix("error measured on "))
    assert scope["model"] == ["7b"] and all(outside_scope(scope, "7b", c.knobs.to_dict()) == [] for c in candidates)
    assert scope_values("a hand-written note") is None  # not scope_note's words: no figure is judged by it
    assert scope_values("7b with ZeRO 3, colour blue") is None


def test_a_configuration_outside_the_scope_names_what_lies_outside():
    scope = scope_values(GH200_SCOPE)
    inside = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
              "micro_batch": 4, "nodes": 4, "power_limit": 1, "sm_clock_mhz": "max"}
    assert outside_scope(scope, "32b", inside) == []  # 1 and "1.0" are one power limit
    assert outside_scope(scope, "14b", {**inside, "sp_degree": 2, "power_limit": 0.7}) == [
        "model 14b", "SP 2", "power limit 0.7"]
    # A record from before the knob existed names no power limit: not counted against it.
    assert outside_scope(scope, "32b", {k: v for k, v in inside.items() if k != "power_limit"}) == []
    # A cap at the device's highest clock is the clock `max` is (a newcomer's trial: 1980 on gh200 showed "+- ?%").
    assert outside_scope(scope, "32b", {**inside, "sm_clock_mhz": 1980}, max_clock_mhz=1980) == []
    assert outside_scope(scope, "32b", {**inside, "sm_clock_mhz": 1500}, max_clock_mhz=1980) == ["SM clock 1500"]
    # All nodes' GPUs, a list of its own as the node counts are: one node of 2 (--gpus-per-node 2) was not measured.
    assert outside_scope(scope, "32b", inside, gpus=16) == []
    assert outside_scope(scope, "32b", {**inside, "nodes": 1}, gpus=2) == ["GPUs 2"]


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """The README's first command: 32b on 4 gh200 nodes, simulated; its front holds power-limit variants."""
    out = tmp_path_factory.mktemp("scope") / "run"
    assert main(["run", "--model", "32b", "--nodes", "4", "--out", str(out)]) == 0
    return out


def test_power_limited_figures_show_an_unknown_error_in_every_output(default_run):
    view, document = build_report(load_finished_study(default_run))
    outside = document["simulator_error"]["extrapolated"]
    limited = {p.trial for p in view.points if p.params["power_limit"] != 1.0}
    assert limited and set(map(int, outside)) == limited
    assert all(words == [f"power limit {view.point(t).params['power_limit']}"] for t, words in
               ((int(k), v) for k, v in outside.items()))
    assert json.loads((default_run / "pareto.json").read_text())["simulator_error"] == document["simulator_error"]

    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    text = terminal.getvalue()
    md = markdown_report(view, document)
    page = (default_run / "report.html").read_text()
    for point in view.front:
        row = next(line for line in text.splitlines() if line.startswith("│") and line.split("│")[1].strip() == str(point.trial))
        md_row = next(line for line in md.splitlines() if line.startswith(f"| {point.trial} |"))
        for shown in (row, md_row):
            assert ("+- ?%" in shown) == (point.trial in limited), shown
    assert "+- ?%" in page
    # Said once, before the table, of the picks (trial57 #3): not at the end of the error sentence as well.
    outside = "lie where the simulator's error was not measured (power limit 0.7/0.8/0.9): their error is unknown (+- ?%)"
    assert outside in " ".join(text.split())
    assert outside in md and outside in html.unescape(page)
    assert "(power limit 0.7/0.8/0.9) show +- ?%" not in " ".join(text.split())

    for pick in document["picks"]:
        if pick["trial"] in limited:
            line = next(line for line in text.splitlines() if f": trial {pick['trial']}," in line)
            assert "min +- ?%" in line and "+- 3.4%" not in line, line
            assert pick["tied_with"] == [] and pick["within_simulator_error"] == []
        assert not set(pick["tied_with"]) & limited  # an error not measured ties nothing


def test_the_space_listing_marks_the_rows_outside_the_scope(capsys):
    assert main(["space", "--model", "32b", "--nodes", "4", "--simulate", "--valid"]) == 0
    captured = capsys.readouterr()
    assert "The rows outside it show +- ?%" in captured.err
    rows = [line.split("│") for line in captured.out.splitlines() if line.startswith("│")]
    assert {row[7].strip() for row in rows} == {"1.0", "0.9", "0.8", "0.7"}
    for row in rows:
        zero, _, checkpointing, sp, micro_batch, _, power_limit = (cell.strip() for cell in row[1:8])
        # gh200's [error_measured_on]: 32b's own micro-batches 2 and 4 (trial72 #3: 1 and 8 were measured on 72b and 7b)
        measured_on = (zero == "3" and checkpointing != "none" and sp == "1" and power_limit == "1.0"
                       and micro_batch in ("2", "4"))
        assert all(("+- ?%" in cell) != measured_on for cell in row[-4:-1]), row
    assert any("+- ?%" not in row[-2] for row in rows)
