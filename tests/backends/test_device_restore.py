"""Power limits and clocks seen from the tuner: restored after a probe that died holding them, and
kept untouched (said once, the rest of the space searched) where they cannot be set."""

from __future__ import annotations

import io
import os
import sys
import textwrap

import pytest
from rich.console import Console

from tests.backends.conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "measure"))
from measure_fakes import FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV, FakeNvml  # noqa: E402


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """The fake NVML, file-backed, for the tuner (this process) and the probes it starts alike."""
    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",) * 2, state_path=state)
    env = {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return fake, {**env, "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}"}


def _killed_probe(tmp_path, power_limit: str, *more: str) -> str:
    """A stand-in probe that caps the GPUs (through the device CLI) and dies by SIGKILL: nothing in it can restore."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""
        import os, signal, subprocess, sys
        subprocess.run([{sys.executable!r}, "-m", "autotune.measure.device_cli", "apply", "--power-limit",
                        {power_limit!r}, *{list(more)!r}, "--record", "record.json"], check=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """))
    script.chmod(0o755)
    return str(script)


def test_the_backend_restores_what_a_killed_probe_left(tmp_path, fake_gpus, make_launch_backend, make_candidate):
    fake, env = fake_gpus
    backend = make_launch_backend(env_extra=env, python=_killed_probe(tmp_path, "0.6"))
    result = backend.evaluate(make_candidate(power_limit=0.6, hardware="h100-sxm", gpus_per_node=2), trial_number=1)
    assert result.status == "failed" and "killed by signal 9" in result.error
    assert [fake.device(i)["limit_mw"] for i in (0, 1)] == [700_000, 700_000]
    assert ["limit", 0, 420_000, False] in fake.changes  # the probe did cap it
    log = (backend.trial_dir(1) / "log.txt").read_text()
    assert "== autotune: GPU 0: power limit 420 W -> 700 W restored" in log


def test_after_a_dead_probe_only_its_own_gpus_are_restored(tmp_path, monkeypatch, make_launch_backend, make_candidate):
    # trial75 #11: a failed SM-clock probe made the backend reset the clock locks of every GPU of the node, and put
    # back a limit another job had set on its own GPU; the permission check wrote GPU 0's limit, not this job's GPU.
    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",) * 4, state_path=state)
    env = {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state),
           "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}", "CUDA_VISIBLE_DEVICES": "1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    fake.lock_sm_clocks_mhz(2, 345, 1410)  # another job's GPUs: a clock lock and a power limit of theirs
    fake.set_power_limit_mw(3, 500_000)
    before = len(fake.changes)
    backend = make_launch_backend(env_extra=env, python=_killed_probe(tmp_path, "0.6", "--sm-clock-mhz", "1500", "--gpus", "1"))
    assert backend.device_settings_available() == (True, "")
    result = backend.evaluate(make_candidate(power_limit=0.6, sm_clock_mhz=1500, hardware="h100-sxm"), trial_number=1)
    assert result.status == "failed" and "killed by signal 9" in result.error
    touched = {change[1] for change in fake.changes[before:]}
    assert touched == {1}, fake.changes[before:]
    assert fake.device(1)["limit_mw"] == 700_000 and fake.device(1)["locked_mhz"] is None
    assert fake.device(2)["locked_mhz"] == [345, 1410] and fake.device(3)["limit_mw"] == 500_000
    log = (backend.trial_dir(1) / "log.txt").read_text()
    assert "GPU 1: locked SM clocks reset" in log and "GPU 0:" not in log and "GPU 2:" not in log


def test_a_probe_of_untouched_knobs_leaves_the_devices_alone(tmp_path, fake_gpus, make_launch_backend, make_candidate):
    fake, env = fake_gpus
    backend = make_launch_backend(env_extra=env, python=_killed_probe(tmp_path, "1.0"))
    assert backend.evaluate(make_candidate(), trial_number=1).status == "failed"
    assert fake.changes == []


