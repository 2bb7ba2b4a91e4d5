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
    assert line.removeprefix(f"baseline (trial {base.trial})") == _no_devices(head.removeprefix(f"**Picks** (vs baseline trial {base.trial}")[:-1])


def test_a_baseline_on_the_front_is_not_said_twice(single_point_run):
    view, document = build_report(load_finished_study(single_point_run))
    assert view.baseline_trial in {p.trial for p in view.front}
    assert "baseline (trial" not in _terminal(view, document)
