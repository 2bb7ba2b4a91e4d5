"""report.md names the baseline every percentage is against, with its configuration and absolute figures, gives
each pick's absolute time and energy, and its GPUs where the picks span node counts (trial 49 #5)."""

from autotune.candidate import knobs_sentence
from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.units import energy_text, time_text
from autotune.study import load_finished_study


def test_the_baseline_and_every_pick_carry_their_configuration_and_figures(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    md = markdown_report(view, document)
    base = view.baseline_point()
    head = next(line for line in md.splitlines() if line.startswith("**Picks**"))
    assert head.startswith(f"**Picks** (vs baseline trial {base.trial}: {knobs_sentence(base.params)} ({base.gpus} GPUs, ")
    assert f"; {time_text(base.time_s)} +- " in head and f", {energy_text(base.energy_kj)} +- " in head
    assert ", simulated" in head and head.endswith(")")
    lines = [line for line in md.splitlines() if line.startswith("- **")]
    for row, line in zip(document["picks"], lines):
        p = view.point(row["trial"])
        assert time_text(p.time_s) in line and energy_text(p.energy_kj) in line and f"({p.gpus} GPUs, " in line
    # 32b on 2-8 nodes: the picks span node counts, and a time change holds the GPUs added.
    assert {view.point(t).gpus for t in view.picks.values()} != {base.gpus}
    assert "part of a change in time is the GPUs added or taken away" in md


def test_one_node_count_says_no_gpus(single_point_run):
    view, document = build_report(load_finished_study(single_point_run))
    md = markdown_report(view, document)
    assert "GPU-h" not in md and "part of a change in time" not in md
    base = view.baseline_point()
    assert f"(vs baseline trial {base.trial}: {knobs_sentence(base.params)}; {time_text(base.time_s)}" in md