def test_a_dead_probe_of_the_defaults_on_a_capped_gpu_gets_its_found_limit_back(
        tmp_path, fake_gpus, make_launch_backend, make_candidate):
    # A probe of power_limit 1.0 sets a GPU found at 450 W to its default (trial75 #16); killed, it could not put
    # 450 W back, and the backend restored only after probes of other limits: the site's cap was left raised.
    fake, env = fake_gpus
    fake.set_power_limit_mw(0, 450_000)
    backend = make_launch_backend(env_extra=env, python=_killed_probe(tmp_path, "1.0", "--gpus", "1"))
    assert backend.devices_off_default() is not None  # said before the study, as run does; the devices recorded
    result = backend.evaluate(make_candidate(hardware="h100-sxm"), trial_number=1)
    assert result.status == "failed" and ["limit", 0, 700_000, False] in fake.changes  # the probe did raise it
    assert fake.device(0)["limit_mw"] == 450_000
    assert "== autotune: GPU 0: power limit 700 W -> 450 W restored" in (backend.trial_dir(1) / "log.txt").read_text()


def _h100_settings():
    from autotune.commands.options import settings_for

    return settings_for("--model", "7b", "--hardware", "h100-sxm", "--nodes", "1")


def test_without_permission_the_study_keeps_the_knobs_untouched_and_searches_the_rest(
        tmp_path, fake_gpus, make_launch_backend):
    from autotune.backends.simulate import SimulateBackend
    from tests.backends.narrowing import keep_device_knobs_if_unsettable
    from autotune.study import open_study, run_study
    from autotune.study.loop import make_sampler
    from autotune.study.valid import valid_checks

    fake, env = fake_gpus
    fake.permission = False
    settings = _h100_settings()
    assert set(settings.space.power_limit) > {1.0}
    out = io.StringIO()
    backend = make_launch_backend(env_extra=env)
    narrowed = keep_device_knobs_if_unsettable(settings, backend, Console(file=out, width=300))
    warning = out.getvalue()
    assert warning.count("warning") == 1 and "root or CAP_SYS_ADMIN" in warning
    assert warning.startswith("warning: power_limit 0.9, 0.8 and 0.7 are not searched: changing GPU power limits or "
                              "clocks needs root or CAP_SYS_ADMIN (NVML: no permission); to search them, ")
    assert "keep power_limit" not in warning  # NVML's fix for every context: this line gives its own
    assert narrowed.space.power_limit == (1.0,) and narrowed.space.sm_clock_mhz == ("max",)
    assert narrowed.space.zero_stage == settings.space.zero_stage  # the rest of the space is untouched
    assert fake.changes == []
    checks = valid_checks(narrowed)
    assert any(c.valid for c in checks) and all(c.candidate.knobs.power_limit == 1.0 for c in checks)
    # and the study goes on over the rest (simulated here: the point is what is enumerated and run)
    study = open_study(tmp_path / "run", None, make_sampler(0, 4))
    run_study(study, narrowed, SimulateBackend(), 4)
    evaluated = [t for t in study.trials if "result" in t.user_attrs]
    assert evaluated and all(t.user_attrs["candidate"]["knobs"]["power_limit"] == 1.0 for t in evaluated)


def test_with_permission_the_space_is_kept_and_the_devices_recorded(fake_gpus, make_launch_backend):
    from tests.backends.narrowing import keep_device_knobs_if_unsettable

    fake, env = fake_gpus
    settings = _h100_settings()
    out = io.StringIO()
    assert keep_device_knobs_if_unsettable(settings, make_launch_backend(env_extra=env), Console(file=out)) is settings
    assert out.getvalue() == "" and fake.device(0)["limit_mw"] == 700_000


