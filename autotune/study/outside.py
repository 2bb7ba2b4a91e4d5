"""Trials autotune did not make: Optuna users feed a result measured elsewhere into a study with
`study.add_trial(optuna.trial.create_trial(...))`. Such a trial has values, but none of what autotune keeps with a
figure (the result: its source, its probe, its workload), so nothing says what its figures are.

One rule for them: left out everywhere. The report named it nowhere and counted it in nothing, while the guided
sampler's model took its values as a probe's (six more probes, no convergence; non-positive values ended the run
in a scipy traceback), and its candidate counted as held, so it was never probed (trial 66 #6). Now the guided
model and the candidates held leave it out too (its candidate may be probed), the report counts it as invalid
with the reason, and a run says so in one line. Optuna's own samplers (tpe, nsga2) read the study as Optuna does.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from autotune.counted import agreeing

# A row's reason in the report, and the run's line after the trial numbers ("trial 5 was ...").
ADDED_OUTSIDE_REASON = ("added outside autotune (study.add_trial, or told by hand): no autotune result says where its "
                        "figures come from; left out of the search, the front and the picks")


def added_outside(t: optuna.trial.FrozenTrial) -> bool:
    """A COMPLETE trial without autotune's result: autotune stores the result before its objective returns the
    values that complete a trial, so only a trial made outside it completes without one."""
    return t.state == TrialState.COMPLETE and "result" not in t.user_attrs


def added_outside_line(study: optuna.Study) -> str | None:
    """One line naming the study's trials added outside autotune, and that they are left out; None where none is."""
    numbers = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if added_outside(t)]
    if not numbers:
        return None
    return (f"{agreeing(len(numbers), 'trial', 'trials')} {', '.join(map(str, numbers))} "
            f"{agreeing(len(numbers), 'was', 'were')} {ADDED_OUTSIDE_REASON}")
