"""The study's own records beside its settings and pick parameters (settings.py, commands/finish.py), read as a file
is: the Optuna API edits them (study.set_user_attr). An edited `converged` or `backend` ended report in a traceback
(converged.probes 'abc', converged 'x', backend 'x'), for good, or was printed as found ("converged after -3
simulated probes", "nan more"; trial 68 #18). Each is checked where a report reads the study: one line naming the
value and the fix, exit 2.
"""

from __future__ import annotations

import optuna

from autotune.checks import MAX_COUNT, checked_number, shown
from autotune.errors import ConfigError
from autotune.study.loop import CONVERGED_ATTR

_EDITED = ("it was edited since a run kept it (study.set_user_attr): put back the value the run kept, or start a new "
           "study")


def check_kept_attrs(study: optuna.Study) -> None:
    """A ConfigError naming the first of the study's kept records that is not as autotune keeps it; None where all are."""
    _check_converged(study.user_attrs.get(CONVERGED_ATTR))
    _check_backend(study.user_attrs.get("backend"))


def _check_converged(converged) -> None:
    # None (or absent): not converged, as study/loop.py keeps it; else the probes (and, since 539aab6, the trials)
    # made by the time the study converged.
    if converged is None:
        return
    if not isinstance(converged, dict) or "probes" not in converged:
        raise ConfigError(f"the study's {CONVERGED_ATTR} = {shown(converged)} is not an object of probes, trials and "
                          f"rule, or null; {_EDITED}")
    for key in ("probes", "trials"):
        if key in converged:
            checked_number(f"the study's {CONVERGED_ATTR}", key, converged[key], low=0, high=MAX_COUNT, integer=True,
                           whole_literal=True, fix=_EDITED)


def _check_backend(backend) -> None:
    # Absent in a study no run has finished setting up; else an object whose name says which backend made its figures.
    if backend is None:
        return
    if not isinstance(backend, dict):
        raise ConfigError(f"the study's backend = {shown(backend)} is not an object (the backend that made its "
                          f"figures); {_EDITED}")
    if "name" in backend and not isinstance(backend["name"], str):
        raise ConfigError(f"the study's backend.name = {shown(backend['name'])} is not a name; {_EDITED}")
