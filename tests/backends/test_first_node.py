"""The probes' first node judged there, not on the tuner's machine: a hostfile of other hosts is asked
over ssh, an allocation seen from a login node through srun (stand-ins on PATH that run the command
here and log what they were asked, as the real ones would run it there)."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys

import pytest
from rich.console import Console

from autotune.backends.first_node import ask_first_node, probes_first_node
from autotune.backends.hosts import allocation_first_node_elsewhere, is_this_machine
from autotune.backends.launchers import resolve_launcher
from autotune.errors import UserError
from tests.backends.conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "measure"))
from measure_fakes import FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV, FakeNvml, Gh200Tree  # noqa: E402

HOST = socket.gethostname()


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "::1", HOST, HOST.upper(),
                                  f"{HOST.split('.')[0]}.cluster.example"])
def test_this_machine_by_any_of_its_names(host):
    assert is_this_machine(host, {})


@pytest.mark.parametrize("host", ["nid001", "10.0.0.5", f"{HOST}x", "node1.cluster.example", "10"])
def test_other_machines(host):
    assert not is_this_machine(host, {})


def test_slurm_s_name_for_this_node_counts_as_this_machine():
    assert is_this_machine("gpu003", {"SLURMD_NODENAME": "gpu003"})


@pytest.mark.parametrize("environ, first", [
    ({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu[003-004]"}, "gpu003"),  # salloc on a login node
    ({"SLURM_JOB_ID": "7", "SLURM_NODELIST": "gpu007"}, "gpu007"),
    ({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu[003-004]", "SLURMD_NODENAME": "gpu003"}, None),  # batch host
    ({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": f"{HOST},other"}, None),
    ({"SLURM_JOB_ID": "7"}, None),  # the allocation names no node: nothing to ask
    ({"SLURM_JOB_NODELIST": "gpu003"}, None),  # no job
])
def test_an_allocation_s_first_node_is_elsewhere_only_where_it_is_not_this_machine(environ, first):
    assert allocation_first_node_elsewhere(environ) == first


def test_a_one_node_allocation_seen_from_a_login_node_probes_through_srun(make_candidate):
    """torchrun would start the probe on the login node, outside the allocation."""
    login = {"SLURM_JOB_ID": "7", "SLURM_NNODES": "1", "SLURM_JOB_NODELIST": "gpu003"}
    assert resolve_launcher("auto", make_candidate(), None, login) == "srun"
    assert resolve_launcher("auto", make_candidate(), None, {**login, "SLURMD_NODENAME": "gpu003"}) == "torchrun"


GRES = {"SLURM_GPUS_ON_NODE": "4"}  # a job with GPU gres: SLURM sets the clock of those GPUs alone


@pytest.mark.parametrize("launcher, environ, srun_sets_clock", [
    ("srun", {"SLURM_JOB_ID": "7", "SLURM_NNODES": "1", "SLURM_JOB_NODELIST": "gpu003", "SLURMD_NODENAME": "gpu003",
              **GRES}, True),
    ("auto", {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", **GRES}, True),  # every probe is an srun step
    ("auto", {"SLURM_JOB_ID": "7", "SLURM_NNODES": "1", "SLURM_JOB_NODELIST": "gpu003", **GRES}, True),  # from a login node
    ("auto", {"SLURM_JOB_ID": "7", "SLURM_NNODES": "1", "SLURM_JOB_NODELIST": "gpu003", "SLURMD_NODENAME": "gpu003",
              **GRES}, False),  # one-node probes start with torchrun here
    ("auto", {}, False),
    ("torchrun", {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", **GRES}, False),
    ("srun", {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2"}, False),  # no GPU gres: --gpu-freq would set nothing
])
def test_the_clock_stays_searchable_where_every_probe_is_an_srun_step(
        make_launch_backend, monkeypatch, tmp_path, launcher, environ, srun_sets_clock):
    for key in [k for k in os.environ if k.startswith("SLURM")]:
        monkeypatch.delenv(key)
    (tmp_path / "srun").write_text("#!/bin/sh\n")  # never run: only found on PATH
    (tmp_path / "srun").chmod(0o755)
    backend = make_launch_backend(launcher=launcher, env_extra={**environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert backend.sets_clock_itself() is srun_sets_clock


def test_where_the_first_rank_runs(tmp_path):
    remote, local = tmp_path / "remote", tmp_path / "local"
    remote.write_text("nid001 slots=4\nnid002 slots=4\n")
    local.write_text(f"{HOST} slots=4\nnid002 slots=4\n")
    login = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu[003-004]"}
    assert probes_first_node("auto", remote, {}) == ("nid001", "ssh")
    assert probes_first_node("deepspeed", remote, login) == ("nid001", "ssh")
    assert probes_first_node("auto", local, {}) is None
    assert probes_first_node("auto", None, login) == ("gpu003", "srun")
    assert probes_first_node("srun", None, {**login, "SLURMD_NODENAME": "gpu004"}) == ("gpu003", "srun")
    assert probes_first_node("torchrun", None, login) is None
    assert probes_first_node("auto", None, {}) is None


# --- asked over ssh ------------------------------------------------------------------------------


@pytest.fixture
def stand_ins(tmp_path, monkeypatch):
    """`ssh` and `srun` on PATH that log their arguments to asked.log and run the command here."""
    bin_dir, log = tmp_path / "bin", tmp_path / "asked.log"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"""#!/bin/sh
