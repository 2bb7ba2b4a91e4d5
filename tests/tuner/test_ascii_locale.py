"""Files are read as UTF-8 whatever the locale (trial 45 §5): under an ASCII locale with Python's UTF-8 mode off
(`LC_ALL=C PYTHONUTF8=0`), a valid UTF-8 profile, space or model file was refused as "not valid TOML/JSON" and
the user told to fix a file that was right. TOML is UTF-8 by its specification; JSON nearly always is."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

import pytest

from autotune.hardware import PROFILE_DIR
from autotune.models import PRESETS
from autotune.space.files import DEFAULT_SPACE
from tests import cli
from tests.tuner.test_models_hf import QWEN25_7B


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


# Trial 45: with the locale's coercion off too, Python decodes the command line and file names as ASCII, and a
# UTF-8 'é' arrives as the surrogate escapes '\udcc3\udca9'.
def _ascii_names_env() -> dict[str, str]:
    return {**_ascii_locale(), "PYTHONCOERCECLOCALE": "0"}


def _run_bytes(*args, cwd) -> subprocess.CompletedProcess:
    """`autotune ARGS` under that locale, its arguments as the bytes a UTF-8 terminal sends; output as bytes."""
    argv = [sys.executable, "-m", "autotune.cli", *(a if isinstance(a, bytes) else str(a).encode() for a in args)]
    return subprocess.run(argv, capture_output=True, timeout=120, cwd=cwd, env=_ascii_names_env())


def test_a_non_ascii_study_name_is_the_name_typed_and_a_non_utf8_one_is_one_line(tmp_path):
    from autotune.commands.run import default_run_dir

    done = _run_bytes("run", "--model", "tiny", "--nodes", 1, "--trials", 1, "--study-name", "étude".encode(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The same study, and the same directory, as under a UTF-8 locale.
    out = tmp_path / default_run_dir(argparse.Namespace(study_name="étude"), PRESETS["tiny"], (1,))
    assert json.loads((out / "pareto.json").read_text(encoding="utf-8"))["study_name"] == "étude"
    assert b"\\udc" not in done.stderr + done.stdout

    done = _run_bytes("run", "--model", "tiny", "--nodes", 1, "--study-name", b"\xe9tude", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "autotune run: error: argument --study-name: holds bytes that are not UTF-8 text (\\xe9): a study name is stored "
        "as text; type it in UTF-8 or use ASCII letters (see `autotune run --help`)"]


def test_a_model_named_by_a_non_ascii_folder_or_file_gets_its_name_and_a_safe_directory(tmp_path):
    checkpoint = tmp_path / "Qwén-7B"
    checkpoint.mkdir()
    data = {**QWEN25_7B}
    data.pop("_name_or_path", None)
    (checkpoint / "config.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "nö.json").write_text(json.dumps({k: v for k, v in PRESETS["tiny"].to_json().items() if k != "name"}),
                                      encoding="utf-8")
    def digest(name: str) -> str:  # what keeps two names apart that differ only in their letters beyond ASCII
        return "+" + hashlib.sha256(name.encode()).hexdigest()[:10]

    for model, name, directory in ((checkpoint, "Qwén-7B + SigLIP so400m/14", f"Qw_n-7B{digest('Qwén-7B')}-1n"),
                                   ("nö.json", "nö", f"n_{digest('nö')}-1n")):
        done = _run_bytes("run", "--model", model, "--nodes", 1, "--trials", 1, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads((tmp_path / "runs" / directory / "pareto.json").read_text(encoding="utf-8"))["model"] == name


def test_a_non_ascii_path_is_recorded_as_its_name_and_shown_as_typed(tmp_path):
    profile = tmp_path / "nœud.toml"
    profile.write_text((PROFILE_DIR / "gh200.toml").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "run"
    done = _run_bytes("run", "--model", "tiny", "--nodes", 1, "--trials", 1, "--hardware", profile, "--out", out,
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # report.html, UTF-8, could not hold the escapes: UnicodeEncodeError
    assert json.loads((out / "pareto.json").read_text(encoding="utf-8"))["hardware_file"] == str(profile)
    assert str(profile) in (out / "report.html").read_text(encoding="utf-8")

    done = _run_bytes("report", tmp_path / "rün", cwd=tmp_path)
    assert done.returncode == 2
    assert f"autotune report: error: {tmp_path / 'rün'} does not exist".encode() in done.stderr  # not r\udcc3\udcbcn


def test_a_non_ascii_study_name_in_a_refusal_is_written_so_that_typing_it_back_resumes_it(tmp_path):
    """Under an ASCII locale the fix named '?tude', another study, and following it was refused again (trial 58
    F1): the name is the shell word of its bytes, which bash gives back as the name."""
    out = tmp_path / "r"
    assert _run_bytes("run", "--model", "tiny", "--nodes", 1, "--trials", 1, "-q", "--out", out, "--study-name",
                      "étude".encode(), cwd=tmp_path).returncode == 0
    refused = _run_bytes("run", "--model", "tiny", "--nodes", 1, "--trials", 1, "-q", "--out", out, cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    said = refused.stderr.decode("ascii")
    assert "?tude" not in said and "--study-name $'\\xc3\\xa9tude' to resume $'\\xc3\\xa9tude'" in said, said
    typed = subprocess.run(["bash", "-c", "printf %s $'\\xc3\\xa9tude'"], capture_output=True, check=True).stdout
    resumed = _run_bytes("run", "--model", "tiny", "--nodes", 1, "--trials", 1, "-q", "--out", out, "--study-name", typed,
                         cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    missing = _run_bytes("report", out, "--study-name", "xtude", cwd=tmp_path)
    assert missing.returncode == 2 and b"it holds $'\\xc3\\xa9tude': pass --study-name $'\\xc3\\xa9tude'" in missing.stderr


def test_a_name_the_stream_can_show_is_quoted_as_before():
    import io

    from autotune.os_text import shell_text, shown_name

    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    ascii_ = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert shell_text("étude", utf8) == "'étude'" and shown_name("étude", utf8) == "'étude'"
    assert shell_text("my study", ascii_) == "'my study'" and shown_name("x", ascii_) == "'x'"
    assert shell_text("l'été", ascii_) == "$'l\\'\\xc3\\xa9t\\xc3\\xa9'"
    typed = subprocess.run(["bash", "-c", f"printf %s {shell_text('l' + chr(39) + 'été', ascii_)}"], capture_output=True,
                           check=True).stdout
    assert typed.decode() == "l'été"
