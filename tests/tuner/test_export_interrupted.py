"""Ctrl-C or SIGTERM while `autotune export` writes a pick's three files leaves one export, whole and recorded: a
newcomer's trial pressed Ctrl-C at its end and got exit 130 with its new launch.sh left out of configs/.written.json,
so the next export refused it as edited ("differs from what autotune last wrote there") and report kept it, writing
the pick beside it as knee.new.*. A signal between the files left a new config beside the earlier launch.sh."""

import json
import shutil
import signal
import subprocess
import sys

import pytest

from tests.cli import autotune, simulated_run

# `autotune export ARGS` whose Nth file write is followed by the signal, sent to itself: as a Ctrl-C landing there.
INTERRUPTING = """
import os, signal, sys
import autotune.export as export
write, count, after, name = export.write_text_atomic, [], int(sys.argv[1]), sys.argv[2]
def interrupting(path, text, mode=None):
    written = write(path, text, mode)
    if "autotune-export-" in str(path):  # what export would write, to compare the files in configs/ with
        return written
    count.append(path)
    if len(count) == after:
        os.kill(os.getpid(), getattr(signal, name))
    return written
export.write_text_atomic = interrupting
sys.argv = ["autotune", *sys.argv[3:]]
from autotune.cli import console_main
console_main()
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=2, trials=5)


@pytest.fixture
def run_dir(finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    return run


def _export_signalled(after_writes: int, name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", INTERRUPTING, str(after_writes), name, "export", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def _is_srun_export(configs):
    return "srun " in (configs / "knee.launch.sh").read_text()


@pytest.mark.parametrize("after_writes", [1, 2, 3])
def test_ctrl_c_while_writing_leaves_the_export_whole_recorded_and_said(run_dir, after_writes):
    configs = run_dir / "configs"
    assert not _is_srun_export(configs)
    stopped = _export_signalled(after_writes, "SIGINT", run_dir, "--pick", "knee", "--launcher", "srun")
    assert stopped.returncode == 130, stopped.stderr
    paths = [str(configs / name) for name in ("knee.json", "knee.candidate.json", "knee.launch.sh")]
    assert stopped.stdout.splitlines() == paths  # a script reading the paths gets them all
    # One line: export's, which names the files (cli's generic "no file is left half-written" followed it).
    assert stopped.stderr.splitlines() == [
        f"autotune export: interrupted after the export was written whole: {', '.join(paths)}"]
    assert _is_srun_export(configs)
    record = json.loads((configs / ".written.json").read_text())
    assert all(name in record for name in ("knee.json", "knee.candidate.json", "knee.launch.sh"))
    # What export wrote is autotune's: exported again, and not kept by a report as a user's edit.
    again = autotune("export", run_dir, "--pick", "knee")
    assert again.returncode == 0, again.stderr
    assert autotune("report", run_dir).returncode == 0
    assert not list(configs.glob("knee.new.*")) and not list(configs.glob(".*.tmp"))


def test_sigterm_while_writing_ends_by_the_signal_after_the_export_is_whole(run_dir):
    configs = run_dir / "configs"
    stopped = _export_signalled(2, "SIGTERM", run_dir, "--pick", "knee", "--launcher", "srun")
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr  # as after Ctrl-C, with SIGTERM's status
    said = stopped.stderr.splitlines()
    assert len(said) == 1 and "interrupted after the export was written whole" in said[0] and _is_srun_export(configs)
    assert autotune("export", run_dir, "--pick", "knee").returncode == 0
