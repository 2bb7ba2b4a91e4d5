"""Trials queued by hand with Optuna's `study.enqueue_trial` (study/queued.py)."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.test_storage import _run_with_a_queued_trial


@pytest.mark.parametrize("queued, said", [
    (True, "zero_stage True (a bool), which is not one of the allowed values 0, 1, 2, 3; it is left unprobed: queue one of "),
    (3.0, "zero_stage 3.0, which is not a whole number; write it without a decimal point or an exponent (3); it is left unprobed"),
])
def test_a_queued_value_of_another_type_is_refused_as_a_space_file_s_is(tmp_path, capsys, queued, said):
    """Trial 66 #2: Optuna's categorical lookup compares by ==, so a queued zero_stage True was probed as ZeRO-1
    and 3.0 as ZeRO-3, without a word; a space file refuses both."""
    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"zero_stage": queued}, 2)
    lines = [line for line in err.splitlines() if "was queued with" in line]
    assert len(lines) == 1 and lines[0].startswith(f"warning: trial {number} was queued with {said}"), err
    trial = optuna.load_study(study_name="s", storage=url).trials[number]
    assert trial.state == TrialState.PRUNED and "candidate" not in trial.user_attrs and said in trial.user_attrs["reason"]


def test_a_queued_whole_power_limit_is_the_space_s_float(tmp_path, capsys):
    """A power limit queued as 1 is the candidate of the space's 1.0 (its identity, params_key, is typed)."""
    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"micro_batch": 2, "power_limit": 1}, 2)
    assert "was queued with" not in err, err
    trial = optuna.load_study(study_name="s", storage=url).trials[number]
    knobs = trial.user_attrs["candidate"]["knobs"]
    assert knobs["power_limit"] == 1.0 and isinstance(knobs["power_limit"], float)