def test_under_srun_the_clock_stays_searchable_without_permission(tmp_path, fake_gpus, make_launch_backend, monkeypatch):
    from autotune.backends.launchers import SM_CLOCK_SET_BY_ENV, build_plan
    from tests.backends.narrowing import keep_device_knobs_if_unsettable
    from dataclasses import replace

    from autotune.space import SearchSpace

    fake, env = fake_gpus
    fake.permission = False
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_NNODES", "1")
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "8")  # GPU gres: SLURM sets the clock of those alone
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\n")  # never run: only found on PATH
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    settings = _h100_settings()
    settings = replace(settings, space=replace(settings.space, sm_clock_mhz=("max", 1500)))
    assert isinstance(settings.space, SearchSpace)
    backend = make_launch_backend(env_extra=env, launcher="srun")
    out = io.StringIO()
    narrowed = keep_device_knobs_if_unsettable(settings, backend, Console(file=out, width=300))
    assert narrowed.space.power_limit == (1.0,) and narrowed.space.sm_clock_mhz == ("max", 1500)
    said = out.getvalue()
    assert said.startswith("warning: power_limit 0.9, 0.8 and 0.7 are not searched: ") and "still settable" not in said
    # trial75 #9: the clock srun sets is not said to stay at max, nor is srun named as the limit's fix
    assert 'sm_clock_mhz = ["max"]' not in said and "sm_clock_mhz" not in said and "--launcher srun" not in said
    # the default space lists no clock: without the limit nothing would trade time for energy, so say how
    default = io.StringIO()
    keep_device_knobs_if_unsettable(_h100_settings(), backend, Console(file=default, width=300))
    assert 'the SM clock is still settable here (srun --gpu-freq, no root needed)' in default.getvalue()
    assert 'sm_clock_mhz = ["max", 1680, 1380]' in default.getvalue()  # 85% and 70% of 1980 MHz, in 15 MHz steps
    candidate = narrowed.candidate({**narrowed.candidate({}).knobs.to_dict(), "sm_clock_mhz": 1500})
    plan = build_plan("srun", candidate, ["--out", "r.json"], python="py", hostfile=None, environ={"SLURM_GPUS_ON_NODE": "8"})
    assert "--gpu-freq=1500" in plan.command and plan.env[SM_CLOCK_SET_BY_ENV] == "srun"
    # A job without GPU gres: SLURM would set no clock, and the probe, told it had, would label a max-clock run
    # with the cap (a newcomer's trial). The clock is then the probe's (NVML: root), as the limit is.
    monkeypatch.delenv("SLURM_GPUS_ON_NODE")
    assert not backend.sets_clock_itself()
    plan = build_plan("srun", candidate, ["--out", "r.json"], python="py", hostfile=None, environ={})
    assert not any(word.startswith("--gpu-freq") for word in plan.command) and SM_CLOCK_SET_BY_ENV not in plan.env


@pytest.mark.parametrize("permission, said", [
    (True, "each probe of power_limit 1.0 sets the default limit and puts the found one back after"),
    (False, "this user cannot change them (changing GPU power limits or clocks needs root or CAP_SYS_ADMIN (NVML: no "
            "permission)), so the probes run at what they hold"),
])
def test_gpus_found_off_their_defaults_are_said_before_any_probe(fake_gpus, make_launch_backend, permission, said):
    # trial75 #16: a GPU capped at 450 W before the study was measured and reported as untouched at 700 W.
    fake, env = fake_gpus
    fake.set_power_limit_mw(1, 450_000)
    fake.permission = permission
    line = make_launch_backend(env_extra=env).devices_off_default()
    assert line.startswith("the GPUs are not at the defaults power_limit 1.0 and sm_clock_mhz max stand for "
                           "(GPU 1 at 450 W of its 700 W default limit): ")
    assert said in line and "each result records what its GPUs held" in line and "\n" not in line
    fake.permission = True
    fake.set_power_limit_mw(1, 700_000)
    assert make_launch_backend(env_extra=env).devices_off_default() is None  # at the defaults: nothing said


