"""Whether a host named by a hostfile or a SLURM allocation is the machine the tuner runs on.

The tuner judges energy sensors and GPU controls where it runs. That is where the probes run too with
torchrun, in a SLURM batch script (the batch host is the allocation's first node) and with a hostfile
that names this machine first; it is not with a hostfile of other machines driven from a login node,
or in an salloc shell on a login node. Only names are compared, never resolved: a DNS lookup can hang
on a cluster's head node, and taking this machine for another one costs one question over ssh or
srun (autotune/backends/first_node.py), never a wrong answer.
"""

from __future__ import annotations

import ipaddress
import socket

from autotune.backends.srun_rank import first_host

_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _short(name: str) -> str:
    """'nid001.cluster.example' -> 'nid001'; an IP address stays whole."""
    return name if _is_address(name) else name.split(".", 1)[0]


def is_this_machine(host: str, environ: dict[str, str]) -> bool:
    """Whether `host` (a hostfile's or SLURM's name for a node) is this machine: a loopback name or
    address, this machine's hostname (short or long, in any case), or SLURM's name for this node."""
    host = host.strip().lower()
    if host in _LOOPBACK_NAMES or (_is_address(host) and ipaddress.ip_address(host).is_loopback):
        return True
    own = {socket.gethostname().lower(), environ.get("SLURMD_NODENAME", "").lower()} - {""}
    return host in own or _short(host) in {_short(name) for name in own}


def allocation_first_node_elsewhere(environ: dict[str, str]) -> str | None:
    """The first node of the SLURM allocation we run in (where srun starts task 0) when it is not this
    machine (salloc on a login node); None where it is, outside an allocation, or where the allocation
    does not name its nodes."""
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not environ.get("SLURM_JOB_ID") or not nodelist:
        return None
    first = first_host(nodelist)
    return None if is_this_machine(first, environ) else first
