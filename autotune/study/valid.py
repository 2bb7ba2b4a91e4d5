"""Which candidates of a study's space can run: the space checked, why nothing can run (in one line with
the fix), which node counts of a range have no candidate, and the knob values a valid candidate uses
(the only ones the samplers are offered)."""

from __future__ import annotations

from collections import Counter

from autotune.candidate import KNOBS
from autotune.checks import MAX_COUNT
from autotune.counted import counted
from autotune.errors import UserError
from autotune.space import enumerate_space, spans_text
from autotune.study.settings import StudySettings


def space_checks(settings: StudySettings) -> list:
    """Every candidate of the study's space checked, valid or not."""
    return list(enumerate_space(settings.space, settings.model, settings.hardware, settings.workload, settings.gpus_per_node))


def valid_checks(settings: StudySettings, checks: list | None = None) -> list:
    """Every candidate of the study's space checked (`checks`, where space_checks made them already); refuses a
    space in which nothing can run."""
    checks = space_checks(settings) if checks is None else checks
    reason = nothing_valid(checks)
    if reason:
        raise UserError(reason)
    return checks


def nothing_valid(checks: list) -> str | None:
    """Why no candidate of the space can run, with the fix, in one line; None when one can."""
    if any(c.valid for c in checks):
        return None
    batch = _global_batch_miss(checks)
    if batch:
        return f"nothing in the space is valid: {batch}"
    if any(c.memory is not None for c in checks):
        return f"nothing in the space fits in memory ({_memory_miss(checks)}); {_memory_fix(checks)} (see `autotune space`)"
    return (f"nothing in the space is valid: {_closest_miss(checks)}; change those values in the --space "
            "file (`autotune space --space FILE` gives each candidate's reason)")


def _closest_miss(checks: list) -> str:
    """Why nothing runs, told by the candidate nearest to running: the one that breaks no rule and
    overflows memory least; else every rule the candidates break (a candidate is told by the first it breaks)."""
    sized = [c for c in checks if c.memory is not None]
    if sized:
        closest = min(sized, key=lambda c: max(c.memory.device_excess_gib, c.memory.host_excess_gib))
        knobs = ", ".join(f"{knob} {value}" for knob, value in closest.candidate.knobs.to_dict().items()
                          if knob not in ("power_limit", "sm_clock_mhz"))  # they move no memory
        return f"the closest, {knobs}, {closest.reason}"
    reasons = Counter(c.reason for c in checks).most_common()
    listed = "; ".join(f"{reason} ({count} of {len(checks)})" for reason, count in reasons[:3])
    return f"every candidate breaks a rule: {listed}" + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")


def _knobs_text(check) -> str:
    return ", ".join(f"{knob} {value}" for knob, value in check.candidate.knobs.to_dict().items()
                     if knob not in ("power_limit", "sm_clock_mhz"))  # they move no memory


def _memory_miss(checks: list) -> str:
    """Why nothing fits, by the limit that binds: the closest candidate on GPU memory, and where some fit the GPU
    (offloading) but not host memory, the closest of those on host memory (trial54 F4: a 72B model on one node was
    told of GPU memory alone, and offload, whose candidates fit the GPU, was then the advice)."""
    sized = [c for c in checks if c.memory is not None]
    over_gpu = [c for c in sized if c.memory.device_excess_gib > 0]
    # Told by one that host memory does not rule out too, where there is one (an offloading candidate just over the
    # GPU is far over the host: no nearer to running).
    over_gpu = [c for c in over_gpu if c.memory.host_excess_gib <= 0] or over_gpu
    over_host = [c for c in sized if c.memory.device_excess_gib <= 0]
    said = []
    if over_gpu:
        closest = min(over_gpu, key=lambda c: c.memory.device_excess_gib)
        said.append(f"the closest{' on GPU memory' if over_host else ''}, {_knobs_text(closest)}, {closest.reason}")
    if over_host:
        closest = min(over_host, key=lambda c: c.memory.host_excess_gib)
        fit = "fits" if len(over_host) == 1 else "fit"
        said.append(f"{counted(len(over_host), 'candidate')} {fit} the GPU but not host memory: the closest, "
                    f"{_knobs_text(closest)}, {closest.reason}")
    return "; ".join(said)


