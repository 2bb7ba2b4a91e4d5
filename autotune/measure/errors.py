"""Measurement errors, and the one place where vendor and OS errors are translated into them.

Availability probes never raise: they turn these errors into a `reason` string (see discover.py).
Errors escape only from what the user asked for explicitly (reading a source that was available).
"""

from __future__ import annotations

# Reasons a source is missing, as `autotune sensors` prints them. Free text may follow after ": ".
NOT_PRESENT = "not present"
PERMISSION_DENIED = "permission denied"
NO_DRIVER = "no driver"
UNREADABLE = "unreadable"
UNSUPPORTED = "not supported"


class MeasureError(Exception):
    """Base class of every error raised by autotune.measure."""


class SourceUnavailable(MeasureError):
    """A source cannot be read; `reason` is one of the reason constants above (plus detail)."""

    def __init__(self, reason: str, detail: str = ""):
        self.reason = reason if not detail else f"{reason}: {detail}"
        super().__init__(self.reason)


class DeviceControlError(MeasureError):
    """A power limit or clock could not be read, set or restored; `reason` says why and what to do."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


NEEDS_PRIVILEGE = (
    "changing GPU power limits or clocks needs root or CAP_SYS_ADMIN (NVML: no permission); run as root, give "
    "the container CAP_SYS_ADMIN, or keep power_limit = [1.0] and sm_clock_mhz = [\"max\"] in the space"
)


class WindowError(MeasureError):
    """A measurement window used out of order (end before begin, begin twice)."""


def translate_os_error(exc: OSError, path) -> SourceUnavailable:
    """A failed sysfs read -> SourceUnavailable with the reason a user can act on."""
    if isinstance(exc, FileNotFoundError):
        return SourceUnavailable(NOT_PRESENT, f"{path} does not exist")
    if isinstance(exc, PermissionError):
        return SourceUnavailable(PERMISSION_DENIED, f"{path} (run as root or relax its mode)")
    if isinstance(exc, IsADirectoryError):
        return SourceUnavailable(UNREADABLE, f"{path} is a directory, not a sensor file")
    return SourceUnavailable(UNREADABLE, f"{path}: {exc.strerror or exc}")


def translate_value_error(exc: ValueError, path) -> SourceUnavailable:
    return SourceUnavailable(UNREADABLE, f"{path} does not hold a number ({exc})")


def out_of_range(where, reading: str, problem: str) -> SourceUnavailable:
    """A number that no sensor of its kind can give (a negative power, an energy counter past the range it wraps at):
    no measurement, as a non-number is none (translate_value_error). Taken as one, a negative power was integrated into
    negative joules labelled `measured` (trial71 #8)."""
    return SourceUnavailable(UNREADABLE, f"{where} reads {reading}, {problem}: not a measurement")


def translate_nvml_error(exc: Exception) -> SourceUnavailable:
    """pynvml.NVMLError (or a failed import of pynvml) -> SourceUnavailable."""
    if isinstance(exc, ImportError):
        return SourceUnavailable(NO_DRIVER, "nvidia-ml-py (pynvml) is not installed")
    code = getattr(exc, "value", None)
    try:
        import pynvml
    except ImportError:  # pragma: no cover - a test double raised without pynvml around
        return SourceUnavailable(UNREADABLE, f"NVML: {exc}")
    by_code = {
        getattr(pynvml, "NVML_ERROR_LIBRARY_NOT_FOUND", -1): (NO_DRIVER, "libnvidia-ml.so not found"),
        getattr(pynvml, "NVML_ERROR_DRIVER_NOT_LOADED", -1): (NO_DRIVER, "NVIDIA driver not loaded"),
        getattr(pynvml, "NVML_ERROR_NO_PERMISSION", -1): (PERMISSION_DENIED, "NVML refused the query"),
        getattr(pynvml, "NVML_ERROR_NOT_SUPPORTED", -1): (UNSUPPORTED, "this GPU does not report it"),
        getattr(pynvml, "NVML_ERROR_FUNCTION_NOT_FOUND", -1): (UNSUPPORTED, "driver too old for this query"),
        getattr(pynvml, "NVML_ERROR_GPU_IS_LOST", -1): (UNREADABLE, "GPU fell off the bus"),
    }
    reason, detail = by_code.get(code, (UNREADABLE, f"NVML error {code}: {exc}"))
    return SourceUnavailable(reason, detail)


def translate_nvml_control_error(exc: Exception) -> DeviceControlError:
    """A failed NVML change (power limit, locked clocks) -> DeviceControlError; no permission names the fix."""
    try:
        import pynvml
    except ImportError:
        pynvml = None
    if pynvml is not None and getattr(exc, "value", None) == pynvml.NVML_ERROR_NO_PERMISSION:
        return DeviceControlError(NEEDS_PRIVILEGE)
    return DeviceControlError(f"NVML refused the change ({translate_nvml_error(exc).reason})")
