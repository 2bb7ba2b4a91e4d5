"""The probe's power limit and SM clock cap: applied before the warm-up, restored on every way out.

Who applies: local rank 0 of each node, for the devices the node's ranks train on (the first
LOCAL_WORLD_SIZE of CUDA_VISIBLE_DEVICES, else of the node's GPUs: nvml.ranks_indices). One writer per node because on a GH200 the limit is the module's, and a
limit is a property of the node's hardware, not of a rank; the node leader already owns the node's
energy sensors, and if a rank dies its leader (or, failing that, the launch backend) still restores.

Ways out and who restores:
- normal end, exception, out-of-memory: the `with` block's exit (probe.main's finally);
- SIGTERM (the tuner's timeout kills the process group), SIGHUP (a probe run by hand over ssh that lost its
  session), SIGUSR1/SIGUSR2 (a job's `#SBATCH --signal=USR1@...` that reaches the steps): the stop signals every
  autotune command handles (autotune.errors.STOP_SIGNALS); a handler restores, then lets the signal take the
  process down as before. Only SIGTERM did, and a HUP or USR1 left the GPU capped and locked (trial75 #15).
  SIGINT raises KeyboardInterrupt, which leaves through the `with` block;
- SIGKILL, or a rank stuck in a collective past the grace: nothing in-process can run; the launch
  backend compares every local device with the values it recorded before the study and restores.

"power_limit 1.0" and "sm_clock_mhz max" mean the device's default limit and its unlocked clock, as the
reports give them. A run whose knobs ask for those reads its devices (no privilege needed; no NVML: nothing
to read or cap) and touches nothing where they are at their defaults. A device found below its default
limit (the site's cap, or what a probe that died left) is set to the default for the probe and the found
limit put back after, where NVML allows it; where it does not, the probe runs as found. A clock found held
by a user's setting is left as found: NVML cannot read a lock's range, so a reset could not be undone. Either
way result.json's `device_settings` records what each device held, and a note saying how it differed
(trial75 #16: a whole study was measured at 450 W and reported as untouched at 700 W).

Under `srun --gpu-freq` (AUTOTUNE_SM_CLOCK_SET_BY=srun, set by the launch backend) SLURM applies and resets
the clock: the probe then leaves the clock alone, records who set it, and reads the devices' application
clocks back (what slurmd sets), refusing the candidate where a GPU is above the cap.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager

from dataclasses import replace

from autotune.candidate import SM_CLOCK_UNTOUCHED, Candidate
from trainer.distributed import LaunchEnv

APPLIED_BY = "local rank 0 of each node, for the devices its ranks train on (the first of CUDA_VISIBLE_DEVICES there)"
SM_CLOCK_SET_BY_ENV = "AUTOTUNE_SM_CLOCK_SET_BY"  # autotune.backends.launchers sets it for srun --gpu-freq


def clock_set_by_launcher() -> str | None:
    return os.environ.get(SM_CLOCK_SET_BY_ENV) or None


class DeviceSettingsGuard:
    """Applies a candidate's limit and clock on this node; `restore()` is idempotent and signal-safe."""

    def __init__(self, candidate: Candidate, env: LaunchEnv):
        self.candidate, self.asked, self.env = candidate, candidate.knobs, env
        # What NVML must do here: the clock is not ours when the launcher set it.
        self.knobs = replace(self.asked, sm_clock_mhz=SM_CLOCK_UNTOUCHED) if clock_set_by_launcher() else self.asked
        self.api = None
        self.records: list[dict] = []
        self.error: str | None = None
        self.off_default: str | None = None  # how this node's devices differed from their defaults before the probe
        self.launcher_clock: str | None = None  # the clock srun --gpu-freq set, as read back (or why it was not)
        self._restored = False
        self._previous_handlers: dict = {}  # signal number -> the handler before ours (SIG_DFL for one outside Python)

    @property
    def active(self) -> bool:
        return self.knobs.changes_device_settings and self.env.is_node_leader

    def apply(self) -> None:
        if not self.env.is_node_leader:
            return
        if not self.candidate.hardware.cuda:  # CPU ranks: no GPU of this node is theirs to set, read or cap
            self.error = self._no_gpus()
            return
        if self.active:
            self._apply_knobs()
        else:
            self._apply_defaults()
        if self.error is None and clock_set_by_launcher() and self.asked.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
            self._check_launcher_clock()

    def _apply_knobs(self) -> None:
        from autotune.measure import device_control as dc
        from autotune.measure.errors import DeviceControlError, SourceUnavailable

        self._catch_stop_signals()
        try:
            self.api = dc.nvml_api()
            self.api.init()
            devices = dc.read_settings(self.api, dc.ranks_indices(self.api, self.env.local_world_size))
            if not devices:
                raise DeviceControlError("NVML sees none of this job's GPUs: nothing to set a power limit or clock on")
            self.off_default = dc.off_default_words([d.to_dict() for d in devices])
            self.records = dc.records_before(devices, self.knobs.sm_clock_mhz)  # a SIGTERM from here on restores
            self.records = dc.apply(self.api, devices, self.knobs.power_limit, self.knobs.sm_clock_mhz)
        except (DeviceControlError, SourceUnavailable) as exc:
            self.error = f"power limit / SM clock not applied on node {self.env.node_rank}: {exc.reason}"

    def _check_launcher_clock(self) -> None:
        """The clock `srun --gpu-freq` was asked for, read back from the devices' application clocks (no privilege):
        what slurmd does with it depends on the site (its GPU plugin), and a step where it had no effect recorded its
        full-clock run as one at the cap (trial75 #13). Above the cap the candidate is refused; unreadable, flagged."""
        from autotune.measure import device_control as dc

        cap_mhz = int(self.asked.sm_clock_mhz)
        try:
            api = dc.nvml_api()
            api.init()
        except Exception as exc:  # noqa: BLE001 - said in the result, as the flag it is
            self.launcher_clock = f"not read back: NVML is not usable here ({getattr(exc, 'reason', exc)})"
            return
        try:
            above = dc.applications_clocks_above(api, dc.ranks_indices(api, self.env.local_world_size), cap_mhz)
            self.launcher_clock = "read back: at or below the cap"
        except Exception as exc:  # noqa: BLE001 - an older driver or GPU without application clocks
            above, self.launcher_clock = [], f"not read back ({getattr(exc, 'reason', exc)})"
        finally:
            api.shutdown()
        if above:
            self.launcher_clock = f"read back: {'; '.join(above)}"
            self.error = (f"srun --gpu-freq={cap_mhz} did not cap the SM clock on node {self.env.node_rank}: "
                          f"{'; '.join(above)} (slurmd applies --gpu-freq through its GPU plugin, where the site enabled "
                          f"it); this probe would measure the full clock as {cap_mhz} MHz: ask the site about "
                          "--gpu-freq, or probe where NVML may set clocks (root) in a job without GPU gres")

    def _no_gpus(self) -> str | None:
        """Why a candidate that sets a limit or clock cannot run on a profile without GPUs (as the space's rules say
        it); None for one that sets neither. A `--hardware cpu` probe capped a GPU it did not train on, and its CPU
        run was recorded as one at the limit (trial75 #8)."""
        asked = []
        if self.asked.power_limit != 1.0:
            asked.append(f"a power limit ({self.asked.power_limit:g} of the default)")
        if self.asked.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
            asked.append(f"an SM clock cap ({self.asked.sm_clock_mhz} MHz)")
        if not asked:
            return None
        name = self.candidate.hardware.name
        return (f"{' and '.join(asked)} needs NVIDIA GPUs; hardware '{name}' has none, so this probe's ranks train on CPU "
                "and no GPU is set: use a GPU hardware profile, or power_limit 1.0 and sm_clock_mhz max")

    def _apply_defaults(self) -> None:
        """Knobs of the defaults: the devices read, and set to the default limit where found below it and NVML allows."""
        from autotune.measure import device_control as dc
        from autotune.measure.errors import DeviceControlError, SourceUnavailable

        try:
            api = dc.nvml_api()
            api.init()
        except Exception:  # noqa: BLE001 - no NVML (a CPU machine): nothing can be capped, nothing is read
            return
        try:
            devices = dc.read_settings(api, dc.ranks_indices(api, self.env.local_world_size))
            self.off_default = dc.off_default_words([d.to_dict() for d in devices])
        except (DeviceControlError, SourceUnavailable):
            self.off_default = None
        if self.off_default is None:
            api.shutdown()
            return
        self.api = api
        self._catch_stop_signals()
        self.records = dc.records_before(devices, SM_CLOCK_UNTOUCHED)
        done = []
        try:
            self.records = dc.apply(api, devices, 1.0, SM_CLOCK_UNTOUCHED)
            if any(r["power_limit_w"] != r["previous_power_limit_w"] for r in self.records):
                done.append("the default limit set for this probe, the found one put back after")
        except DeviceControlError as exc:
            done.append(f"run at the found limit ({exc.reason.split(';')[0]})")
        if any(r["sm_clocks_locked"] for r in self.records):
            done.append("a clock setting kept as found (NVML cannot read a lock's range to put it back)")
        self.off_default = f"{self.off_default}: {'; '.join(done)}"
        print(f"probe node {self.env.node_rank}: not at the defaults power_limit 1.0 and sm_clock_mhz max stand for: "
              f"{self.off_default}", file=sys.stderr, flush=True)

    def restore(self) -> None:
        if self._restored or (self.api is None and not self._previous_handlers):
            return
        self._restored = True
        try:
            if self.api is not None and self.records:
                from autotune.measure import device_control as dc

                for line in dc.restore(self.api, self.records):
                    print(f"probe node {self.env.node_rank}: {line}", file=sys.stderr, flush=True)
        except Exception as exc:  # noqa: BLE001 - a failed restore is reported; the launch backend retries it
            print(f"probe node {self.env.node_rank}: could not restore GPU settings: {exc}", file=sys.stderr, flush=True)
        finally:
            if self.api is not None:
                try:
                    self.api.shutdown()
                except Exception:  # noqa: BLE001
                    pass
            for signum, previous in self._previous_handlers.items():
                signal.signal(signum, previous)

    def _catch_stop_signals(self) -> None:
        from autotune.errors import stop_signals

        for signum in stop_signals():
            if signum != signal.SIGINT:  # KeyboardInterrupt: the `with` block's exit restores
                self._previous_handlers[signum] = signal.signal(signum, self._on_stop_signal) or signal.SIG_DFL

    def _on_stop_signal(self, signum, frame) -> None:
        self.restore()  # puts the previous handlers back
        os.kill(os.getpid(), signum)  # and dies of the signal as it would have

    def summary(self) -> dict | None:
        """This node's part of result.json's `device_settings`; None when the knobs touch nothing and the devices were
        at their defaults. `off_default`: how the devices differed from their defaults before the probe, and what was
        done about it."""
        if not self.asked.changes_device_settings and self.off_default is None:
            return None
        part = {"node_rank": self.env.node_rank, "devices": self.records, "error": self.error,
                "off_default": self.off_default}
        if self.launcher_clock is not None:
            part["sm_clock_set_by_launcher"] = self.launcher_clock
        return part


