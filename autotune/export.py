"""Export one point of a study as a DeepSpeed JSON config, with its candidate file and launch command.

The config is `autotune.ds_config.deepspeed_config(candidate)`, exactly what a probe of that candidate
ran, plus an `autotune` section (ignored by DeepSpeed) that says where its figures came from.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shlex
from pathlib import Path

from autotune.atomic_write import write_text_atomic
from autotune.backends.launchers import probe_command
from autotune.backends.probe_options import LAUNCHERS
from autotune.candidate import SM_CLOCK_UNTOUCHED, limited_device, power_limit_text
from autotune.checks import text_head
from autotune.counted import agreeing, counted
from autotune.ds_config import config_reasons, deepspeed_config, not_tuned, offloads_activations
from autotune.errors import UserError
from autotune.export_caveats import FrontLead, front_leads
from autotune.report.within_noise import gaps_within_noise
from autotune.export_device import GPU_FREQ_WORDS, GRES_WORDS, device_cli, device_script
from autotune.hardware import hardware_flag
from autotune.measure.combine import not_measured, parts_text
from autotune.report.device_words import device_words
from autotune.report.picks import PICK_FILES
from autotune.report.study_points import StudyView

# --pick spelling (hyphens) -> recommendation key in the study view / pareto.json
PICKS = {stem: key for key, stem in PICK_FILES.items()}


# Feasible trials --trial's refusal names one by one; past them it names the front's and where all are listed: a study
# of 1,000 named every one in a line of 5,689 characters (trial70 #4).
LISTED_TRIALS = 12


def choose_trial(view: StudyView, pick: str | None, trial: int | None, exhausted: str | None = None,
                 report_command: str = "autotune report RUN_DIR --json") -> tuple[int, str]:
    """(trial number, file stem) for --pick or --trial. `exhausted`: report.search.nothing_more_to_evaluate's
    sentence, said where a study has nothing to export instead of "more --trials". `report_command`: the
    `autotune report --json` of this study, which lists every feasible trial where --trial's refusal names a few."""
    if trial is not None:
        if view.point(trial) is None:
            # What became of it, where the study knows (an interrupted trial names the trial that probed it again).
            row = next((r for r in view.trials if r["trial"] == trial), None)
            became = ""
            if row is not None and row.get("reason"):
                said = row["reason"]  # a failure's reason starts with its status already ("timeout: no result ...")
                became = f" ({said})" if said.startswith(f"{row['status']}:") else f" ({row['status']}: {said})"
            choose = _trial_choices(view, report_command)
            raise UserError(f"trial {trial} is not a feasible evaluated trial of this study{became}; {choose}")
        return trial, f"trial-{trial}"
    key = PICKS[pick or "knee"]
    if key not in view.picks:
        counts = view.trials_by_status()
        said = ", ".join(f"{n} {status}" for status, n in counts.items()) or "none evaluated"
        fix = ("`autotune report` names why its probes failed" if counts.get("failed") or counts.get("timeout")
               else exhausted if exhausted else "run `autotune run` with more --trials")
        trials = counted(len(view.trials), 'trial')  # not "1 trials" (trial54 F11)
        raise UserError(f"this study has no feasible configuration to export yet ({trials}: {said}); {fix}")
    return view.picks[key], pick or "knee"


def _trial_choices(view: StudyView, report_command: str) -> str:
    """The feasible trials --trial may name: all of them where few, else the front's and the command that lists all."""
    if not view.points:  # "choose one of: none" offered no choice (trial54 F11)
        return "the study has no feasible trial to export"
    if len(view.points) <= LISTED_TRIALS:
        return f"choose one of: {', '.join(str(p.trial) for p in view.points)}"
    front = sorted(p.trial for p in view.front)
    named = ", ".join(map(str, front[:LISTED_TRIALS]))
    more = f" and {len(front) - LISTED_TRIALS} more" if len(front) > LISTED_TRIALS else ""
    return (f"choose one of its {len(view.points)} feasible trials, such as the front's {named}{more} "
            f"(`{report_command}` lists them all under \"feasible\")")


# srun's GPU request in launch.sh: a bash array the script fills where the job has GPU gres (the tuner
# asks the environment when it starts a probe; an exported script learns it only where it runs).
GRES_LINES = (
    "gres=()  # newer SLURM gives a step no GPUs unless it asks, where the job has GPU gres",
    'if [ -n "${{SLURM_GPUS_ON_NODE:-}}${{SLURM_JOB_GPUS:-}}${{SLURM_GPUS_PER_NODE:-}}" ]; then gres=(--gpus-per-node={per_node}); fi',
)


