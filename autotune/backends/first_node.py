"""What the node that runs a study's first probe rank has: energy sensors, and GPU controls this user may set.

Where that node is not this machine (a hostfile of other hosts, an salloc shell on a login node:
autotune/backends/hosts.py), the tuner asks the node itself, the way the launcher reaches it, to run
`autotune sensors --json`:
- a hostfile: over ssh, as DeepSpeed's runner checks its first host before every launch (so a study
  that can probe there can ask there), with the interpreter, directory and exported variables the
  runner gives its ranks (`cd CWD; PYTHON* vars and .deepspeed_env; sys.executable`);
- a SLURM allocation: one one-task srun step on the allocation's first node, with the job's GPUs.
The answer decides what the tuner would otherwise judge by this machine: whether energy can be
measured (else it would refuse an energy objective a sensor there could serve, or accept estimates
without a word), whether the power limit may be searched, and whether the hardware profile's GPU is
the node's (backends/select.py). Nodes are taken to be alike, as a
study's figures already do. Asked once per study, before it opens; no answer is one line naming the
node and the fix, since every probe would fail the same way.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from autotune.backends.hosts import allocation_first_node_elsewhere, is_this_machine
from autotune.backends.launchers import read_hostfile, slurm_gpus_per_node
from autotune.errors import UserError

ASK_TIMEOUT_S = 60.0  # ssh's own connect timeout is 10 s; the rest is Python starting on a busy node
_SSH_CONNECT_TIMEOUT_S = 10
_SENSORS = ("-m", "autotune.cli", "sensors", "--json")
# What DeepSpeed's pdsh runner forwards to remote ranks from the launching environment (besides .deepspeed_env).
_FORWARDED_PREFIXES = ("PYTHON", "NCCL", "UCX", "MV2", "MLFLOW")


@dataclass(frozen=True)
class NodeAnswer:
    host: str
    how: str  # "ssh" | "srun"
    energy_sources: tuple[str, ...]  # kinds of the sources available there (nvml, hwmon, rapl), each once
    settable: bool  # power limits and clocks
    settable_reason: str
    gpu_models: tuple[tuple[str, float], ...] | None = None  # (name, GiB) per GPU nvidia-smi lists; None: not said
    devices: tuple[dict, ...] = ()  # each GPU's limits and clocks there (device_control.DeviceSettings.to_dict())

    @property
    def where(self) -> str:
        return f"{self.host} (the probes' first node, asked over {self.how})"


def probes_first_node(launcher: str, hostfile: Path | None, environ: dict[str, str]) -> tuple[str, str] | None:
    """(host, how to reach it) when the probes' first rank runs on another machine, else None.
    torchrun starts ranks here; a hostfile's first host runs rank 0 under the deepspeed launcher;
    srun starts task 0 on the allocation's first node."""
    if launcher == "torchrun":
        return None
    if hostfile is not None and launcher in ("deepspeed", "auto"):
        first = next(iter(read_hostfile(hostfile)))  # named as well as compared: what the ssh question goes to
        return None if is_this_machine(first, environ) else (first, "ssh")
    if launcher in ("srun", "auto"):
        first = allocation_first_node_elsewhere(environ)
        return None if first is None else (first, "srun")
    return None


def ask_first_node(host: str, how: str, *, python: str, env: dict[str, str], environ: dict[str, str],
                   timeout_s: float = ASK_TIMEOUT_S) -> NodeAnswer:
    """Run `autotune sensors --json` on `host`; its answer, or a UserError naming the node and the fix."""
    here = _current_directory(host, how)
    command = _ssh_command(host, python, env, environ, here) if how == "ssh" else _srun_command(host, python, environ)
    try:
        done = subprocess.run(command, capture_output=True, encoding="utf-8", errors="replace", timeout=timeout_s, stdin=subprocess.DEVNULL,
                              env={**environ, **env}, check=False)
    except FileNotFoundError:
        raise UserError(f"{command[0]} is not on PATH, and the probes' first node {host} is not this machine: "
                        f"{_reach(how)}; put {command[0]} on PATH, or run autotune on {host}") from None
    except subprocess.TimeoutExpired:
        check = (f"that `ssh {host} true` returns at once (no prompt, no hang)" if how == "ssh" else
                 f"that `srun --nodes=1 --nodelist={host} hostname` starts (no other step holding the node)")
        raise UserError(f"{host} did not answer within {timeout_s:g} s when asked over {how} for its energy sensors "
                        f"(`autotune sensors` there); {_reach(how)}: check {check}, or run autotune on {host}") from None
    if done.returncode != 0:
        said = _last_line(done.stderr) or _last_line(done.stdout) or "no message"
        if how == "ssh" and done.returncode == 255:
            raise UserError(f"could not reach {host}, the hostfile's first host, over ssh ({said}); DeepSpeed's "
                            f"launcher starts the probes there over ssh too: set up passwordless ssh to the hostfile's "
                            f"hosts, or run autotune on {host}")
        raise UserError(f"`autotune sensors` failed on {host}, asked over {how} (exit {done.returncode}: {said}); the "
                        f"probes run there with {python} in {here}: install the project where the nodes see "
                        f"it (a shared file system), or run autotune on {host}")
    return _answer(host, how, done.stdout)


