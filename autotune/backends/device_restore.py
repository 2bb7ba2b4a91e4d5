"""The local GPUs' power limits and clocks as they were before the study, put back after a probe died.

A probe restores its own settings on every way out it can run code in (trainer/power.py); a SIGKILL,
or a rank stuck in a collective past the kill grace, leaves a device capped. The launch backend
therefore records every local device's settings before the first probe that changes them, and
after any such probe that did not exit cleanly it compares and restores. Only this machine's devices
are reachable from the tuner: remote nodes rely on their probes (and a limit never survives a reboot).
"""

from __future__ import annotations

from autotune.candidate import Candidate


class LocalDeviceSettings:
    def __init__(self):
        self._available: tuple[bool, str] | None = None
        self._before: list | None = None  # DeviceSettings of every local device, read before any change

    def available(self) -> tuple[bool, str]:
        """Whether this process may change power limits and clocks here (asked once), and why not."""
        if self._available is None:
            from autotune.measure.device_control import control_available

            self._available = control_available()
            if self._available[0]:
                self.record()
        return self._available

    def record(self) -> None:
        """Read every local device's settings, once; silent where NVML is not usable (nothing to restore then)."""
        if self._before is not None:
            return
        self._before = []
        self._with_api(lambda dc, api: self._before.extend(dc.read_settings(api)))

    def restore_after(self, candidate: Candidate) -> list[str]:
        """Put back what a dead probe of `candidate` may have left; one line per change, or why it failed."""
        if not candidate.knobs.changes_device_settings or not self._before:
            return []
        lines: list[str] = []

        def restore(dc, api):
            lines.extend(dc.restore(api, dc.records_before(self._before, candidate.knobs.sm_clock_mhz)))

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
