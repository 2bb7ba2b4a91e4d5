"""Power limits and SM clocks a space file lists that a study does not search (trial75 #1, #5, #9, #10, #14): said in
one line before any probe, kept in pareto.json's `inputs.not_searched`, said again by the reports in place of
"widen the space", and previewed by `autotune space --backend launch` as run searches."""

import json
import os

import pytest

from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import narrowed_for_backend, not_searched_lines, settings_for
from autotune.errors import UserError
from tests.cli import autotune, autotune_main

ONE_CONFIGURATION = ('zero_stage = [3]\noptimizer_offload = ["none"]\nactivation_checkpointing = ["recompute"]\n'
                     "sp_degree = [1]\nmicro_batch = [1]\n")


class _NoNvml(SimulateBackend):
    """Simulated figures, from probes that could not set a power limit or clock (as a launch without NVML)."""

    def device_settings_available(self):
        return False, "NVML is not usable here (no driver: libnvidia-ml.so not found)"


def _space(tmp_path, lines: str):
    path = tmp_path / "space.toml"
    path.write_text(ONE_CONFIGURATION + lines)
    return path


def test_limits_below_the_device_minimum_are_said_before_any_probe_and_in_the_reports(tmp_path):
    """#5: gh200's minimum is 400 W of 680: 0.5 and below were dropped without a word, then "widen the space", and previewed by `autotune space --backend launch` as run searches."""
    space = _space(tmp_path, "power_limit = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]\n")
    run = autotune_main("run", "--model", "32b", "--nodes", "4", "--space", space, "--backend", "simulate", "--trials",
                        "10", "--sampler", "random", "--out", tmp_path / "run")  # random: every valid candidate
    assert run.returncode == 0, run.stderr
    said = ("power_limit 0.5, 0.4, 0.3, 0.2 and 0.1 are not searched: power limit 0.5 x 680 W = 340 W is below the "
            "device's minimum of 400 W")
    lines = run.stderr.splitlines()
    assert lines.index(f"warning: {said}") < next(i for i, line in enumerate(lines) if line.startswith("backend:"))
    document = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert document["inputs"]["not_searched"] == [{"knob": "power_limit", "values": [0.5, 0.4, 0.3, 0.2, 0.1],
                                                   "why": said.split(": ", 1)[1], "fix": None}]
    assert "widen the space" not in run.stdout + run.stderr + json.dumps(document)
    assert "only more values of its other knobs widen it" in run.stdout
    assert f"; {said}" in document["search"]["exhaustive_note"]
    md = autotune_main("report", tmp_path / "run", "--format", "md").stdout
    assert f"power_limit 1.0/0.9/0.8/0.7/0.6/0.5/0.4/0.3/0.2/0.1, the other knobs as in the default space ({said});" in md


def test_a_profile_without_gpus_drops_a_space_file_s_limits_and_clocks_in_one_reason_the_default_space_s_unsaid(tmp_path):
    settings = settings_for("--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--space",
                            str(_space(tmp_path, 'power_limit = [1.0, 0.7]\nsm_clock_mhz = ["max", 1500]\n')))
    narrowed, skipped = narrowed_for_backend(settings, SimulateBackend())
    assert narrowed is settings  # the rules leave them out, each candidate with its reason (`autotune space`)
    assert not_searched_lines(skipped, narrowed, SimulateBackend()) == [
        "power_limit 0.7 and sm_clock_mhz 1500 are not searched: hardware 'cpu' has no NVIDIA GPUs to set them on"]
    default = settings_for("--model", "tiny", "--hardware", "cpu", "--nodes", "1")
    assert narrowed_for_backend(default, SimulateBackend()) == (default, [])  # nobody chose its 0.9/0.8/0.7 for a cpu


def test_limits_the_probes_cannot_set_are_named_with_the_fix_not_widen_the_space(tmp_path, capsys):
    """#1: the reports said "searched the default space but ... power_limit 1.0" and "widen the space", and previewed by `autotune space --backend launch` as run searches."""
    from io import StringIO

    from rich.console import Console

    from autotune.commands.finish import finish_run
    from autotune.space.unsearched import NOT_SEARCHED_ATTR
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler

    settings = settings_for("--model", "32b", "--nodes", "4", "--hardware", "h100-sxm", "--space",
                            str(_space(tmp_path, 'power_limit = [1.0, 0.7]\nsm_clock_mhz = ["max", 1500]\n')))
    narrowed, skipped = narrowed_for_backend(settings, _NoNvml())
    assert narrowed.space.power_limit == (1.0,) and narrowed.space.sm_clock_mhz == ("max",)
    line, = not_searched_lines(skipped, narrowed, _NoNvml())
    assert line == ("power_limit 0.7 and sm_clock_mhz 1500 are not searched: NVML is not usable here (no driver: "
                    "libnvidia-ml.so not found); to search them, the probe nodes need NVML (the NVIDIA driver) and root "
                    "or CAP_SYS_ADMIN; --launcher srun in a job with GPU gres sets the SM clock without root "
                    "(docs/launch.md, Power limits and SM clocks)")
    study = open_study(tmp_path / "run", None, make_sampler(0, 3))
    run_study(study, narrowed, SimulateBackend(), 3)
    study.set_user_attr("backend", {"name": "simulate", "reason": "test"})
    study.set_user_attr(NOT_SEARCHED_ATTR, skipped)
    finish_run(study, tmp_path / "run", Console(file=StringIO()))
    terminal = capsys.readouterr().out
    assert "widen the space" not in terminal
    assert "every valid candidate of the space (1) was evaluated; its file's power_limit 0.7 and sm_clock_mhz 1500 are " \
           "not searched: to search them, the probe nodes need NVML" in terminal
    assert "search: exhaustive: all 1 valid candidates were simulated" in terminal and f"; {line}" in terminal
    md = autotune_main("report", tmp_path / "run", "--format", "md").stdout
    assert "searched the default space" not in md and "the default space but" not in md
    assert (f"searched a --space file's zero_stage 3, optimizer_offload none, activation_checkpointing recompute, "
            f"sp_degree 1, micro_batch 1, power_limit 1.0, the other knobs as in the default space ({line}); ") in md