def test_a_default_limit_other_than_the_profile_s_is_said_before_any_probe(fake_gpus, make_launch_backend):
    # trial75 #2, #12: probes of H100 PCIe cards (350 W default) under the h100-sxm profile (700 W) ran power_limit 0.8
    # at 280 W while the simulator, the sampler's predictions and the cost-weighted pick took it as 560 W, unsaid.
    from autotune.hardware import load_hardware

    fake, env = fake_gpus
    h100_sxm = load_hardware("h100-sxm")
    assert make_launch_backend(env_extra=env).default_limit_off_profile(h100_sxm) is None  # 700 W boards: nothing said
    for index in (0, 1):
        fake.set_board_default_mw(index, 350_000)
    line = make_launch_backend(env_extra=env).default_limit_off_profile(h100_sxm)
    assert line == (
        "the probes' GPUs have a default power limit of 350 W (NVML), not the h100-sxm profile's [power] module_cap_w = "
        "700 W: each probe sets power_limit as a fraction of its GPUs' default, while the simulator, the guided "
        "sampler's predictions and the cost-weighted pick's max power per GPU take it of 700 W, so their watts are not "
        f"the probes'; pass a hardware profile of these GPUs (--hardware FILE: a copy of {h100_sxm.source} with [power] "
        "module_cap_w = 350, docs/hardware.md)")
    assert make_launch_backend(env_extra=env).devices_off_default() is None  # at their own default: that line is not said
    fake.set_board_default_mw(1, 700_000)
    line = make_launch_backend(env_extra=env).default_limit_off_profile(h100_sxm)
    assert "a default power limit of 350 W on GPU 0 (NVML)" in line  # one of two boards: which one
    fake.set_board_default_mw(0, 700_500)  # within NVML's mW rounding of the profile's whole watts
    assert make_launch_backend(env_extra=env).default_limit_off_profile(h100_sxm) is None


def test_a_module_s_default_limit_is_compared_with_a_module_scope_profile_only(tmp_path, monkeypatch, make_launch_backend):
    # A GH200's NVML limit is the module's (CPU + GPU + memory), as gh200's module_cap_w is; an H100 profile's is one
    # GPU's: a different figure, never compared with a module's.
    from autotune.hardware import load_hardware

    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA GH200 480GB",), state_path=state)
    env = {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    gh200, h100_sxm = load_hardware("gh200"), load_hardware("h100-sxm")
    assert make_launch_backend(env_extra=env).default_limit_off_profile(gh200) is None  # 680 W, as the profile
    fake.set_board_default_mw(0, 900_000)
    line = make_launch_backend(env_extra=env).default_limit_off_profile(gh200)
    assert "a default power limit of 900 W (NVML), not the gh200 profile's [power] module_cap_w = 680 W" in line
    assert "max power per module take it of 680 W" in line and "module_cap_w = 900, docs/hardware.md)" in line
    assert make_launch_backend(env_extra=env).default_limit_off_profile(h100_sxm) is None


def test_run_says_a_default_limit_other_than_the_profile_s_before_any_probe(tmp_path, fake_gpus, monkeypatch, capsys):
    import autotune.backends.select as select
    from autotune.backends.launch import LaunchBackend
    from autotune.cli import main

    fake, env = fake_gpus
    for index in (0, 1):
        fake.set_board_default_mw(index, 350_000)
    monkeypatch.setattr(select, "choose_backend", lambda args, run_dir, *rest, **kwargs: LaunchBackend(run_dir=run_dir, env=env))
    # The study starts no probe: the warning is said before any (a refusal of the inputs is the run's one line, so
    # the run must pass its checks: held_lines.py).
    import autotune.study.loop as loop

    class StudyStarted(Exception):
        pass

    def start(*args, **kwargs):
        raise StudyStarted

    monkeypatch.setattr(loop, "run_study", start)
    out = tmp_path / "run"
    with pytest.raises(StudyStarted):
        main(["run", "--model", "tiny", "--hardware", "h100-sxm", "--nodes", "1", "--gpus-per-node", "2",
              "--backend", "launch", "--objectives", "time", "--out", str(out)])
    warnings = [line for line in capsys.readouterr().err.splitlines() if "a default power limit" in line]
    assert len(warnings) == 1 and warnings[0].startswith(
        "warning: the probes' GPUs have a default power limit of 350 W (NVML), not the h100-sxm profile's [power] "
        "module_cap_w = 700 W: ")
    assert not list(out.glob("trials/*"))  # said before any probe
