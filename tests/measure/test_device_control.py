"""Power limits and SM clocks through the NVML double: read, apply, restore, refuse without permission."""

from __future__ import annotations

import pynvml
import pytest
from measure_fakes import FakeNvml

from autotune.measure import device_control as dc
from autotune.measure.errors import DeviceControlError, SourceUnavailable, translate_nvml_control_error
from autotune.measure.nvml import NvmlApi

H100 = "NVIDIA H100 80GB HBM3"
GH200 = "NVIDIA GH200 120GB"


def test_reads_limits_and_clocks_with_the_module_scope_on_grace_hopper():
    h100, gh200 = dc.read_settings(FakeNvml(names=(H100, GH200)))
    assert (h100.scope, h100.power_limit_w, h100.default_power_limit_w, h100.min_power_limit_w) == ("gpu", 700, 700, 200)
    assert (gh200.scope, gh200.default_power_limit_w) == ("module", 680)
    assert (h100.sm_clock_mhz, h100.max_sm_clock_mhz, h100.min_supported_sm_clock_mhz) == (1980, 1980, 345)


def test_apply_sets_a_fraction_of_the_default_and_restore_puts_it_back():
    api = FakeNvml(names=(GH200, GH200))
    records = dc.apply(api, dc.read_settings(api), 0.8, 1500)
    assert [api.device(i)["limit_mw"] for i in (0, 1)] == [544_000, 544_000]
    assert api.changes[0] == ["limit", 0, 544_000, True]  # module scope on a GH200
    assert api.device(0)["locked_mhz"] == [345, 1500]
    assert records[0]["power_limit_w"] == pytest.approx(544.0) and records[0]["previous_power_limit_w"] == 680
    done = dc.restore(api, records)
    assert [api.device(i)["limit_mw"] for i in (0, 1)] == [680_000, 680_000]
    assert api.device(1)["locked_mhz"] is None
    assert "GPU 0: power limit 544 W -> 680 W restored" in done
    assert dc.restore(api, records) == ["GPU 0: locked SM clocks reset", "GPU 1: locked SM clocks reset"]


def test_untouched_knobs_change_nothing():
    api = FakeNvml()
    records = dc.apply(api, dc.read_settings(api), 1.0, "max")
    assert api.changes == [] and dc.restore(api, records) == [] and api.changes == []


def test_without_permission_the_reason_names_root_or_cap_sys_admin_and_nothing_changes():
    api = FakeNvml(permission=False)
    with pytest.raises(DeviceControlError, match="root or CAP_SYS_ADMIN"):
        dc.apply(api, dc.read_settings(api), 0.8, "max")
    assert api.device(0)["limit_mw"] == 700_000
    ok, reason = dc.control_available(api)
    assert not ok and "CAP_SYS_ADMIN" in reason


def test_a_limit_outside_the_allowed_range_is_refused_before_nvml_is_asked():
    api = FakeNvml()
    with pytest.raises(DeviceControlError, match="outside GPU 0's allowed 200-700 W"):
        dc.apply(api, dc.read_settings(api), 0.2, "max")
    with pytest.raises(DeviceControlError, match="SM clock 3000 MHz"):
        dc.apply(api, dc.read_settings(api), 1.0, 3000)
    assert api.changes == []


def test_records_before_hold_the_previous_values_for_a_process_killed_mid_apply():
    api = FakeNvml()
    (record,) = dc.records_before(dc.read_settings(api), 1500)
    api.set_power_limit_mw(0, 500_000)
    api.lock_sm_clocks_mhz(0, 345, 1500)
    dc.restore(api, [record])
    assert api.device(0)["limit_mw"] == 700_000 and api.device(0)["locked_mhz"] is None