def _memory_fix(checks: list) -> str:
    """What widens a space nothing of which fits: more --nodes always (the model states and offload's host share
    divide over them), and only the memory-saving values the space lacks (trial54 F4: "ZeRO-3, offload or
    checkpointing" was advised to a space holding all three)."""
    knobs = [c.candidate.knobs for c in checks]
    lacking = [words for words, held in (
        ("ZeRO-3", any(k.zero_stage == 3 for k in knobs)),
        ("optimizer offload", any(k.optimizer_offload != "none" for k in knobs)),
        ("activation checkpointing", any(k.activation_checkpointing != "none" for k in knobs)),
    ) if not held]
    host = any(c.memory is not None and c.memory.device_excess_gib <= 0 for c in checks)
    nodes = "more --nodes" + (" (offload's host memory per GPU shrinks with them too)" if host else "")
    if lacking:
        return f"widen it: {nodes}, or {', '.join(lacking)} in the --space file"
    return f"the space already holds ZeRO-3, optimizer offload and activation checkpointing: {nodes}"


NODE_COUNT_LINES = 5  # the node counts without a valid candidate said one by one; the rest in one line


def node_counts_without_candidates(checks: list) -> list[str]:
    """For a range of node counts: each count none of whose candidates is valid, and why (a study of
    --nodes 2-3 on 4-GPU nodes and a batch of 64 would otherwise leave 3 nodes out without a word)."""
    by_nodes: dict[int, list] = {}
    for check in checks:
        by_nodes.setdefault(check.candidate.knobs.nodes, []).append(check)
    if len(by_nodes) < 2:
        return []
    empty = [(nodes, group) for nodes, group in sorted(by_nodes.items()) if not any(c.valid for c in group)]
    lines = [f"no candidate on {counted(nodes, 'node')} is valid: {_global_batch_miss(group) or _closest_miss(group)}"
             for nodes, group in empty[:NODE_COUNT_LINES]]
    if len(empty) > NODE_COUNT_LINES:  # --nodes 1-256 said 249 lines before anything else
        rest = [nodes for nodes, _ in empty[NODE_COUNT_LINES:]]
        lines.append(f"no candidate is valid on {counted(len(rest), 'more node count')} either ({spans_text(rest)}); "
                     "`autotune space --nodes N` says why for each")
    return lines


LISTED_SIZES = 8  # data-parallel sizes said one by one where no global batch fits them; more are said as a range


def _global_batch_miss(checks: list) -> str | None:
    """When no micro-batch x data-parallel size of the space divides the global batch (3 nodes of 4 GPUs
    and the default 64), that alone is why nothing runs, and the fix is the batch: every SP degree then
    only hides it behind another rule (the commonest reason would read "SP degree 8 does not divide")."""
    shapes = [c.candidate for c in checks if c.candidate.gpus % c.candidate.knobs.sp_degree == 0]
    if not shapes or any(c.grad_accum for c in shapes):
        return None
    global_batch = shapes[0].workload.global_batch
    data_parallel = sorted({c.dp_degree for c in shapes})
    step = max(data_parallel) * min(c.knobs.micro_batch for c in shapes)  # every SP degree then fits
    lower, upper = global_batch // step * step, (global_batch // step + 1) * step
    # No more than --global-batch takes: 4,000,000,000,000 was advised for --nodes 1000000000000 and refused (trial70 #3).
    nearest = " or ".join(str(b) for b in (lower, upper) if 0 < b <= MAX_COUNT)
    micro_batches = sorted({c.knobs.micro_batch for c in shapes})
    if len(data_parallel) <= LISTED_SIZES:
        sizes = ", ".join(map(str, data_parallel))
        fix = f"--global-batch {nearest}, other micro_batch values in a --space file, or another --nodes / --gpus-per-node"
    else:
        # A wide node range: every size listed made a 5,000-character line, and the batch that suits the largest
        # suits only its node count (trial 46).
        sizes = f"{len(data_parallel)} sizes from {data_parallel[0]} to {data_parallel[-1]}"
        fix = (f"a --global-batch that the data-parallel sizes of the node counts you want divide ({nearest} suits only "
               "the largest), a narrower --nodes, or another --gpus-per-node")
    if not nearest:
        fix = (f"fewer --nodes or --gpus-per-node (the global batch every data-parallel size here divides, {upper}, is "
               f"more than the {MAX_COUNT} --global-batch takes)")
    return (f"no micro-batch ({', '.join(map(str, micro_batches))}) x data-parallel size ({sizes} on these GPUs) divides "
            f"the global batch {global_batch}: pass {fix}")


def usable_values(checks: list) -> dict[str, list]:
    """Per knob, the values (in the space file's order) that at least one valid, fitting candidate
    uses. A value no valid candidate has (SuperOffload without CUDA, ZeRO-0 for a 72B model) can
    only waste proposals, so the sampler is never offered it; `autotune space` still lists it."""
    used = {knob: {getattr(c.candidate.knobs, knob) for c in checks if c.valid} for knob in KNOBS}
    return {knob: [v for v in dict.fromkeys(getattr(c.candidate.knobs, knob) for c in checks) if v in used[knob]]
            for knob in KNOBS}