echo "ssh $*" >> {log}
eval "last=\\${{$#}}"
exec sh -c "$last"
""")
    (bin_dir / "srun").write_text(f"""#!/bin/sh
echo "srun $*" >> {log}
while [ "${{1#-}}" != "$1" ]; do shift; done
exec "$@"
""")
    (bin_dir / "pdsh").write_text("#!/bin/sh\n")  # only found on PATH: these tests launch no probe through it
    for name in ("ssh", "srun", "pdsh"):
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir, log


@pytest.fixture
def remote_hostfile(tmp_path):
    path = tmp_path / "hostfile"
    path.write_text("nid001 slots=1\nnid002 slots=1\n")
    return path


def test_a_hostfile_of_other_hosts_is_judged_by_its_first_host_asked_once(
        stand_ins, remote_hostfile, make_launch_backend, tmp_path, monkeypatch):
    _, log = stand_ins
    Gh200Tree(tmp_path / "sys")  # the node's sensors, seen only through the variables its probes get
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # forwarded as DeepSpeed's runner forwards PYTHON* variables
    backend = make_launch_backend(launcher="auto", hostfile=remote_hostfile,
                                  env_extra={"AUTOTUNE_SYSFS_ROOT": str(tmp_path / "sys")})
    assert backend.estimated_energy_only() is None  # this machine has no sensor: it was not the one asked
    assert backend.estimated_energy_only() is None
    asked = log.read_text().splitlines()
    assert len(asked) == 1, asked
    assert asked[0].startswith("ssh -o BatchMode=yes -o ConnectTimeout=10 nid001 cd ")
    assert f"AUTOTUNE_SYSFS_ROOT={tmp_path / 'sys'}" in asked[0] and f"PYTHONPATH={REPO}" in asked[0]
    assert asked[0].endswith(f"{sys.executable} -m autotune.cli sensors --json")
    assert backend.describe().endswith("energy sensors as on nid001 (the probes' first node, asked over ssh): hwmon)")


def test_no_sensor_on_the_first_host_names_it(stand_ins, remote_hostfile, make_launch_backend):
    backend = make_launch_backend(launcher="deepspeed", hostfile=remote_hostfile)
    assert backend.estimated_energy_only() == ("no energy sensor on nid001 (the probes' first node, asked over ssh), "
                                               "`autotune sensors` there says why")


def test_the_first_host_s_gpu_controls_decide_whether_the_power_limit_is_searched(
        stand_ins, remote_hostfile, make_launch_backend, tmp_path):
    from autotune.commands.options import settings_for
    from tests.backends.narrowing import keep_device_knobs_if_unsettable

    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",), state_path=state)
    gpus = {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state),
            "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}"}
    settings = settings_for("--model", "7b", "--hardware", "h100-sxm", "--nodes", "1")
    backend = make_launch_backend(launcher="deepspeed", hostfile=remote_hostfile, env_extra=gpus)
    assert backend.device_settings_available() == (True, "")
    assert keep_device_knobs_if_unsettable(settings, backend, Console(file=io.StringIO())) is settings

    fake.permission = False
    backend = make_launch_backend(launcher="deepspeed", hostfile=remote_hostfile, env_extra=gpus)
    out = io.StringIO()
    narrowed = keep_device_knobs_if_unsettable(settings, backend, Console(file=out, width=400))
    assert narrowed.space.power_limit == (1.0,)
    said = out.getvalue()
    assert "power_limit 0.9, 0.8 and 0.7 are not searched" in said and "CAP_SYS_ADMIN" in said
    # the node follows the refusal it was asked for, not "in the space" (trial75 #9)
    assert "needs root or CAP_SYS_ADMIN (NVML: no permission) on nid001 (the probes' first node, asked over ssh); " in said
    assert fake.device(0)["limit_mw"] == 700_000  # asked, never changed


def test_the_first_host_s_gpus_off_their_defaults_are_said_naming_it(stand_ins, remote_hostfile, make_launch_backend,
                                                                    tmp_path):
    # trial75 #16: a GPU capped before the study was measured and reported as untouched at its default.
    state = tmp_path / "nvml.json"
    fake = FakeNvml(names=("NVIDIA H100 80GB HBM3",), state_path=state)
    fake.set_power_limit_mw(0, 450_000)
    fake.permission = False
    gpus = {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state),
            "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}"}
    backend = make_launch_backend(launcher="deepspeed", hostfile=remote_hostfile, env_extra=gpus)
    line = backend.devices_off_default()
    assert ("stand for on nid001 (the probes' first node, asked over ssh) (GPU 0 at 450 W of its 700 W default "
            "limit): this user cannot change them") in line


def test_the_first_host_s_default_limit_other_than_the_profile_s_is_said_naming_it(
        stand_ins, remote_hostfile, make_launch_backend, tmp_path):
    # trial75 #2, #12: the probes' GPUs are the first node's, whose default limit its `sensors --json` lists.
    from autotune.hardware import load_hardware

    state = tmp_path / "nvml.json"
    FakeNvml(names=("NVIDIA H100 PCIe",), state_path=state).set_board_default_mw(0, 350_000)
    gpus = {"AUTOTUNE_NVML_API": FAKE_NVML_API_SPEC, FAKE_NVML_STATE_ENV: str(state),
            "PYTHONPATH": f"{REPO}:{REPO / 'tests' / 'measure'}"}
    backend = make_launch_backend(launcher="deepspeed", hostfile=remote_hostfile, env_extra=gpus)
    line = backend.default_limit_off_profile(load_hardware("h100-sxm"))
    assert line.startswith("the probes' GPUs on nid001 (the probes' first node, asked over ssh) have a default power "
                           "limit of 350 W (NVML), not the h100-sxm profile's [power] module_cap_w = 700 W: ")


def test_a_hostfile_that_names_this_machine_first_is_judged_here(stand_ins, make_launch_backend, tmp_path):
    _, log = stand_ins
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(f"{HOST} slots=1\nnid002 slots=1\n")
    backend = make_launch_backend(launcher="deepspeed", hostfile=hostfile)
    assert backend.estimated_energy_only() == "no energy sensor on this machine (see `autotune sensors`)"
    assert not log.exists()


@pytest.mark.parametrize("script, said", [
    ('echo "ssh: Could not resolve hostname nid001: Name or service not known" >&2; exit 255',
     "could not reach nid001, the hostfile's first host, over ssh (ssh: Could not resolve hostname nid001: Name or "
     "service not known); DeepSpeed's launcher starts the probes there over ssh too: set up passwordless ssh"),
    ('echo "Permission denied (publickey)." >&2; exit 255', "over ssh (Permission denied (publickey).)"),
    ('echo "sh: 1: /opt/venv/bin/python: not found" >&2; exit 127',
     "`autotune sensors` failed on nid001, asked over ssh (exit 127: sh: 1: /opt/venv/bin/python: not found); the "
     "probes run there with"),
    ("exit 1", "(exit 1: no message)"),
    ('echo "Welcome to nid001"; echo "not json"', "answered `autotune sensors --json` with no JSON of its sensors ('not json')"),
    ("echo '{\"sources\": 3}'", "with no JSON of its sensors"),
    ("echo '{\"sources\": [], \"device_settings_settable\": \"yes\", \"device_settings_reason\": \"\"}'",
     "with no JSON of its sensors"),
    ("echo '[1, 2]'", "with no JSON of its sensors"),
    ("true", "with no JSON of its sensors ('nothing')"),
])
def test_a_first_host_that_cannot_answer_is_one_line_naming_it(tmp_path, monkeypatch, script, said):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    with pytest.raises(UserError) as refused:
        ask_first_node("nid001", "ssh", python="/opt/venv/bin/python", env={}, environ=dict(os.environ))
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_a_login_script_s_banner_before_the_answer_is_skipped(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text('#!/bin/sh\necho "{ this cluster is maintained on Fridays }"\n'
                                 'printf \'{\\n  "sources": [{"kind": "rapl", "available": true}],\\n'
                                 '  "device_settings_settable": false, "device_settings_reason": "no GPU"}\\n\'\n')
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    answer = ask_first_node("nid001", "ssh", python="python", env={}, environ=dict(os.environ))
    assert (answer.energy_sources, answer.settable, answer.settable_reason) == (("rapl",), False, "no GPU")


def test_a_first_host_that_hangs_is_given_up_on(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    with pytest.raises(UserError, match=r"nid001 did not answer within 1 s .*check that `ssh nid001 true` returns at once"):
        ask_first_node("nid001", "ssh", python="python", env={}, environ=dict(os.environ), timeout_s=1)


def test_without_ssh_on_path_the_fix_is_named():
    with pytest.raises(UserError, match=r"^ssh is not on PATH, and the probes' first node nid001 is not this machine"):
        ask_first_node("nid001", "ssh", python="python", env={}, environ={"PATH": "/nonexistent"})


# --- asked through srun --------------------------------------------------------------------------


def test_an_allocation_seen_from_a_login_node_is_asked_in_one_srun_step_with_its_gpus(
        stand_ins, make_launch_backend, monkeypatch, tmp_path):
    _, log = stand_ins
    Gh200Tree(tmp_path / "sys")
    for key, value in {"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "gpu[003-004]",
                       "SLURM_GPUS_PER_NODE": "h100:4", "AUTOTUNE_SYSFS_ROOT": str(tmp_path / "sys")}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    backend = make_launch_backend(launcher="srun", env_extra={"AUTOTUNE_SYSFS_ROOT": str(tmp_path / "sys")})
    assert backend.estimated_energy_only() is None
    assert log.read_text().splitlines() == [
        f"srun --nodes=1 --ntasks=1 --nodelist=gpu003 --export=ALL --gpus-per-node=4 {sys.executable} "
        "-m autotune.cli sensors --json"]


# --- the command a user runs ---------------------------------------------------------------------


def _autotune_run(tmp_path, *flags, path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env.update(PATH=path, PYTHONPATH=str(REPO), DS_ACCELERATOR="cpu", AUTOTUNE_SYSFS_ROOT=str(tmp_path / "empty-sys"))
    return subprocess.run([sys.executable, "-m", "autotune.cli", "run", "--model", "tiny", "--hardware", "cpu",
                           "--backend", "launch", "--trials", "2", "--out", str(tmp_path / "run"), *flags],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_run_from_a_login_node_refuses_estimates_by_the_first_host_s_sensors(stand_ins, remote_hostfile, tmp_path):
    bin_dir, log = stand_ins
    (tmp_path / "empty-sys").mkdir()
    done = _autotune_run(tmp_path, "--hostfile", str(remote_hostfile), path=f"{bin_dir}:{os.environ['PATH']}")
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error == ("autotune run: error: no energy sensor on nid001 (the probes' first node, asked over ssh), "
                     "`autotune sensors` there says why: pass --allow-estimated-energy to rank by estimated energy, "
                     "or --objectives time")
    assert "nid001" in log.read_text() and not (tmp_path / "run" / "trials").exists()


@pytest.mark.parametrize("listed, said", [
    ("NVIDIA H100 80GB HBM3, 81559", "the GPU NVIDIA H100 80GB HBM3 on nid001 (the probes' first node, asked over ssh) "
                                     "has 79.6 GiB, but --hardware gh200 describes"),
    ("", "--hardware gh200 describes CUDA GPUs, but nid001 (the probes' first node, asked over ssh) has none"),
])
def test_a_profile_the_first_host_s_gpus_do_not_match_is_refused_before_any_probe(stand_ins, remote_hostfile, tmp_path,
                                                                                  listed, said):
    """An 80 GB H100 node under the default gh200 profile (96 GB): each probe rank would refuse it, after
    three probes' start-up; the tuner asks the node (`sensors --json` lists its GPUs) and says it once."""
    bin_dir, _ = stand_ins
    (bin_dir / "nvidia-smi").write_text(f'#!/bin/sh\nprintf "{listed}\\n"\n')
    (bin_dir / "nvidia-smi").chmod(0o755)
    done = _autotune_run(tmp_path, "--hostfile", str(remote_hostfile), "--hardware", "gh200", "--objectives", "time",
                         path=f"{bin_dir}:{os.environ['PATH']}")
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith(f"autotune run: error: {said}") and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "run" / "trials").exists()


def test_run_with_an_unreachable_first_host_is_one_line_before_any_probe(remote_hostfile, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text('#!/bin/sh\necho "ssh: connect to host nid001 port 22: No route to host" >&2\nexit 255\n')
    (bin_dir / "ssh").chmod(0o755)
    done = _autotune_run(tmp_path, "--hostfile", str(remote_hostfile), path=f"{bin_dir}:{os.environ['PATH']}")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        "autotune run: error: could not reach nid001, the hostfile's first host, over ssh (ssh: connect to host nid001 "
        "port 22: No route to host)")
    assert not (tmp_path / "run" / "trials").exists()
