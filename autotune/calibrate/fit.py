"""The fit: the simulator's constants that best explain the observations, and its cross-validated error.

- Residuals are log ratios (predicted / observed), so a 5% miss weighs the same on a 20-minute time
  and on a 500 W power; a bound counts only on its wrong side.
- `scipy.optimize.least_squares` with the soft-L1 loss: beyond about F_SCALE a residual counts
  linearly, so one outlying figure cannot drag every constant towards it.
- Bounded: each constant moves only within its physical bounds ([simulator] specs), searched in a
  unit interval (logarithmic for constants spanning decades, such as the CPU Adam rate).
- Only constants the observations can inform are fitted (those that move some prediction at all),
  and a weak pull towards each constant's default keeps one the data cannot pin down near it.
- Leave-one-out: fit without one observation, predict it; the mean absolute percentage error of
  those predictions is the error we quote. By default an "observation" left out is one configuration
  with all its figures: leaving out its time alone while its TFLOP/s stays in the fit would predict the
  time from the same configuration's throughput, an error no unmeasured candidate of a study enjoys.
  Each refit starts from the full fit, which keeps the N fits cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from autotune.calibrate.observations import Observation
from autotune.candidate import Candidate
from autotune.hardware import SIMULATOR_CONSTANTS, HardwareProfile, with_simulator_constants
from autotune.simulator import simulate

F_SCALE = 0.05  # residuals (log ratios) beyond ~5% count linearly (soft L1)
# Pull towards each constant's default (its spec's, not the base profile's: calibrating a calibrated
# profile again gives the same answer), per unit of the constant's normalised range. At 0.1 the fit
# to the GH200 study loses < 0.3 points of error against 0.02 while no constant drifts to an
# implausible corner merely to shave a residual (e.g. CPU Adam at 1e11 params/s).
PRIOR_WEIGHT = 0.1
LOG_SCALE_RATIO = 20.0
# A refit without one fold starts at the full fit and is within 0.1% of converged after a few steps.
LOO_MAX_NFEV = 8  # constants whose bounds span more than this ratio are searched in log space
_STEP_METRICS = {
    "time_s": lambda step: step.time_s,
    "energy_kj": lambda step: step.energy_kj,
    "tflops": lambda step: step.tflops,
    "power_w": lambda step: step.mean_gpu_power_w,
    "module_power_w": lambda step: step.mean_power_w,
}
_SPECS = {spec.name: spec for spec in SIMULATOR_CONSTANTS}


def _log_scaled(name: str) -> bool:
    spec = _SPECS[name]
    return spec.low > 0 and spec.high / spec.low > LOG_SCALE_RATIO


def to_unit(name: str, value: float) -> float:
    spec = _SPECS[name]
    if _log_scaled(name):
        return math.log(value / spec.low) / math.log(spec.high / spec.low)
    return (value - spec.low) / (spec.high - spec.low)


def from_unit(name: str, unit: float) -> float:
    spec = _SPECS[name]
    unit = min(1.0, max(0.0, float(unit)))
    if _log_scaled(name):
        return spec.low * (spec.high / spec.low) ** unit
    return spec.low + unit * (spec.high - spec.low)


@dataclass(frozen=True)
class Fit:
    constants: dict[str, float]  # every constant: fitted ones and those held at the base profile's value
    fitted: tuple[str, ...]
    predictions: np.ndarray  # per observation: the predicted value (a ratio for relative observations)
    profile: HardwareProfile


class Calibration:
    """The observations and the base profile; `fit()` and `leave_one_out()` work on them."""

    def __init__(self, observations: list[Observation], base: HardwareProfile):
        if not observations:
            raise ValueError("no observations to calibrate against")
        self.observations, self.base = observations, base
        self.values = np.array([o.value for o in observations])
        # By value, not identity: one configuration under two names, or measured by two studies, is simulated
        # once and left out as one (leaving out one copy while the fit sees the other would leak it).
        index: dict[Candidate, int] = {}
        for o in observations:
            for c in (o.candidate, o.relative_to):
                if c is not None:
                    index.setdefault(c, len(index))
        self._candidates = list(index)
        self._at = [index[o.candidate] for o in observations]
        self._ref = [index[o.relative_to] if o.relative_to is not None else -1 for o in observations]
        self._metrics = [_STEP_METRICS[o.metric] for o in observations]
        self._lower = np.array([o.bound == "lower" for o in observations])
        self._upper = np.array([o.bound == "upper" for o in observations])
        self.base_constants = base.simulator.as_dict()
        self.names = tuple(self.base_constants)

    @property
    def configurations(self) -> int:
        """How many distinct configurations were measured (repeats and copies count once): what the
        left-out error is a mean over, and what the fitted constants must be pinned down by."""
        return len(set(self._at))

    # -- predictions ------------------------------------------------------------------------------
    def profile_with(self, constants: dict[str, float]) -> HardwareProfile:
        return with_simulator_constants(self.base, constants)

    def predict(self, constants: dict[str, float]) -> np.ndarray:
        profile = self.profile_with(constants)
        # A measured candidate may keep the default power limit its GPUs reported (measured.at_recorded_default): the
        # constants are the fit's, the limit is what the probe ran under.
        steps = [simulate(replace(c, hardware=profile if c.hardware.power == profile.power
                                  else replace(profile, power=c.hardware.power))) for c in self._candidates]
        out = np.empty(len(self.observations))
        for i, (at, ref, metric) in enumerate(zip(self._at, self._ref, self._metrics)):
            value = metric(steps[at])
            out[i] = value / metric(steps[ref]) if ref >= 0 else value
        return out

    def log_errors(self, predictions: np.ndarray) -> np.ndarray:
        """log(predicted / observed); zero for a bound the prediction respects."""
        r = np.log(predictions / self.values)
        r[self._lower & (r > 0)] = 0.0
        r[self._upper & (r < 0)] = 0.0
        return r

    def pct_errors(self, predictions: np.ndarray) -> np.ndarray:
        return 100.0 * np.expm1(self.log_errors(predictions))

    # -- the fit ----------------------------------------------------------------------------------
    def informed(self, names: tuple[str, ...] | None = None, step: float = 0.05) -> tuple[str, ...]:
        """The constants that move at least one prediction when nudged across a slice of their range."""
        names = names or self.names
        base = self.predict(self.base_constants)
        moved = []
        for name in names:
            unit = to_unit(name, self.base_constants[name])
            nudged = from_unit(name, unit + step if unit + step <= 1.0 else unit - step)
            change = self.predict({**self.base_constants, name: nudged})
            if np.max(np.abs(np.log(change / base))) > 1e-6:
                moved.append(name)
        return tuple(moved)

    def _constants(self, names: tuple[str, ...], units: np.ndarray) -> dict[str, float]:
        return {**self.base_constants, **{n: from_unit(n, u) for n, u in zip(names, units)}}

    def fit(self, names: tuple[str, ...], weights: np.ndarray | None = None, start: dict | None = None,
            max_nfev: int | None = None) -> Fit:
        """Least squares over `names` (the others stay at the base profile's values)."""
        weights = np.ones(len(self.observations)) if weights is None else weights
        prior = np.array([to_unit(n, _SPECS[n].default) for n in names])
        begin = start or self.base_constants
        x0 = np.clip([to_unit(n, begin[n]) for n in names], 0.0, 1.0)

        def residuals(units: np.ndarray) -> np.ndarray:
            errors = self.log_errors(self.predict(self._constants(names, units)))
            return np.concatenate([weights * errors, PRIOR_WEIGHT * (units - prior)])

        if names:
            solution = least_squares(residuals, x0, bounds=(0.0, 1.0), loss="soft_l1", f_scale=F_SCALE,
                                     diff_step=1e-3, x_scale=1.0, max_nfev=max_nfev)
            constants = self._constants(names, solution.x)
        else:
            constants = dict(begin)
        return Fit(constants, names, self.predict(constants), self.profile_with(constants))

    def folds(self, by: str) -> list[list[int]]:
        """Observation indices left out together: one figure at a time ("figure"), or every figure of one
        configuration at a time ("configuration": a candidate the fit has never seen, as in a study)."""
        if by == "figure":
            return [[i] for i in range(len(self.observations))]
        groups: dict[int, list[int]] = {}
        for i, at in enumerate(self._at):
            groups.setdefault(at, []).append(i)
        return list(groups.values())

    def leave_one_out(self, full: Fit, by: str = "configuration", max_nfev: int = LOO_MAX_NFEV) -> np.ndarray:
        """Per observation, its predicted value from a fit that did not see it (nor, by configuration,
        any other figure of its configuration)."""
        predictions = np.empty(len(self.observations))
        for fold in self.folds(by):
            weights = np.ones(len(self.observations))
            weights[fold] = 0.0
            refit = self.fit(full.fitted, weights, start=full.constants, max_nfev=max_nfev)
            predictions[fold] = refit.predictions[fold]
        return predictions


def mape_by_metric(observations: list[Observation], pct_errors: np.ndarray) -> dict[str, float]:
    """Mean absolute percentage error per metric (relative observations count under their metric). A bound the
    prediction respects (">512" predicted at 526) is left out: it measures no error, and scored as an exact 0.0% it
    lowered the mean every simulated figure repeats (the shipped gh200 TFLOP/s error read 4.1% for 4.5%: trial72 #2).
    A violated bound is a miss by how far it is violated, and counts. A metric whose every figure is a respected
    bound has no mean (its figures then show +- ?%)."""
    grouped: dict[str, list[float]] = {}
    for o, err in zip(observations, pct_errors):
        if o.bound is not None and float(err) == 0.0:
            continue
        grouped.setdefault(o.metric, []).append(abs(float(err)))
    return {metric: sum(errs) / len(errs) for metric, errs in grouped.items()}


def worst_by_metric(observations: list[Observation], pct_errors: np.ndarray) -> dict[str, int]:
    """Per metric, the index of the observation with the largest absolute error (the first of equals).
    A mean over many configurations hides one that is far off; whether to trust a profile for the
    configuration one is about to run needs the worst miss as well."""
    worst: dict[str, int] = {}
    for i, (o, err) in enumerate(zip(observations, pct_errors)):
        if o.metric not in worst or abs(float(err)) > abs(float(pct_errors[worst[o.metric]])):
            worst[o.metric] = i
    return worst
