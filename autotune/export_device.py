"""The power-limit and SM-clock lines of an exported launch.sh: applied for the run, restored on exit.

The script calls our own `python -m autotune.measure.device_cli` (module-scope limits on a GH200,
all-or-nothing apply, a record written before any change), so that logic lives once. Under
`--launcher srun`, SLURM sets the clock itself (`srun --gpu-freq=MHz`, no privileges needed), but
SLURM has no per-step power-limit option: a limit is applied through NVML on every node of the
allocation (one task per node) and the script says so.
"""

from __future__ import annotations

import shlex

from autotune.backends.launchers import SM_CLOCK_SET_BY_ENV
from autotune.candidate import SM_CLOCK_UNTOUCHED, Knobs

RECORD = ".autotune-device-settings.{host}.json"  # one per node: device_cli fills in the host name
GRES_WORDS = "@GRES@"  # where an srun step's GPU request goes: the script's "${gres[@]}" (export.GRES_LINES)


def device_settings_sentence(knobs: Knobs) -> str:
    parts = []
    if knobs.power_limit != 1.0:
        parts.append(f"power limit {knobs.power_limit:g} x each GPU's default limit (the module's on a GH200)")
    if knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
        parts.append(f"SM clock cap {knobs.sm_clock_mhz} MHz")
    return " and ".join(parts)


def device_cli(action: str, knobs: Knobs, clock_by_nvml: bool = True) -> list[str]:
    """The command that applies (or restores) the knobs' device settings on one node, with its record."""
    command = ["python", "-m", "autotune.measure.device_cli", action]
    if action == "apply":
        clock = knobs.sm_clock_mhz if clock_by_nvml else SM_CLOCK_UNTOUCHED
        command += ["--power-limit", f"{knobs.power_limit:g}", "--sm-clock-mhz", str(clock)]
    return command + ["--record", RECORD]


def device_script(knobs: Knobs, nodes: int, launcher: str) -> list[str]:
    """The lines before the training command; none when the knobs touch nothing. Under srun the
    training step itself carries the clock (`--gpu-freq`, launchers.probe_command)."""
    if not knobs.changes_device_settings:
        return []
    srun = launcher == "srun"
    lines = [f"# This run uses a {device_settings_sentence(knobs)}; the previous values come back on exit (trap)."]
    on_nodes: list[str] = []
    if srun:
        if knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
            lines.append(f"# SLURM applies and resets the SM clock for the step (srun --gpu-freq={knobs.sm_clock_mhz}); the")
            lines.append("# probe then leaves it (it would need root to set it through NVML).")
            lines.append(f"export {SM_CLOCK_SET_BY_ENV}=srun")
        if knobs.power_limit == 1.0:
            return lines
        lines.append("# SLURM has no per-step power-limit option: the limit is set through NVML on every node of the")
        lines.append("# allocation (one task per node, with its GPUs), which needs root or CAP_SYS_ADMIN there.")
        on_nodes = ["srun", "--ntasks-per-node=1", f"--nodes={nodes}", GRES_WORDS]
    else:
        lines.append("# Setting them needs root or CAP_SYS_ADMIN (NVML); the script stops if NVML refuses.")
        if nodes > 1:
            lines.append(f"# It changes the GPUs of the node this script runs on only: run the same apply on the other "
                         f"{nodes - 1} node(s) of the hostfile.")
    apply = shlex.join(on_nodes + device_cli("apply", knobs, clock_by_nvml=not srun))
    restore = shlex.join(on_nodes + device_cli("restore", knobs, clock_by_nvml=not srun))
    lines += [
        f"restore_device_settings() {{ {restore}; }}",
        "trap restore_device_settings EXIT",
        "trap 'exit 143' TERM INT  # a signal ends the script through the EXIT trap",
        f"{apply} || exit 2",
    ]
    return lines