def test_all_or_nothing_when_a_later_device_refuses():
    api = FakeNvml(names=(H100, H100))
    devices = dc.read_settings(api)
    api.device(1)["min_mw"] = 650_000  # NVML refuses GPU 1 (in-memory fake: the dict is the state)
    with pytest.raises(DeviceControlError):
        dc.apply(api, devices, 0.8, "max")
    assert api.device(0)["limit_mw"] == 700_000 and api.changes[-1] == ["limit", 0, 700_000, False]


def test_control_available_with_permission_changes_nothing():
    api = FakeNvml()
    assert dc.control_available(api) == (True, "")
    assert api.device(0)["limit_mw"] == 700_000 and api.inits == 0
    assert dc.control_available(FakeNvml(names=())) == (False, "NVML sees no GPU on this machine")


def test_control_available_asks_a_gpu_this_job_may_use():
    # trial75 #11: device 0's limit was written whatever CUDA_VISIBLE_DEVICES said: another job's GPU.
    api = FakeNvml(names=(H100,) * 4)
    assert dc.control_available(api, environ={"CUDA_VISIBLE_DEVICES": "3"}) == (True, "")
    assert [change[1] for change in api.changes] == [3]


def test_visible_devices_by_index_or_uuid():
    api = FakeNvml(names=(H100,) * 4)
    assert dc.visible_indices(api, {}) == [0, 1, 2, 3]
    assert dc.visible_indices(api, {"CUDA_VISIBLE_DEVICES": "2,3"}) == [2, 3]
    assert dc.visible_indices(api, {"CUDA_VISIBLE_DEVICES": "GPU-fake-1"}) == [1]


def test_file_backed_state_is_shared_between_two_doubles(tmp_path, monkeypatch):
    state = tmp_path / "nvml.json"
    FakeNvml(names=(H100,), state_path=state)
    monkeypatch.setenv("AUTOTUNE_FAKE_NVML_STATE", str(state))
    monkeypatch.setenv(dc.NVML_API_ENV, "measure_fakes:FakeNvml.from_env")
    other = dc.nvml_api()
    dc.apply(other, dc.read_settings(other), 0.5, "max")
    assert FakeNvml.from_env().device(0)["limit_mw"] == 350_000


def test_no_permission_from_nvml_is_translated_once():
    error = translate_nvml_control_error(pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION))
    assert "root or CAP_SYS_ADMIN" in error.reason
    assert "not supported" in translate_nvml_control_error(pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)).reason


class _RecordingLib:
    """Stands in for the pynvml module inside NvmlApi, to check which NVML call each scope makes."""

    NVML_POWER_SCOPE_MODULE, NVML_POWER_SCOPE_GPU = pynvml.NVML_POWER_SCOPE_MODULE, pynvml.NVML_POWER_SCOPE_GPU

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, args[1:]))
            if name == "nvmlDeviceSetPowerManagementLimit_v2":
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
        return call


def test_adapter_sets_module_scope_through_v2_and_gpu_scope_through_v1():
    api = NvmlApi()
    api._pynvml = lib = _RecordingLib()
    api.set_power_limit_mw(0, 500_000)
    with pytest.raises(DeviceControlError, match="CAP_SYS_ADMIN"):
        api.set_power_limit_mw(0, 500_000, module=True)
    assert lib.calls[1:] == [("nvmlDeviceSetPowerManagementLimit", (500_000,)),
                             ("nvmlDeviceSetPowerManagementLimit_v2", (pynvml.NVML_POWER_SCOPE_MODULE, 500_000))]


def test_cli_apply_then_restore_in_separate_processes(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    state = tmp_path / "nvml.json"
    FakeNvml(names=(GH200,), state_path=state)
    env = {**os.environ, "PYTHONPATH": f"{repo}:{repo / 'tests' / 'measure'}", "AUTOTUNE_FAKE_NVML_STATE": str(state),
           dc.NVML_API_ENV: "measure_fakes:FakeNvml.from_env"}
    record = tmp_path / "record.json"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "autotune.measure.device_cli", *args], env=env,
                              capture_output=True, text=True, timeout=60)

    done = cli("apply", "--power-limit", "0.75", "--record", str(record))
    assert done.returncode == 0, done.stderr
    assert "GPU 0: power limit 510 W (module scope, was 680 W)" in done.stdout
    assert json_state(state)["devices"][0]["limit_mw"] == 510_000
    assert cli("restore", "--record", str(record)).returncode == 0 and not record.exists()
    assert json_state(state)["devices"][0]["limit_mw"] == 680_000
    refused = cli("apply", "--power-limit", "0.1", "--record", str(record))
    assert refused.returncode == 2 and "outside GPU 0's allowed" in refused.stderr


