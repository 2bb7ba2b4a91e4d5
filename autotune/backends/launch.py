"""The `launch` backend: real probe runs of the trainer, started by torchrun, deepspeed or srun."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shlex
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from autotune.atomic_write import write_text_atomic
from autotune.backends.base import Backend, ProbeHeldBack, ProbeResult
from autotune.backends.device_restore import LocalDeviceSettings
from autotune.backends.device_turns import POLL_S, lock_folder, probe_devices, taking_turns
from autotune.backends.first_node import NodeAnswer, ask_first_node, probes_first_node
from autotune.backends.launchers import (
    LaunchPlan,
    auto_launches_srun_only,
    build_plan,
    check_launcher_settings,
    detect_launch_target,
    resolve_launcher,
    slurm_gpus_per_node,
    unreachable_reason,
)
from autotune.backends.probe_outcome import (
    TEARDOWN_LINES,
    ended_at_repeat,
    log_tail,
    measured_figures,
    not_ok_result,
    ok_result,
    rank_signal,
    read_result,
    signal_said,
    stopped_from_outside,
    unreadable_result,
)
from autotune.backends.probe_options import DEFAULT_LAUNCHER, check_probe_options, probe_default
from autotune.backends.probe_process import TIMEOUT_ON_BUILD_LOCK, ProbeProcess, outlived_words
from autotune.backends.repeat_takeover import (
    WALL_LOWER_BOUND,
    Expected,
    RunRecord,
    TakenOver,
    kept_line,
    result_name,
    take_over,
    taken_over_line,
    taken_over_words,
    trial_folder,
)
from autotune.backends.result_check import result_fault
from autotune.backends.trial_dirs import check_trials_folder, probe_files_error
from autotune.build_locks import build_locks, install_extensions_dir
from autotune.candidate import Candidate
from autotune.counted import counted
from autotune.ds_config import deepspeed_config
from autotune.errors import ConfigError, signal_words
from autotune.space import nodes_flag

__all__ = ["LaunchBackend", "ProbeInterrupted", "ProbeStoppedOutside", "detect_launch_target"]

# Room for a probe to report a stuck collective itself (which rank, which op) before we kill it.
_COLLECTIVE_SHARE_OF_TIMEOUT = 0.8


class ProbeInterrupted(KeyboardInterrupt):
    """The study was interrupted while a probe ran; its processes are gone. A KeyboardInterrupt, so
    the study loop treats it as Ctrl-C (the trial is marked interrupted and retried on resume)."""


class ProbeStoppedOutside(ProbeInterrupted):
    """The probe died of a stop signal from outside the tuner (SLURM signals every process of a job on scancel,
    preemption or a time limit, and the probe may get it first): no evidence against its candidate, so the trial is
    interrupted, retried on resume, and the study stops as on that signal to the tuner (its exit status), rather
    than start the next probe into the same stop (trial 51 #1)."""

    def __init__(self, signum: int, evidence: str):
        name = signal.Signals(signum).name
        self.reason = f"the probe was stopped by {name} from outside the tuner (a SLURM stop?): {evidence}"
        self.status = 128 + signum  # as the tuner's own stop by that signal exits (errors.STOP_SIGNALS)
        super().__init__(self.reason)


class LaunchBackend(Backend):
    """Runs each candidate as a real probe: `trainer.probe` under a launcher, one result.json back.

    Every trial gets RUN_DIR/trials/NNNN/ with candidate.json, ds_config.json (the exact DeepSpeed
    config the probe trains with: it is passed as --deepspeed-config), log.txt (the launcher's stdout
    and stderr), result.json (result-1.json ... result-N.json with repeats=N) and probe_runs.json (the
    probe settings, and each repeat's wall time). Probe trouble is a result, never an exception:
    status ok | oom | failed | timeout (docs/launch.md).

    Resumes: a trial that probes again the candidate of trials a stopped run left unfinished (the study
    says which through `resumes()`, which decides what is taken over and says it in a few words for the
    console) takes over their complete repeats and runs only the missing ones (repeat_takeover.py). A run
    stopped during a repeat says what of its trial is kept (`kept_after_interruption()`).

    Interruptions: the launcher runs in a session of its own, so a Ctrl-C at the terminal does not
    reach the ranks. Two ways to stop them, both ending in SIGTERM to the probe's process group and
    SIGKILL after `kill_grace_s`:
    - a KeyboardInterrupt raised in `evaluate()` (Python's default SIGINT handler) kills the group
      and is re-raised;
    - `abort()`, callable from a signal handler (e.g. for SIGTERM) or another thread, kills the
      running group; `evaluate()` then raises `ProbeInterrupted` (a KeyboardInterrupt). Abort is
      final: every later `evaluate()` raises it too, so no new probe starts during shutdown.
    """

    name = "launch"
    source = "measured"

    def __init__(
        self,
        *,
        run_dir: Path,
        launcher: str = DEFAULT_LAUNCHER,
        probe_timeout_s: float = probe_default("probe_timeout_s"),
        warmup_steps: int = probe_default("warmup_steps"),
        probe_steps: int = probe_default("probe_steps"),
        probe_seconds: float = probe_default("probe_seconds"),
        repeats: int = probe_default("repeats"),
        hostfile: Path | None = None,
        allow_estimated_energy: bool = True,
        env: dict[str, str] | None = None,
        python: str = sys.executable,
        kill_grace_s: float = 10.0,
        collective_timeout_s: float | None = None,
    ):
        checked = check_probe_options(probe_timeout_s=probe_timeout_s, warmup_steps=warmup_steps,
                                      probe_steps=probe_steps, probe_seconds=probe_seconds, repeats=repeats)
        probe_timeout_s, warmup_steps, probe_steps, probe_seconds, repeats = checked.values()
        self.run_dir = Path(run_dir)
        # Absolute: probes start in their trial directory, where a relative --hostfile names nothing and
        # DeepSpeed's runner then trains "with local resources only" (one warning in the log).
        self.hostfile = Path(hostfile).resolve() if hostfile is not None else None
        self.env = {k: str(v) for k, v in (env or {}).items()}
        check_launcher_settings(launcher, self.hostfile, self._environ())
        lock_folder(self._environ())  # where probes take turns on devices: a bad AUTOTUNE_PROBE_LOCKS fails here
        check_trials_folder(self.run_dir)  # where they write: an unwritable trials/ fails here, not at a probe
        self.launcher = launcher
        self.probe_timeout_s = probe_timeout_s
        self.warmup_steps, self.probe_steps, self.probe_seconds = warmup_steps, probe_steps, probe_seconds
        self.repeats = repeats
        # Not acted on here: results always carry their energy provenance, and the study decides
        # whether an estimated figure may serve as an objective. Kept for describe().
        self.allow_estimated_energy = allow_estimated_energy
        self.energy_ranked = True  # False under --objectives time (the CLI sets it): said by describe()
        self.python = python
        self.kill_grace_s = kill_grace_s
        self.reason = ""  # why this backend was chosen; the CLI sets it (shown by describe())
        self.collective_timeout_s = collective_timeout_s or probe_timeout_s * _COLLECTIVE_SHARE_OF_TIMEOUT
        self._current: ProbeProcess | None = None  # plain attribute: abort() may run in a signal handler
        self._aborted = False
        self._devices = LocalDeviceSettings()  # power limits and clocks before the study, for dead probes
        self._first_node: NodeAnswer | None | bool = False  # False: not asked yet (first_node())
        # trial number -> (its candidate, the repeats it takes over, why other results were not): resumes()
        self._resumed: dict[int, tuple[Candidate, dict[int, TakenOver], list[str]]] = {}
        self._stopped: tuple[int, int, Candidate] | None = None  # (trial, repeat, candidate) a stop interrupted

    def _environ(self) -> dict[str, str]:
        """What a probe starts with: this process's environment and the backend's `env` on top."""
        return {**os.environ, **self.env}

    def trial_dir(self, trial_number: int) -> Path:
        return trial_folder(self.run_dir / "trials", trial_number)

    def first_node(self) -> NodeAnswer | None:
        """What the probes' first node has, asked there once, where it is not this machine; None where it is."""
        if self._first_node is False:
            environ = self._environ()
            where = probes_first_node(self.launcher, self.hostfile, environ)
            self._first_node = None if where is None else ask_first_node(*where, python=self.python, env=self.env,
                                                                         environ=environ)
        return self._first_node

    def device_settings_available(self) -> tuple[bool, str]:
        """Whether probes may set power limits and clocks, and why not: checked once, on this machine (which
        also records every local device's settings before the study) or on the probes' first node."""
        node = self.first_node()
        if node is not None:
            return node.settable, "" if node.settable else f"{node.settable_reason} on {node.where}"
        return self._devices.available(self._environ())

    def _probe_devices(self) -> tuple[list[dict], str]:
        """The probes' GPUs' settings (DeviceSettings.to_dict()s: on this machine, read now, or as the first node
        answered), and where they are in words ("" here)."""
        node = self.first_node()
        if node is not None:
            return list(node.devices), f" on {node.where}"
        return self._devices.read_now(self._environ()), ""

    def devices_off_default(self) -> str | None:
        """The probes' GPUs found off their defaults before the study (on this machine, or as the first node answered):
        what each probe does about it (trainer/power.py), in one line."""
        from autotune.measure.device_control import off_default_words

        devices, where = self._probe_devices()
        found = off_default_words(devices)
        if found is None:
            return None
        settable, reason = self.device_settings_available()
        limit = ("each probe of power_limit 1.0 sets the default limit and puts the found one back after" if settable else
                 f"this user cannot change them ({reason.split(';')[0]}), so the probes run at what they hold")
        return (f"the GPUs are not at the defaults power_limit 1.0 and sm_clock_mhz max stand for{where} ({found}): {limit}; "
                "a clock setting is kept as found (NVML cannot read a lock's range to put it back); each result records "
                "what its GPUs held; to measure at the defaults, reset them as root first (nvidia-smi -i N -pl DEFAULT_W, "
                "nvidia-smi -i N -rgc)")

    def default_limit_off_profile(self, hardware) -> str | None:
        """One line, said before any probe, where the probes' GPUs' default power limit (NVML's, which each probe takes
        power_limit as a fraction of) is not the profile's [power] module_cap_w, which the simulator, the guided
        sampler's predictions and the cost-weighted pick take it of (an H100 PCIe at 350 W under h100-sxm's 700 W:
        trial75 #2, #12); None where they agree. A GPU's default is compared with a GPU profile's cap, a GH200
        module's with a module-scope profile's, never one with the other (device_control.defaults_off)."""
        from autotune.candidate import limited_device
        from autotune.measure.device_control import defaults_off

        devices, where = self._probe_devices()
        cap_w = hardware.power.module_cap_w
        off = defaults_off(devices, cap_w, "module" if hardware.module_scope_energy else "gpu")
        if not off:
            return None
        device = limited_device(hardware)
        every_one = len(off) == 1 and len(next(iter(off.values()))) == len(devices)  # which ones, only where not all
        defaults = (f"{next(iter(off)):g} W" if every_one else
                    " and ".join(f"{default_w:g} W on {device} {', '.join(map(str, indices))}"
                                 for default_w, indices in sorted(off.items())))
        copy = f"a copy of {hardware.source}" if hardware.source else f"a copy of the {hardware.name} profile"
        return (f"the probes' GPUs{where} have a default power limit of {defaults} (NVML), not the {hardware.name} "
                f"profile's [power] module_cap_w = {cap_w:g} W: each probe sets power_limit as a fraction of its GPUs' "
                f"default, while the simulator, the guided sampler's predictions and the cost-weighted pick's max power "
                f"per {device} take it of {cap_w:g} W, so their watts are not the probes'; pass a hardware profile of "
                f"these GPUs (--hardware FILE: {copy} with [power] module_cap_w = {min(off):g}, docs/hardware.md)")

    def _probes_here(self) -> bool:
        """Whether the probes' first rank runs on this machine (names compared, nothing asked): only then can
        the tuner put back what a dead probe left on the GPUs."""
        return probes_first_node(self.launcher, self.hostfile, self._environ()) is None

    def sets_clock_itself(self) -> bool:
        """srun sets the clock itself (--gpu-freq, no privilege): true where every probe starts with srun, in a
        job with GPU gres (SLURM sets the clock of a step's gres GPUs only; launchers.build_plan)."""
        environ = self._environ()
        srun_only = self.launcher == "srun" or (self.launcher == "auto" and auto_launches_srun_only(environ))
        return srun_only and bool(slurm_gpus_per_node(environ))

    def abort(self) -> None:
        """Kill the running probe's process group (if any); see the class docstring."""
        self._aborted = True
        process = self._current
        if process is not None:
            process.kill_group(self.kill_grace_s)

    def check_candidates(self, checks: list) -> None:
        """Refuses, in one line, before the study opens, a study with valid candidates the launcher cannot
        start (more nodes, or GPUs per node, than the hostfile, the SLURM allocation or this machine
        holds): each would be a failed probe spent from the budget, and three such first stop the study
        as a set-up fault. Whether a candidate can start depends on its node count alone (the GPUs per
        node are the study's), so one candidate per node count is asked."""
        environ = self._environ()
        per_count = {}
        for check in checks:
            if check.valid:
                per_count.setdefault(check.candidate.knobs.nodes, check.candidate)
        reasons = {nodes: unreachable_reason(resolve_launcher(self.launcher, candidate, self.hostfile, environ),
                                             candidate, self.hostfile, environ)
                   for nodes, candidate in sorted(per_count.items())}
        unreachable = [nodes for nodes, reason in reasons.items() if reason is not None]
        if not unreachable:
            return
        # Fewer nodes are reachable wherever more are: what can start is the node counts up to some K.
        reachable = [nodes for nodes, reason in reasons.items() if reason is None]
        instead = f"; or study what can start (--nodes {nodes_flag(reachable)})" if reachable else ""
        raise ConfigError(f"candidates on {counted(', '.join(map(str, unreachable)), 'node')} cannot start here: "
                          f"{reasons[unreachable[0]]}{instead}")

    def resumes(self, trial_number: int, earlier_trials: list[int], candidate: Candidate) -> str:
        """Trial `trial_number` probes again `candidate` of `earlier_trials` (the nearest first), which a stopped
        run left unfinished: decides here which of the repeats they completed its evaluate() takes over, so
        that the start line the study prints before it says what evaluate() then does."""
        earlier = [(number, self.trial_dir(number).resolve()) for number in earlier_trials]
        taken, refused = take_over(self._expected(candidate), earlier)
        self._resumed[trial_number] = (candidate, taken, refused)
        return taken_over_words(taken, self.repeats)

    def kept_after_interruption(self) -> str:
        """After a stop during a repeat (--repeats 2 and more): the finished repeats of the stopped trial
        that a resume takes over, found as the resume will find them (take_over on its directory)."""
        if self._stopped is None or self.repeats == 1:
            return ""
        trial, repeat, candidate = self._stopped
        kept, _ = take_over(self._expected(candidate), [(trial, self.trial_dir(trial).resolve())])
        return kept_line(trial, repeat, kept, self.repeats)

    def evaluate(self, candidate: Candidate, trial_number: int = 0) -> ProbeResult:
        self._raise_if_aborted()
        self._stopped = None
        trial_dir = self.trial_dir(trial_number).resolve()
        log_path = trial_dir / "log.txt"
        resumed = self._resumed.pop(trial_number, None)
        assert resumed is None or resumed[0] == candidate, "resumes() was told another candidate than evaluate()"
        record = self._prepare(trial_dir, candidate, trial_number)
        taken = self._take_over(trial_dir, *resumed[1:], record) if resumed else {}
        environ = self._environ()
        launcher = resolve_launcher(self.launcher, candidate, self.hostfile, environ)
        launches = len(taken) < self.repeats  # else nothing is launched
        if launches:
            reason = unreachable_reason(launcher, candidate, self.hostfile, environ)
            if reason is not None:
                _append_log(log_path, f"== autotune: not launched: {reason}\n")
                return not_ok_result("failed", reason, trial_dir, log_path, launcher=launcher)
        # Another worker's probe on the same devices ends first (device_turns.py): its figures and this one's
        # would each hold the other's contention and joules.
        turns = (taking_turns(probe_devices(launcher, environ, self.hostfile), environ, stopped=self._raise_if_aborted,
                              on_wait=lambda line: _say_waiting(trial_number, line, log_path), run_dir=self.run_dir,
                              trial_number=trial_number)
                 if launches else contextlib.nullcontext(0.0))
        with turns as waited_s:
            if waited_s >= POLL_S:
                self._start_after_wait(trial_number, waited_s, log_path)
            # After the wait: the other probe's power limit is not what this one must restore.
            if launches and candidate.knobs.changes_device_settings and self._probes_here():
                self._devices.record(environ)
            return self._run_repeats(candidate, trial_number, trial_dir, launcher, record, taken)

    def _start_after_wait(self, trial_number: int, waited_s: float, log_path: Path) -> None:
        """After a wait for another probe on the same devices: the time limit asked again (the loop asked it before
        the wait, up to that probe's length ago), a ProbeHeldBack where it no longer holds this probe, which a SLURM
        job's end would kill half-way; else the line that says when the probe starts (the start line said when the
        trial began waiting)."""
        why = self.probe_held_back()
        if why is not None:
            _say_waiting(trial_number, f"not probed: {why}, after the wait for the other probe on the same devices; "
                         "its candidate is probed when the study resumes", log_path)
            raise ProbeHeldBack(why)
        _say_waiting(trial_number, f"waited {waited_s:.0f} s for the other probe on the same devices; "
                     f"probing from {time.strftime('%H:%M:%S')}", log_path)

    def _run_repeats(self, candidate: Candidate, trial_number: int, trial_dir: Path, launcher: str, record: RunRecord,
                     taken: dict[int, TakenOver]) -> ProbeResult:
        log_path = trial_dir / "log.txt"
        repeats, walls_s, results = [], [], []
        cost = functools.partial(_with_probe_cost, walls_s=walls_s, repeats=repeats, taken=taken)
        for repeat in range(1, self.repeats + 1):
            out = trial_dir / result_name(repeat, self.repeats)
            if repeat in taken:  # checked when taken over: its figures are there
                walls_s.append(taken[repeat].wall_s)
                repeats.append(measured_figures(taken[repeat].result, candidate, out))
                results.append(taken[repeat].result)
                continue
            try:
                outcome = self._run_repeat(launcher, candidate, trial_dir, out, repeat, record, walls_s)
            except KeyboardInterrupt:
                self._stopped = (trial_number, repeat, candidate)  # kept_after_interruption() says what it keeps
                raise
            if isinstance(outcome, ProbeResult):  # a repeat that is not ok decides the trial
                return cost(ended_at_repeat(outcome, repeat, self.repeats, repeats))
            fault = result_fault(outcome, candidate)
            if fault is not None:
                # Rank 0 wrote it: the candidate's failure, as one the trainer names (failed_rank), never probed again
                # (study/retries.py `setup_failure`); no figure of it ranks anything.
                error = f"refused the probe's result: {out} {fault}"
                _append_log(log_path, f"== autotune: {error}\n")
                refused = not_ok_result("failed", error, trial_dir, log_path, launcher=launcher, failed_rank=0,
                                        setup_failure=False)
                return cost(ended_at_repeat(refused, repeat, self.repeats, repeats))
            try:
                repeats.append(measured_figures(outcome, candidate, out))
                results.append(outcome)
            except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
                error = (f"result.json from the probe lacks a figure the backend needs ({exc!r}): "
                         "are the tuner and the trainer on the nodes the same version?")
                return cost(not_ok_result("failed", error, trial_dir, log_path, launcher=launcher))
        return cost(ok_result(repeats, trial_dir, launcher=launcher, **measured_default_limit(results)))

    def estimated_energy_only(self) -> str | None:
        """No sensor on the node of the probes' first rank: they report energy estimated from the hardware profile."""
        from autotune.measure import discover

        node = self.first_node()
        if node is not None:
            return None if node.energy_sources else f"no energy sensor on {node.where}, `autotune sensors` there says why"
        found = discover()
        try:
            return None if found.available else "no energy sensor on this machine (see `autotune sensors`)"
        finally:
            found.close()

    def probe_settings(self) -> dict:
        return {"--warmup-steps": self.warmup_steps, "--probe-steps": self.probe_steps,
                "--probe-seconds": self.probe_seconds, "--repeats": self.repeats}

    def timeout_settings(self) -> dict:
        return {**self.probe_settings(), "--probe-timeout": self.probe_timeout_s}

    def run_settings(self) -> dict:
        # A study whose probes all timed out at 3 s read as one run at the default 900 (trial 50 #10).
        return {"--probe-timeout": self.probe_timeout_s, "--allow-estimated-energy": self.allow_estimated_energy}

    def describe(self) -> str:
        if not self.energy_ranked:
            energy = "energy reported, not an objective"
        else:
            energy = "estimated energy accepted" if self.allow_estimated_energy else "measured energy only"
        node = self._first_node or None  # only what was asked already: describing asks nothing
        if node is not None:
            energy += f"; energy sensors as on {node.where}: {', '.join(node.energy_sources) or 'none'}"
        why = f": {self.reason}" if self.reason else ""
        return (f"launch (real probe runs via {self.launcher}, {self.warmup_steps}+{self.probe_steps} steps, "
                f"x{self.repeats}, timeout {self.probe_timeout_s:g} s; {energy}){why}")

    # --- steps of evaluate -----------------------------------------------------------------------

    def _prepare(self, trial_dir: Path, candidate: Candidate, trial_number: int) -> RunRecord:
        """Fresh inputs; no result or log of an earlier attempt at this trial number may survive. Returns the trial's
        record. A folder it cannot write is one line (trial_dirs.py), not a traceback (trial 69 #8)."""
        try:
            trial_dir.mkdir(parents=True, exist_ok=True)
            for stale in trial_dir.glob("result*.json"):
                stale.unlink()
            (trial_dir / "log.txt").write_text("", encoding="utf-8")
            (trial_dir / "candidate.json").write_text(json.dumps(candidate.to_file(), indent=2) + "\n", encoding="utf-8")
            (trial_dir / "ds_config.json").write_text(json.dumps(deepspeed_config(candidate), indent=2) + "\n",
                                                      encoding="utf-8")
            return RunRecord(trial_dir, self.probe_settings())
        except OSError as exc:
            raise probe_files_error(trial_dir, trial_number, exc) from None

    def _expected(self, candidate: Candidate) -> Expected:
        return Expected(candidate, deepspeed_config(candidate), self.probe_settings())

    def _take_over(self, trial_dir: Path, taken: dict[int, TakenOver], refused: list[str],
                   record: RunRecord) -> dict[int, TakenOver]:
        """The repeats resumes() took over from the trials this one probes again, copied into this trial (the
        originals stay), each noted in its record with the wall time it cost; one log line says which and
        from where, and one per result file found but not taken says why."""
        for repeat, item in sorted(taken.items()):
            write_text_atomic(trial_dir / result_name(repeat, self.repeats), item.text)
            record.taken_over(item)
        lines = refused + ([taken_over_line(taken, self.repeats)] if taken else [])
        _append_log(trial_dir / "log.txt", "".join(f"== autotune: {line}\n" for line in lines))
        return taken

    def _run_repeat(self, launcher: str, candidate: Candidate, trial_dir: Path, out: Path, repeat: int,
                    record: RunRecord, walls_s: list[float]) -> dict | ProbeResult:
        """One repeat's probe; its wall time goes to `walls_s` and to the trial's record, an interrupted one's
        too (a resume may take over a result it wrote before the interruption)."""
        record.started(repeat)
        started = time.monotonic()
        try:
            return self._run_once(launcher, candidate, trial_dir, out, f"{repeat}/{self.repeats}")
        finally:
            walls_s.append(time.monotonic() - started)
            with contextlib.suppress(OSError):  # bookkeeping: a repeat without it is not taken over, nothing worse
                record.ended(repeat, walls_s[-1])

    def _probe_args(self, trial_dir: Path, out: Path) -> list[str]:
        # Absolute paths: remote ranks (pdsh, srun) may start in another directory of the shared file system.
        return [
            "--candidate", str(trial_dir / "candidate.json"),
            "--deepspeed-config", str(trial_dir / "ds_config.json"),
            "--out", str(out),
            "--warmup-steps", str(self.warmup_steps),
            "--steps", str(self.probe_steps),
            "--probe-seconds", str(self.probe_seconds),
            "--collective-timeout-s", str(self.collective_timeout_s),
            *self._threads_flag(),
        ]

    def _threads_flag(self) -> list[str]:
        """The OMP_NUM_THREADS a user exported, for every rank (pdsh would not forward it); else the probe's
        own rule, the same under every launcher (trainer/threads.py)."""
        threads = self._environ().get("OMP_NUM_THREADS", "")
        return ["--threads-per-rank", threads] if threads.isdigit() and int(threads) >= 1 else []

    def _run_once(self, launcher: str, candidate: Candidate, trial_dir: Path, out: Path, repeat: str) -> dict | ProbeResult:
        """One probe start: its result.json as a dict when ok, else the ProbeResult saying why not."""
        log_path = trial_dir / "log.txt"
        environ = self._environ()
        plan: LaunchPlan = build_plan(launcher, candidate, self._probe_args(trial_dir, out), python=self.python,
                                      hostfile=self.hostfile, environ=environ)
        if plan.launcher == "deepspeed" and self.env:
            # The deepspeed runner forwards these to remote nodes (pdsh) from ./.deepspeed_env.
            (trial_dir / ".deepspeed_env").write_text("".join(f"{k}={v}\n" for k, v in self.env.items()), encoding="utf-8")
        _append_log(log_path, f"== autotune: repeat {repeat}, {plan.launcher}: {shlex.join(plan.command)}\n")
        started_at_s = time.time()  # wall clock, as a lock file's mtime: what was there before the probe
        try:
            process = ProbeProcess(plan.command, trial_dir, {**environ, **plan.env}, log_path)
        except OSError as exc:
            error = f"could not start {plan.command[0]}: {exc}"
            return not_ok_result("failed", error, trial_dir, log_path, launcher=launcher)
        self._current = process
        exit_code = None
        try:
            if self._aborted:  # abort() ran between the check in evaluate() and this start
                process.kill_group(self.kill_grace_s)
            exit_code = process.wait(self.probe_timeout_s)
            if exit_code is None:
                process.kill_group(self.kill_grace_s)
            else:
                process.finish(self.kill_grace_s)
        except BaseException as stop:
            _say_stopped(log_path, signal_words(stop), process.kill_group(self.kill_grace_s))
            raise
        finally:
            self._current = None
            if exit_code != 0:  # killed, crashed or timed out: it may have left a device capped
                for line in self._devices.restore_after(candidate, environ):
                    _append_log(log_path, f"== autotune: {line}\n")
        if self._aborted:
            _say_stopped(log_path, "abort()")
        self._raise_if_aborted()
        return self._outcome(out, exit_code, trial_dir, launcher, time.time() - started_at_s)

    def _outcome(self, out: Path, exit_code: int | None, trial_dir: Path, launcher: str,
                 probe_age_s: float) -> dict | ProbeResult:
        """The file `out` is authoritative: a probe that wrote its result and then hung in teardown still counts.
        `probe_age_s`: since the launcher's start; a build lock older than that was not the probe's own."""
        result = read_result(out)
        log_path = trial_dir / "log.txt"
        extra = {"launcher": launcher, "exit_code": exit_code}
        if result is None and exit_code is None:
            error = f"no result within {self.probe_timeout_s:g} s: killed the probe's process group"
            locks = old_build_locks(probe_age_s, self._environ())  # the probes' TORCH_EXTENSIONS_DIR, if env sets it
            if locks:
                error += build_locks_words(locks)
                # The time went to a build another process left (or still runs), not to the candidate:
                # study/retries.py `setup_failure` reads this, and a resume probes the candidate again.
                extra.update(timeout_cause=TIMEOUT_ON_BUILD_LOCK, build_locks=locks)
            _append_log(log_path, f"== autotune: timeout: {error}\n")
            return not_ok_result("timeout", error, trial_dir, log_path, **extra)
        if result is None and (stopped := stopped_from_outside(exit_code, log_tail(log_path, TEARDOWN_LINES))) is not None:
            stop = ProbeStoppedOutside(*stopped)
            _append_log(log_path, f"== autotune: {time.strftime('%Y-%m-%d %H:%M:%S')}: {stop.reason}; the trial is probed again "
                                  "when the study resumes\n")
            raise stop
        if result is None:
            return self._without_result(out, exit_code, log_path, extra)
        if exit_code is None:
            _append_log(log_path, f"== autotune: killed after {self.probe_timeout_s:g} s, after the result was written\n")
        if result["status"] == "ok":
            return result
        status = result["status"] if result["status"] in ("oom", "failed") else "failed"
        error = result.get("error") or f"probe status {result['status']!r} without an error message"
        for key in ("refused", "failed_rank", "setup_failure"):  # setup_failure: study/retries.py `setup_failure`
            if key in result:
                extra[key] = result[key]
        return not_ok_result(status, error, trial_dir, log_path, **extra)

    def _without_result(self, out: Path, exit_code: int, log_path: Path, extra: dict) -> ProbeResult:
        """A probe that ended without a result the tuner can read: how it ended (the signal that ended its launcher,
        or a rank of it), and what it left at `out`."""
        how = f"was killed by {signal_said(-exit_code)}" if exit_code < 0 else f"exited with status {exit_code}"
        unreadable = unreadable_result(out)
        if unreadable is not None:  # its writer, not its start, is what to look at
            return not_ok_result("failed", f"the probe {how} and left an unreadable result ({out}: {unreadable})",
                                 log_path.parent, log_path, **extra)
        ended = rank_signal(log_tail(log_path, TEARDOWN_LINES))
        if ended is None:
            # e.g. a module missing before the trainer started: the log's exception says which
            return not_ok_result("failed", f"the probe {how} without writing a result", log_path.parent, log_path,
                                 name_exception=True, **extra)
        rank, signum = ended
        if signum == signal.SIGKILL:
            # The OOM killer's signal: the candidate's failure, as of a launcher it kills (docs/launch.md); a rank other
            # signals end (a segfault) stays the set-up's, probed again (study/retries.py `setup_failure`).
            extra.update(failed_rank=rank, setup_failure=False)
        # No exception named: the one the log shows is another rank's, whose collective lost this rank.
        return not_ok_result("failed", f"the probe {how} without writing a result: rank {rank} was killed by "
                             f"{signal_said(signum)}", log_path.parent, log_path, **extra)

    def _raise_if_aborted(self) -> None:
        if self._aborted:
            raise ProbeInterrupted("the launch backend was aborted: no probe runs any more")


def measured_default_limit(results: list[dict]) -> dict:
    """{"default_power_limit_w": W}: the default power limit NVML reported on the devices a probe set a power limit
    on (result.json's device_settings, read before any change), by which the report gives the pick's limit in watts
    rather than by the profile's figure; {} where no probe recorded one (no limit set), or devices disagree."""
    defaults = {device.get("default_power_limit_w") for result in results
                for node in ((result.get("device_settings") or {}).get("nodes") or [])
                for device in (node.get("devices") or [])}
    defaults.discard(None)
    return {"default_power_limit_w": defaults.pop()} if len(defaults) == 1 else {}


def old_build_locks(older_than_s: float, environ: dict[str, str] | None = None) -> list[str]:
    """What a timed-out probe may have waited on: the torch extension build locks older than the probe
    (autotune/build_locks.py). The probe removes the locks it can tell are stale before it starts; one
    on a shared file system, perhaps held by another node's build, it can only name.

    Only the folder the probes build in (TORCH_EXTENSIONS_DIR, else this install's own; the probes run this
    Python): a lock of another install's folder, a live build of another venv or user among them, was
    blamed, the user told to delete it, and a real timeout re-probed on every resume (a newcomer's trial)."""
    cutoff = time.time() - older_than_s
    locks = []
    for lock in build_locks(install_extensions_dir(environ)):
        try:
            if lock.stat().st_mtime < cutoff:
                locks.append(str(lock))
        except OSError:
            continue  # released meanwhile
    return locks


def build_locks_words(locks: list[str]) -> str:
    """The timeout error's tail naming `locks` (old_build_locks); "" for none."""
    if not locks:
        return ""
    return (f"; a torch extension build lock older than the probe is held ({', '.join(locks[:2])}): if no build is "
            "running, delete it, or every probe waits on it")


def stale_build_locks(older_than_s: float, environ: dict[str, str] | None = None) -> str:
    """The timeout error's tail naming the build locks older than the probe; "" when there is none."""
    return build_locks_words(old_build_locks(older_than_s, environ))


def probe_cost(walls_s: list[float], repeats: list[dict], taken: dict[int, TakenOver] | None = None) -> dict:
    """What the probe cost, every repeat and every phase of it (docs/launch.md, "Tuning cost").

    Time is the tuner's wall clock from the launcher's start to its end (start-up, warm-up, the
    measured window, teardown): measured, always. Energy is what sensors saw, and they only read the
    measured windows: the sum of the windows' energy, so a lower bound (`energy_scope: window`);
    None when a repeat has no window energy (it failed before measuring, or no sensor and no estimate).

    Repeats taken over from an interrupted trial (`taken`) were paid for there and count here, with the
    wall time their trial recorded; where its tuner died before it could, from the repeat's recorded
    start to its result's write (`time_scope: lower_bound`, `parts.taken_over` says which).
    """
    blocks = [r.get("energy") or {} for r in repeats]
    window_j = [b.get("energy_j") for b in blocks]
    energy_kj = None if not repeats or len(repeats) < len(walls_s) or any(e is None for e in window_j) else sum(window_j) / 1000.0
    window_s = [b.get("window_s") for b in blocks]
    provenances = sorted({b.get("provenance", "unavailable") for b in blocks})
    cost = {
        "time_s": sum(walls_s),
        "energy_kj": energy_kj,
        "energy_scope": "window",
        "energy_provenance": provenances[0] if len(provenances) == 1 else (provenances or "unavailable"),
        "parts": {
            "runs": len(walls_s),
            "wall_s": walls_s,
            "window_s": None if not repeats or any(w is None for w in window_s) else sum(window_s),
            "measured": ["time: whole probe, every run (wall clock)",
                         "energy: the measured windows only (start-up and warm-up are not seen by a sensor)"],
        },
    }
    if taken:
        cost["parts"]["taken_over"] = [{"repeat": t.repeat, "from": str(t.source), "wall_s": t.wall_s, "wall": t.wall}
                                       for _, t in sorted(taken.items())]
        if any(t.wall == WALL_LOWER_BOUND for t in taken.values()):
            cost["time_scope"] = "lower_bound"
            cost["parts"]["measured"].append("time: a taken-over run whose tuner died is counted from its start to "
                                             "its result's write (a lower bound)")
    return cost


def _with_probe_cost(result: ProbeResult, *, walls_s: list[float], repeats: list[dict],
                     taken: dict[int, TakenOver] | None = None) -> ProbeResult:
    return replace(result, details={**result.details, "probe_cost": probe_cost(walls_s, repeats, taken)})


def _say_waiting(trial_number: int, line: str, log_path: Path) -> None:
    """A probe that waits says so where the study's progress is read (a job's output file, the terminal)."""
    _append_log(log_path, f"== autotune: {line}\n")
    print(f"trial {trial_number}: {line}", file=sys.stderr, flush=True)


def _say_stopped(log_path: Path, why: str, outlived: list[int] | None = None) -> None:
    """The last line of the log of a probe the tuner stopped: read after a preemption, a log that ended with the
    launcher's command line alone could not be told from a hang (trial 51 #7). `outlived`: its processes no signal
    ended, said on the console too (the tuner exits without them)."""
    left = f"; {outlived_words(outlived)}" if outlived else ""
    if left:
        print(f"autotune: the probe in {log_path.parent} was stopped{left}", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):  # a full disk may be why it stopped
        _append_log(log_path, f"== autotune: {time.strftime('%Y-%m-%d %H:%M:%S')}: the tuner stopped this probe "
                              f"({why}); the trial is probed again when the study resumes{left}\n")


def _append_log(log_path: Path, line: str) -> None:
    with open(log_path, "a", encoding="utf-8") as handle:
        handle.write(line)