def device_settings_block(candidate: Candidate, node_parts: list[dict]) -> dict | None:
    """result.json's `device_settings`: what was asked, who applied it, each node's devices; for knobs of the
    defaults, only where a node found its devices off them."""
    nodes = [p for p in node_parts if p is not None]
    if not candidate.knobs.changes_device_settings and not nodes:
        return None
    block = {"power_limit": candidate.knobs.power_limit, "sm_clock_mhz": candidate.knobs.sm_clock_mhz,
             "applied_by": APPLIED_BY, "nodes": nodes}
    if clock_set_by_launcher() and candidate.knobs.sm_clock_mhz != SM_CLOCK_UNTOUCHED:
        block["sm_clock_set_by"] = f"{clock_set_by_launcher()} --gpu-freq={candidate.knobs.sm_clock_mhz}"
    return block


def agree_or_refuse(guard: DeviceSettingsGuard, env: LaunchEnv) -> None:
    """Every rank learns whether each node leader applied the settings; all refuse the candidate if one could not.

    A probe at the wrong limit would measure another candidate, so it is refused, never run.
    """
    if not guard.asked.changes_device_settings:
        return
    errors = [guard.error]
    if env.world_size > 1:
        import torch.distributed as dist

        errors = [None] * env.world_size
        dist.all_gather_object(errors, guard.error)
    reasons = sorted({e for e in errors if e})
    if reasons:
        from trainer.engine import UnsupportedCandidate

        raise UnsupportedCandidate("; ".join(reasons))


@contextmanager
def applied_device_settings(candidate: Candidate, env: LaunchEnv):
    guard = DeviceSettingsGuard(candidate, env)
    try:
        guard.apply()
        yield guard
    finally:
        guard.restore()
