"""A newcomer's trial: no table showed the SM clock cap, so the least-energy pick, capped at 1500 MHz, read in the
terminal, markdown and HTML tables as the same configuration as the fastest, with other figures."""

import io

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import KNOB_COLUMNS, SM_CLOCK_COLUMN, knob_columns, print_report
from autotune.study import load_finished_study
from tests.cli import autotune_main

# One configuration at two clocks, and the default space's own device knobs left as they are.
SPACE = """zero_stage = [3]
optimizer_offload = ["async"]
activation_checkpointing = ["recompute"]
sp_degree = [1]
micro_batch = [4]
power_limit = [1.0]
sm_clock_mhz = ["max", 1500]
"""


def test_the_clock_column_is_there_exactly_where_a_trial_caps_the_clock():
    assert knob_columns([{"sm_clock_mhz": "max"}, {}]) == KNOB_COLUMNS  # untouched, or a study from before the knob
    assert knob_columns([{"sm_clock_mhz": "max"}, {"sm_clock_mhz": 1500}]) == KNOB_COLUMNS + (SM_CLOCK_COLUMN,)


def test_every_table_of_a_study_with_a_capped_trial_shows_the_cap(tmp_path):
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    run = autotune_main("run", "--model", "32b", "--nodes", "4", "--space", space, "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    view, document = build_report(load_finished_study(tmp_path / "run"))
    assert {p.params["sm_clock_mhz"] for p in view.front} == {"max", 1500}  # both on the front: the two rows to tell apart
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=400))
    assert "SM clock MHz" in terminal.getvalue()
    markdown = markdown_report(view, document)
    header = next(line for line in markdown.splitlines() if line.startswith("| trial |"))
    assert "| power limit (x 680 W) | SM clock MHz |" in header
    assert any(line.startswith("| ") and "| 1.0 | 1500 |" in line for line in markdown.splitlines()), markdown
    assert "<th>SM clock MHz</th>" in (tmp_path / "run" / "report.html").read_text()
    listed = autotune_main("space", "--model", "32b", "--nodes", "4", "--space", space, "--valid")
    assert "SM clock MHz" in listed.stdout
    # trial59 #18: the power limit column says what its fractions are of, as the run's tables do.
    assert "680 W)" in listed.stdout  # "power limit (x 680 W)", wrapped as the terminal fits it