def config_stem(config_name: str) -> str:
    """What the files beside a config are named after: its name without `.json`, or whole (`-o $(mktemp)`'s
    tmp.X1y2Z3 is not tmp with a suffix: two such exports wrote one tmp.launch.sh, the second over the first)."""
    name = Path(config_name).name
    return name[:-len(".json")] if name.lower().endswith(".json") and len(name) > len(".json") else name


def result_name(config_name: str) -> str:
    return config_stem(config_name) + ".result.json"


# Where a one-node deepspeed command's host flags go: the script's "${where[@]}" (DEEPSPEED_ONE_HOST_LINES).
WHERE_WORDS = "@WHERE@"


def export_launcher(requested: str, candidate, trial: int | None = None) -> str:
    """The launcher a pick's launch.sh starts its ranks with: `auto` is torchrun on one node and the deepspeed
    launcher on a hostfile for several; torchrun, deepspeed or srun as asked, where it can start them."""
    nodes = candidate.knobs.nodes
    if requested == "auto":
        return "torchrun" if nodes == 1 else "deepspeed"
    if requested == "torchrun" and nodes > 1:
        which = f"trial {trial}" if trial is not None else "this configuration"
        raise UserError(f"--launcher torchrun starts every rank on the node launch.sh runs on, and {which} runs on "
                        f"{nodes} nodes: pass --launcher deepspeed (the hosts of a hostfile) or srun (a SLURM "
                        "allocation), or leave --launcher out")
    if requested not in LAUNCHERS:
        raise UserError(f"unknown launcher {requested!r}; use one of {', '.join(LAUNCHERS)}")
    return requested


def launch_command(candidate, config_name: str, candidate_name: str, launcher: str = "auto") -> list[str]:
    """What `<pick>.launch.sh` runs: the tuner's own probe command (torchrun on one node, the
    deepspeed launcher on a `hostfile` for several, or as `launcher` asks: export_launcher), with
    the launchers' console scripts. An srun command holds GRES_WORDS where the gres array goes, a one-node
    deepspeed command WHERE_WORDS where its host flags go. The result goes beside the config under the pick's
    name: picks share configs/."""
    probe_args = ["--candidate", candidate_name, "--deepspeed-config", config_name, "--out", result_name(config_name)]
    launcher = export_launcher(launcher, candidate)
    if launcher == "srun":
        # A profile without CUDA trains on CPU ranks: a step of a job with GPU gres must not hold its GPUs.
        capped = candidate.knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED  # asked where the job has GPU gres (device_script)
        return probe_command("srun", candidate, probe_args, gres=(GRES_WORDS,) if candidate.hardware.cuda else (),
                             gpu_freq=(GPU_FREQ_WORDS,) if capped else ())
    if launcher == "deepspeed" and candidate.knobs.nodes == 1:
        # The tuner's flags depend on whether the hostfile's one host is this machine (launchers.first_host_here):
        # the script asks where it runs, and puts them where WHERE_WORDS is.
        command = probe_command("deepspeed", candidate, probe_args, one_host_here=False)
        return [WHERE_WORDS if word == "--force_multi" else word for word in command]
    return probe_command(launcher, candidate, probe_args)


# A one-node deepspeed script: DeepSpeed's runner starts one host's ranks on the machine it runs on, whatever host
# the hostfile names, unless forced through pdsh; on this machine, it needs neither ssh nor pdsh (as the tuner's).
DEEPSPEED_ONE_HOST_LINES = (
    "host=$(grep -Ev '^[[:space:]]*(#|$)' hostfile | head -n 1 | awk '{print $1}' | tr '[:upper:]' '[:lower:]')",
    "where=(--force_multi)  # the hostfile's host is another machine: its ranks start there, through pdsh",
    'case "$host" in localhost|localhost.localdomain|ip6-localhost|127.*|::1|"$(hostname | tr \'[:upper:]\' \'[:lower:]\')"|'
    '"$(hostname -s 2>/dev/null | tr \'[:upper:]\' \'[:lower:]\')") where=(--no_ssh_check --master_addr=127.0.0.1);; esac',
)


def _own_training(config_name: str, candidate, measured_default_w: float | None = None, launcher: str | None = None) -> str:
    return (f"# Your own training takes {config_name} as its DeepSpeed config, and needs beyond it:\n"
            + "".join(f"#   - {note}\n" for note in handover_notes(candidate, measured_default_w, launcher)))


def _script_line(line: str) -> str:
    return line.replace(GRES_WORDS, '"${gres[@]}"').replace(GPU_FREQ_WORDS, '"${gpu_freq[@]}"').replace(
        WHERE_WORDS, '"${where[@]}"')


