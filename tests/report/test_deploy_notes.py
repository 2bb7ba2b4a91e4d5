"""Every report says what deploying a pick needs beyond its DeepSpeed config from one source
(deploy_notes.deployment_notes): the terminal said none of it (what `autotune run` and `autotune report` print), while
report.md and report.html each had their own code for it. The terminal says each note once, under the picks that
need it, wrapped under its own dash at 80 columns and on one line into a pipe."""

from __future__ import annotations

import io
import re
from html import unescape

import pytest
from rich.console import Console

from autotune.commands.finish import build_report
from autotune.commands.options import settings_for
from autotune.report.deploy_notes import deployment_notes, grouped_notes, pick_deployment_notes
from autotune.report.markdown import markdown_report
from autotune.report.picks import PICK_FILES, picks_by_trial
from autotune.report.table import print_report
from autotune.study import load_finished_study


def _terminal(view, document, width: int, terminal: bool) -> str:
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=width, force_terminal=terminal, color_system=None,
                                         soft_wrap=not terminal))  # as stdout_console makes it for a pipe
    return out.getvalue()


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def report(simulated_run):
    return build_report(load_finished_study(simulated_run))


def test_the_terminal_says_each_picks_notes_once_under_the_picks_that_need_them(report):
    view, document = report
    shown = _terminal(view, document, 80, terminal=True)
    assert max(len(line) for line in shown.splitlines()) <= 80
    deploy = shown[shown.index("To deploy a pick, beyond its DeepSpeed config"):]
    notes = pick_deployment_notes(view)
    assert len(notes) > 1 and set(notes) == set(view.picks.values())
    for trial, said in notes.items():
        assert said == deployment_notes(view.settings.candidate(view.point(trial).params), probed=False)
        for note in said:  # wrapped at 80 columns, each note once (a trial shared by picks is said once)
            assert _words(deploy).count(_words(note)) == 1, note
    # Each trial's notes under lines naming it by its picks, as `export --pick` names them, or "every pick".
    groups = re.split(r"(?m)^  (\S.*:)$", deploy)[1:]
    said_under = dict(zip(groups[::2], map(_words, groups[1::2])))
    for trial, names in picks_by_trial(view).items():
        under = " ".join(text for label, text in said_under.items() if label == "every pick:" or (
            all(PICK_FILES[n] in label for n in names) and re.search(rf"\btrials? ([0-9, ]+, )?{trial}\b", label)))
        for note in notes[trial]:
            assert _words(note) in under, (trial, note, list(said_under))
    assert "is code, not config" in deploy and re.search(r"run it on \d+ ranks", deploy)
    assert "hostfile named 'hostfile'" in deploy  # the study's picks run on several nodes
    # Simulated: nothing was probed on hardware, and its launch.sh probes it first (as launch.sh itself says).
    assert "to probe it (its figures were simulated), its launch.sh" in _words(deploy) and "as probed" not in deploy


def test_piped_each_note_is_one_line(report):
    view, document = report
    lines = _terminal(view, document, 160, terminal=False).splitlines()
    for said in pick_deployment_notes(view).values():
        for note in said:
            assert f"    - {note}" in lines


def test_report_md_and_html_say_the_same_notes(report, simulated_run):
    view, document = report
    md = markdown_report(view, document)
    html = (simulated_run / "report.html").read_text()
    page = unescape(re.sub(r"<[^>]+>", "", re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)))
    for said in pick_deployment_notes(view).values():
        for note in said:
            assert f"    - {note}" in md
            assert note.replace("`", "") in page, note
    for said in (md, page):  # a simulated study: nothing was probed on hardware
        assert "to probe it (its figures were simulated), its launch.sh" in said and "as probed" not in said


def test_a_pick_on_several_nodes_names_the_hostfile_its_launch_script_needs():
    settings = settings_for("--model", "32b", "--nodes", "1-4")
    knobs = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "none", "sp_degree": 1,
             "micro_batch": 2, "power_limit": 1.0, "sm_clock_mhz": "max"}
    one, four = (deployment_notes(settings.candidate({**knobs, "nodes": n}), probed=True) for n in (1, 4))
    assert not any("hostfile" in note for note in one)
    assert ("It needs a DeepSpeed hostfile named 'hostfile' beside it: 4 lines, one per node, 'HOST slots=4'"
            in four[-1] and "--launcher srun" in four[-1])
    # Its launch.sh runs a measured pick's probe again; a simulated pick's probes it (nothing ran on hardware).
    assert four[-1].startswith("to train it as probed, its launch.sh (beside its config in configs/) starts the 4 ")
    simulated = deployment_notes(settings.candidate({**knobs, "nodes": 4}), probed=False)[-1]
    assert simulated.startswith("to probe it (its figures were simulated), its launch.sh (beside its config in ")
    # The exported config's own list (report.html prints the file) is said where it has one.
    assert deployment_notes(settings.candidate({**knobs, "nodes": 1}), '{"autotune": {"not_in_this_config": ["x"]}}',
                            probed=True) == ["x"]


def test_notes_are_grouped_by_the_trials_that_need_them():
    groups = grouped_notes({1: ["ranks 16", "ckpt"], 2: ["ranks 8", "ckpt", "limit 0.7"], 3: ["ranks 16", "ckpt",
                                                                                              "limit 0.8"]})
    assert groups == [([1, 2, 3], ["ckpt"]), ([1, 3], ["ranks 16"]), ([2], ["ranks 8", "limit 0.7"]), ([3], ["limit 0.8"])]
