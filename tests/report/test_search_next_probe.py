"""The search line's "next it would probe": what a resume probes first, which is not the sampler's choice where the
resume queues trials before asking it (a set-up failure probed again, an unfinished trial, one queued by hand)."""

from __future__ import annotations

import pytest

from autotune.candidate import knobs_sentence
from autotune.commands.finish import build_report
from autotune.commands.options import settings_for
from autotune.errors import UserError
from autotune.report.markdown import markdown_report
from autotune.study import open_study, run_study
from autotune.study.loop import make_sampler
from autotune.study.retries import first_on_resume, queue_setup_retries
from tests.tuner.test_run_endings import _Probes

SETTINGS = ("--model", "32b", "--nodes", "4")


def _stopped_study(tmp_path, *outcomes: str):
    """A guided study the budget stopped (3 probes) before its rule was met, as `autotune run` records it."""
    study = open_study(tmp_path, None, make_sampler(0, 30))
    study.set_user_attr("sampler", "guided")
    run_study(study, settings_for(*SETTINGS), _Probes(*outcomes), 3)
    return open_study(tmp_path, None, make_sampler(0, 30))


def _search_line(study) -> str:
    view, document = build_report(study)
    return next(line for line in markdown_report(view, document).splitlines() if "not converged" in line)


def test_the_next_probe_of_a_study_with_a_setup_failure_is_that_candidate_again(tmp_path):
    """The Markdown report named the model's next candidate, while the resume first probes trial 1's again (its probe
    failed on the set-up)."""
    study = _stopped_study(tmp_path, "ok", "setup", "ok")
    failed = study.trials[1]
    said = _search_line(study)
    assert (f"; next it would probe again the candidate of trial 1, which failed on the set-up "
            f"({knobs_sentence(failed.params)}). ") in said, said
    # What the resume does: it queues that candidate first.
    assert queue_setup_retries(study) == [1] and first_on_resume(study) == (failed.params, 3, "queued")


def test_the_next_probe_of_a_study_with_an_unfinished_trial_or_a_queued_one_is_that(tmp_path):
    class _StopsThird(_Probes):
        def evaluate(self, candidate, trial_number: int = 0):
            if len(self.probed) == 2:
                self.probed.append(candidate.knobs.to_dict())
                raise UserError("the disk is full")  # an error of the tuner mid-probe: the trial is left unfinished
            return super().evaluate(candidate, trial_number)

    study = open_study(tmp_path, None, make_sampler(0, 30))
    study.set_user_attr("sampler", "guided")
    with pytest.raises(UserError):
        run_study(study, settings_for(*SETTINGS), _StopsThird(), 3)
    study = open_study(tmp_path, None, make_sampler(0, 30))
    last = study.trials[2]
    said = _search_line(study)
    assert (f"; next it would probe again the candidate of trial 2, which a stopped run left unfinished "
            f"({knobs_sentence(last.params)}). ") in said, said
    # A trial queued by hand and not yet taken comes before any retry the resume queues.
    queued = {**study.trials[0].params, "micro_batch": 1}
    study.enqueue_trial(queued)
    said = _search_line(open_study(tmp_path, None, make_sampler(0, 30)))
    assert f"; next it would probe the candidate of trial 3, queued and not yet taken ({knobs_sentence(queued)}). " in said, said
