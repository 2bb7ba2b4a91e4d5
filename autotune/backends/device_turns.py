"""Probes that would run on the same devices take turns.

Two workers of one study on one machine (the same `autotune run --out DIR` started twice, or two runs on
one `--storage`) each launched their probes at once on the same GPUs (or cores): each probe then trained
beside the other's, its time measured the contention and its energy counter (NVML's, RAPL's: whole
devices) the other probe's joules too, and both figures went on the front as measured. A probe now holds
a lock named after what it runs on while it runs; another worker's probe for the same devices waits.

What a probe runs on, as the launcher reaches it: srun steps run on the SLURM allocation's nodes (its
job id), the deepspeed launcher on its hostfile's hosts, torchrun on this machine's devices
(CUDA_VISIBLE_DEVICES where it is set: two workers given other GPUs of one node do not wait). The locks
are files of this machine's temporary folder, one folder per user: workers on other machines (other
allocations) never wait for each other, as their probes share no device.

The lock is the user's, not the study's: the probes of another study on the same machine (another run directory)
wait too, as they share the devices. The holder writes its process, its start, its trial and its run directory into
the lock, so that a waiting probe says whose probe it waits for: "another worker's probe" was said of another
study's, and read as a phantom worker of one's own (trial 61 #12).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_DIR_ENV = "AUTOTUNE_PROBE_LOCKS"  # where the locks live (default: a per-user folder of the temporary folder)
POLL_S = 0.5  # how often a waiting probe asks again (and whether the run was stopped meanwhile)


def probe_devices(launcher: str, environ: dict[str, str], hostfile: Path | None) -> str:
    """What a probe started by `launcher` runs on, in words: the name of its lock, and what a waiting
    probe's log says it waited for."""
    if launcher == "srun" and environ.get("SLURM_JOB_ID"):
        return f"the nodes of SLURM allocation {environ['SLURM_JOB_ID']}"
    if launcher == "deepspeed" and hostfile is not None:
        from autotune.backends.launchers import read_hostfile

        return f"the hosts of {', '.join(sorted(read_hostfile(hostfile)))}"
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    devices = f"GPUs {visible}" if visible else "devices"
    return f"the {devices} of {socket.gethostname()}"


def lock_folder(environ: dict[str, str]) -> Path:
    """The folder of the probes' locks, made where missing; a UserError naming LOCK_DIR_ENV where it cannot be
    (a file, a folder that cannot be made or written): checked when the backend starts, not at the first probe,
    where it was a traceback and a trial left FAIL (trial 37 F12)."""
    from autotune.errors import UserError

    given = environ.get(LOCK_DIR_ENV)
    folder = Path(given or Path(tempfile.gettempdir()) / f"autotune-probes-{os.getuid()}")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        where = f"{LOCK_DIR_ENV}={given!r}" if given else f"the probes' lock folder {folder}"
        fix = "point it at a folder you can write, or unset it" if given else f"set {LOCK_DIR_ENV} to a folder you can write"
        raise UserError(f"{where} is not a folder autotune can make and write ({exc.strerror or exc}); {fix}") from None
    return folder


def _lock_path(devices: str, environ: dict[str, str]) -> Path:
    return lock_folder(environ) / f"{hashlib.sha1(devices.encode()).hexdigest()[:16]}.lock"


@contextlib.contextmanager
def taking_turns(devices: str, environ: dict[str, str], on_wait: Callable[[str], None],
                 stopped: Callable[[], None] = lambda: None, run_dir: Path | None = None,
                 trial_number: int | None = None) -> Iterator[float]:
    """Holds the lock of `devices` while the block runs; yields the seconds waited for it. `on_wait` gets one
    line when another probe holds it; `stopped` is called while waiting and raises to give up (a stop). `run_dir`
    and `trial_number`: this probe's, written into the lock for the line of a probe that waits for it."""
    path = _lock_path(devices, environ)
    with open(path, "a+", encoding="utf-8") as handle:
        waited_from = time.monotonic()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(f"{_holder_words(handle, devices, run_dir)}: this one starts when it ends")
            while True:
                stopped()
                time.sleep(POLL_S)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    continue
        with contextlib.suppress(OSError):  # who holds it, for the line a waiting probe prints
            handle.truncate(0)
            trial = "-" if trial_number is None else trial_number
            handle.write(f"{os.getpid()} {time.strftime('%H:%M:%S')} {trial} {Path(run_dir).resolve() if run_dir else ''}\n")
            handle.flush()
        try:
            yield time.monotonic() - waited_from
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _holder_words(handle, devices: str, run_dir: Path | None) -> str:
    """Whose probe holds the lock, as its holder wrote it: "another worker's probe runs on DEVICES (trial 3, process
    4242, since 06:07:08)" for a worker of this run directory's study (or a holder that wrote no run directory),
    "the probe of trial 3 of /runs/other runs on DEVICES (process 4242, ...)" for another run directory's. A worker
    stopped with Ctrl-Z holds it as long as it is stopped: the pid tells the user which to resume or end."""
    try:
        handle.seek(0)
        fields = handle.read(4096).rstrip("\n").split(" ", 3)  # pid, since, trial, run directory (spaces and all)
    except OSError:
        fields = []
    if len(fields) < 2 or not fields[0].isdigit():
        return f"another worker's probe runs on {devices}"
    pid, since, trial, held_in = (fields + ["-", ""])[:4]
    process = f"process {pid}, since {since}"
    if held_in and run_dir is not None and Path(held_in) != Path(run_dir).resolve():
        of_trial = f"trial {trial} of " if trial.isdigit() else ""
        return f"the probe of {of_trial}{held_in} runs on {devices} ({process})"
    of_trial = f"trial {trial}, " if trial.isdigit() else ""
    return f"another worker's probe runs on {devices} ({of_trial}{process})"
