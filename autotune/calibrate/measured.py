"""Observations from the user's own studies: every evaluated probe of each run directory.

A probe that ran gives its time, TFLOP/s, module power and energy (and GPU power where the node
counted the GPU apart); one that ran out of memory or failed has no figures and is counted, not fitted.
Only measured figures calibrate: a simulated study would fit the simulator to itself, and estimated
energy comes from a power model, not a sensor. Either is skipped with a line saying why, unless the
caller allows it.
A probe whose candidate is no candidate of its study's space (a knob value the space does not list, or
a rule the study's own profile refuses) is left out, neither fitted nor counted, in one line per run
directory: the study never proposes one, so it was enqueued by hand or the study's profile changed
since (a resume with another profile of the same node).
A replay study's figures are copies of recorded probes: one that another run directory given gives too
is left out (one line per replay), so that each measurement is fitted once.
A replayed record carries no GPU power (the export format has no field for it); where its energy is the
GPU's alone (every other part of the node listed as not measured) the GPU power is that energy over the
time and the GPUs, exactly the figure the study it came from fitted, and is fitted as such, named derived.
A probe that set a power limit records the default limit NVML reported on its GPUs (default_power_limit_w, as a
launch study and a replay of its records keep it); the limit it ran under was its fraction of that default, not of
the profile's [power] module_cap_w, and it is simulated so, at most the profile's cap (a site's cap below the
default), with one line per run directory where the two differ. A probe of the same study that set none (at the
default, 1.0) ran on the same GPUs: it takes the study's one recorded default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from autotune.counted import counted
from autotune.calibrate.memory_error import MeasuredPeak
from autotune.calibrate.observations import Observation, checked_candidate, checked_knobs, checked_observation
from autotune.calibrate.plausible import impossible_in_studies
from autotune.candidate import Candidate, Knobs
from autotune.checks import shown
from autotune.errors import ConfigError, UserError
from autotune.hardware import HardwareProfile, claimed_node_problem, hardware_flag, kept_base_name
from autotune.measure.combine import SEPARATE_COMPONENTS, not_measured, parts_text
from autotune.memory import estimate_memory, measured_device_peak_gib
from autotune.space import rule_violation, spans_text

# Reasons a run directory's line lists before "and N more" (each names its trials).
SHOWN_REASONS = 3
# Figures derived from the probe's energy: as good as its source. GPU power is one too (its GPU energy
# over the time), and an estimated one is the launch backend's power model, not a sensor's reading:
# fitting the simulator's power constants to it is a fit to another model.
_ENERGY_METRICS = ("energy_kj", "module_power_w", "power_w")
# A replayed figure this close to one of the same configuration is a copy of it: the record keeps the
# probe's figure as JSON, which gives back the same float (the margin is for a file written by hand).
COPY_TOLERANCE = 1e-6
# Whole-node figures, which a node total without a component (its CPU, say) falls short of.
_NODE_METRICS = ("energy_kj", "module_power_w")


@dataclass
class MeasuredRuns:
    observations: list[Observation] = field(default_factory=list)
    not_run: dict = field(default_factory=dict)  # status (oom, failed, timeout) -> probes
    _skips: dict = field(default_factory=dict)  # (run directory, why) -> trial numbers
    _outside: dict = field(default_factory=dict)  # run directory -> {why: trial numbers}
    _derived: dict = field(default_factory=dict)  # (run directory, how) -> trial numbers
    copies: list[str] = field(default_factory=list)  # one line per replayed run directory whose figures were copies
    peaks: list[MeasuredPeak] = field(default_factory=list)  # ok probes' measured peak device memory, against the estimate
    # Run directories some fitted figure of which was simulated (--allow-simulated): an error left out of such a fit
    # measures the simulator against itself, and must not be written as a measured one (trial61 #2).
    simulated: set = field(default_factory=set)
    _at_default: dict = field(default_factory=dict)  # (run directory, default W, profile's W) -> trial numbers

    def skip(self, origin: str, trial: int, why: str) -> None:
        self._skips.setdefault((origin, why), []).append(trial)

    def derive(self, origin: str, trial: int, how: str) -> None:
        self._derived.setdefault((origin, how), []).append(trial)

    def leave_out(self, origin: str, trial: int, why: str) -> None:
        self._outside.setdefault(origin, {}).setdefault(why, []).append(trial)

    @property
    def left_out(self) -> list[str]:
        """One line per run directory whose probes of candidates outside its study's space were left out:
        how many, and each reason with its trials."""
        lines = []
        for origin, reasons in self._outside.items():
            probes = sum(len(numbers) for numbers in reasons.values())
            listed = [f"{_trials(numbers)} ({why})" for why, numbers in reasons.items()]
            more = f"; and {len(listed) - SHOWN_REASONS} more reasons" if len(listed) > SHOWN_REASONS else ""
            lines.append(f"{origin}: {probes} probe{'s' if probes > 1 else ''} of candidates outside the study's space, "
                         f"neither fitted nor counted: {'; '.join(listed[:SHOWN_REASONS])}{more}")
        return lines

    @property
    def skipped(self) -> list[str]:
        """One line per run directory and reason a figure or probe was left out, with its trials (a GPU
        study's ten probes without a CPU sensor are one line, not ten)."""
        return _by_trials(self._skips)

    @property
    def default_limits(self) -> list[str]:
        """One line per run directory whose probes' GPUs reported a default power limit other than the profile's
        module_cap_w: their power limits were fitted as fractions of it (trial72 #10: at the profile's, four power
        constants went to 0 to make up for 0.7 x 700 W simulated where 0.7 x 650 W ran)."""
        return [f"{origin} {_trials(numbers)}: power limits fitted as fractions of the {default_w:g} W default power limit "
                f"their GPUs reported, not of the profile's [power] module_cap_w = {cap_w:g} W; a study on the profile "
                f"(and the profile -o writes) assumes {cap_w:g} W: if {default_w:g} W is your GPUs' default, set "
                f"module_cap_w = {default_w:g} in a copy of the profile and calibrate that"
                for (origin, default_w, cap_w), numbers in self._at_default.items()]

    @property
    def derived(self) -> list[str]:
        """One line per run directory and figure computed from its others (a GPU power from a GPU-only energy), with
        its trials."""
        return _by_trials(self._derived)


def _by_trials(reasons: dict) -> list[str]:
    return [f"{origin} {_trials(numbers)}: {why}" for (origin, why), numbers in reasons.items()]


def _trials(numbers: list[int]) -> str:
    """"trial 3", "trials 0-9", "trials 0, 2, 5-7"."""
    return f"trial{'s' if len(set(numbers)) > 1 else ''} {spans_text(numbers)}"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _figures(result: dict, candidate: Candidate) -> tuple[dict, bool]:
    """metric -> value of one ok probe, per the ProbeResult fields (time and energy for the whole work), and
    whether its GPU power was derived from an energy that is the GPU's alone (gpu_only_energy_kj)."""
    figures = {"time_s": result.get("time_s"), "tflops": result.get("tflops"), "energy_kj": result.get("energy_kj"),
               "module_power_w": result.get("mean_power_w")}
    gpu_kj = (result.get("energy_components_kj") or {}).get("gpu")
    derived = gpu_kj is None
    if derived:
        gpu_kj = gpu_only_energy_kj(result)
    time_s = result.get("time_s")
    if isinstance(gpu_kj, (int, float)) and isinstance(time_s, (int, float)) and time_s > 0:
        # The node counted its GPUs apart (not a GH200 module): mean GPU power per GPU over the run.
        figures["power_w"] = 1000.0 * gpu_kj / time_s / candidate.gpus
    return figures, derived and "power_w" in figures


def gpu_only_energy_kj(result: dict) -> float | None:
    """The probe's energy where it is the GPU's alone, else None: a total whose energy block lists every other
    part of the node (CPU, memory/interconnect) as seen by no sensor is the GPU's. A replayed record keeps that
    list but no per-part figure (the export format has none), and this is exact, not an estimate: the total
    the study summed was its GPU figure alone (NVML on an H100 node without RAPL)."""
    energy_kj = result.get("energy_kj")
    unseen = set(not_measured(result.get("details")))
    others = set(SEPARATE_COMPONENTS) - {"gpu"}
    if isinstance(energy_kj, (int, float)) and "gpu" not in unseen and others <= unseen:
        return float(energy_kj)
    return None


# How a derived GPU power was had, as the report lists it (a line per run directory, "derived" on each figure).
_DERIVED_POWER = ("power_w derived as energy_kj / time_s / GPUs: the energy is the GPU's alone ({unseen} not measured) "
                  "and the result keeps no GPU figure of its own (a replay's records carry none)")


def recorded_default_w(result) -> float | None:
    """The default power limit NVML reported on the probe's GPUs (W), where its result keeps one, else None."""
    value = ((result.get("details") if isinstance(result, dict) else None) or {}).get("default_power_limit_w")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def study_default_w(trials) -> float | None:
    """The one default power limit a study's probes recorded (its GPUs'), or None where none or several did (files of
    two clusters merged: each record then keeps its own, and those without one the profile's)."""
    defaults = {recorded_default_w(t.user_attrs.get("result")) for t in trials} - {None}
    return defaults.pop() if len(defaults) == 1 else None


# Defaults within this of the profile's cap are the same limit (NVML reports mW; a profile rounds to W).
SAME_LIMIT_W = 0.5


def at_recorded_default(candidate: Candidate, default_w: float | None) -> Candidate:
    """`candidate` on its profile with the default power limit its GPUs reported: the simulator takes the power_limit
    knob as a fraction of [power] module_cap_w, the launch sets it as a fraction of the NVML default. The limit stays
    at most the profile's cap, a site's cap below the default (replay_figures.default_limit_refusal)."""
    power = candidate.hardware.power
    if default_w is None or abs(default_w - power.module_cap_w) <= SAME_LIMIT_W:
        return candidate
    cap_w = min(default_w, power.module_cap_w / candidate.knobs.power_limit)
    if abs(cap_w - power.module_cap_w) <= SAME_LIMIT_W:
        return candidate
    return replace(candidate, hardware=replace(candidate.hardware, power=replace(power, module_cap_w=cap_w)))


def _outside_space(knobs: Knobs, study_settings) -> str | None:
    """Why `knobs` are no candidate of the study's space (judged by its own settings, with the profile it
    kept), or None. The memory estimate is not asked: a measured figure shows the candidate ran."""
    for knob, value in knobs.to_dict().items():
        listed = study_settings.space.values(knob)
        if value not in listed:
            return f"{knob} = {shown(value)}, not among the space's {shown(list(listed))}"
    return rule_violation(study_settings.candidate(knobs.to_dict()))


def _trial_observations(origin: str, trial, settings, allow_estimated: bool, allow_simulated: bool, runs: MeasuredRuns,
                        study_settings=None, study_default: float | None = None):
    """The observations of one evaluated trial into `runs`. `settings`: the study's, on the profile being
    calibrated; `study_settings`: the study's own (its profile may be another of the same node), else `settings`;
    `study_default`: the default power limit the study's probes recorded (study_default_w)."""
    result = trial.user_attrs["result"]
    key = f"trial {trial.number}"
    if not isinstance(result, dict) or "status" not in result:
        raise ConfigError(f"{origin}: {key} has no readable result; the study is damaged: re-run that trial or leave the run out")
    knobs = checked_knobs(origin, key, (trial.user_attrs.get("candidate") or {}).get("knobs"))
    outside = _outside_space(knobs, study_settings or settings)
    if outside:
        runs.leave_out(origin, trial.number, outside)
        return
    if result["status"] != "ok":
        runs.not_run[result["status"]] = runs.not_run.get(result["status"], 0) + 1
        return
    if result.get("source") != "measured" and not allow_simulated:
        runs.skip(origin, trial.number, f"its figures are {result.get('source')}, not measured (calibrating the "
                  "simulator against its own output teaches nothing); pass --allow-simulated only to test the fit")
        return
    # The study's own profile allowed it (above): the profile to calibrate is not the one it ran on (a
    # higher minimum power limit, say), and cannot represent what was measured.
    default_w = recorded_default_w(result) or study_default
    candidate = at_recorded_default(settings.candidate(knobs.to_dict()), default_w)
    if candidate.hardware.power != settings.hardware.power:
        runs._at_default.setdefault((origin, default_w, settings.hardware.power.module_cap_w), []).append(trial.number)
    candidate = checked_candidate(origin, key, candidate,
                                  "calibrate the profile the study ran on (its own, without --hardware), or leave the run out")
    peak_gib = measured_device_peak_gib(result)
    if peak_gib is not None:
        runs.peaks.append(MeasuredPeak(f"{Path(origin).name}#{trial.number}", origin, candidate, peak_gib,
                                       estimate_memory(candidate).peak_mem_gib))
    missing = not_measured(result.get("details"))
    partial, estimated = [], []  # node-energy metrics left out, and why
    figures, power_derived = _figures(result, candidate)
    for metric, value in figures.items():
        if metric in _NODE_METRICS and missing and value is not None:
            # The simulator's energy counts GPU, host share and memory: a node total without its CPU is not that.
            partial.append(metric)
            continue
        if metric in _ENERGY_METRICS:
            energy_source = result.get("energy_source")
            if energy_source == "unavailable" or value is None:
                continue  # no sensor: nothing to fit, and never 0 J
            if energy_source == "estimated" and not allow_estimated:
                estimated.append(metric)
                continue
            if energy_source == "simulated" and not allow_simulated:
                continue
        if value is None and metric == "tflops":
            # A replayed record may hold none (search.md's format does not ask for it: a hand-measured time and energy
            # replay without it): TFLOP/s is the model's work over the time, which is fitted, so nothing is lost.
            runs.skip(origin, trial.number, "no tflops in the result: its time and energy are fitted (TFLOP/s is "
                      "the model's work over that time)")
            continue
        if value is None:
            raise ConfigError(f"{origin}: {key} is 'ok' but lacks {metric}; the result is incomplete: re-run it or leave the run out")
        if isinstance(value, float) and math.isnan(value):
            raise ConfigError(f"{origin}: {key} {metric} is NaN; the result is corrupt: re-run it or leave the run out")
        metric, number = checked_observation(origin, key, metric, value, relative=False)
        if (result.get("energy_source") if metric in _ENERGY_METRICS else result.get("source")) == "simulated":
            runs.simulated.add(origin)
        derived = metric == "power_w" and power_derived
        if derived:
            runs.derive(origin, trial.number, _DERIVED_POWER.format(unseen=parts_text(missing)))
        runs.observations.append(Observation(f"{Path(origin).name}#{trial.number}", candidate, metric, number, origin,
                                             derived=derived))
    if partial:
        runs.skip(origin, trial.number, f"{' and '.join(partial)} leave{'s' if len(partial) == 1 else ''} out "
                  f"{', '.join(missing)} (no sensor), unlike the simulator's whole-node figure; not fitted")
    if estimated:
        runs.skip(origin, trial.number, f"{_listed(estimated)} {'is' if len(estimated) == 1 else 'are'} estimated "
                  "from a power model, not measured; pass --allow-estimated-energy to fit it anyway")


def _described(hardware: HardwareProfile) -> str:
    return hardware.name if hardware.base_name == hardware.name else f"{hardware.name}, calibrated from {hardware.base_name}"


def run_dir_study(run_dir: Path, storage: str | None = None, study_name: str | None = None):
    """The study of a run directory: the one in its own study.db, else the `storage` one (the --storage and
    --study-name of its run). Several run directories share one calibrate command line, and a directory's
    own study.db holds one study, found without a name: the flags are for those that keep none. Without
    `storage`, `study_name` picks the study in each study.db, as `autotune report --study-name` does."""
    from autotune.study import load_finished_study
    from autotune.study.storage import STUDY_NAME

    run_dir = Path(run_dir)
    if storage is not None and (run_dir / "study.db").is_file():
        return load_finished_study(run_dir)
    return load_finished_study(run_dir, storage, study_name or STUDY_NAME)


def load_measured(run_dirs: list[Path], hardware: HardwareProfile, allow_estimated: bool = False,
                  allow_simulated: bool = False, storage: str | None = None, study_name: str | None = None) -> MeasuredRuns:
    """Observations from every evaluated trial of each run directory, on `hardware`; `storage` and
    `study_name`: where a run directory without study.db keeps its study (run_dir_study)."""
    from optuna.trial import TrialState

    from autotune.study.outside import kept_result_fault
    from autotune.study.retries import evaluated_trials
    from autotune.study.settings import StudySettings

    runs = MeasuredRuns()
    replayed: set[str] = set()  # run directories of replay studies
    for run_dir in run_dirs:
        origin = str(run_dir)
        if not Path(run_dir).is_dir():
            raise UserError(f"{run_dir} is not a directory; pass the --out directory of an `autotune run`")
        study = run_dir_study(run_dir, storage, study_name)
        stored = study.user_attrs.get("settings")
        if not stored:
            raise UserError(f"the study in {run_dir} has no trials yet; run `autotune run` there first")
        # By the node, not the profile's own name: a study on gh200 calibrates every calibration of gh200.
        if kept_base_name(stored) != hardware.base_name:
            flag = hardware_flag(str(stored.get("hardware")))
            raise UserError(
                f"{run_dir} was measured on hardware '{kept_base_name(stored)}' but the profile to calibrate is "
                f"'{_described(hardware)}'; pass --hardware {flag} (calibrate one kind of node at a time)"
            )
        claimed = claimed_node_problem(hardware, kept_base_name(stored))
        if claimed:  # its figures may be another node's, which -o would then vouch for as the claimed node's
            raise UserError(f"{run_dir} was measured on hardware '{kept_base_name(stored)}', and {claimed}: pass "
                            f"--hardware {hardware_flag(str(stored.get('hardware')))} (or a profile `autotune calibrate -o` "
                            "wrote from it)")
        try:
            # The stored profile path may be gone (another machine): the candidates take `hardware` instead.
            settings = replace(StudySettings.from_dict({**stored, "hardware": hardware.source or hardware.name}), hardware=hardware)
            # What the study judged its candidates by: the profile it kept (studies from before profiles
            # were kept name a file that may be gone: `hardware` stands in).
            own = StudySettings.from_dict(stored) if "hardware_profile" in stored else settings
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{run_dir}: the study's stored settings are unreadable ({exc}); the study is damaged") from None
        # A completed trial whose kept result is wrong is left out of the study's evaluated ones (study/outside.py):
        # a fit must not go on without it, so it is read here too, and refused in its own words.
        faulty = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if kept_result_fault(t)]
        trials = sorted([*evaluated_trials(study).values(), *faulty], key=lambda t: t.number)
        study_default = study_default_w(trials)
        for trial in trials:
            _trial_observations(origin, trial, settings, allow_estimated, allow_simulated, runs, own, study_default)
        if _backend_name(study) == "replay":
            replayed.add(origin)
    _drop_copies(runs, replayed)
    refusal = impossible_in_studies(runs.observations, hardware)
    if refusal:
        raise ConfigError(refusal)
    runs.peaks = peaks_without_copies(runs.peaks, replayed)
    return runs


