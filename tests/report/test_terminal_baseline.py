"""The terminal report shows the baseline every pick's changes are against where the front table does not (trial57
#8: each pick line said "vs baseline trial 0", which the terminal showed nowhere but in the progress lines), in
report.md's words."""

import io
import re

from rich.console import Console

from autotune.candidate import knobs_sentence
from autotune.commands.finish import build_report
from autotune.report.markdown import markdown_report
from autotune.report.table import print_report
from autotune.report.units import energy_text, time_text
from autotune.study import load_finished_study


def _no_devices(text: str) -> str:
    """A baseline's words without the GPUs it runs on, which report.md says where the picks span GPU counts."""
    return re.sub(r" \(\d+ GPUs, [^)]*GPU-h\)", "", text)


def _terminal(view, document) -> str:
    out = io.StringIO()
    print_report(view, document, Console(file=out, width=400))
    return out.getvalue()


def test_a_baseline_off_the_front_has_its_line_before_the_picks(simulated_run):
    view, document = build_report(load_finished_study(simulated_run))
    base = view.baseline_point()
    assert base.trial not in {p.trial for p in view.front}
    lines = _terminal(view, document).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"baseline (trial {base.trial}): "))
    line = lines[at]
    assert line.startswith(f"baseline (trial {base.trial}): {knobs_sentence(base.params)}")
    assert f"; {time_text(base.time_s)} +- " in line and f", {energy_text(base.energy_kj)} +- " in line and ", simulated" in line
    # Right before the first pick's line, and with report.md's figures and words.
    first = view.point(document["picks"][0]["trial"])
    assert lines[at + 1].split(":")[0].split(" (")[0] in {"fastest", "min-energy", "knee", "max-slowdown", "cost-weighted"}
    assert f"trial {first.trial}, " in lines[at + 1]
    head = next(md for md in markdown_report(view, document).splitlines() if md.startswith("**Picks**"))
    assert _no_devices(line.removeprefix(f"baseline (trial {base.trial})")) == _no_devices(head.removeprefix(f"**Picks** (vs baseline trial {base.trial}")[:-1])


def test_a_baseline_on_the_front_is_not_said_twice(single_point_run):
    view, document = build_report(load_finished_study(single_point_run))
    assert view.baseline_trial in {p.trial for p in view.front}
    assert "baseline (trial" not in _terminal(view, document)


def test_picks_on_several_gpu_counts_give_their_gpus_and_the_caveat_as_report_md_does(simulated_run):
    """trial57 #6: a 2-node pick's "-50.3% time" against a 1-node baseline read as a free 2x speed-up."""
    view, document = build_report(load_finished_study(simulated_run))
    base = view.baseline_point()
    assert {view.point(t).gpus for t in view.picks.values()} != {base.gpus}
    terminal = _terminal(view, document)
    lines = terminal.splitlines()
    md = markdown_report(view, document)
    caveat = next(line for line in md.splitlines() if line.startswith("The picks run on "))
    assert "part of a change in time is the GPUs added or taken away" in caveat and caveat in lines
    line = next(line for line in lines if line.startswith(f"baseline (trial {base.trial}): "))
    assert line.removeprefix(f"baseline (trial {base.trial})") == head_of(md, base.trial)
    assert f" ({base.gpus} GPUs, " in line
    picks = []
    for row in document["picks"]:
        p = view.point(row["trial"])
        picks.append(next(i for i, line in enumerate(lines)
                          if f": trial {p.trial}, {knobs_sentence(p.params)} ({p.gpus} GPUs, " in line and " GPU-h); " in line))
    assert lines.index(caveat) > max(picks)


def test_one_gpu_count_gives_no_gpus_nor_caveat(single_point_run):
    view, document = build_report(load_finished_study(single_point_run))
    terminal = _terminal(view, document)
    assert "GPU-h" not in terminal and "part of a change in time" not in terminal


def head_of(md: str, trial: int) -> str:
    head = next(line for line in md.splitlines() if line.startswith("**Picks**"))
    return head.removeprefix(f"**Picks** (vs baseline trial {trial}")[:-1]


def test_a_space_without_a_baseline_says_why_and_what_to_list_never_trial_none(tmp_path):
    """trial75 #18, trial76 #1: a space of power limits 0.9 and 0.8 printed "baseline (trial None)", report.md
    "baseline trial None" and "(vs baseline trial None)"."""
    from autotune.backends.simulate import SimulateBackend
    from autotune.space.files import DEFAULT_SPACE
    from tests.report.conftest import finished_run

    space = tmp_path / "no10.toml"
    space.write_text(DEFAULT_SPACE.read_text().replace("power_limit = [1.0, 0.9, 0.8, 0.7]", "power_limit = [0.9, 0.8]"))
    run_dir = tmp_path / "run"
    finished_run(run_dir, SimulateBackend(), 4, study_flags=("--model", "32b", "--space", str(space)))
    view, document = build_report(load_finished_study(run_dir))
    assert document["baseline"] is None and document["picks"]
    terminal, md = _terminal(view, document), markdown_report(view, document)
    for text in (terminal, md):
        assert "None" not in text
    said = ("no baseline to measure savings against: this space holds no baseline (a candidate without offload or "
            "sequence parallelism, at the GPUs' own power limit and clock): list power_limit = 1.0 in the --space file "
            "for one")
    assert said in terminal.splitlines()
    assert f"**Picks** ({said})" in md.splitlines()
    assert "; no baseline: this space holds no baseline (" in md
    from autotune.report.html import render_report_html

    page = render_report_html(view, document, run_dir)
    assert "baseline trial None" not in page and "N" + said[1:].replace("'", "&#x27;") + "." in page
