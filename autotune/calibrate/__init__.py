"""`autotune calibrate`: fit the simulator's constants to measurements and report its error.

- observations: what a measurement is (candidate, metric, value; absolute, relative or a bound);
- reference: the published figures shipped with the project (gh200-study.json) and files like it;
- measured: the probes of the user's own measured studies (run directories);
- fit: bounded, outlier-robust least squares over the constants, and the leave-one-out error;
- report: the error tables (terminal and JSON).
"""

from autotune.calibrate.observations import METRICS, Observation

__all__ = ["METRICS", "Observation"]
