"""Power limits and SM clocks of this node's NVIDIA GPUs: read them, apply a candidate's, restore them.

A candidate's `power_limit` is a fraction of each device's *default* limit; on Grace Hopper (GH200)
the limit is the module's (CPU + GPU + memory: `nvmlDeviceSetPowerManagementLimit_v2` with module
scope, what JUPITER's 680 W cap limits), elsewhere the GPU's. `sm_clock_mhz` caps the SM clock
through NVML locked clocks (range: lowest supported clock .. the cap, so the GPU may still clock down).

Reads need no privilege; changes need root or CAP_SYS_ADMIN, and NVML refuses them otherwise (the
refusal is translated once, in autotune.measure.errors). Limits outlive the process that set them:
whoever applies keeps the record `apply()` returns and hands it to `restore()`. NVML has no query
for a lock someone else set, so restoring a clock means resetting the locked clocks.

AUTOTUNE_NVML_API=module:factory replaces NVML with a double (tests only: a fake GPU whose state
other processes see).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import asdict, dataclass

from autotune.candidate import SM_CLOCK_UNTOUCHED
from autotune.measure import units
from autotune.measure.errors import DeviceControlError, SourceUnavailable
from autotune.measure import nvml
from autotune.measure.nvml import NvmlApi, is_grace_hopper

NVML_API_ENV = "AUTOTUNE_NVML_API"
LIMIT_TOLERANCE_W = 0.5  # NVML rounds limits to whole mW; a difference beyond this was set by someone
# Which devices a job may use, and which its ranks train on: read by the energy sources too, so they live in nvml.
visible_indices, ranks_indices = nvml.visible_indices, nvml.ranks_indices


@dataclass(frozen=True)
class DeviceSettings:
    """One device's power limit (W, in `scope`) and SM clock (MHz) as NVML reports them now."""

    index: int
    name: str
    scope: str  # "module" (Grace Hopper) or "gpu"
    power_limit_w: float
    default_power_limit_w: float
    min_power_limit_w: float
    max_power_limit_w: float
    sm_clock_mhz: int
    max_sm_clock_mhz: int
    min_supported_sm_clock_mhz: int
    # A user's clock setting holds the SM clock (NVML's event reasons: a lock, `srun --gpu-freq`); None: NVML did not say
    sm_clocks_locked: bool | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def off_default_words(devices: list[dict]) -> str | None:
    """How the devices (DeviceSettings.to_dict()s) differ from their defaults, in words, or None where none does:
    "power_limit 1.0" and "sm_clock_mhz max" mean the default limit and the unlocked clock, and a GPU found capped
    (by the site, or by a probe that died) was measured and reported as untouched at its default (trial75 #16)."""
    words = []
    for device in devices:
        held = []
        if abs(device["power_limit_w"] - device["default_power_limit_w"]) > LIMIT_TOLERANCE_W:
            held.append(f"at {device['power_limit_w']:g} W of its {device['default_power_limit_w']:g} W default limit")
        if device.get("sm_clocks_locked"):
            held.append("its SM clock held by a user setting (locked clocks)")
        if held:
            words.append(f"GPU {device['index']} {', '.join(held)}")
    return "; ".join(words) or None


def defaults_off(devices: list[dict], limit_w: float, scope: str) -> dict[float, list[int]]:
    """The default limits (W) of the devices (DeviceSettings.to_dict()s) of `scope` that differ from `limit_w`, each
    with its devices' indices; {} where none does. LIMIT_TOLERANCE_W is enough: a default limit is the board's
    firmware figure, whole watts that never drift, so a difference beyond NVML's mW rounding is another board or a
    site's setting. A device of the other scope is not compared: a Grace Hopper module's limit (CPU + GPU + memory)
    and a GPU's are different figures (nor is a device whose scope is not said)."""
    off: dict[float, list[int]] = {}
    for device in devices:
        if device.get("scope") == scope and abs(device["default_power_limit_w"] - limit_w) > LIMIT_TOLERANCE_W:
            off.setdefault(device["default_power_limit_w"], []).append(device["index"])
    return off


