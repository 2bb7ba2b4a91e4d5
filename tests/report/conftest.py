"""Finished run directories built in-process: a simulated study, one with OOM and failed probes,
one with a single feasible point, one with none, and a "measured" one whose probes carry energy
blocks and probe costs."""

import io
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from autotune.backends.base import Backend, ProbeResult
from autotune.backends.simulate import SimulateBackend
from autotune.commands.finish import finish_run
from autotune.commands.options import settings_for
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from tests.report.energy_block import energy_block

# A reason that would break the page if it were not escaped.
HOSTILE_ERROR = 'CUDA error <script>alert("x")</script> & more'


class ScriptedBackend(Backend):
    """Simulated figures, except where `outcome(candidate, call_index)` names another status."""

    name = "scripted"
    source = "simulated"

    def __init__(self, outcome):
        self.outcome = outcome
        self.calls = 0
        self.simulate = SimulateBackend()

    def evaluate(self, candidate, trial_number=0):
        status = self.outcome(candidate, self.calls)
        self.calls += 1
        result = self.simulate.evaluate(candidate)
        if status == "ok":
            return result
        if status == "oom":
            return ProbeResult(status="oom", source="simulated", energy_source="simulated", error="CUDA out of memory")
        # A failed probe that still reports figures: the page must draw it apart from feasible points.
        return replace(result, status=status, error=HOSTILE_ERROR)


def profile_measured_on(path, scope: str):
    """A copy of gh200.toml (as `gh200-wide`) whose stated error was measured on `scope` (scope_note's words):
    a test of ties or marks within the error on configurations the shipped scope leaves out."""
    from autotune.hardware import load_hardware

    text = Path(load_hardware("gh200").source).read_text()
    text = text[:text.index("\n# What that error was measured on")] + "\n"  # the words alone, as an older calibrate wrote
    text = re.sub(r"error measured on [^\"]*", f"error measured on {scope}", text).replace(
        'name = "gh200"', 'name = "gh200-wide"\ncalibrated_from = "gh200"')  # a calibration's copy keeps its error
    # As an (older) calibrate wrote it: its header vouches for the error, calibrated_from alone does not.
    path.write_text("# Calibrated by `autotune calibrate` from gh200.toml against 65 observations (gh200-study).\n" + text)
    return path


def finished_run(run_dir, backend, trials, nodes="4", study_flags=("--model", "32b"), **pick_options):
    settings = settings_for(*study_flags, "--nodes", nodes)
    study = open_study(run_dir, None, make_sampler(0, trials))
    run_study(study, settings, backend, trials)
    study.set_user_attr("backend", {"name": backend.name, "reason": "test"})
    finish_run(study, run_dir, Console(file=io.StringIO()), **pick_options)
    return study


@pytest.fixture(scope="session")
def simulated_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("simulated") / "32b-2to8n"
    finished_run(run_dir, SimulateBackend(), 10, nodes="2-8")
    return run_dir


def _oom_and_failed(candidate, call):
    if candidate.knobs.micro_batch >= 4:
        return "oom"
    return "failed" if call % 3 == 2 else "ok"


@pytest.fixture(scope="session")
def failing_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("failing") / "run"
    finished_run(run_dir, ScriptedBackend(_oom_and_failed), 10)
    return run_dir


@pytest.fixture(scope="session")
def single_point_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("single") / "run"
    finished_run(run_dir, ScriptedBackend(lambda c, call: "ok" if call == 0 else "oom"), 4)
    return run_dir


@pytest.fixture(scope="session")
def infeasible_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("none") / "run"
    finished_run(run_dir, ScriptedBackend(lambda c, call: "oom" if call % 2 else "failed"), 4)
    return run_dir


# What each probe of the measured run costs beyond its window (start-up, warm-up), and an OOM probe.
STARTUP_S, STARTUP_KJ = 60.0, 40.0
OOM_PROBE_COST = {"time_s": 35.0, "energy_kj": 25.0}


class MeasuredBackend(Backend):
    """Simulated figures labelled measured, with a constructed energy block and a probe cost: what
    the launch backend hands back on a GH200 node. Every fourth probe runs out of memory."""

    name = "measured-fake"
    source = "measured"

    def __init__(self):
        self.calls = 0
        self.simulate = SimulateBackend()

    def evaluate(self, candidate, trial_number=0):
        self.calls += 1
        if self.calls % 4 == 0:
            return ProbeResult(status="oom", source="measured", energy_source="measured", error="CUDA out of memory",
                               details={"probe_cost": dict(OOM_PROBE_COST)})
        result = self.simulate.evaluate(candidate)
        block = energy_block(nodes=candidate.knobs.nodes, scale=0.8 + 0.02 * candidate.knobs.micro_batch)
        cost = {"time_s": block["window_s"] + STARTUP_S, "energy_kj": block["energy_j"] / 1000 + STARTUP_KJ}
        return replace(result, source="measured", energy_source="measured",
                       details={"energy": block, "probe_cost": cost})


@pytest.fixture(scope="session")
def measured_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("measured") / "run"
    finished_run(run_dir, MeasuredBackend(), 12)
    return run_dir


# What a CPU probe of the tiny model measures: seconds and joules. The figures hang on micro_batch
# alone, so different configurations of one micro-batch tie exactly in time and energy.
JOULE_FIGURES = {1: (2.0, 0.0062), 2: (3.0, 0.0042), 4: (5.0, 0.0031), 8: (7.0, 0.0029)}


class JouleScaleBackend(Backend):
    """Measured-looking figures of a CPU probe on the tiny model (energy_kj about 0.004), split into
    components as a probe's are; every configuration of one micro-batch ties with the others."""

    name = "joule-fake"
    source = "measured"

    def __init__(self):
        self.simulate = SimulateBackend()

    def evaluate(self, candidate, trial_number=0):
        time_s, energy_kj = JOULE_FIGURES[candidate.knobs.micro_batch]
        components = {"gpu": 0.6 * energy_kj, "cpu": 0.3 * energy_kj, "memory_interconnect": 0.1 * energy_kj}
        return replace(self.simulate.evaluate(candidate), source="measured", energy_source="measured",
                       time_s=time_s, energy_kj=energy_kj, energy_components_kj=components)


@pytest.fixture(scope="session")
def cpu_joule_run(tmp_path_factory):
    """A study of the tiny model on the cpu profile with joule-scale figures and exact ties."""
    run_dir = tmp_path_factory.mktemp("cpu-joules") / "run"
    finished_run(run_dir, JouleScaleBackend(), 12, nodes="1", study_flags=("--model", "tiny", "--hardware", "cpu"))
    return run_dir


@pytest.fixture(scope="session")
def study_7b_on_1_to_2(tmp_path_factory):
    """A simulated 7b study on 1-2 nodes as every output says it: (view, pareto.json's document, the terminal
    report, report.md, report.html unescaped). Every pick lies outside the profile's calibration (ZeRO 2, power
    limits below 1.0), and min-energy leads knee by 0.2% of energy on half its GPUs."""
    import html

    from autotune.cli import main
    from autotune.commands.finish import build_report
    from autotune.report.markdown import markdown_report
    from autotune.report.table import print_report
    from autotune.study import load_finished_study

    out = tmp_path_factory.mktemp("7b-1to2") / "run"
    assert main(["run", "--model", "7b", "--nodes", "1-2", "--out", str(out)]) == 0
    view, document = build_report(load_finished_study(out))
    terminal = io.StringIO()
    print_report(view, document, Console(file=terminal, width=4000))  # the error sentence on one line
    return view, document, terminal.getvalue(), markdown_report(view, document), html.unescape((out / "report.html").read_text())
