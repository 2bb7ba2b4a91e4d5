"""The provenance line where no trial has figures, or where energy is no objective: not "mixed" (trial 49 #7)."""

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.pareto_json import provenance_sentence, source_label
from autotune.study import load_finished_study


def _document(source, energy, objectives=("time", "energy"), trials=2):
    return {"source": source, "energy_source": energy, "objectives": list(objectives), "trials": trials}


def test_a_study_whose_probes_all_failed_says_not_available_not_mixed(infeasible_run):
    view, document = build_report(load_finished_study(infeasible_run))
    md = markdown_report(view, document)
    assert "mixed" not in md
    assert "Time is not available (no probe succeeded). Energy is not available (no probe succeeded)." in md
    from autotune.report.html import render_report_html

    html = render_report_html(view, document, infeasible_run)
    assert "mixed none" not in html  # the importance headings: "time to solution (mixed none)"


def test_a_time_only_study_without_energy_says_energy_is_no_objective():
    said = provenance_sentence(_document(["none"], ["none"], ["time"]))
    assert said == ("Time is not available (no probe succeeded). Energy is not an objective of this study "
                    "(--objectives time), and not available (no probe succeeded).")
    assert "not an objective" in provenance_sentence(_document("measured", "unavailable", ["time"]))
    # Energy it has (simulated, estimated) it states as any study does.
    assert provenance_sentence(_document("simulated", "simulated", ["time"])).endswith(
        "Energy is simulated by the analytic model (no hardware was run).")


def test_a_study_with_no_trial_yet_says_nothing_was_evaluated():
    assert provenance_sentence(_document(["none"], ["none"], trials=0)).startswith(
        "Time is not available (no trial has been evaluated yet).")


def test_a_real_mix_is_still_named_each():
    assert provenance_sentence(_document(["measured", "simulated"], "simulated")).startswith("Time is mixed: measured")


def test_source_labels():
    assert source_label(["none"]) == "not available"
    assert source_label("measured") == "measured"
    assert source_label(["measured", "simulated"]) == "mixed measured/simulated"


def test_the_run_directory_page_gives_every_shape_of_the_source_keys(infeasible_run):
    # trial67 #7: the page documented one label, and a reader doing `d["source"] == "measured"` met a list.
    from pathlib import Path

    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "run-directory.md").read_text().split())
    _, document = build_report(load_finished_study(infeasible_run))
    assert document["source"] == document["energy_source"] == ["none"]
    assert '`["none"]` where no trial has figures to rank' in page
    assert 'a list of them where the points mix labels (a replay of measured and simulated records: `["measured", "simulated"]`)' in page