class RestoreFailed(DeviceControlError):
    """restore() could not put every device back: some GPU may still hold a change, so its record must be kept."""


def nvml_api():
    """The NVML adapter, or the double AUTOTUNE_NVML_API names."""
    spec = os.environ.get(NVML_API_ENV)
    if not spec:
        return NvmlApi()
    module, _, factory = spec.partition(":")
    target = importlib.import_module(module)
    for part in factory.split("."):
        target = getattr(target, part)
    return target()


def read_settings(api, indices: list[int] | None = None) -> list[DeviceSettings]:
    """Every listed (default: every) device's settings; api must be initialised."""
    indices = range(api.device_count()) if indices is None else indices
    settings = []
    try:
        for index in indices:
            name = api.device_name(index)
            module = is_grace_hopper(name)
            limits = api.power_limits_mw(index, module=module)
            clocks = api.sm_clocks_mhz(index)
            settings.append(DeviceSettings(
                index=index, name=name, scope="module" if module else "gpu",
                power_limit_w=units.mw_to_w(limits["current"]), default_power_limit_w=units.mw_to_w(limits["default"]),
                min_power_limit_w=units.mw_to_w(limits["min"]), max_power_limit_w=units.mw_to_w(limits["max"]),
                sm_clock_mhz=clocks["current"], max_sm_clock_mhz=clocks["max"],
                min_supported_sm_clock_mhz=min(clocks["supported"], default=0),
                sm_clocks_locked=_clocks_locked(api, index),
            ))
    except SourceUnavailable as exc:
        raise DeviceControlError(f"cannot read GPU power limits or clocks ({exc.reason})") from None
    return settings


def _clocks_locked(api, index: int) -> bool | None:
    try:
        return api.sm_clocks_user_defined(index)
    except SourceUnavailable:  # an older driver or GPU without event reasons: not said
        return None


SM_CLOCK_STEP_MHZ = 15  # NVIDIA's supported SM clocks lie 15 MHz apart; SLURM rounds --gpu-freq to the nearest one


def applications_clocks_above(api, indices: list[int], cap_mhz: int) -> list[str]:
    """For a clock a launcher set (`srun --gpu-freq`): each listed device whose application SM clock is above the cap
    (beyond SLURM's rounding), in words; [] where every one is at or below it. Raises SourceUnavailable where NVML
    cannot read them."""
    above = []
    for index in indices:
        clock_mhz = api.applications_sm_clock_mhz(index)
        if clock_mhz > cap_mhz + SM_CLOCK_STEP_MHZ:
            above.append(f"GPU {index}'s application SM clock is {clock_mhz} MHz")
    return above


def target_limit_w(device: DeviceSettings, fraction: float) -> float:
    limit_w = fraction * device.default_power_limit_w
    if not device.min_power_limit_w <= limit_w <= device.max_power_limit_w:
        raise DeviceControlError(
            f"power limit {fraction:g} x {device.default_power_limit_w:g} W = {limit_w:g} W is outside GPU "
            f"{device.index}'s allowed {device.min_power_limit_w:g}-{device.max_power_limit_w:g} W ({device.scope} scope)"
        )
    return limit_w


def records_before(devices: list[DeviceSettings], sm_clock_mhz: int | str) -> list[dict]:
    """What restore() needs, written down *before* anything changes (a process killed mid-apply is undone too)."""
    clock = None if sm_clock_mhz == SM_CLOCK_UNTOUCHED else int(sm_clock_mhz)
    # `sm_clocks_locked`: a user's clock setting held the clock before (kept by a probe of "max": NVML cannot read
    # its range, so a reset could not be undone); `power_limit_w`: what the device holds, read back after apply.
    return [{"index": d.index, "name": d.name, "scope": d.scope, "previous_power_limit_w": d.power_limit_w,
             "power_limit_w": d.power_limit_w, "default_power_limit_w": d.default_power_limit_w,
             "sm_clock_cap_mhz": clock, "sm_clocks_locked": d.sm_clocks_locked} for d in devices]


