"""Every pick defined, and how to choose among them, in report.md and at the end of the terminal report
(trial 49 #4: knee was defined nowhere and five picks stood with no word on which to deploy)."""

import io
from dataclasses import replace

from rich.console import Console

from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.choosing import choosing_a_pick
from autotune.report.picks import CHOOSING_A_PICK, PICK_FILES, pick_definitions
from autotune.report.table import print_report
from autotune.study import load_finished_study


def _terminal(view, document) -> str:
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=1000))
    return out.getvalue()


def test_md_and_the_terminal_define_every_pick_and_say_how_to_choose(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    md, terminal = markdown_report(view, document), _terminal(view, document)
    said = pick_definitions(view.pick_parameters, view.picks)
    assert len(said) == len(view.picks) == 5
    assert "**What the picks are**" in md
    for line in said:
        assert f"- {line}" in md and f"pick {line}" in terminal
    assert "(max power per GPU here: 680 W, the hardware profile's" in md
    choosing = choosing_a_pick(view)  # when to deploy each, and where this study's ties undo it, a sentence saying so
    assert choosing.startswith("Which to deploy: ") and f"\n{choosing}\n" in md
    # trial57 #14: every pick gets a word on when to deploy it, cost-weighted too (its trial's, where it is another
    # pick's too: this study's cost-weighted is min-energy's trial).
    for name in PICK_FILES.values():
        assert f" {name} " in choosing.replace(";", " ").replace(":", " ").replace(",", " "), name
    assert "where both the allocation's time and its energy are paid for (--eta weighs them)" in md
    # Last, where a reader looks for what to do: followed only by what deploying the chosen pick needs.
    assert terminal[terminal.index(choosing) + len(choosing):].lstrip().startswith("To deploy a pick")
    assert "eta x energy + (1 - eta) x 680 W/GPU" not in terminal  # the partial line it replaces, said once now
    # trial57 #11: five lines on every run; the one-clause definitions share one.
    defined = [line for line in terminal.splitlines() if line.startswith("pick ")]
    assert len(defined) == 3 and defined[0] == (
        "pick fastest: the least time to solution; pick min-energy: the least energy to solution; pick max-slowdown: "
        "the least energy with a time at most 1.05 x the fastest (--max-slowdown)"), defined
    assert defined[1].startswith("pick knee: ") and defined[2].startswith("pick cost-weighted: "), defined


def test_one_pick_is_defined_with_nothing_to_choose_among(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    fastest = replace(view, picks={"fastest": view.picks["fastest"]})
    document = {**document, "picks": [row for row in document["picks"] if row["name"] == "fastest"]}
    md, terminal = markdown_report(fastest, document), _terminal(fastest, document)
    assert "- fastest: the least time to solution" in md and "knee:" not in md
    assert CHOOSING_A_PICK not in md and CHOOSING_A_PICK not in terminal
    assert terminal.split("\nTo deploy a pick")[0].rstrip().endswith("pick fastest: the least time to solution")


def test_which_to_deploy_says_picks_that_are_one_trial_once_and_nothing_false_of_them(simulated_run):
    # trial59 #15: "max-slowdown to save energy" where it was the fastest itself, and five-way advice where every
    # pick was one trial.
    view, _ = build_report(load_finished_study(simulated_run))
    fast, least = view.picks["fastest"], view.picks["min_energy"]
    assert fast != least and view.baseline_trial not in (fast, least)
    merged = replace(view, picks={"fastest": fast, "min_energy": least, "knee": least, "max_slowdown": fast,
                                  "cost_weighted": least})
    assert choosing_a_pick(merged).startswith(
        f"Which to deploy: fastest and max-slowdown (one configuration, trial {fast}) where the allocation's wall-clock "
        f"time is what costs; min-energy, cost-weighted and knee (one configuration, trial {least}) where energy is, or "
        "where both the allocation's time and its energy are paid for (--eta weighs them).")
    one = replace(view, picks=dict.fromkeys(view.picks, fast))
    assert choosing_a_pick(one) == ("Which to deploy: fastest, min-energy, max-slowdown, cost-weighted and knee are one "
                                    f"configuration, trial {fast}: deploy it.")
    assert choosing_a_pick(replace(one, baseline_trial=fast)).endswith(f"trial {fast}, the baseline: keep it.")
