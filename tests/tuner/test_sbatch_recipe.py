"""docs/launch.md's sbatch script: `#SBATCH --signal=B:TERM@...` signals the batch shell only, so the
script must `exec` the tuner for the signal to reach it (a newcomer's trial: without exec the shell died
and the tuner went on probing until the time limit). Run here as SLURM runs it: bash, then SIGTERM to
the shell's pid while a probe runs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "launch.md"


def _sbatch_script() -> str:
    section = DOCS.read_text().split("## Several nodes under SLURM", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_the_docs_script_asks_for_the_signal_and_execs_the_tuner():
    script = _sbatch_script()
    assert re.search(r"^#SBATCH --signal=B:TERM@\d+", script, re.M)
    (run,) = [line for line in script.splitlines() if "autotune run" in line]
    assert run.startswith("exec autotune run ")


@pytest.mark.slow
def test_sigterm_to_the_batch_shell_reaches_the_tuner_and_keeps_the_study(tmp_path):
    (line,) = [line for line in _sbatch_script().splitlines() if line.startswith("exec autotune run ")]
    out = tmp_path / "run"
    # The docs' line with this machine's tuner and a one-rank CPU study whose probe hangs until killed.
    tuner = (f"exec {sys.executable} -m autotune.cli run --model tiny --nodes 1 --gpus-per-node 1 --hardware cpu "
             f"--backend launch --warmup-steps 1 --probe-steps 2 --trials 2 --objectives time --out {out}")
    assert line.split()[:3] == ["exec", "autotune", "run"] and tuner.split()[0] == "exec"
    script = tmp_path / "job.sh"
    body = "\n".join(l for l in _sbatch_script().splitlines() if not l.startswith(("source ", "exec ")))
    script.write_text(f"{body}\n{tuner}\n")
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", "AUTOTUNE_PROBE_TEST_HOOK": "hang"}
    log = open(tmp_path / "job.out", "w+")  # noqa: SIM115 - closed below
    # SIGINT/SIGTERM at their defaults, as a batch shell has them.
    job = subprocess.Popen(["bash", str(script)], env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    probe_log = out / "trials" / "0000" / "log.txt"
    deadline = time.time() + 240
    while time.time() < deadline and job.poll() is None and "sleeps until killed" not in (
            probe_log.read_text() if probe_log.exists() else ""):
        time.sleep(0.2)
    assert job.poll() is None, "the study ended before its probe hung"
    job.send_signal(signal.SIGTERM)  # what --signal=B:TERM sends: the batch shell's pid
    job.wait(timeout=120)
    log.seek(0)
    said = log.read()
    log.close()
    assert job.returncode == 143, said[-2000:]
    assert "interrupted; completed trials are kept, run the same command again to resume" in said
    # The probe went with the tuner: nothing still runs from this study's directory.
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout
    assert (out / "study.db").is_file()
