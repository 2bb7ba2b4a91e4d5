"""Options shared by `run` and `space`: what model, on what hardware, with what workload and space."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NamedTuple

from autotune.checks import MAX_COUNT, whole_literal_problem
from autotune.commands.flags import WrittenWhole, name_or_path_flag, whole_number_flag
from autotune.errors import ConfigError, UserError
from autotune.hardware import available_hardware, load_hardware
from autotune.models import PRESETS, load_model
from autotune.space import listed_nodes, load_space, parse_nodes
from autotune.space.files import DEFAULT_SPACE
from autotune.study.settings import StudySettings
from autotune.workload import DEFAULT_WORKLOAD, make_workload
from autotune.counted import counted

DEFAULT_MODEL = "32b"  # the README's first command
DEFAULT_HARDWARE = "gh200"
# --gpus-per-node's range before the profile is read; build_settings says it with the profile's count ("1..8").
GPUS_PER_NODE_RANGE = "a whole number 1..N, N the GPUs of a node of the --hardware profile"


def add_study_options(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to tune")
    what.add_argument("--model", type=name_or_path_flag, default=DEFAULT_MODEL, metavar="NAME|FILE",
                      help=f"preset ({', '.join(PRESETS)}), a model JSON file, or a Hugging Face checkpoint's directory "
                           f"or its config.json (default: {DEFAULT_MODEL})")
    what.add_argument("--nodes", default=None, metavar="COUNTS", help="node counts: 4, a range such as 2-8, or a list as SLURM "
                      "writes one, 2,4,8 or 1-4,8 (default: the space file's list, else the nodes of the SLURM "
                      "allocation, the --hostfile or, with --backend launch, this machine, else 4)")
    what.add_argument("--hardware", type=name_or_path_flag, default=DEFAULT_HARDWARE, metavar="NAME|FILE",
                      help=f"profile (gh200, h100-sxm, cpu) or a TOML file (default: {DEFAULT_HARDWARE})")
    what.add_argument(
        "--gpus-per-node", type=whole_number_flag(low=1, range_later=GPUS_PER_NODE_RANGE), default=None, metavar="N",
        help="GPUs used per node, 1 to the profile's count (default: the whole node of the profile, or the GPUs "
             "per node of the allocation, hostfile or machine that gives the nodes, where fewer)",
    )
    what.add_argument("--space", type=name_or_path_flag, default=None, metavar="FILE", help="search-space TOML (default: the packaged autotune/space/default.toml, which search_spaces/default.toml links to)")
    work = parser.add_argument_group("workload (the fixed work every candidate is measured on)")
    work.add_argument("--frames", type=whole_number_flag(low=1), metavar="N", help=f"video frames per sample {workload_default('frames')}")
    work.add_argument("--text-tokens", type=whole_number_flag(low=1), metavar="N", help=f"text tokens per sample {workload_default('text_tokens')}")
    work.add_argument("--global-batch", type=whole_number_flag(low=1), metavar="N",
                      help=f"samples per optimizer step, held fixed {workload_default('global_batch')}")
    work.add_argument("--samples", type=whole_number_flag(low=1), metavar="N",
                      help=f"samples of the whole job: time and energy are to process these {workload_default('samples')}")
    work.add_argument("--precision", choices=("bf16", "fp32"), help="training precision (default: bf16 on CUDA hardware, fp32 on cpu)")


def workload_default(key: str) -> str:
    """"(default: 60, unless the model names its own default_workload: tiny 2)": make_workload's order, from its
    constants, so the help cannot drift from what a study runs (a newcomer's trial found no default in the help)."""
    own = ", ".join(f"{name} {spec.default_workload[key]}" for name, spec in PRESETS.items() if key in spec.default_workload)
    return f"(default: {DEFAULT_WORKLOAD[key]}, unless the model names its own default_workload{': ' + own if own else ''})"


def settings_for(*flags: str) -> StudySettings:
    """The settings `autotune run FLAGS` builds (e.g. `settings_for("--model", "7b", "--nodes", "1")`),
    every flag left out at the command's default: benchmarks and tests ask the same question a user
    would, without a copy of the defaults to keep in step."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_study_options(parser)
    try:
        args = parser.parse_args(list(flags))
    except argparse.ArgumentError as exc:
        raise UserError(str(exc)) from None
    return build_settings(args)


class Filled(NamedTuple):
    """What fill_from_allocation said it filled (one line, or None), the lines it warns, and of them what the
    --model's Hugging Face config says that autotune models otherwise (models_hf.model_warning; `run` keeps it)."""

    said: str | None
    warnings: tuple[str, ...] = ()
    model_caveats: str | None = None


def fill_from_allocation(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Filled:
    """Inside a SLURM allocation, or given a --hostfile, the nodes and GPUs per node the user left out
    are the allocation's (what srun or the deepspeed launcher reach), not the default of 4 whole nodes:
    in `sbatch -N 2 --gpus-per-node 4` a study is of 2 nodes of 4 GPUs, and its probes can run. With
    `--backend launch` and neither, one node of this machine: its GPUs, or a cpu profile's ranks (with
    `auto` a GPU workstation still simulates the default cluster). A space file's `nodes` list and a
    replayed file's candidates are the user's choice and are kept; a space file without one (the default
    file given by path too) leaves the nodes to the allocation as leaving --space out does. Warns where a
    setting is skipped: a --nodes flag over the file's list, an allocation's GPUs beyond the profile's, what a
    Hugging Face config says that autotune models otherwise."""
    from autotune.backends.launchers import allocation_shape, local_gpu_count
    from autotune.models_hf import model_warning

    nodes_given = parse_nodes(args.nodes)  # a wrong --nodes is said before anything is said of it
    file_nodes = listed_nodes(args.space)
    warnings = []
    model_said = model_warning(args.model)  # a Hugging Face config modelled otherwise than it says
    if model_said:
        warnings.append(model_said)
    if nodes_given is not None and file_nodes is not None:
        warnings.append(f"--nodes {args.nodes} is studied, not the nodes = {list(file_nodes)} that space file "
                        f"{args.space or DEFAULT_SPACE} lists: the flag wins over the file's list (leave --nodes out "
                        "to study the file's)")
    if getattr(args, "backend", None) == "replay" or getattr(args, "measurements", None) is not None:
        return Filled(None, tuple(warnings), model_said)
    hardware = load_hardware(args.hardware)
    shape = allocation_shape(getattr(args, "hostfile", None), dict(os.environ if environ is None else environ))
    if shape is None and getattr(args, "backend", None) == "launch":
        # torchrun starts ranks on this machine only: one node of its GPUs (a CPU profile's ranks are its own).
        local = local_gpu_count() if hardware.cuda else None
        shape = (1, local, "this machine") if local or not hardware.cuda else None
    if shape is None:
        return Filled(None, tuple(warnings), model_said)
    nodes, gpus, where = shape
    filled = []
    if nodes_given is None and file_nodes is None:
        if nodes > MAX_COUNT:  # checked here: the --nodes check would blame a flag the user never gave
            raise ConfigError(f"{where} holds {nodes} nodes, more than {MAX_COUNT}; pass --nodes with the count to study")
        args.nodes = str(nodes)
        filled.append(counted(nodes, "node"))
    # An allocation of no GPUs (SLURM_GPUS_ON_NODE=0) says nothing of the GPUs per node to study.
    if args.gpus_per_node is None and gpus and gpus < hardware.gpus_per_node:
        args.gpus_per_node = gpus
        filled.append(f"{counted(gpus, 'GPU')} per node")
    elif args.gpus_per_node is None and gpus and gpus > hardware.gpus_per_node and hardware.cuda:
        warnings.append(_wider_than_profile(where, gpus, args.hardware, hardware.gpus_per_node))
    said = f"studying {', '.join(filled)}: what {where} holds (--nodes, --gpus-per-node choose another shape)" if filled else None
    return Filled(said, tuple(warnings), model_said)


def _wider_than_profile(where: str, gpus: int, hardware_flag: str, profile_gpus: int) -> str:
    """An allocation of more GPUs per node than the profile's nodes hold is most likely studied with the
    wrong --hardware (gh200's 4 for an 8-GPU H100 node): the study stays of the profile's nodes, said."""
    fitting = [name for name in available_hardware() if load_hardware(name).gpus_per_node == gpus]
    other = f" ({', '.join(fitting)} {'has' if len(fitting) == 1 else 'have'} {gpus})" if fitting else ""
    return (f"{where} has {gpus} GPUs per node, while --hardware {hardware_flag} describes nodes of {profile_gpus}: "
            f"the study is of {profile_gpus} GPUs per node; pass the --hardware of these nodes{other}, or "
            f"--gpus-per-node {profile_gpus} to study {profile_gpus} of them")


def settings_warnings(args: argparse.Namespace, settings: StudySettings) -> list[str]:
    """What the study's settings together say that no one of them does: a workload longer than the model's
    context; a preset's name that is also a file or folder here (trial 48 §20: `--model 7b` beside a
    checkpoint folder ./7b took the preset without a word)."""
    from autotune.models import PRESETS
    from autotune.models_hf import context_warning

    lines = []
    if args.model in PRESETS and Path(args.model).exists():
        lines.append(f"--model {args.model} is the preset {args.model}, not the {'folder' if Path(args.model).is_dir() else 'file'} "
                     f"{args.model} here; write --model ./{args.model} for that")
    line = context_warning(args.model, settings.workload.tokens_per_sample(settings.model))
    return lines + ([line] if line else [])


def build_settings(args: argparse.Namespace) -> StudySettings:
    model = load_model(args.model)
    hardware = load_hardware(args.hardware)
    # Leaving the flag out means the profile's whole node; a given value is checked, never replaced.
    gpus_per_node = hardware.gpus_per_node if args.gpus_per_node is None else args.gpus_per_node
    node = f"1..{hardware.gpus_per_node}, the GPUs of a node of hardware '{hardware.name}'"
    if isinstance(args.gpus_per_node, WrittenWhole):  # '2.0', '1e3': refused here, where the range is known
        problem = whole_literal_problem(float(gpus_per_node), 1, hardware.gpus_per_node, range_said=node)
        raise ConfigError(f"--gpus-per-node {args.gpus_per_node.written!r} {problem}")
    if not 1 <= gpus_per_node <= hardware.gpus_per_node:
        raise ConfigError(
            f"--gpus-per-node {args.gpus_per_node} is outside {node}; pass a count in that range, or leave the flag "
            "out to use the whole node"
        )
    nodes = parse_nodes(args.nodes)
    workload = make_workload(
        model,
        frames=args.frames,
        text_tokens=args.text_tokens,
        global_batch=args.global_batch,
        samples=args.samples,
        precision=args.precision,
    )
    return StudySettings(
        model=model,
        hardware=hardware,
        workload=workload,
        gpus_per_node=gpus_per_node,
        # --nodes, else the space file's list, else 4 (as --help says, whichever file: given or the default)
        space=load_space(args.space, nodes, default_nodes=(4,)),
        # A file's path made absolute: a refused resume says what to pass from wherever it runs.
        model_flag=args.model if args.model in PRESETS else os.path.abspath(args.model),
    )


# What lets a study search the power limit and the SM clock where its probes cannot set them (docs/launch.md).
_SET_ON_PROBE_NODES = "the probe nodes need NVML (the NVIDIA driver) and root or CAP_SYS_ADMIN"
_LAUNCH_DOC = "docs/launch.md, Power limits and SM clocks"


def narrowed_for_backend(settings: StudySettings, backend) -> tuple[StudySettings, list[dict]]:
    """The settings whose space the backend can search, and what of the file's power limits and SM clocks is not
    searched, and why (space.unsearched's entries): the values the hardware cannot take (said only of a --space file's
    lists: the packaged default's limits on a cpu profile are nobody's choice), and, where the probes cannot set
    limits or clocks (no NVML, no permission), every other limit and clock, which stay untouched while the rest of
    the space is searched. Under srun with GPU gres the clock stays searchable (srun --gpu-freq needs no privilege)."""
    from dataclasses import replace

    from autotune.candidate import UNTOUCHED_DEVICE_SETTINGS
    from autotune.space.unsearched import entry, touched_values, unsettable_on_hardware

    space = settings.space
    skipped = unsettable_on_hardware(space, settings.hardware) if Path(space.source) != DEFAULT_SPACE else []
    wanted = {knob: touched_values(space, knob, skipped) for knob in UNTOUCHED_DEVICE_SETTINGS}
    if not settings.hardware.cuda or not any(wanted.values()):  # asked only where a probe would set something
        return settings, skipped
    settable, reason = backend.device_settings_available()
    if settable:
        return settings, skipped
    pinned = ["power_limit"] + ([] if backend.sets_clock_itself() else ["sm_clock_mhz"])
    dropped = {knob: wanted[knob] for knob in pinned if wanted[knob]}
    skipped += [entry(knob, values, _unsettable_why(reason), _unsettable_fix(dropped)) for knob, values in dropped.items()]
    untouched = {knob: (UNTOUCHED_DEVICE_SETTINGS[knob],) for knob in pinned}
    return replace(settings, space=replace(space, **untouched)), skipped


def _unsettable_why(reason: str) -> str:
    """The backend's reason without the fix NVML's permission error carries for every context ("or keep power_limit =
    [1.0] and sm_clock_mhz = ["max"] in the space"): under srun the clock stays searchable, and the line that follows
    said to list clocks (trial75 #9); the fix this line gives is its own (_unsettable_fix). A node the reason names
    then follows the refusal, not "in the space"."""
    from autotune.measure.errors import NEEDS_PRIVILEGE

    refusal = NEEDS_PRIVILEGE.split("; ")[0]
    return reason.replace(NEEDS_PRIVILEGE, refusal)


def _unsettable_fix(dropped: dict[str, list]) -> str:
    """What searches the `dropped` values ({knob: values}); under srun, where only the limit is dropped, nothing of the
    clock, which srun sets (trial75 #9: the line said to keep it at max, the next to list clocks)."""
    them = "them" if sum(map(len, dropped.values())) > 1 else "it"
    clock = ("; --launcher srun in a job with GPU gres sets the SM clock without root" if "sm_clock_mhz" in dropped
             else "; no SLURM option sets a power limit")
    return f"to search {them}, {_SET_ON_PROBE_NODES}{clock} ({_LAUNCH_DOC})"


def not_searched_lines(skipped: list[dict], narrowed: StudySettings, backend) -> list[str]:
    """The warning before any probe (`narrowed_for_backend`'s values, and why), and where the limit alone was
    dropped under srun while the space lists no clock, how to search the clock, which srun sets without root."""
    from autotune.candidate import SM_CLOCK_UNTOUCHED
    from autotune.report.inputs import not_searched_sentence

    if not skipped:
        return []
    lines = [not_searched_sentence(skipped)]
    limit_unsettable = any(e["knob"] == "power_limit" and e["fix"] for e in skipped)
    if limit_unsettable and narrowed.space.sm_clock_mhz == (SM_CLOCK_UNTOUCHED,) and backend.sets_clock_itself():
        # Without the limit nothing in this space trades time for energy at a fixed GPU count, while the
        # clock srun sets needs no privilege: say how to search it (NVIDIA clocks step by 15 MHz).
        top = narrowed.hardware.gpu.max_sm_clock_mhz
        ladder = ", ".join(str(int(top * share / 15) * 15) for share in (0.85, 0.7))
        lines.append("the SM clock is still settable here (srun --gpu-freq, no root needed) and trades time for "
                     f'energy: list it in a --space file, e.g. sm_clock_mhz = ["max", {ladder}]')
    return lines
