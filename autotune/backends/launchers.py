"""Which launcher starts a probe, whether it can reach the nodes a candidate needs, and its command.

Launchers (all built as argument lists, never shell strings):
- `torchrun`: one node, `python -m torch.distributed.run --standalone`; a one-rank candidate runs
  `python -m trainer.probe` directly (no agent, no rendezvous to wait for).
- `deepspeed`: `python -m deepspeed.launcher.runner --hostfile H` (the `deepspeed` script's module,
  so the tuner's interpreter is used); several nodes through pdsh, as DeepSpeed does it.
`probe_command` builds the torchrun and deepspeed commands, for the tuner and for `autotune export`.
- `srun`: inside a SLURM allocation; every task runs `autotune.backends.srun_rank`, which turns the
  task's SLURM variables into the RANK/LOCAL_RANK/MASTER_ADDR the trainer reads, then execs the probe.

`detect_launch_target` tells `--backend auto` whether the requested GPUs are here at all.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from autotune.backends.hosts import allocation_first_node_elsewhere, is_this_machine
from autotune.backends.probe_options import LAUNCHERS
from autotune.candidate import SM_CLOCK_UNTOUCHED, Candidate
from autotune.counted import counted
from autotune.errors import UserError

_NVIDIA_SMI_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class LaunchPlan:
    """One probe start: the launcher's name, its argument list, and environment on top of ours."""

    launcher: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)


# --- what is reachable ---------------------------------------------------------------------------


# DeepSpeed's own hostfile line (deepspeed/launcher/runner.py, _parse_hostfile): a host, then slots=N;
# whole here, where DeepSpeed reads "slots=2.5" or "slots=1e3" as their first digits.
_HOSTFILE_LINE = re.compile(r"(\S+)\s+slots=(\d+)")
_HOSTFILE_FORMAT = "one `HOST slots=N` per line, `#` starts a comment"
MAX_SLOTS = 1024  # GPUs (or CPU ranks) one host lends; a larger count is a typo, which the launchers overflow on


def read_hostfile(path: Path) -> dict[str, int]:
    """DeepSpeed hostfile -> {host: slots}, in file order.

    Read by DeepSpeed's rules, which the deepspeed launcher applies at every probe: a line without
    `slots=N`, a host listed twice or a file with no host fails every probe there, so it is refused
    here once, before the first. Stricter in one point: a host with 0 slots can run no rank.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"hostfile {path} cannot be read ({exc.__class__.__name__}: {exc}); give a DeepSpeed hostfile, "
                        f"{_HOSTFILE_FORMAT}") from None
    hosts: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _HOSTFILE_LINE.fullmatch(line)
        where = f"hostfile {path}, line {number}"
        if match is None:
            raise UserError(f"{where}: write `HOST slots=N` (got {raw.strip()[:80]!r}); {_HOSTFILE_FORMAT}")
        host, slots = match.group(1), int(match.group(2))
        if host.startswith("-"):  # ssh and pdsh would read it as an option
            raise UserError(f"{where}: {host!r} is not a host name; write `HOST slots=N` with the node's name first")
        if host in hosts:
            raise UserError(f"{where}: host {host!r} is listed twice (DeepSpeed refuses that); keep one line per host")
        if slots < 1 or slots > MAX_SLOTS:
            raise UserError(f"{where}: {host} has slots={slots}; give the GPUs it lends (1 to {MAX_SLOTS}), or remove the line")
        hosts[host] = slots
    if not hosts:
        raise UserError(f"hostfile {path} lists no host; {_HOSTFILE_FORMAT}")
    return hosts


def first_host_here(hostfile: Path, environ: dict[str, str]) -> bool:
    """Whether the hostfile's first host, where the deepspeed launcher starts rank 0, is this machine."""
    return is_this_machine(next(iter(read_hostfile(hostfile))), environ)


def check_hostfile(path: Path | None) -> None:
    """Refuse, in one line, a --hostfile that is missing or that DeepSpeed would not read."""
    if path is None:
        return
    if not Path(path).is_file():
        raise UserError(f"--hostfile {path} is not a file; write a DeepSpeed hostfile ({_HOSTFILE_FORMAT})")
    read_hostfile(path)


