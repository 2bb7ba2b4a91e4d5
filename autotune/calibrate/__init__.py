"""`autotune calibrate`: fit the simulator's constants to measurements and report its error.

- observations: what a measurement is (candidate, metric, value; absolute, relative or a bound);
- reference: the published figures shipped with the project (gh200-study.json) and files like it;
- measured: the probes of the user's own measured studies (run directories);
- unseen_power: the power constants held where no observation gives a power or an energy;
- fit: bounded, outlier-robust least squares over the constants, and the leave-one-out error;
- report: the error tables (terminal and JSON).
"""

from autotune.calibrate.fit import Calibration, Fit, mape_by_metric, worst_by_metric
from autotune.calibrate.measured import load_measured
from autotune.calibrate.observations import METRICS, Observation
from autotune.calibrate.reference import load_reference

__all__ = ["METRICS", "Calibration", "Fit", "Observation", "load_measured", "load_reference", "mape_by_metric",
           "worst_by_metric"]
