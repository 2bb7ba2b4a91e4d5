"""The probes' GPUs' power limits and clocks as they were before the study, put back after a probe died.

A probe restores its own settings on every way out it can run code in (trainer/power.py); a SIGKILL,
or a rank stuck in a collective past the kill grace, leaves a device capped. The launch backend
therefore records the settings of the devices its probes may use (CUDA_VISIBLE_DEVICES, else the node's)
before the first probe that changes them, and after any such probe that did not exit cleanly it compares
and restores the devices that probe's ranks trained on, and no other: on a shared node the other GPUs are
other jobs', whose limits and clock locks are theirs (a failed clock probe reset the locks of all eight,
trial75 #11). Only this machine's devices are reachable from the tuner: remote nodes rely on their probes
(and a limit never survives a reboot).
"""

from __future__ import annotations

from autotune.candidate import Candidate


class LocalDeviceSettings:
    def __init__(self):
        self._available: tuple[bool, str] | None = None
        self._before: list | None = None  # DeviceSettings of the probes' devices, read before any change

    def available(self, environ: dict[str, str]) -> tuple[bool, str]:
        """Whether this process may change power limits and clocks of the probes' devices (asked once), and why not."""
        if self._available is None:
            from autotune.measure.device_control import control_available

            self._available = control_available(environ=environ)
            if self._available[0]:
                self.record(environ)
        return self._available

    def record(self, environ: dict[str, str]) -> None:
        """Read the settings of the devices the probes may use, once; silent where NVML is not usable (nothing to
        restore then)."""
        if self._before is not None:
            return
        self._before = []
        self._with_api(lambda dc, api: self._before.extend(dc.read_settings(api, dc.visible_indices(api, environ))))

    def read_now(self, environ: dict[str, str]) -> list[dict]:
        """The settings (DeviceSettings.to_dict()) of the devices the probes may use, read now; [] where NVML is not
        usable here."""
        found: list = []
        self._with_api(lambda dc, api: found.extend(d.to_dict() for d in dc.read_settings(api, dc.visible_indices(api, environ))))
        return found

    def restore_after(self, candidate: Candidate, environ: dict[str, str]) -> list[str]:
        """Put back what a dead probe of `candidate` may have left on the devices its ranks trained on; one line per
        change, or why it failed."""
        if not candidate.hardware.cuda or not self._before:
            return []  # a profile without CUDA trains on CPU ranks: its probe touches no GPU
        lines: list[str] = []

        def restore(dc, api):
            used = set(dc.ranks_indices(api, candidate.gpus_per_node, environ))
            before = [device for device in self._before if device.index in used]
            # A probe of the defaults changes a device only where it found it below its default limit (trainer/power.py)
            if candidate.knobs.changes_device_settings or dc.off_default_words([d.to_dict() for d in before]):
                lines.extend(dc.restore(api, dc.records_before(before, candidate.knobs.sm_clock_mhz)))

        error = self._with_api(restore)
        return lines + ([f"could not restore the local GPU settings: {error}"] if error else [])

    @staticmethod
    def _with_api(action) -> str | None:
        from autotune.measure import device_control as dc

        try:
            api = dc.nvml_api()
            api.init()
        except Exception as exc:  # noqa: BLE001 - no NVML: nothing of ours can be capped here
            return f"NVML not usable ({getattr(exc, 'reason', exc)})"
        try:
            action(dc, api)
            return None
        except Exception as exc:  # noqa: BLE001 - reported in the trial's log; the study goes on
            return str(getattr(exc, "reason", exc))
        finally:
            try:
                api.shutdown()
            except Exception:  # noqa: BLE001
                pass