def _nvidia_smi_answer(*args: str) -> tuple[str | None, str]:
    """(output, what an empty answer means): `nvidia-smi ARGS`'s output (no torch import); None without
    nvidia-smi or when it cannot run or answer, "" when it runs and fails. The second part words the
    case for a user: a wedged driver's failure or a hung nvidia-smi is not a machine without GPUs."""
    smi = shutil.which("nvidia-smi")
    command = " ".join(("nvidia-smi", *args))
    if smi is None:
        return None, "no nvidia-smi on PATH"
    try:
        listing = subprocess.run([smi, *args], capture_output=True, encoding="utf-8", errors="replace",
                                 timeout=_NVIDIA_SMI_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"{command} did not answer in {_NVIDIA_SMI_TIMEOUT_S:g} s"
    except OSError as exc:
        return None, f"{command} cannot run ({exc.strerror or exc})"
    if listing.returncode != 0:
        said = next((line.strip() for line in (listing.stdout + "\n" + listing.stderr).splitlines() if line.strip()), "")
        return "", f"{command} failed (exit {listing.returncode}{': ' + said[:160] if said else ''})"
    return listing.stdout, f"{command} lists none"


def _nvidia_smi(*args: str) -> str | None:
    return _nvidia_smi_answer(*args)[0]


def local_gpu_listing() -> tuple[int | None, str]:
    """(CUDA devices on this machine from `nvidia-smi -L`, None without nvidia-smi; why none were listed)."""
    listing, why_none = _nvidia_smi_answer("-L")
    return (None if listing is None else sum(1 for line in listing.splitlines() if line.startswith("GPU "))), why_none


def local_gpu_count() -> int | None:
    """CUDA devices on this machine from `nvidia-smi -L`; None without nvidia-smi."""
    return local_gpu_listing()[0]


def local_gpu_models() -> list[tuple[str, float]]:
    """(name, memory in GiB) of each CUDA device on this machine, from nvidia-smi; [] where it cannot say."""
    models = []
    for line in (_nvidia_smi("--query-gpu=name,memory.total", "--format=csv,noheader,nounits") or "").splitlines():
        name, _, memory_mib = line.rpartition(",")
        try:
            models.append((name.strip(), float(memory_mib) / 1024.0))
        except ValueError:
            continue  # "[N/A]" or a format this driver prints otherwise: no claim about that device
    return models


def slurm_nodes(environ: dict[str, str]) -> int | None:
    """Nodes of the SLURM allocation we run in, or None outside one."""
    if not environ.get("SLURM_JOB_ID"):
        return None
    name = "SLURM_JOB_NUM_NODES" if environ.get("SLURM_JOB_NUM_NODES") else "SLURM_NNODES"
    count = environ.get(name) or "1"
    if not count.isdigit() or int(count) < 1:
        raise UserError(f"{name}={count!r} in the environment is not a node count; run inside an allocation SLURM "
                        "made (sbatch, salloc), or unset SLURM_JOB_ID to run outside one")
    return int(count)


def slurm_gpus_per_node(environ: dict[str, str]) -> int | None:
    """GPUs per node SLURM gave the job (gres), or None when the allocation does not say: what this node
    holds, else what --gpus-per-node asked for ("4" or "a100:4"; under salloc on a login node the
    other two are not set), else the job's GPU list."""
    on_node = environ.get("SLURM_GPUS_ON_NODE")
    if on_node:
        # SLURM writes a count here; anything else was set by hand, and ignoring it studied the profile's whole
        # node without a word (a newcomer's trial: "gpu:a100:2" for an allocation of 2 GPUs).
        if not on_node.isdigit():
            raise UserError(f"SLURM_GPUS_ON_NODE={on_node!r} in the environment is not a GPU count; run inside an "
                            "allocation SLURM made (sbatch, salloc), or unset SLURM_JOB_ID to run outside one")
        return int(on_node)
    given = environ.get("SLURM_GPUS_PER_NODE", "")
    asked = given.rsplit(":", 1)[-1]
    if asked.isdigit():
        return int(asked)
    if ":" in given:  # "h100:abc" read as no GPUs, the run fell back to the simulator without a word (trial 37 F18)
        raise UserError(f"SLURM_GPUS_PER_NODE={given!r} in the environment is not a GPU count (4, a100:4); run inside "
                        "an allocation SLURM made (sbatch, salloc), or unset SLURM_JOB_ID to run outside one")
    job_gpus = environ.get("SLURM_JOB_GPUS")
    return len(job_gpus.split(",")) if job_gpus else None


def allocation_shape(hostfile: Path | None, environ: dict[str, str]) -> tuple[int, int | None, str] | None:
    """(nodes, GPUs per node or None where it does not say, which allocation) of what the probes reach
    without being told: a hostfile's hosts and their fewest slots, else a SLURM allocation's nodes and
    GPU gres; None outside both."""
    if hostfile is not None:
        hosts = read_hostfile(hostfile)
        return len(hosts), min(hosts.values()), f"hostfile {hostfile}"
    nodes = slurm_nodes(environ)
    if nodes is None:
        return None
    return nodes, slurm_gpus_per_node(environ), f"SLURM allocation {environ['SLURM_JOB_ID']}"


def detect_launch_target(
    hostfile: Path | None, *, nodes: int = 1, gpus_per_node: int | None = None, environ: dict[str, str] | None = None
) -> tuple[bool, str]:
    """(ok, reason): whether probes can start on the GPUs asked for (`nodes` x `gpus_per_node`).

    Looks, in order, at the hostfile, a SLURM allocation, then local CUDA devices (`nvidia-smi -L`).
    Never imports torch and never raises for what is merely absent.
    """
    environ = dict(os.environ if environ is None else environ)
    if hostfile is not None:
        if not Path(hostfile).is_file():
            return False, f"hostfile {hostfile} does not exist"
        hosts = read_hostfile(hostfile)
        if len(hosts) < nodes:
            return False, f"hostfile {hostfile} lists {counted(len(hosts), 'host')}; {counted(nodes, 'node')} requested"
        return True, f"hostfile {hostfile}: {counted(len(hosts), 'host')}, {counted(sum(hosts.values()), 'slot')} (deepspeed launcher)"
    local, why_none = local_gpu_listing()
    allocated = slurm_nodes(environ)
    if allocated is not None:
        if allocated < nodes:
            return False, f"SLURM allocation {environ['SLURM_JOB_ID']} has {counted(allocated, 'node')}; {nodes} requested"
        # This machine's GPUs stand for the allocation's only where it is one of its nodes.
        gpus = slurm_gpus_per_node(environ) or (None if allocation_first_node_elsewhere(environ) else local)
        if not gpus:
            return False, f"SLURM allocation {environ['SLURM_JOB_ID']} has no GPUs (allocate with --gpus-per-node)"
        if gpus_per_node is not None and gpus < gpus_per_node:
            return False, f"SLURM allocation {environ['SLURM_JOB_ID']} has {counted(gpus, 'GPU')} per node; {gpus_per_node} requested"
        return True, f"SLURM allocation {environ['SLURM_JOB_ID']}: {counted(allocated, 'node')}, {counted(gpus, 'GPU')} per node (srun)"
    if not local:
        return False, f"no CUDA devices here ({why_none}), no SLURM allocation, no --hostfile"
    if nodes > 1:
        return False, f"{counted(local, 'GPU')} on this machine only; {nodes} nodes need --hostfile or a SLURM allocation"
    if gpus_per_node is not None and gpus_per_node > local:
        return False, f"{counted(local, 'GPU')} on this machine; {gpus_per_node} requested"
    return True, f"{counted(local, 'NVIDIA GPU')} on this machine (torchrun)"


def check_launcher_settings(launcher: str, hostfile: Path | None, environ: dict[str, str]) -> None:
    """Raise a UserError naming the fix when the chosen launcher cannot work at all."""
    if launcher not in LAUNCHERS:
        raise UserError(f"unknown launcher {launcher!r}; use one of {', '.join(LAUNCHERS)}")
    check_hostfile(hostfile)
    if launcher == "deepspeed" and hostfile is None:
        raise UserError("the deepspeed launcher needs --hostfile (`HOST slots=N` per line)")
    if launcher in ("torchrun", "srun") and hostfile is not None:  # it would be ignored: probes run elsewhere than it says
        where = "on this machine only" if launcher == "torchrun" else "on the SLURM allocation's nodes"
        raise UserError(f"--hostfile is read by the deepspeed launcher; --launcher {launcher} starts ranks {where}: "
                        "drop --hostfile, or pass --launcher deepspeed (or auto)")
    if launcher == "srun" and not environ.get("SLURM_JOB_ID"):
        raise UserError("the srun launcher runs inside a SLURM allocation: start autotune from sbatch or salloc")
    check_srun_on_path(launcher, environ)


def check_srun_on_path(launcher: str, environ: dict[str, str]) -> None:
    """Refuse, before the study opens, probes that would start with an srun not on PATH (each would fail at
    its start, "could not start srun", and spend the budget): `--launcher srun`, or `auto` where it starts
    every probe with srun (`auto_launches_srun_only`). That is the only place `auto` picks srun for a
    candidate that can start: in a one-node allocation of this machine it picks srun for several-node
    candidates alone, which the allocation cannot hold (`check_candidates` refuses them, saying so)."""
    if shutil.which("srun", path=environ.get("PATH")) is not None:
        return
    fix = "load the SLURM module, or use --launcher torchrun|deepspeed"
    if launcher == "srun":
        raise UserError(f"srun is not on PATH: {fix}")
    if launcher == "auto" and auto_launches_srun_only(environ):
        job, first = environ["SLURM_JOB_ID"], allocation_first_node_elsewhere(environ)
        if first is not None:  # torchrun would run the probes on this machine, not on the allocation's node
            shape = f"whose first node {first} is not this machine"
            fix = f"load the SLURM module, or run autotune on {first}"
        else:
            shape = f"{slurm_nodes(environ)} nodes"
        raise UserError(f"srun is not on PATH, and --launcher auto starts every probe with srun in SLURM allocation "
                        f"{job} ({shape}): {fix}")


def auto_launches_srun_only(environ: dict[str, str]) -> bool:
    """Whether `--launcher auto` starts every probe, one-node ones too, with srun: in an allocation of several
    nodes, or one whose node is not this machine."""
    allocated = slurm_nodes(environ)
    return allocated is not None and (allocated > 1 or allocation_first_node_elsewhere(environ) is not None)


def resolve_launcher(requested: str, candidate: Candidate, hostfile: Path | None, environ: dict[str, str]) -> str:
    """`auto`: srun in a SLURM allocation that spans (or the candidate needs) several nodes, or whose
    node is not this machine (salloc on a login node); the deepspeed launcher when a hostfile is given;
    torchrun otherwise."""
    if requested != "auto":
        return requested
    return _auto_launcher(candidate.knobs.nodes, hostfile, environ)


def _auto_launcher(nodes: int, hostfile: Path | None, environ: dict[str, str]) -> str:
    if auto_launches_srun_only(environ) or (slurm_nodes(environ) is not None and nodes > 1):
        return "srun"
    if hostfile is not None:
        return "deepspeed"
    return "torchrun"


def auto_launcher_words(node_counts, hostfile: Path | None, environ: dict[str, str]) -> str:
    """What `--launcher auto` starts a study's probes with, said as the run's header says it: "torchrun",
    or one launcher per node count where they differ ("torchrun for 1 node, srun for 2 and 4 nodes")."""
    by_launcher: dict[str, list[int]] = {}
    for nodes in sorted(set(node_counts)):
        by_launcher.setdefault(_auto_launcher(nodes, hostfile, environ), []).append(nodes)
    if len(by_launcher) == 1:
        return next(iter(by_launcher))
    return ", ".join(f"{launcher} for {' and '.join(map(str, counts))} node{'s' if counts != [1] else ''}"
                     for launcher, counts in by_launcher.items())


def unreachable_reason(launcher: str, candidate: Candidate, hostfile: Path | None, environ: dict[str, str]) -> str | None:
    """Why this launcher cannot start the candidate's ranks (a failed result, not a crash), or None."""
    nodes, per_node = candidate.knobs.nodes, candidate.gpus_per_node
    if launcher == "torchrun":
        if nodes > 1 and environ.get("SLURM_JOB_ID"):  # inside one already: the fix is the launcher
            return (f"the candidate needs {nodes} nodes but torchrun starts ranks on this machine only: pass "
                    f"--launcher srun (or leave --launcher out) to start them across SLURM allocation "
                    f"{environ['SLURM_JOB_ID']}, or --hostfile (deepspeed launcher)")
        if nodes > 1:
            return (f"the candidate needs {nodes} nodes but torchrun starts ranks on this machine only: "
                    "give --hostfile (deepspeed launcher) or run inside a SLURM allocation (srun)")
        local = local_gpu_count() if candidate.hardware.cuda else None
        if local is not None and per_node > local:
            return f"the candidate needs {counted(per_node, 'GPU')} per node; this machine has {local} (--gpus-per-node {local} studies what fits)"
    elif launcher == "deepspeed":
        hosts = read_hostfile(hostfile)
        if len(hosts) < nodes:
            return f"the candidate needs {counted(nodes, 'node')}; hostfile {hostfile} lists {len(hosts)}"
        remote = nodes > 1 or not first_host_here(hostfile, environ)
        if remote and shutil.which("pdsh", path=environ.get("PATH")) is None:
            # DeepSpeed's runner starts every other host's ranks through pdsh (its default multi-node
            # launcher); without it each probe fails after its start-up, with pdsh's absence deep in its log.
            return ("the deepspeed launcher starts ranks on other hosts with pdsh, which is not on PATH here: install "
                    "pdsh on this machine (DeepSpeed's multi-node runner needs it), or run inside a SLURM allocation "
                    "(--launcher srun)")
        short = [host for host, slots in list(hosts.items())[:nodes] if slots < per_node]
        if short:
            return (f"the candidate needs {counted(per_node, 'GPU')} per node; hostfile {hostfile} gives fewer on {', '.join(short)} "
                    "(--gpus-per-node N studies what fits)")
    elif launcher == "srun":
        allocated = slurm_nodes(environ) or 0
        if nodes > allocated:
            return f"the candidate needs {counted(nodes, 'node')}; SLURM allocation {environ.get('SLURM_JOB_ID')} has {allocated}"
        gres = slurm_gpus_per_node(environ)
        if gres is not None and per_node > gres:
            return (f"the candidate needs {counted(per_node, 'GPU')} per node; SLURM allocation {environ.get('SLURM_JOB_ID')} "
                    f"has {gres} (--gpus-per-node {gres} studies what fits)")
    return None


# --- commands ------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port free on this machine now (consecutive probes must not share a rendezvous port)."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


SM_CLOCK_SET_BY_ENV = "AUTOTUNE_SM_CLOCK_SET_BY"  # "srun": the launcher applied sm_clock_mhz (trainer/power.py)


def probe_command(
    launcher: str, candidate: Candidate, probe_args: list[str], *, python: str | None = None,
    hostfile: Path | str = "hostfile", master_port: str | None = None, one_host_here: bool | None = None,
    gres: tuple[str, ...] = (), gpu_freq: tuple[str, ...] | None = None,
) -> list[str]:
    """The argument list that starts `trainer.probe` on every rank of the candidate with torchrun, the
    deepspeed launcher or one srun step. The tuner's probes and an exported `<pick>.launch.sh` both come
    from here, so what a user runs is what was probed. `python`: run the launcher as a module of this
    interpreter (the tuner); None: its console script (`torchrun`, `deepspeed`), as a user types it.
    `gres`: srun's GPU request words (a job with GPU gres gives a step no GPUs unless it asks); `gpu_freq`:
    the words that ask srun for the clock cap (default: `--gpu-freq=MHz` where the candidate caps it; `()` where
    the step holds no GPU gres, to which SLURM applies no clock).
    `one_host_here`: for a one-node deepspeed launch, whether the hostfile's first host is this machine
    (None: several nodes, or not known).

    The deepspeed launcher passes `--local_rank=N` to the probe (it accepts and ignores it: LOCAL_RANK
    in the environment, which the launcher sets too, is what the trainer reads).
    """
    nodes, per_node = candidate.knobs.nodes, candidate.gpus_per_node
    if launcher == "torchrun":
        prefix = [python, "-m", "torch.distributed.run"] if python else ["torchrun"]
        return [*prefix, "--standalone", "--nnodes=1", f"--nproc_per_node={per_node}", "-m", "trainer.probe", *probe_args]
    if launcher == "deepspeed":
        prefix = [python, "-m", "deepspeed.launcher.runner"] if python else ["deepspeed"]
        command = [*prefix, "--hostfile", str(hostfile), f"--num_nodes={nodes}", f"--num_gpus={per_node}"]
        if master_port is not None:
            command.append(f"--master_port={master_port}")
        if one_host_here:
            # One local host: DeepSpeed would still ssh to it to check and to find its address.
            command += ["--no_ssh_check", "--master_addr=127.0.0.1"]
        elif one_host_here is False:
            # One other host: DeepSpeed's runner starts a single host's ranks on this machine, whatever
            # host the hostfile names, unless forced through pdsh.
            command.append("--force_multi")
        return [*command, "--module", "trainer.probe", *probe_args]
    if launcher == "srun":
        command = ["srun", f"--nodes={nodes}", f"--ntasks={nodes * per_node}", f"--ntasks-per-node={per_node}",
                   "--kill-on-bad-exit=1", "--export=ALL", *gres]
        if gpu_freq is None:
            # slurmd sets and resets the step's GPU clock itself, no privileges needed; the probe then leaves it
            gpu_freq = (f"--gpu-freq={candidate.knobs.sm_clock_mhz}",) if candidate.knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED else ()
        return [*command, *gpu_freq, python or "python", "-m", "autotune.backends.srun_rank", "-m", "trainer.probe", *probe_args]
    raise ValueError(f"no probe command for launcher {launcher!r}")


def build_plan(
    launcher: str, candidate: Candidate, probe_args: list[str], *, python: str, hostfile: Path | None,
    environ: dict[str, str],
) -> LaunchPlan:
    nodes, per_node = candidate.knobs.nodes, candidate.gpus_per_node
    port = str(free_port())
    if launcher == "torchrun" and candidate.gpus == 1:
        # The trainer reads the rank layout from the environment; set it so an outer launcher's
        # variables (the tuner itself under torchrun or srun) cannot leak into the probe.
        layout = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                  "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        return LaunchPlan("torchrun", [python, "-m", "trainer.probe", *probe_args], layout)
    if launcher == "torchrun":
        return LaunchPlan("torchrun", probe_command("torchrun", candidate, probe_args, python=python))
    if launcher == "deepspeed":
        one_host_here = first_host_here(hostfile, environ) if nodes == 1 else None
        return LaunchPlan("deepspeed", probe_command("deepspeed", candidate, probe_args, python=python, hostfile=hostfile,
                                                     master_port=port, one_host_here=one_host_here))
    if launcher == "srun":
        # A job with GPU gres gives a step no GPUs unless it asks; a profile without CUDA trains on CPU ranks,
        # whose step must not hold the job's GPUs (as the exported launch.sh does).
        gres = (f"--gpus-per-node={per_node}",) if slurm_gpus_per_node(environ) and candidate.hardware.cuda else ()
        layout = {"WORLD_SIZE": str(nodes * per_node), "LOCAL_WORLD_SIZE": str(per_node), "MASTER_PORT": port}
        # SLURM sets the clock of the GPUs a step holds as gres only: without them --gpu-freq changes nothing, and
        # a probe told that srun set it would label a max-clock run with the cap. The probe sets it (NVML) then.
        if candidate.knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED and gres:
            layout[SM_CLOCK_SET_BY_ENV] = "srun"
        return LaunchPlan("srun", probe_command("srun", candidate, probe_args, python=python, gres=gres,
                                                gpu_freq=None if gres else ()), layout)
    raise ValueError(f"no command for launcher {launcher!r}")
