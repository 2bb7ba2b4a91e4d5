"""Files are read as UTF-8 whatever the locale (trial 45 §5): under an ASCII locale with Python's UTF-8 mode off
(`LC_ALL=C PYTHONUTF8=0`), a valid UTF-8 profile, space or model file was refused as "not valid TOML/JSON" and
the user told to fix a file that was right. TOML is UTF-8 by its specification; JSON nearly always is."""

from __future__ import annotations

import json
import os

import pytest

from autotune.hardware import PROFILE_DIR
from autotune.models import PRESETS
from autotune.space.files import DEFAULT_SPACE
from tests import cli


def _ascii_locale() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    return {**environ, "LC_ALL": "C", "PYTHONUTF8": "0"}


def _hardware(tmp_path):
    path = tmp_path / "mynode.toml"
    path.write_text("# my node: 80 GB · HBM3 (µs latencies)\n" + (PROFILE_DIR / "h100-sxm.toml").read_text(encoding="utf-8"),
                    encoding="utf-8")
    return ["--hardware", path]


def _space(tmp_path):
    path = tmp_path / "myspace.toml"
    path.write_text("# ZeRO ≤ 3\n" + DEFAULT_SPACE.read_text(encoding="utf-8"), encoding="utf-8")
    return ["--space", path]


def _model(tmp_path):
    path = tmp_path / "m7ü.json"
    data = {**PRESETS["7b"].to_json(), "name": "qwen-7b-ü"}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return ["--model", path]


@pytest.mark.parametrize("given", [_hardware, _space, _model])
def test_a_utf8_file_is_read_under_an_ascii_locale(tmp_path, given):
    argv = given(tmp_path)
    if "--model" not in argv:
        argv += ["--model", "7b"]
    done = cli.autotune("space", *argv, "--nodes", 1, "--json", env=_ascii_locale())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
