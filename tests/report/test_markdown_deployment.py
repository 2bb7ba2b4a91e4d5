"""report.md carries what acting on a pick needs: its deployment notes (the exported config's
`autotune.not_in_this_config`) and its peak memory, labelled as the terminal labels it (trial 49 #2)."""

import json
from dataclasses import replace

from autotune.commands.finish import build_report
from autotune.export import handover_notes
from autotune.report.markdown import deployment_lines, markdown_report
from autotune.report.picks import PICK_FILES
from autotune.report.units import figure
from autotune.study import load_finished_study


def test_each_pick_states_its_deployment_notes_and_peak_memory(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    md = markdown_report(view, document)
    said_once = set()
    for row in document["picks"]:
        p = view.point(row["trial"])
        line = next(line for line in md.splitlines() if line.startswith(f"- **{PICK_FILES[row['name']]}"))
        assert f"; peak memory {figure(p.peak_mem_gib)} GiB per GPU (estimated)" in line
        if p.trial in said_once:
            continue
        said_once.add(p.trial)
        # The notes are the exported config's, word for word.
        exported = json.loads((simulated_run / "configs" / f"{PICK_FILES[row['name']]}.json").read_text())
        notes = exported["autotune"]["not_in_this_config"]
        assert notes == handover_notes(view.settings.candidate(p.params))
        for note in notes:
            assert f"    - {note}" in md
    assert "is code, not config" in md and "run it on " in md


def test_a_power_limited_pick_says_the_limit_is_set_on_every_node(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    p = next(p for p in view.front if p.params["nodes"] > 1)
    capped = replace(p, params={**p.params, "power_limit": 0.7})
    said = "\n".join(deployment_lines(view, "min_energy", capped, None, document))
    assert "configs/min-energy.json" in said
    assert ("the power limit 0.7 x default (476 W per module on the gh200 profile) is set on the modules of every node, "
            "not by DeepSpeed" in said
            and f"device_cli apply --power-limit 0.7" in said and f"on each of its {p.params['nodes']} nodes" in said)
    assert deployment_lines(view, "knee", capped, "min-energy (least energy)", document) == [
        "  - deploying it needs what min-energy (least energy) above does"]


def test_the_front_table_has_a_labelled_memory_column(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    table = [line for line in markdown_report(view, document).splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    at = header.index("mem GiB (estimated)")
    for row, p in zip(table[2:], view.front):
        assert row.strip("|").split("|")[at].strip() == figure(p.peak_mem_gib)