def json_state(path):
    import json

    return json.loads(path.read_text())


def test_cli_restore_with_no_record_needs_no_driver_and_says_where_it_looked(tmp_path, monkeypatch, capsys):
    """`restore` without its record undoes nothing; it failed "no driver" on a host without NVML (the EXIT trap
    of a launch.sh whose apply had failed there said the error twice). Exit 0 for that trap, but one line: a restore
    run from another directory than apply's found no record, said nothing, and left the GPUs capped (trial77 #5)."""
    import socket

    from autotune.measure import device_cli

    def no_driver():
        raise SourceUnavailable("no driver: libnvidia-ml.so not found")

    monkeypatch.setattr(dc, "nvml_api", no_driver)
    monkeypatch.chdir(tmp_path)
    assert device_cli.main(["restore", "--record", ".autotune-device-settings.{host}.json"]) == 0
    out, err = capsys.readouterr()
    looked = tmp_path / f".autotune-device-settings.{socket.gethostname()}.json"
    assert out == "" and err == (
        f"python -m autotune.measure.device_cli restore: no record at {looked}: nothing restored (apply writes a relative "
        "--record in the directory apply ran in: run restore from there, or give both one absolute path)\n")


def test_restore_s_help_describes_its_record(capsys):
    from autotune.measure import device_cli

    with pytest.raises(SystemExit):
        device_cli.main(["restore", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "--record RECORD the file apply's --record wrote ({host}: this host's name;" in said, said
    assert "Where there is none, nothing is changed: one line says where it looked, exit status 0" in said, said


@pytest.mark.parametrize("argv", [
    ["apply", "--power", "0.8", "--rec", "x.json"],
    ["apply", "--power-limit", "0.8", "--rec", "x.json"],
    ["restore", "--rec", "x.json"],
    ["show", "--js"],
])
def test_cli_refuses_a_flag_prefix(tmp_path, monkeypatch, capsys, argv):
    """Trial 48 #14: `apply --power 0.8 --rec x.json` parsed as --power-limit 0.8 --record x.json; `autotune` takes
    whole flags only, and so does this command now."""
    from autotune.measure import device_cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dc, "nvml_api", lambda: pytest.fail("a refused command line touches no device"))
    with pytest.raises(SystemExit) as exit_:
        device_cli.main(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


APPLY = "python -m autotune.measure.device_cli apply"


@pytest.mark.parametrize("argv, said", [
    (["apply", "--bogus", "--record", "x.json"], f"unrecognized arguments: --bogus (see `{APPLY} --help`)"),
    (["apply", "--power-limit", "0.8"], f"the following arguments are required: --record (see `{APPLY} --help`)"),
    (["apply", "--power-limit", "0", "--record", "x.json"],
     f"argument --power-limit: '0' is out of range; it must be a number > 0 and <= 1 (see `{APPLY} --help`)"),
])
def test_cli_says_a_usage_mistake_in_one_line_prefixed_with_its_command(tmp_path, monkeypatch, capsys, argv, said):
    """Trial 48 #14: argparse's usage block came first, and the command's own errors began with a bare "error:";
    each is now one line, prefixed as `autotune`'s are."""
    from autotune.measure import device_cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dc, "nvml_api", lambda: pytest.fail("a refused command line touches no device"))
    try:
        status = device_cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    assert capsys.readouterr().err == f"{APPLY}: error: {said}\n"


def test_cli_says_a_missing_driver_in_one_line_prefixed_with_its_command(tmp_path, monkeypatch, capsys):
    from autotune.measure import device_cli

    monkeypatch.setattr(dc, "nvml_api", lambda: FakeNvml(init_error=SourceUnavailable("no driver: libnvidia-ml.so not found")))
    assert device_cli.main(["show"]) == 2
    assert capsys.readouterr().err == ("python -m autotune.measure.device_cli show: error: no driver: libnvidia-ml.so "
                                       "not found\n")


def test_a_probe_measures_and_sets_only_the_gpus_its_ranks_train_on(monkeypatch):
    # A newcomer's trial: a one-GPU probe on an eight-GPU node capped all eight and counted their joules.
    from autotune.measure import nvml
    from autotune.measure.discover import discover

    api = FakeNvml(names=(H100,) * 4)
    assert dc.ranks_indices(api, 1, {}) == [0]
    assert dc.ranks_indices(api, 2, {"CUDA_VISIBLE_DEVICES": "2,3"}) == [2, 3]
    assert dc.ranks_indices(api, 8, {}) == [0, 1, 2, 3]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert [source.index for source in nvml.probe(api, ranks=1).sources] == [3]
    assert [source.index for source in discover(kinds=["nvml"], nvml_api=api, nvml_ranks=2).sources] == [3, 1]
    assert [source.index for source in nvml.probe(api).sources] == [0, 1, 2, 3]  # `autotune sensors`: the node's


def test_on_a_grace_hopper_node_a_one_rank_probe_counts_its_own_module_alone(tmp_path, monkeypatch):
    # The hwmon sensors of the other modules would add back what the NVML choice left out (socket N is GPU N's).
    from measure_fakes import Gh200Tree

    from autotune.measure.discover import discover

    Gh200Tree(tmp_path, sockets=4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    found = discover(tmp_path, kinds=["nvml", "hwmon"], nvml_api=FakeNvml(names=(GH200,) * 4), nvml_ranks=1)
    assert {(s.kind, s.index) for s in found.sources} == {("nvml", 0), ("hwmon", 0)}
    assert len([s for s in found.sources if s.kind == "hwmon"]) == 4  # socket 0's module, grace, cpu, sysio
    whole_node = discover(tmp_path, kinds=["nvml", "hwmon"], nvml_api=FakeNvml(names=(GH200,) * 4))
    assert {s.index for s in whole_node.sources} == {0, 1, 2, 3}
    found.close()
    whole_node.close()


@pytest.mark.parametrize("visible, ranks, sockets", [(None, 1, {0}), (None, 2, {0, 1}), ("2,3", 1, {2}),
                                                     ("3,1", 2, {1, 3}), (None, 8, {0, 1, 2, 3})])
def test_without_nvml_a_probe_counts_the_modules_of_its_ranks_gpus_alone(tmp_path, monkeypatch, visible, ranks,
                                                                         sockets):
    """No NVML (no driver library, or AUTOTUNE_ENERGY_SOURCES=hwmon): every module's sensors were counted, a one-rank
    probe's figure four modules' energy. The GPUs are chosen as NVML's path chooses them (CUDA_VISIBLE_DEVICES, then
    the first `ranks`), socket N being GPU N's module."""
    from measure_fakes import Gh200Tree

    from autotune.measure.discover import discover

    Gh200Tree(tmp_path, sockets=4)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    found = discover(tmp_path, kinds=["hwmon"], nvml_ranks=ranks)
    assert {s.index for s in found.sources} == sockets and len(found.sources) == 4 * len(sockets)
    assert found.notes == []
    found.close()


@pytest.mark.parametrize("visible, why", [
    ("GPU-8c1f2a4e-0000-0000-0000-000000000000", "names devices by UUID, which only NVML matches to a module"),
    ("7", "names none of the node's 4 modules"),
])
def test_without_nvml_modules_no_rank_can_be_matched_to_are_counted_and_said(tmp_path, monkeypatch, visible, why):
    """Honest over precise: where the ranks' modules cannot be known, every one is kept and the energy block says so,
    not a silent figure of four modules for one GPU's probe."""
    from measure_fakes import Gh200Tree

    from autotune.measure.discover import discover
    from autotune.measure.meter import NodeMeter

    Gh200Tree(tmp_path, sockets=4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    found = discover(tmp_path, kinds=["hwmon"], nvml_ranks=1)
    assert {s.index for s in found.sources} == {0, 1, 2, 3}
    (note,) = found.notes
    assert note == (f"hwmon: the sensors of all 4 GH200 modules are counted, not only those of the probe's 1 GPU per "
                    f"node: CUDA_VISIBLE_DEVICES={visible} {why}; the node figure may hold other modules' energy (make "
                    "NVML available to count the probe's alone)")
    meter = NodeMeter(root=tmp_path, accelerators=1, discovery=found)
    meter.begin()
    block = meter.end()
    assert block["provenance"] == "measured" and note in block["flags"]


def _cli(argv, api, monkeypatch, capsys) -> tuple[int, str]:
    """device_cli in this process on the fake `api` (None: the command must refuse before NVML): status, stderr."""
    from autotune.measure import device_cli

    monkeypatch.setattr(dc, "nvml_api", (lambda: api) if api else (lambda: pytest.fail("refused before any device")))
    try:
        status = device_cli.main([str(word) for word in argv])
    except SystemExit as exit_:
        status = exit_.code
    return status, capsys.readouterr().err


def test_a_second_apply_never_replaces_a_record_no_restore_put_back(tmp_path, monkeypatch, capsys):
    # Trial 65 #1: a job killed outright left its record; a second apply wrote the capped values as the "previous"
    # ones, and restore put GPU 0 back at the first cap, the default lost.
    api, record = FakeNvml(names=(H100,) * 2), tmp_path / "r.json"
    assert _cli(["apply", "--power-limit", "0.5", "--gpus", "1", "--record", record], api, monkeypatch, capsys)[0] == 0
    status, said = _cli(["apply", "--power-limit", "0.7", "--record", record], api, monkeypatch, capsys)
    assert status == 2 and "holds the settings an earlier apply changed and no restore put back" in said
    assert [api.device(i)["limit_mw"] for i in (0, 1)] == [350_000, 700_000]
    assert _cli(["restore", "--record", record], api, monkeypatch, capsys)[0] == 0
    assert [api.device(i)["limit_mw"] for i in (0, 1)] == [700_000, 700_000]


def test_show_says_which_gpus_are_off_their_defaults(monkeypatch, capsys):
    # trial75 #16: a GPU left at 450 W and locked at 1200 MHz read as a GPU at its defaults.
    from autotune.measure import device_cli

    api = FakeNvml(names=(H100,) * 2)
    api.set_power_limit_mw(1, 450_000)
    api.lock_sm_clocks_mhz(1, 345, 1200)
    monkeypatch.setattr(dc, "nvml_api", lambda: api)
    assert device_cli.main(["show"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("SM clock 1980 MHz (max 1980)")
    assert lines[1] == ("GPU 1 (NVIDIA H100 80GB HBM3, gpu scope): power limit 450 W (default 700, allowed 200-700); "
                        "SM clock 1200 MHz (max 1980; held by a user setting: locked clocks)")
    assert dc.off_default_words([d.to_dict() for d in dc.read_settings(api)]) == (
        "GPU 1 at 450 W of its 700 W default limit, its SM clock held by a user setting (locked clocks)")


@pytest.mark.parametrize("flags, permission, said", [
    (["--power-limit", "0.1", "--gpus", "2"], True, "power limit 0.1 x 700 W = 70 W is outside GPU 0's allowed 200-700 W"),
    (["--power-limit", "0.7"], False, "needs root or CAP_SYS_ADMIN (NVML: no permission); run this command as root "
                                      "(sudo) or in a container given CAP_SYS_ADMIN, or train at the default limit and "
                                      "clock without apply; no GPU was changed"),
])
def test_a_refused_apply_leaves_no_record_and_the_next_apply_goes_ahead(tmp_path, monkeypatch, capsys, flags, permission,
                                                                       said):
    # trial75 #7: a refused apply left its record, and the next apply was told an earlier one had changed the GPUs.
    api, record = FakeNvml(names=(H100,) * 2, permission=permission), tmp_path / "r.json"
    status, err = _cli(["apply", *flags, "--record", record], api, monkeypatch, capsys)
    assert status == 2 and said in err and len(err.splitlines()) == 1 and "in the space" not in err
    assert not record.exists() and api.changes == []
    api.permission = True
    assert _cli(["apply", "--power-limit", "0.7", "--record", record], api, monkeypatch, capsys)[0] == 0
    assert record.exists() and api.device(0)["limit_mw"] == 490_000


def test_an_apply_whose_undo_failed_keeps_its_record(tmp_path, monkeypatch, capsys):
    # All or nothing: GPU 1 refuses, and GPU 0, already set, cannot be put back: its record is what restore needs.
    api, record = FakeNvml(names=(H100,) * 2), tmp_path / "r.json"
    set_limit = api.set_power_limit_mw

    def refuse_gpu_1_then_all(index, limit_mw, module=False):
        if index == 1 or api.changes:
            raise DeviceControlError("NVML refused the change (unknown error)")
        set_limit(index, limit_mw, module=module)

    monkeypatch.setattr(api, "set_power_limit_mw", refuse_gpu_1_then_all)
    status, err = _cli(["apply", "--power-limit", "0.7", "--record", record], api, monkeypatch, capsys)
    assert status == 2 and "could not restore GPU 0" in err
    assert record.exists() and api.device(0)["limit_mw"] == 490_000


@pytest.mark.parametrize("text, said", [
    ("garbage", "is not a record `device_cli apply` wrote (JSONDecodeError"),
    ('{"a": 1}', "not a list of devices"),
    ('["x"]', "entry 1: is not a device's settings"),
    ('[{"index": "x"}]', "entry 1: index 'x' is not one of this node's GPUs (0-1)"),
    ('[{"index": 99, "scope": "gpu", "previous_power_limit_w": 700}]', "index 99 is not one of this node's GPUs"),
    ('[{"index": 0, "scope": "card", "previous_power_limit_w": 700}]', "scope 'card' is neither gpu nor module"),
    ('[{"index": 0, "scope": "gpu", "previous_power_limit_w": 1e400}]', "previous_power_limit_w inf is not a power limit"),
    ('[{"index": 0, "scope": "gpu", "previous_power_limit_w": NaN}]', "previous_power_limit_w nan is not a power limit"),
    ('[{"index": 0, "scope": "gpu", "previous_power_limit_w": 700, "sm_clock_cap_mhz": -5}]', "sm_clock_cap_mhz -5"),
])
def test_a_damaged_record_is_one_line_and_is_kept(tmp_path, monkeypatch, capsys, text, said):
    # Trial 65 #2: the restore of a launch.sh's EXIT trap ended in a traceback, its GPUs left capped, unsaid.
    record = tmp_path / "r.json"
    record.write_text(text)
    status, err = _cli(["restore", "--record", record], FakeNvml(names=(H100,) * 2), monkeypatch, capsys)
    assert status == 2 and said in err and "nothing was restored" in err and len(err.splitlines()) == 1
    assert record.read_text() == text


@pytest.mark.parametrize("argv, said", [
    (["--record", "{dir}"], "is a directory: name a file in it"),
    (["--record", "{dir}/no/x.json"], "does not exist; create it or name a file in an existing one"),
    (["--record", ""], "argument --record: is empty"),
    (["--power-limit", "inf", "--record", "x.json"], "argument --power-limit: 'inf'"),
    (["--power-limit", "50", "--record", "x.json"], "argument --power-limit: '50' is out of range"),
    (["--power-limit", "1e400", "--record", "x.json"], "argument --power-limit: '1e400'"),
    (["--sm-clock-mhz", "-5", "--record", "x.json"], "argument --sm-clock-mhz: '-5' is out of range"),
    (["--sm-clock-mhz", "1.5e3", "--record", "x.json"], "write it without a decimal point or an exponent (1500)"),
])
def test_apply_refuses_a_wrong_flag_or_record_path_before_any_device(tmp_path, monkeypatch, capsys, argv, said):
    # Trial 65 #3, #11: a folder, a missing folder or "" as --record were tracebacks naming "the study"; an
    # infinite or absurd fraction and a negative clock reached NVML; `invalid _clock value` named a function.
    monkeypatch.chdir(tmp_path)
    status, err = _cli(["apply", *(word.format(dir=tmp_path) for word in argv)], None, monkeypatch, capsys)
    assert status == 2 and said in err and len(err.splitlines()) == 1 and "_clock" not in err


def test_apply_refuses_more_gpus_than_are_visible_and_a_visible_list_of_none(tmp_path, monkeypatch, capsys):
    # Trial 65 #5: --gpus 8 on four GPUs capped four without a word; CUDA_VISIBLE_DEVICES=7 capped none, exit 0.
    api, record = FakeNvml(names=(H100,) * 4), tmp_path / "r.json"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    status, err = _cli(["apply", "--power-limit", "0.5", "--gpus", "8", "--record", record], api, monkeypatch, capsys)
    assert status == 2 and "--gpus 8: only 4 GPUs are visible here (the node's)" in err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    status, err = _cli(["apply", "--power-limit", "0.5", "--record", record], api, monkeypatch, capsys)
    assert status == 2 and "no GPU to set: CUDA_VISIBLE_DEVICES='7' names none of this node's 4 GPUs" in err
    assert not record.exists() and all(api.device(i)["limit_mw"] == 700_000 for i in range(4))


@pytest.mark.parametrize("failing_write, said, changed", [
    (1, "(no GPU was changed)", False),
    # After the change: "no GPU was changed" was said of capped GPUs (the clause was swapped in by a string replace of
    # atomic_write's study clause, whichever write failed); the record written before the change restores them.
    (2, "(the GPUs were set: restore them first with `python -m autotune.measure.device_cli restore --record {record}`, "
        "which puts back the values it recorded before the change)", True),
])
def test_a_record_that_cannot_be_written_says_what_was_changed(tmp_path, monkeypatch, capsys, failing_write, said,
                                                               changed):
    import errno

    from autotune import atomic_write

    api, record = FakeNvml(names=(H100,) * 2), tmp_path / "r.json"
    temp_file_beside, writes = atomic_write.temp_file_beside, []

    def disk_full_at_the_failing_write(path):
        writes.append(path)
        if len(writes) == failing_write:
            raise OSError(errno.ENOSPC, "No space left on device")
        return temp_file_beside(path)

    monkeypatch.setattr(atomic_write, "temp_file_beside", disk_full_at_the_failing_write)
    status, err = _cli(["apply", "--power-limit", "0.5", "--record", record], api, monkeypatch, capsys)
    assert status == 2 and len(err.splitlines()) == 1 and "(No space left on device)" in err
    assert err.rstrip("\n").endswith(said.format(record=record)), err
    assert "what the study measured" not in err  # no study here: atomic_write's default clause is not device_cli's
    assert [api.device(i)["limit_mw"] for i in (0, 1)] == ([350_000] * 2 if changed else [700_000] * 2)
    if changed:  # what the line says puts them back does
        assert _cli(["restore", "--record", record], api, monkeypatch, capsys)[0] == 0
        assert [api.device(i)["limit_mw"] for i in (0, 1)] == [700_000, 700_000]
