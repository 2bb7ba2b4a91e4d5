"""How one candidate is evaluated: the backend interface and the result every backend returns."""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, field
from typing import Callable

from autotune.candidate import Candidate

STATUSES = ("ok", "oom", "failed", "timeout", "invalid")


@dataclass(frozen=True)
class ProbeResult:
    """One evaluated candidate. Figures are for the whole fixed workload unless the name says per step.

    `source` says where time came from (measured | simulated); `energy_source` where energy came from
    (measured | estimated | simulated | unavailable). Unavailable energy is None, never 0.
    """

    status: str
    source: str
    energy_source: str
    time_s: float | None = None
    energy_kj: float | None = None
    tflops: float | None = None  # model TFLOP/s per GPU
    mfu: float | None = None
    step_time_s: float | None = None
    peak_mem_gib: float | None = None
    energy_components_kj: dict = field(default_factory=dict)
    mean_power_w: float | None = None  # per GPU module
    error: str | None = None
    # Backend-specific extras. Keys the report reads when present: "phases_s" (time per phase of one
    # step), "energy" (the probe's energy block: provenance, per-phase energy, power timeline; see
    # docs/energy-block.md), "repeats" (list of per-repeat time_s/energy_kj), "cv" (coefficient of
    # variation of time and energy over repeats), "log_tail" (last lines of a failed probe's log).
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown probe status {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


def setting_changes(then: dict, now: dict, recorded_only: bool = False) -> list[str]:
    """`--probe-steps 2 then, 3 now` for each flag of `now` whose value `then` differs in (probe_settings,
    timeout_settings); a flag `then` lacks reads "none then", or is passed over with `recorded_only` (a
    study kept from before the flag was recorded)."""
    def number(value) -> str:
        return f"{value:g}" if isinstance(value, (int, float)) else "none"  # 30, not 30.0

    return [f"{flag} {number(then.get(flag))} then, {number(value)} now" for flag, value in now.items()
            if then.get(flag) != value and (flag in then or not recorded_only)]


class ProbeHeldBack(Exception):
    """evaluate() started no probe: after a wait before it (launch: for another worker's probe on the same devices),
    `Backend.probe_held_back` gave the reason in the message. Nothing of the candidate ran: its trial is no failed
    probe, and the candidate is probed when the study resumes."""


def _never_held_back() -> str | None:
    return None


class Backend(abc.ABC):
    """Evaluates candidates. Implementations: `simulate` (analytic) and `launch` (real probe runs)."""

    name: str = ""
    #: what time figures from this backend are: "simulated" or "measured"
    source: str = ""
    #: whether a failed evaluation may be the set-up's (a probe on the cluster) rather than the candidate's:
    #: a run's first three failures then stop it (study/failures.failing_start). Replay: no, a recorded failure
    #: is looked up, and looking up the rest of the recording costs nothing.
    failures_may_be_the_setup: bool = True
    #: seconds a probe's processes get to end after SIGTERM (at its timeout) before SIGKILL: part of the longest a probe
    #: may take (study/time_limit.probe_bound_s). Backends whose evaluations start no process: 0.
    kill_grace_s: float = 0.0
    #: Set by the study loop (run_study): why a probe must not start now (the run's time limit no longer holds one and
    #: the reports, study/time_limit.py), or None. The loop asks the same before each trial; a backend whose evaluate()
    #: may wait before its probe starts (launch: backends/device_turns.py) asks it again after the wait, which no ask
    #: of the loop sees, and raises ProbeHeldBack with the reason. Default: never held back.
    probe_held_back: Callable[[], str | None] = staticmethod(_never_held_back)

    @abc.abstractmethod
    def evaluate(self, candidate: Candidate, trial_number: int = 0) -> ProbeResult:
        """Run (or model) the candidate; never raises for a candidate that fails: that is a result.

        `trial_number` names the trial's working directory (RUN_DIR/trials/NNNN) where a backend
        keeps files; a backend that keeps none ignores it.
        """

    def resumes(self, trial_number: int, earlier_trials: list[int], candidate: Candidate) -> str:
        """Optional hook, called before evaluate(candidate, trial_number) when that trial probes again the
        candidate of trials a stopped run left unfinished: `earlier_trials`, the one it retries first, then
        the one that trial retried, and so on. A backend that keeps files per trial may take over what they
        completed (launch: the repeats whose results are whole), and returns what it takes over in a few
        words for the trial's start line ("takes over repeat 1 of 2, runs repeat 2"). Default: nothing, ""."""
        return ""

    def unused_records(self, checks: list) -> str | None:
        """Optional hook, once the study's candidates are checked: one line on figures the backend holds that
        this study cannot use (replay: records of knob values its space lacks, node counts outside --nodes),
        or None (default)."""
        return None

    def unchecked_records(self, checks: list) -> list[str]:
        """Optional hook, once the study's candidates are checked: a line each on figures the backend holds that
        it replays on an assumption (replay: records without `study`, or without a device knob); [] (default)."""
        return []

    def kept_after_interruption(self) -> str:
        """Optional hook, after a stop (Ctrl-C, SIGTERM) interrupted evaluate(): one line for the user on what
        of the interrupted trial a resume keeps (launch: its finished repeats), or "" (default)."""
        return ""

    def device_settings_available(self) -> tuple[bool, str]:
        """Optional hook: whether candidates may set power limits and SM clocks, and the reason when
        not (the study then keeps those knobs untouched). Backends that change no device: (True, "")."""
        return True, ""

    def devices_off_default(self) -> str | None:
        """Optional hook: one line, said before any probe, where the GPUs the probes use are not at their default power
        limit or hold a user's clock setting (what "power_limit 1.0" and "sm_clock_mhz max" stand for), saying what the
        probes do about it; None (default) where they are, or the backend touches no device."""
        return None

    def default_limit_off_profile(self, hardware) -> str | None:
        """Optional hook: one line, said before any probe, where the default power limit of the GPUs the probes use
        (what "power_limit" is a fraction of there) is not `hardware`'s [power] module_cap_w (what the simulator takes
        it of); None (default) where it is, or the backend touches no device."""
        return None

    def sets_clock_itself(self) -> bool:
        """Optional hook: whether the launcher applies sm_clock_mhz without privileges (srun --gpu-freq),
        so the clock stays searchable where device_settings_available() says no."""
        return False

    def check_candidates(self, checks: list) -> None:
        """Optional hook: refuse, in one line (a UserError), before the study opens, a space this
        backend cannot evaluate at all (replay: a file with no record of any valid candidate)."""

    def evaluable(self, checks: list) -> list:
        """Optional hook: `checks` with each valid candidate this backend cannot evaluate made invalid, its
        reason saying why, so no sampler proposes it (replay: a candidate with no record). Default: all."""
        return checks

    def check_resumed(self, evaluated: list) -> None:
        """Optional hook: refuse, in one line (a UserError), to resume a study whose evaluated trials
        (FrozenTrials) this backend would have given other figures (replay: another file)."""

    def estimated_energy_only(self) -> str | None:
        """Optional hook: why energy figures this backend gives would be estimates (the study then ranks by
        energy only with --allow-estimated-energy), or None: every one on a machine without sensors, any
        record's of a replayed file."""
        return None

    def energy_unrecorded(self) -> str | None:
        """Optional hook: why this backend gives no energy figure at all (replay: a file whose ok records
        have none), so a study ranked by energy is refused before it opens; None where it may give one."""
        return None

    def probe_settings(self) -> dict:
        """Optional hook: how a probe measures ({flag: value}), kept in the study so a resume that
        measures otherwise says so. Backends that measure nothing: {}."""
        return {}

    def run_settings(self) -> dict:
        """Optional hook: the other flags of this run that set its figures ({flag: value}), for pareto.json's
        inputs beside probe_settings (launch: its timeout, and whether estimated energy ranks). Default: {}."""
        return {}

    def timeout_settings(self) -> dict:
        """Optional hook: what decides whether a probe times out ({flag: value}: how long it measures, and
        its timeout). A timed-out trial keeps them, and a resume with others probes its candidate again
        (study/retries.py). Backends whose evaluations cannot time out: {}."""
        return {}

    def describe(self) -> str:
        """One line for the user: what this backend does and why it was chosen."""
        return self.name