def portable_candidate(candidate) -> dict:
    """The candidate file's contents, usable on another machine: it holds its hardware profile
    (`hardware_profile`), and names it by a built-in profile's name (`gh200`) or a custom file's name,
    not by a path of this machine."""
    data = candidate.to_file()
    flag = hardware_flag(candidate.hardware.source) if candidate.hardware.source else candidate.hardware.name
    data["hardware"] = Path(flag).name  # a built-in profile's name, or a custom file's name without its directory
    return data


def divisors(number: int) -> list[int]:
    """The whole numbers that divide `number`, in ascending order. Tried up to its square root, each found with
    its partner: --global-batch takes up to 10^12, where trying every number up to it hung a newcomer's report."""
    small, large = [], []
    for size in range(1, math.isqrt(number) + 1):
        if number % size == 0:
            small.append(size)
            if size != number // size:
                large.append(number // size)
    return small + large[::-1]


def ranks_note(candidate) -> str:
    """The number of ranks the config's batch sizes hold for: DeepSpeed checks train_batch_size = micro-batch x
    gradient_accumulation_steps x data-parallel size at start-up, and a newcomer's trial ran a 16-rank pick's
    config on one rank and met that assertion with nothing in the export naming 16."""
    knobs, global_batch, words = candidate.knobs, candidate.workload.global_batch, device_words(candidate.hardware)
    per_node = f"{candidate.gpus_per_node} {words.one if candidate.gpus_per_node == 1 else words.many}"
    sp = f", sequence-parallel degree {knobs.sp_degree}" if knobs.sp_degree > 1 else ""
    # A newcomer's trial ran a pick on 3 ranks: the formula gave 8 / (4 x 3), no whole number, and no word said so.
    steps = global_batch // knobs.micro_batch
    sizes = divisors(steps)
    whole = f"{agreeing(len(sizes), 'size', 'sizes')} {', '.join(str(size) for size in sizes)}"
    return (f"run it on {counted(candidate.gpus, 'rank')} ({counted(knobs.nodes, 'node')} x {per_node}{sp}: data-parallel "
            f"size {candidate.dp_degree}): train_batch_size {global_batch} = micro-batch {knobs.micro_batch} x "
            f"gradient_accumulation_steps {candidate.grad_accum} x {candidate.dp_degree}, which DeepSpeed checks at "
            f"start-up; on another number of ranks keep train_batch_size and set gradient_accumulation_steps to "
            f"{global_batch} / ({knobs.micro_batch} x the data-parallel size), a whole number only at data-parallel "
            f"{whole}; at another (3 ranks, say) the micro-batch must change too: `autotune run` with that "
            "number of ranks finds one")


def handover_notes(candidate, measured_default_w: float | None = None, launcher: str | None = None) -> list[str]:
    """Everything a training that loads the exported config needs to know beyond it, in the order said.
    `measured_default_w`: the default power limit the trial's probe read (report.power_limit.measured_default_w);
    `launcher`: the export's (export_launcher), where there is one: under srun SLURM sets the clock (device_settings_note)."""
    return [ranks_note(candidate),
            *beyond_the_config(candidate.knobs, candidate.hardware, measured_default_w, candidate.gpus_per_node, launcher)]


def beyond_the_config(knobs, hardware=None, measured_default_w: float | None = None,
                      gpus_per_node: int | None = None, launcher: str | None = None) -> list[str]:
    """What the probe applied that a DeepSpeed JSON cannot carry: a training that only loads the file gets
    none of it (DeepSpeed's engine never reads `activation_checkpointing`, and `sequence_parallel_size` alone
    only changes its batch arithmetic), so each is said wherever the file is handed over. `hardware`: the
    profile, which gives a power limit in watts (device_settings_note), of `measured_default_w` where a probe read it."""
    notes = []
    if knobs.activation_checkpointing != "none":
        how = {"recompute": "recompute each block in backward",
               "offload_sync": "recompute each block, its kept input copied to host memory",
               "offload_async": "recompute each block, its kept input copied to pinned host memory on a side stream"}
        # The plain checkpoint calls give recompute alone; the offloads are saved-tensor hooks around them, and
        # the asynchronous one (what the probe measured) is DeepSpeed's pinned-buffer side-stream engine, which
        # neither call nor the JSON's cpu_checkpointing (a blocking copy) gives.
        wrap = {"recompute": "wrap each transformer block in torch.utils.checkpoint.checkpoint (use_reentrant=False)",
                "offload_sync": "wrap each transformer block in torch.utils.checkpoint.checkpoint inside "
                                "saved_tensors_hooks that copy the kept inputs to host memory",
                "offload_async": "wrap each transformer block in torch.utils.checkpoint.checkpoint inside "
                                 "saved_tensors_hooks that hand the kept inputs to DeepSpeed's activation offload "
                                 "engine (pinned buffers, a side stream; torch.utils.checkpoint alone recomputes "
                                 "without offloading)"}
        # The config's activation_checkpointing section reads as if it did this (cpu_checkpointing: true, a
        # newcomer's trial): it configures deepspeed.checkpointing.checkpoint only, which the probe never calls.
        # Where the section has cpu_checkpointing: true (ds_config._checkpointing_section), a newcomer's trial that made
        # those calls on CPU ranks met DeepSpeed's crash in the recompute; false there trained.
        cpu_crash = ("; its cpu_checkpointing: true was never run by the probe, and makes deepspeed.checkpointing.checkpoint "
                     "fail on a machine without CUDA (DeepSpeed 0.19.8): set it false there")
        if hardware is not None and not hardware.cuda:  # ds_config._checkpointing_section wrote false already
            cpu_crash = ("; its cpu_checkpointing is false, as this profile has no CUDA, where DeepSpeed 0.19.8 fails "
                         "on true: set it true on a CUDA machine")
        notes.append(f"activation checkpointing ({knobs.activation_checkpointing}: {how[knobs.activation_checkpointing]}) "
                     f"is code, not config: {wrap[knobs.activation_checkpointing]} (the probe's: "
                     "trainer/checkpointing.py; the config's activation_checkpointing section applies only to "
                     "deepspeed.checkpointing.checkpoint calls, which the probe does not make"
                     + (cpu_crash if offloads_activations(knobs.activation_checkpointing) else "") + ")")
    if knobs.sp_degree > 1:
        notes.append(f"Ulysses sequence parallelism (degree {knobs.sp_degree}) is code, not config: wrap attention in "
                     "deepspeed.sequence.layer.DistributedAttention and pass a sequence-parallel mpu to "
                     "deepspeed.initialize (the probe's: trainer/sequence_parallel.py); sequence_parallel_size alone "
                     f"only divides the data-parallel size, and the real global batch would be {knobs.sp_degree}x; "
                     "each rank's loss must be its slice's summed loss divided by the whole sequence's token count "
                     "(DeepSpeed sums the gradients over the SP ranks: a per-slice mean makes them "
                     f"{knobs.sp_degree}x too large)")
    if device := device_settings_note(knobs, hardware, measured_default_w=measured_default_w, gpus_per_node=gpus_per_node,
                                      launcher=launcher):
        notes.append(device)
    return notes


def device_settings_note(knobs, hardware=None, limit_placeholder: str | None = None,
                         measured_default_w: float | None = None, gpus_per_node: int | None = None,
                         launcher: str | None = None) -> str | None:
    """How the pick's power limit or clock cap is set, which DeepSpeed does not; None where it touches neither. With
    the profile, the limit in watts too (candidate.power_limit_text): of `measured_default_w`, the default NVML
    reported on the probe's devices, where the probe read one, as the report's pick lines give it (an A100 whose
    default is 250 W, not the profile's 400, read "280 W" in the note and "175 W" on its pick line).
    `limit_placeholder`: written for the limit, in the words and the command, where one note serves the report's
    picks that differ in the limit alone (deploy_notes.shared_device_notes says which limit is whose). `launcher`
    "srun": the clock is SLURM's to set (srun_clock_note), and the NVML command sets the limit alone."""
    if launcher == "srun" and knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED and hardware is not None and hardware.cuda:
        untouched_clock = dataclasses.replace(knobs, sm_clock_mhz=SM_CLOCK_UNTOUCHED)
        limit = device_settings_note(untouched_clock, hardware, limit_placeholder, measured_default_w, gpus_per_node)
        return "; ".join(filter(None, (srun_clock_note(knobs), limit)))
    limit = (f"{limit_placeholder} x default" if limit_placeholder
             else power_limit_text(knobs.power_limit, hardware, measured_default_w))
    device = [f"power limit {limit}"] if knobs.power_limit != 1.0 else []
    device += [f"SM clock cap {knobs.sm_clock_mhz} MHz"] if knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED else []
    if not device:
        return None
    # A GH200's limit is its module's (CPU + GPU + memory), as launch.sh says: "set on the GPUs" misled (trial57 #12).
    on = "modules" if knobs.power_limit != 1.0 and hardware is not None and limited_device(hardware) == "module" else "GPUs"
    # The probe the launch script runs sets it (export_device.device_script); the user's own training does not, so
    # it gets the commands (a one-node note said "the same way", and the JSON a user carries held no command).
    # `--gpus`: the pick's GPUs of each node alone, as launch.sh's apply (a note without it capped all eight; trial 65 #4).
    apply, restore = (shlex.join(device_cli(action, knobs, limit_placeholder, gpus_per_node)) for action in ("apply", "restore"))
    needs = "(NVML: root or CAP_SYS_ADMIN, and autotune installed there)"
    if knobs.nodes == 1:
        return (f"the {' and '.join(device)} is set on the {on}, not by DeepSpeed: the launch script does it; "
                f"for your own job run `{apply}` on its node before training, and `{restore}` after {needs}")
    return (f"the {' and '.join(device)} is set on the {on} of every node, not by DeepSpeed: the probe the "
            f"launch script runs does it on each node; for your own job run `{apply}` on each of its "
            f"{knobs.nodes} nodes before training, and `{restore}` after {needs}")


def srun_clock_note(knobs) -> str:
    """How an srun export's clock cap is set: by SLURM, as its launch.sh does it (export_device.device_script), without
    privileges; the note sent a SLURM user to device_cli apply (NVML: root) for it (trial75 #3)."""
    flag = f"--gpu-freq={knobs.sm_clock_mhz}"
    return (f"the SM clock cap {knobs.sm_clock_mhz} MHz is set by SLURM, not by DeepSpeed: the launch script's srun step "
            f"asks for it ({flag}, where the job has GPU gres); for your own job add `{flag}` to its srun step, and "
            "SLURM sets and resets the clock of the step's GPUs without privileges (in a job without GPU gres it sets "
            "none)")


def hostfile_sentence(nodes: int, gpus_per_node: int) -> str:
    """What a deepspeed launch.sh (a multi-node pick's, or --launcher deepspeed) needs beside it, said in the script
    and by `autotune export`."""
    if nodes == 1:
        return (f"It needs a DeepSpeed hostfile named 'hostfile' beside it: one line, 'HOST slots={gpus_per_node}', "
                "the node to train on (this machine; or another, whose ranks pdsh starts).")
    return (f"It needs a DeepSpeed hostfile named 'hostfile' beside it: {nodes} lines, one per node, "
            f"'HOST slots={gpus_per_node}' (and pdsh, which starts the other nodes' ranks).")


def shared_folder_sentence(nodes: int, launcher: str = "deepspeed") -> str:
    """Where a deepspeed launch.sh's ranks on other machines find its files and autotune: DeepSpeed's pdsh runner starts
    them with `cd` to this folder's absolute path and this machine's python (sys.executable), and they read the config
    and candidate by the relative names the script gives; a multi-node script said nothing of it (trial64 #17). An srun
    step's tasks alike: srun starts them in its own working directory (its --chdir default) and runs the `python` the
    exported PATH finds on each node; a multi-node srun script said nothing of it either."""
    if launcher == "srun":
        starts = "srun starts the other nodes' ranks in this folder's path, each running the python this script's PATH names"
    else:
        where = "the other nodes' ranks" if nodes > 1 else "the ranks of a hostfile host that is another machine"
        starts = f"pdsh starts {where} in this folder's path with this machine's python"
    return (f"{starts}: the folder must be at the same path on every node (a shared file system), with autotune "
            "installed in that python there.")


def _hostfile_check(script_name: str, candidate) -> list[str]:
    """The deepspeed launcher's own messages for a missing hostfile or pdsh are tracebacks (ValueError:
    Num nodes is >1 but no extra nodes available via hostfile): say it in one line before anything runs."""
    nodes = candidate.knobs.nodes
    hosts = "grep -Evc '^[[:space:]]*(#|$)' hostfile"  # DeepSpeed skips blank lines and comments too
    lines = [
        "if [ ! -f hostfile ]; then",
        f'  echo "{script_name}: no file named hostfile in $PWD; write it first, {counted(nodes, "line")}, one per node: '
        f'HOST slots={candidate.gpus_per_node}" >&2; exit 2',
        f'elif [ "$({hosts})" -lt {nodes} ]; then',
        # The count of hosts is the script's to find: "lists 1 of the 4 hosts" needs no "host(s)".
        f'  echo "{script_name}: $PWD/hostfile lists $({hosts}) of the {counted(nodes, "host")} this configuration runs on: '
        f'one line per node, HOST slots={candidate.gpus_per_node}" >&2; exit 2',
        "fi",
    ]
    if nodes == 1:  # pdsh only for a host that is not this machine
        return [*lines, *DEEPSPEED_ONE_HOST_LINES,
                f'[ "${{where[0]}}" != --force_multi ] || command -v pdsh >/dev/null || {{ echo "{script_name}: pdsh not '
                'found; the deepspeed launcher starts the ranks of the hostfile\'s host, not this machine, through it: '
                'install pdsh, or run this script on that host" >&2; exit 2; }']
    return [*lines,
            f'command -v pdsh >/dev/null || {{ echo "{script_name}: pdsh not found; the deepspeed launcher starts the other '
            'nodes\' ranks through it: install pdsh, or drop this line and give deepspeed below another --launcher" >&2; exit 2; }']


# Where each launcher's command comes from, for the line that says so where it is missing: on a GPU node DeepSpeed
# installed with `pip --target DIR` left `deepspeed` out of PATH, and the script ended "command not found", exit 127.
_LAUNCHER_FROM = {
    "torchrun": "activate the environment PyTorch is installed in (its bin/ holds torchrun)",
    "deepspeed": "activate the environment DeepSpeed is installed in (its bin/ holds deepspeed), or export with "
                 "--launcher torchrun (one node)",
    "srun": "run this script inside a SLURM allocation (sbatch, salloc)",
}


def _launcher_check(script_name: str, launcher: str) -> str:
    """One line that stops the script, before it changes any device setting, where its launcher is not on PATH."""
    return (f'command -v {launcher} >/dev/null || {{ echo "{script_name}: no {launcher} command on PATH; '
            f'{_LAUNCHER_FROM[launcher]}" >&2; exit 2; }}')


_CANDIDATE_KEYS = {"knobs", "model", "workload", "hardware_profile"}


def exported_kind(path: Path) -> str | None:
    """Which of the three files an export writes `path` holds: "config" (by its `autotune` section),
    "candidate" or "launch" (by its probe command); None for anything else. An earlier export's file may
    be replaced by a new one of its kind. Read from its first MiB only: anything larger is someone else's."""
    text = text_head(path, 1 << 20)
    if text is None:
        return None
    if text.startswith("#!"):  # the probe command, as every version of the script ran it
        return "launch" if "trainer.probe --candidate " in text else None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    section = data.get("autotune")
    if isinstance(section, dict) and "trial" in section and "candidate" in section:
        return "config"
    return "candidate" if _CANDIDATE_KEYS <= data.keys() else None


def export_edit(config_path: Path) -> str | None:
    """Where an earlier export's config at `config_path` no longer holds what export wrote for the candidate beside it
    (NAME.candidate.json): "optimizer.params.lr 0.0005 (export wrote 0.0001)"; None where it does, or where that
    cannot be told (no candidate file beside it, or one of another version). Outside configs/ no record says what
    export wrote, and a second export replaced a user's tuned lr in their own job's folder without a word (trial76
    #5); deepspeed_config is the one function that wrote it, so it tells."""
    from autotune.candidate import candidate_from_dict

    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        beside = config_path.with_name(config_stem(config_path.name) + ".candidate.json")
        wrote = deepspeed_config(candidate_from_dict(json.loads(beside.read_text(encoding="utf-8"))))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # ConfigError is a ValueError
        return None
    return _first_difference({k: v for k, v in config.items() if k != "autotune"}, wrote, "")


def edited_beside(config_path: Path) -> Path | None:
    """The candidate file or launch.sh beside an earlier export's config at `config_path` that is no longer what that
    export wrote there, by the SHA-256 its config keeps of each (autotune.written_beside); None where both are, are
    gone, or where that cannot be told (a config of an older export, which kept none). A site line in launch.sh was
    replaced by the next export without a word, where the config's tuned lr was refused (trial78 #9)."""
    try:
        section = json.loads(config_path.read_text(encoding="utf-8")).get("autotune")
        wrote = section.get("written_beside")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(wrote, dict):
        return None
    for suffix in (".launch.sh", ".candidate.json"):  # only the two names export writes: the config names no others
        path = config_path.with_name(config_stem(config_path.name) + suffix)
        try:
            held = path.read_bytes()
        except OSError:  # gone: nothing of the user's to lose there
            continue
        if isinstance(wrote.get(path.name), str) and file_sha256(held) != wrote[path.name]:
            return path
    return None


def _first_difference(held, wrote, at: str) -> str | None:
    if isinstance(held, dict) and isinstance(wrote, dict):
        for key in [*wrote, *(k for k in held if k not in wrote)]:
            found = _first_difference(held.get(key, _ABSENT), wrote.get(key, _ABSENT), f"{at}.{key}" if at else key)
            if found:
                return found
        return None
    if held == wrote and type(held) is type(wrote):
        return None
    shown = {id(_ABSENT): "absent"}
    return (f"{at} {shown.get(id(held), json.dumps(held, default=str))} (export wrote "
            f"{shown.get(id(wrote), json.dumps(wrote, default=str))})")


_ABSENT = object()


def was_probed(point) -> bool:
    """Whether a probe measured the point's time: a simulated point's never ran, and its launch.sh saying "Runs the
    probe again" and the terminal "train it as probed" told a user it had (trial64 #11). A replayed record keeps its
    probe's source, so a replay of measurements still runs its probe again."""
    return point.source != "simulated"


def _launch_purpose(point, config_name: str, without: str) -> str:
    """launch.sh's first words: what running it does, by where the point's figures came from (was_probed)."""
    trains = f"trains the autotune model with {config_name}"
    if was_probed(point):
        return f"Runs the probe again: {trains} ({point.source} time, {point.energy_source} energy{without})"
    figures = "simulated" if point.energy_source == "simulated" else f"simulated time, {point.energy_source} energy"
    return f"Probes this configuration (its figures were {figures}): {trains}"


def figures_for(candidate) -> dict:
    """The model, hardware profile and workload an exported config's figures and memory fit hold for: the file goes
    into another training job, and said none of them (trial76 #10: its time_to_solution_s had no unit of work, and
    its micro-batch was judged to fit at a sequence length it did not state)."""
    workload = candidate.workload
    tokens = workload.tokens_per_sample(candidate.model)
    return {
        "model": candidate.model.name,
        "hardware": candidate.hardware.name,
        "samples": workload.samples,
        "global_batch": workload.global_batch,
        "frames_per_sample": workload.frames,
        "text_tokens_per_sample": workload.text_tokens,
        "tokens_per_sample": tokens,
        "precision": candidate.precision,
        "note": (f"time_to_solution_s and energy_to_solution_kj are for training {workload.samples} samples of "
                 f"{candidate.model.name} on the {candidate.hardware.name} profile, and micro-batch "
                 f"{candidate.knobs.micro_batch} was judged to fit at {tokens} tokens per sample ({workload.frames} "
                 f"frames x {candidate.model.vision.tokens_per_frame} + {workload.text_tokens} text tokens); another model, sequence length or hardware changes "
                 "both: run `autotune run` for it"),
    }


def _launch_script(point, candidate, config_name: str, candidate_name: str, script_name: str, launcher: str,
                   caveats: list[str], default_w: float | None, without: str) -> str:
    """launch.sh's text: trains `config_name` with `candidate_name` as the probe did, its caveats in its header."""
    command = launch_command(candidate, config_name, candidate_name, launcher)
    srun = command[0] == "srun"
    words = device_words(candidate.hardware)
    shared = f"# {shared_folder_sentence(candidate.knobs.nodes, command[0])}\n" if candidate.knobs.nodes > 1 else ""
    where = {"srun": f"# Run inside the SLURM allocation (sbatch, salloc): one srun step starts a task per {words.one}.\n"
                     + shared,
             "torchrun": "# torchrun starts the ranks on the node this script runs on.\n",
             "deepspeed": f"# {hostfile_sentence(candidate.knobs.nodes, candidate.gpus_per_node)}\n"
                          f"# {shared_folder_sentence(candidate.knobs.nodes)}\n"}[command[0]]
    gres = [line.format(per_node=candidate.gpus_per_node) for line in GRES_LINES] if srun and candidate.hardware.cuda else []
    return ("#!/usr/bin/env bash\n"
            f"# {_launch_purpose(point, config_name, without)} for a warm-up and a measured window,\n"
            f"# prints what it measured and writes {result_name(config_name)} (more steps: add --steps N to the command below).\n"
            + "".join(f"# Caveat: {' '.join(line.splitlines())}\n" for line in caveats)  # a line break would end the comment
            + _own_training(config_name, candidate, default_w, command[0]) + where
            + 'cd "$(dirname "$0")"\n'
            + "".join(line + "\n" for line in (_hostfile_check(script_name, candidate) if command[0] == "deepspeed" else []))
            + _launcher_check(script_name, command[0]) + "\n"
            # The gres first: whether srun sets the clock depends on it (export_device.device_script).
            + "".join(_script_line(line) + "\n" for line in [*gres, *device_script(candidate.knobs, candidate.knobs.nodes, command[0], candidate.gpus_per_node)])
            + _script_line(shlex.join(command)) + "\n")


def file_sha256(data: bytes) -> str:
    """A written file's content, as configs/.written.json and a config's autotune.written_beside keep it."""
    return hashlib.sha256(data).hexdigest()


def _written_bytes(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")  # as write_text_atomic writes it (a non-UTF-8 file name)


def export_trial(view: StudyView, trial: int, config_path: Path, backend: str, launcher: str = "auto",
                 caveats: list[str] = (), leads: list[FrontLead] | None = None) -> list[Path]:
    """Write the config, the candidate file and the launch command; returns the paths written.
    `launcher` "srun": launch.sh trains in one srun step of the allocation it runs in, which also sets
    an SM clock cap (`--gpu-freq`; autotune/export_device.py). `caveats` (pick_caveats): said in launch.sh's
    header, which travels with the pick where the report does not. `leads`: front_leads(view, trial), where the
    caller has them."""
    from autotune.report.power_limit import measured_default_w

    point = view.point(trial)
    leads = front_leads(view, trial) if leads is None else leads
    candidate = view.settings.candidate(point.params)
    default_w = measured_default_w(point)  # the limit's watts of the default the probe read, as the report gives them
    launcher = export_launcher(launcher, candidate, trial)  # the notes say how its launcher sets a clock
    config = deepspeed_config(candidate)
    # A GPU-only total must not read as the node's in a file that travels without the report.
    # None where the energy is not measured at all ([] would read as "every part measured").
    left_out = not_measured(point.extra.get("details")) if point.energy_source == "measured" else None
    without = f" without {parts_text(left_out)}" if left_out else ""
    config["autotune"] = {
        "trial": trial,
        "backend": backend,
        "time_source": point.source,
        "energy_source": point.energy_source,
        "time_to_solution_s": point.time_s,
        "energy_to_solution_kj": point.energy_kj,
        "energy_not_measured": left_out,  # parts of the node no sensor saw (["cpu", "memory_interconnect"]: GPUs only); null: none measured
        "tflops_per_gpu": point.tflops,
        # A config handed on alone said nothing of a --trial that front trials beat (off_front_line said it elsewhere).
        "on_front": None if leads is None else not leads,  # false: front trials beat it in time and energy; null: time-only
        "beaten_by": [lead.point.trial for lead in leads or []],  # those trials, the widest lead first (off_front_line's)
        # Those of them whose leads in both figures lie within measured noise: the run report calls such a pair a tie
        # (trial76 #2: a CPU study's 18% "beaten" was inside its 24% noise).
        "beaten_within_noise": [lead.point.trial for lead in leads or [] if len(gaps_within_noise(point, lead.point)) == 2],
        "figures_for": figures_for(candidate),  # what the figures and the memory fit hold for (trial76 #10)
        "note": (f"figures are {point.source} (time) and {point.energy_source} "
                 f"(energy{' of the node' + without + ': no sensor saw them' if without else ''}); DeepSpeed ignores this section"),
        "candidate": point.params,
        "power_limit": candidate.knobs.power_limit,  # fraction of each device's default limit; 1.0 = untouched
        "sm_clock_mhz": candidate.knobs.sm_clock_mhz,  # "max" = untouched
        "ranks": candidate.gpus,  # the batch sizes hold for this many (ranks_note)
        "not_in_this_config": handover_notes(candidate, default_w, launcher),
        "why": config_reasons(candidate),
        "not_tuned": not_tuned(config),  # the probe's fixed settings (optimizer, clipping, logging): the user's own
        "model_caveats": view.model_caveats,  # what of the --model file the figures model otherwise, else null
    }
    candidate_path = config_path.with_name(config_stem(config_path.name) + ".candidate.json")
    candidate_text = json.dumps(portable_candidate(candidate), indent=2) + "\n"
    launch_path = config_path.with_name(config_stem(config_path.name) + ".launch.sh")
    launch_text = _launch_script(point, candidate, config_path.name, candidate_path.name, launch_path.name, launcher,
                                 caveats, default_w, without)
    # What export writes beside the config, by content: a later export to the same -o tells an edit of either (a
    # site line in launch.sh) from its own, as it tells the config's by its candidate file (export_edit). Outside
    # configs/ no other record says what export wrote, and both were replaced without a word (trial78 #9).
    config["autotune"]["written_beside"] = {candidate_path.name: file_sha256(_written_bytes(candidate_text)),
                                            launch_path.name: file_sha256(_written_bytes(launch_text))}
    config_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(config_path, json.dumps(config, indent=2) + "\n")
    write_text_atomic(candidate_path, candidate_text)
    write_text_atomic(launch_path, launch_text, mode=0o755)
    return [config_path, candidate_path, launch_path]