def _backend_name(study) -> str | None:
    backend = study.user_attrs.get("backend")
    return backend.get("name") if isinstance(backend, dict) else backend


def _drop_copies(runs: MeasuredRuns, replayed: set[str]) -> None:
    """A replay study looked its figures up in a record of other probes: the same figure from a measured
    study given too (or from another replay of it) is that measurement again, not a repeat of it. Fitted
    twice it would weigh double and pass for agreeing repeats, so the replay's copy is left out, in one
    line per replayed run directory. A replayed figure with no twin here is still a measurement: fitted once."""
    kept: dict[tuple, list] = {}  # (candidate, metric) -> [(value, run directory)], the measured studies' first
    for o in runs.observations:
        if o.source not in replayed:
            kept.setdefault((o.candidate, o.metric), []).append((o.value, o.source))
    copies: dict[str, tuple[set, set]] = {}  # replayed run directory -> (configurations, where their twins came from)
    observations = []
    for o in runs.observations:
        if o.source in replayed:
            twins = kept.setdefault((o.candidate, o.metric), [])
            origin = next((source for value, source in twins if math.isclose(o.value, value, rel_tol=COPY_TOLERANCE)), None)
            if origin is not None:
                configurations, origins = copies.setdefault(o.source, (set(), set()))
                configurations.add(o.candidate)
                origins.add(origin)
                continue
            twins.append((o.value, o.source))
        observations.append(o)
    runs.observations = observations
    runs.copies = [f"{source} (a replay of recorded figures): {counted(len(configurations), 'configuration')} with the figures "
                   f"of {_listed(sorted(origins))}, copies of those measurements, not repeats: fitted once"
                   for source, (configurations, origins) in copies.items()]


def peaks_without_copies(peaks: list[MeasuredPeak], replayed: set[str]) -> list[MeasuredPeak]:
    """A replay study's measured peak that another run directory given measured too is that measurement again,
    as `_drop_copies` has it of the figures: kept once."""
    kept = [p for p in peaks if p.source not in replayed]
    for peak in (p for p in peaks if p.source in replayed):
        if not any(k.candidate == peak.candidate and math.isclose(k.measured_gib, peak.measured_gib, rel_tol=COPY_TOLERANCE)
                   for k in kept):
            kept.append(peak)
    return kept
