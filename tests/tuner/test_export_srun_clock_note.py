"""Trial75 #3: `export --launcher srun` of an SM-clock pick wrote a launch.sh that sets the clock the unprivileged way
(`srun --gpu-freq`), while its header, its config's not_in_this_config and export's stderr told the user's own job to
set it with `device_cli apply` (NVML: root). The notes now say the srun way for the clock; a power limit, which SLURM
cannot set, keeps its NVML command, with the clock left to SLURM."""

from __future__ import annotations

from autotune.candidate import Knobs
from autotune.export import device_settings_note
from autotune.hardware import load_hardware
from tests.tuner.test_export_device import _export

H100 = load_hardware("h100-sxm")
SRUN_WAY = "for your own job add `--gpu-freq=1500` to its srun step, and SLURM sets and resets the clock of the step's GPUs without privileges"


def test_an_srun_exports_notes_set_the_clock_as_its_launch_script_does(tmp_path):
    config, script = _export(tmp_path, launcher="srun", sm_clock_mhz=1500)
    text = script.read_text()
    assert "gpu_freq=(--gpu-freq=1500)" in text  # what the script itself does
    header = [line for line in text.splitlines() if line.startswith("#   - ") and "SM clock" in line]
    assert len(header) == 1 and SRUN_WAY in header[0] and "device_cli" not in header[0], header
    handed = [note for note in config["autotune"]["not_in_this_config"] if "SM clock" in note]
    assert len(handed) == 1 and SRUN_WAY in handed[0] and "device_cli" not in handed[0]


def test_a_limit_beside_the_clock_keeps_its_nvml_command_without_the_clock():
    knobs = Knobs(zero_stage=3, power_limit=0.7, sm_clock_mhz=1500)
    note = device_settings_note(knobs, H100, gpus_per_node=8, launcher="srun")
    clock, limit = note.split("; the power limit", 1)
    assert SRUN_WAY in clock
    assert "--power-limit 0.7 --sm-clock-mhz max --gpus 8" in limit and "root or CAP_SYS_ADMIN" in limit


def test_other_launchers_still_set_the_clock_through_nvml():
    knobs = Knobs(zero_stage=3, sm_clock_mhz=1500)
    for launcher in (None, "torchrun", "deepspeed"):
        note = device_settings_note(knobs, H100, gpus_per_node=8, launcher=launcher)
        assert "--power-limit 1 --sm-clock-mhz 1500 --gpus 8" in note and "--gpu-freq" not in note
    # A profile without GPUs gets no gres, so SLURM sets no clock there: the note is NVML's.
    assert "--gpu-freq" not in device_settings_note(knobs, load_hardware("cpu"), launcher="srun")