def test_a_resume_where_the_limits_can_no_longer_be_set_names_that_cause(tmp_path):
    """#10: "holds a study of --space power_limit = [1.0, 0.7], not [1.0] ... repeat the original options", the
    original options given, the [1.0] the tuner's own."""
    from autotune.commands.run import check_resumable_device_knobs

    settings = settings_for("--model", "32b", "--nodes", "4", "--hardware", "h100-sxm", "--space",
                            str(_space(tmp_path, 'power_limit = [1.0, 0.7]\nsm_clock_mhz = ["max", 1500]\n')))
    narrowed, skipped = narrowed_for_backend(settings, _NoNvml())
    stored = settings.to_dict()  # the study began where they could be set
    with pytest.raises(UserError) as refused:
        check_resumable_device_knobs(stored, settings.space, narrowed.space, skipped, "runs/r", "autotune report runs/r")
    said = str(refused.value)
    assert said.startswith("runs/r holds a study that searched power_limit 1.0/0.7 and sm_clock_mhz max/1500, which the "
                           "probes cannot set here (NVML is not usable here (no driver: libnvidia-ml.so not found)): "
                           "resume it with the same command where they can (to search them, the probe nodes need NVML")
    assert said.endswith("`autotune report runs/r` reads what it measured") and "--out NEW_DIR" not in said
    # A study begun where they could not be set resumes here as it began.
    check_resumable_device_knobs(narrowed.to_dict(), settings.space, narrowed.space, skipped, "runs/r", "again")


def test_space_with_backend_launch_previews_what_run_leaves_out(tmp_path):
    """#14: `space --backend launch` listed 0.7 and 1500 as valid, and run then searched one candidate."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text('#!/bin/sh\ncase "$*" in\n  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)";;\n'
                                        '  *query-gpu=name,memory.total*) echo "NVIDIA H100 80GB HBM3, 81559";;\nesac\n')
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM_")}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", AUTOTUNE_NVML_API="no_such_module:api")  # NVML not usable
    space = _space(tmp_path, 'power_limit = [1.0, 0.7]\nsm_clock_mhz = ["max", 1500]\n')
    flags = ("--model", "tiny", "--nodes", "1", "--gpus-per-node", "1", "--hardware", "h100-sxm", "--space", space)
    listed = autotune("space", *flags, "--backend", "launch", "--json", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [row["valid"] for row in rows] == [True, False, False, False]
    assert all(row["reason"].startswith("not searched: NVML is not usable here") for row in rows[1:])
    assert listed.stderr.startswith("warning: power_limit 0.7 and sm_clock_mhz 1500 are not searched: NVML is not usable")
    # simulate sets no device: every candidate is listed valid, as its run searches them
    simulated = autotune("space", *flags, "--backend", "simulate", "--json", env=env, cwd=tmp_path)
    assert all(row["valid"] for row in json.loads(simulated.stdout))


@pytest.mark.parametrize("sampler", ["guided", "random"])
def test_docs_say_what_a_study_records_of_values_no_valid_candidate_has(tmp_path, sampler):
    """trial75 #5: docs/search.md said each invalid candidate "is recorded as a pruned trial"; a value no valid
    candidate has is never proposed, so no trial of it is recorded, pruned or otherwise."""
    from pathlib import Path

    import optuna

    doc = " ".join((Path(__file__).parents[2] / "docs" / "search.md").read_text(encoding="utf-8").split())
    assert "A value no valid candidate has (SuperOffload without CUDA, ZeRO-0 of a 72B model, a power limit below the " \
           "device's minimum) is never offered to a sampler." in doc
    assert "Each is recorded as a pruned trial" not in doc
    space = _space(tmp_path, "power_limit = [1.0, 0.6, 0.5, 0.4, 0.3]\n")
    run = autotune_main("run", "--model", "32b", "--nodes", "4", "--space", space, "--backend", "simulate", "--trials",
                        "10", "--sampler", sampler, "--out", tmp_path / "run", "--quiet")
    assert run.returncode == 0, run.stderr
    trials = optuna.load_study(study_name="autotune", storage=f"sqlite:///{tmp_path / 'run' / 'study.db'}").trials
    assert {t.params["power_limit"] for t in trials} <= {1.0, 0.6}
