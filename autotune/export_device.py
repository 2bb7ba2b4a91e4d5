"""The power-limit and SM-clock lines of an exported launch.sh.

The probe the script runs applies a pick's settings on every node and restores them (device_script says
where the script adds its own apply). The script calls our own `python -m autotune.measure.device_cli`
(module-scope limits on a GH200, all-or-nothing apply, a record written before any change), so that
logic lives once. Under `--launcher srun`, SLURM sets the clock itself (`srun --gpu-freq=MHz`, no
privileges needed); SLURM has no per-step power-limit option, so the probe sets a limit through NVML.
"""

from __future__ import annotations

import shlex

from autotune.backends.launchers import SM_CLOCK_SET_BY_ENV
from autotune.candidate import SM_CLOCK_UNTOUCHED, Knobs

RECORD = ".autotune-device-settings.{host}.json"  # one per node: device_cli fills in the host name
GRES_WORDS = "@GRES@"  # where an srun step's GPU request goes: the script's "${gres[@]}" (export.GRES_LINES)
GPU_FREQ_WORDS = "@GPU_FREQ@"  # where its clock request goes: the script's "${gpu_freq[@]}" (device_script)


def device_settings_sentence(knobs: Knobs) -> str:
    parts = []
    if knobs.power_limit != 1.0:
        parts.append(f"power limit {knobs.power_limit:g} x each GPU's default limit (the module's on a GH200)")
    if knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
        parts.append(f"SM clock cap {knobs.sm_clock_mhz} MHz")
    return " and ".join(parts)


def device_cli(action: str, knobs: Knobs, limit_placeholder: str | None = None, gpus: int | None = None) -> list[str]:
    """The command that applies (or restores) the knobs' device settings on one node, with its record; or
    shows them (`show`). `limit_placeholder`: written for the power limit (one command for several picks);
    `gpus`: the ranks per node, whose GPUs alone it changes (the others of the node may be another job's)."""
    command = ["python", "-m", "autotune.measure.device_cli", action]
    if action == "show":
        return command
    if action == "apply":
        command += ["--power-limit", limit_placeholder or f"{knobs.power_limit:g}", "--sm-clock-mhz", str(knobs.sm_clock_mhz)]
        command += ["--gpus", str(gpus)] if gpus is not None else []
    return command + ["--record", RECORD]


def device_script(knobs: Knobs, nodes: int, launcher: str, gpus_per_node: int | None = None) -> list[str]:
    """The lines before the training command; none when the knobs touch nothing.

    The probe the script runs sets the knobs itself on every node (trainer/power.py: local rank 0 of each,
    before its warm-up) and puts the previous values back on every way out but SIGKILL, as the tuner's probes
    did. Only a one-node torchrun script, which runs on the probe's node, records and applies them too, so its
    EXIT trap undoes them after a probe killed outright (the OOM killer). A multi-node script runs on one host
    (a login node, perhaps without NVML): an apply there changed that host alone and failed on a GPU-less one.
    Under srun a separate apply step made the probe's restore put back the capped values, and the trap's
    restore step is one SLURM does not start once the job is cancelled or past its time limit. Under srun the
    training step itself carries the clock (`--gpu-freq`, launchers.probe_command)."""
    if not knobs.changes_device_settings:
        return []
    srun = launcher == "srun"
    lines = [f"# This run uses a {device_settings_sentence(knobs)}."]
    if srun and knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
        lines += [f"# SLURM applies and resets the SM clock of the step's GPUs (srun --gpu-freq={knobs.sm_clock_mhz}) where the job",
                  "# has GPU gres; the probe then leaves it (it would need root to set it through NVML). Without gres SLURM",
                  "# sets no clock: the probe sets it through NVML, or refuses to train where it cannot.",
                  "gpu_freq=()",
                  f'if [ ${{#gres[@]}} -gt 0 ]; then gpu_freq=(--gpu-freq={knobs.sm_clock_mhz}); export {SM_CLOCK_SET_BY_ENV}=srun; fi']
        if knobs.power_limit == 1.0:
            return lines
    if srun or nodes > 1 or launcher == "deepspeed":  # a deepspeed script's one host may be another machine
        what = "power limit" if srun else "settings"
        lines += [f"# The probe sets the {what} on every node (local rank 0 of each, through NVML: root or CAP_SYS_ADMIN",
                  "# there) before its warm-up, refuses to train where it cannot, and puts the previous values back on its",
                  "# way out (its end, an error, SIGTERM: scancel, a time limit; SIGHUP; SIGUSR1/2: --signal); after a SIGKILL, run",
                  f"# `{shlex.join(device_cli('show', knobs))}` on a node to see what it was left at."]
        return lines
    lines.append("# Setting them needs root or CAP_SYS_ADMIN (NVML); the script stops if NVML refuses. The probe sets")
    lines.append("# them too, and restores them on its way out; the trap below undoes them after a probe killed outright.")
    apply, restore = (shlex.join(device_cli(action, knobs, gpus=gpus_per_node)) for action in ("apply", "restore"))
    lines += [
        f"restore_device_settings() {{ {restore}; }}",
        "trap restore_device_settings EXIT",
        # A signal ends the script through the EXIT trap, with the shell's status for it (Ctrl-C: 130).
        "trap 'exit 143' TERM",
        "trap 'exit 130' INT",
        f"{apply} || exit 2",
    ]
    return lines
