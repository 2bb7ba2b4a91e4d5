"""What the report calls the devices a study ran on: GPUs on a CUDA profile, CPU ranks on a profile
without CUDA (hardware/cpu.toml: each "GPU" there is a torchrun process on host cores, gloo).

Human-readable text only: pareto.json's keys (`gpus`, `gpu_hours`, `max_power_per_gpu_w`, the
energy component `gpu`) stay as other tools read them, whatever the device.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceWords:
    one: str  # "GPU": one device, in a sentence or after "per"
    many: str  # "GPUs"
    # How the energy component `gpu` reads: on a CPU profile it is the ranks' share of the host, not a GPU.
    gpu_component: str

    def per(self) -> str:
        """Column heads: `TFLOP/s /GPU`, `TFLOP/s /CPU rank`."""
        return f"/{self.one}"

    def component(self, name: str) -> str:
        """An energy component's name as a table or chart shows it (the key itself on a GPU profile)."""
        return self.gpu_component if name == "gpu" else name


GPU_WORDS = DeviceWords(one="GPU", many="GPUs", gpu_component="gpu")
CPU_RANK_WORDS = DeviceWords(one="CPU rank", many="CPU ranks", gpu_component="CPU ranks (gpu)")


def device_words(hardware) -> DeviceWords:
    """The words for a hardware profile's devices; None (no profile known) reads as GPUs."""
    return CPU_RANK_WORDS if hardware is not None and not hardware.cuda else GPU_WORDS


def view_device_words(view) -> DeviceWords:
    """The words for the devices a study's view ran on."""
    settings = getattr(view, "settings", None)
    return device_words(settings.hardware if settings is not None else None)