def _reach(how: str) -> str:
    return ("DeepSpeed's launcher starts the probes there over ssh" if how == "ssh"
            else "each probe is an srun step of the allocation")


def _current_directory(host: str, how: str) -> Path:
    """Where the first node is asked to run the project (ssh cds there; srun starts its step there). One deleted
    under the command (another shell, a scratch cleaner) raised FileNotFoundError in Path.cwd() (trial 45 §3)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise UserError(f"the current directory no longer exists, and {host} would be asked over {how} there for its "
                        "energy sensors; cd to an existing one (the project's, as the nodes see it)") from None


def _ssh_command(host: str, python: str, env: dict[str, str], environ: dict[str, str], here: Path) -> list[str]:
    forwarded = {k: v for k, v in environ.items() if k.startswith(_FORWARDED_PREFIXES)}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**forwarded, **env}.items())
    remote = f"cd {shlex.quote(str(here))} && {'env ' + exports + ' ' if exports else ''}{shlex.join([python, *_SENSORS])}"
    # BatchMode: a password prompt would wait forever; DeepSpeed's own check refuses passwords too.
    return ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={_SSH_CONNECT_TIMEOUT_S}", host, remote]


def _srun_command(host: str, python: str, environ: dict[str, str]) -> list[str]:
    gpus = slurm_gpus_per_node(environ)
    gres = [f"--gpus-per-node={gpus}"] if gpus else []  # a step sees no GPU of the job's unless it asks
    return ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={host}", "--export=ALL", *gres, python, *_SENSORS]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _last_json_object(text: str):
    """The JSON document that ends the output and starts on a line of its own; None without one."""
    starts = [at for at in range(len(text)) if text[at] == "{" and (at == 0 or text[at - 1] == "\n")]
    for start in starts:
        try:
            document, end = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            continue
        if not text[end:].strip():
            return document
    return None


def _answer(host: str, how: str, stdout: str) -> NodeAnswer:
    """The JSON `autotune sensors --json` printed, after whatever a login script printed before it."""
    unexpected = UserError(f"{host}, asked over {how}, answered `autotune sensors --json` with no JSON of its sensors "
                           f"({_last_line(stdout) or 'nothing'!r}); are the tuner and the nodes on the same autotune?")
    report = _last_json_object(stdout)
    try:
        sources = report["sources"]
        available = tuple(dict.fromkeys(str(s["kind"]) for s in sources if s["available"] is True))
        settable, reason = report["device_settings_settable"], report["device_settings_reason"]
    except (KeyError, TypeError):  # no JSON (None), or not the document sensors --json prints
        raise unexpected from None
    if not isinstance(settable, bool) or not isinstance(reason, str) or not isinstance(sources, list):
        raise unexpected
    return NodeAnswer(host, how, available, settable, reason, _gpu_models(report.get("gpus")), _devices(report.get("devices")))


def _devices(devices) -> tuple[dict, ...]:
    """The GPUs' limits the node listed, those that hold what device_control.off_default_words reads; () without."""
    keys = ("index", "power_limit_w", "default_power_limit_w")
    if not isinstance(devices, list):
        return ()
    return tuple(d for d in devices if isinstance(d, dict) and all(isinstance(d.get(k), (int, float)) for k in keys))


def _gpu_models(gpus) -> tuple[tuple[str, float], ...] | None:
    """(name, GiB) of each GPU the node listed; None where its answer does not say (no claim is made)."""
    try:
        models = tuple((str(g["name"]), float(g["memory_gib"])) for g in gpus)
    except (KeyError, TypeError, ValueError):
        return None
    return models if all(0 < gib < float("inf") for _, gib in models) else None

