"""Each Python install's probes build DeepSpeed's ops in a folder of their own (autotune/build_locks.py):
two installs sharing torch's one folder rebuilt each other's ops on every probe (a newcomer's trial)."""

from __future__ import annotations

import subprocess
import sys

from autotune.build_locks import build_locks, extensions_root, install_extensions_dir


def test_two_installs_get_two_folders_under_torchs_and_a_set_folder_wins(tmp_path):
    environ = {"XDG_CACHE_HOME": str(tmp_path)}
    one = install_extensions_dir(environ, prefix="/opt/venvs/tuner")
    other = install_extensions_dir(environ, prefix="/home/me/train/.venv")
    assert one != other and one.parent == other.parent == tmp_path / "torch_extensions" == extensions_root(environ)
    assert one == install_extensions_dir(environ, prefix="/opt/venvs/tuner")  # every node of the install agrees
    assert one.name.startswith(f"autotune-py{sys.version_info.major}{sys.version_info.minor}-")
    given = {**environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "mine")}
    assert install_extensions_dir(given, prefix="/opt/venvs/tuner") == tmp_path / "mine"
    # The lock search (a timed-out probe's, the probe's cleaning) finds them there.
    (one / "cpu_adam").mkdir(parents=True)
    (one / "cpu_adam" / "lock").write_text("")
    assert build_locks(one) == [one / "cpu_adam" / "lock"]


def test_the_probe_and_scripts_test_build_where_torch_then_looks(tmp_path):
    """What a probe process sets is where torch's cpp_extension builds: the same folder for the same
    install, whichever process asks."""
    code = ("import os; from autotune.build_locks import use_install_extensions_dir; use_install_extensions_dir(); "
            "from torch.utils.cpp_extension import _get_build_directory; print(_get_build_directory('op', False))")
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path)}
    built = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                            cwd=str(tmp_path.parent), check=False) for _ in range(2)]
    assert all(b.returncode == 0 for b in built), built[0].stderr
    expected = install_extensions_dir({"XDG_CACHE_HOME": str(tmp_path)}) / "op"
    assert [b.stdout.strip() for b in built] == [str(expected)] * 2