def apply(api, devices: list[DeviceSettings], power_limit: float, sm_clock_mhz: int | str) -> list[dict]:
    """Set the limit and clock cap on each device; returns the record restore() needs, with the limit each device
    holds afterwards as NVML reads it back (what a result records is what the GPU held).

    A fraction is of the default, 1.0 included: a device found below its default is set to it (restore() puts the
    found limit back), so that "power limit 1.0" is the default limit the reports give it as. A device already at
    the target is not written. All or nothing: when one device refuses, every device is restored before the error
    leaves.
    """
    for device in devices:  # refuse what is out of range before NVML changes anything
        target_limit_w(device, power_limit)
        if sm_clock_mhz != SM_CLOCK_UNTOUCHED and not (
                device.min_supported_sm_clock_mhz <= int(sm_clock_mhz) <= device.max_sm_clock_mhz):
            raise DeviceControlError(f"SM clock {sm_clock_mhz} MHz is outside GPU {device.index}'s "
                                     f"{device.min_supported_sm_clock_mhz}-{device.max_sm_clock_mhz} MHz")
    records = records_before(devices, sm_clock_mhz)
    try:
        for device, record in zip(devices, records):
            limit_w, module = target_limit_w(device, power_limit), device.scope == "module"
            if abs(device.power_limit_w - limit_w) > LIMIT_TOLERANCE_W:
                api.set_power_limit_mw(device.index, round(limit_w * 1e3), module=module)
                record["power_limit_w"] = units.mw_to_w(api.power_limits_mw(device.index, module=module)["current"])
            if record["sm_clock_cap_mhz"] is not None:
                api.lock_sm_clocks_mhz(device.index, device.min_supported_sm_clock_mhz, record["sm_clock_cap_mhz"])
    except BaseException:
        restore(api, records)
        raise
    return records


def restore(api, records: list[dict]) -> list[str]:
    """Put each recorded device back; returns one line per change made. Tries every device before raising."""
    done, failures = [], []
    for record in records:
        index, module = record["index"], record["scope"] == "module"
        try:
            current_w = units.mw_to_w(api.power_limits_mw(index, module=module)["current"])
            previous_w = record["previous_power_limit_w"]
            if abs(current_w - previous_w) > LIMIT_TOLERANCE_W:  # anything else is ours to undo
                api.set_power_limit_mw(index, round(previous_w * 1e3), module=module)
                done.append(f"GPU {index}: power limit {current_w:g} W -> {previous_w:g} W restored")
            if record.get("sm_clock_cap_mhz") is not None:
                api.reset_sm_clocks(index)
                done.append(f"GPU {index}: locked SM clocks reset")
        except (DeviceControlError, SourceUnavailable) as exc:
            failures.append(f"GPU {index}: {getattr(exc, 'reason', exc)}")
    if failures:
        raise RestoreFailed("could not restore " + "; ".join(failures))
    return done


def control_available(api=None, environ=None) -> tuple[bool, str]:
    """Whether this process may change the power limits and clocks of the GPUs it may use; the reason when not.

    Asks NVML to set the first device CUDA_VISIBLE_DEVICES names (in `environ`, default this process's) to its
    current limit: the same privilege check, no change. Device 0 was asked whatever CUDA_VISIBLE_DEVICES said, a
    write to another job's GPU (trial75 #11). Never raises.
    """
    try:
        api = api or nvml_api()
        api.init()
    except Exception as exc:  # noqa: BLE001 - an availability probe answers, it does not fail
        return False, f"NVML is not usable here ({getattr(exc, 'reason', exc)})"
    try:
        if api.device_count() == 0:
            return False, "NVML sees no GPU on this machine"
        visible = visible_indices(api, environ)
        if not visible:
            return False, "NVML sees none of the GPUs CUDA_VISIBLE_DEVICES names"
        (device,) = read_settings(api, visible[:1])
        api.set_power_limit_mw(device.index, round(device.power_limit_w * 1e3), module=device.scope == "module")
        return True, ""
    except (DeviceControlError, SourceUnavailable) as exc:
        return False, exc.reason
    except Exception as exc:  # noqa: BLE001
        return False, f"NVML failed: {exc}"
    finally:
        try:
            api.shutdown()
        except Exception:  # noqa: BLE001
            pass
