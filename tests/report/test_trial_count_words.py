"""A study of one trial says "1 trial", in the terminal and in the Markdown report (trial 54 F11: "1 trials"); a
search stopped after one probe says "1 probe" (trial77 #3: "stopped after 1 probes", in the report and compare)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.cli import autotune_main


def test_one_trial_is_said_in_the_singular(tmp_path):
    out = tmp_path / "run"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "1 trial (1 ok)" in done.stdout and "1 trials" not in done.stdout
    md = autotune_main("report", out, "--format", "md")
    assert md.returncode == 0 and "1 trial (" in md.stdout and "1 trials" not in md.stdout


def test_a_search_stopped_after_one_probe_says_1_probe():
    from autotune.report.search import converged_sentence, converged_stop_line, search_sentences

    # A replay whose file records nothing more the stop rule asks for (trial77 #3, the report's `search:` line).
    exhausted = {"probes": 1, "reason": "fewer than 3 probes succeeded", "next": None, "exhausted": True,
                 "succeeded": 1}
    assert search_sentences({"unfinished": exhausted})[0].startswith(
        "not converged: stopped after 1 probe while fewer than 3 probes succeeded. The recording is exhausted")
    ended = converged_sentence(1, 2, recorded=1, unrecorded=3, at_end_of_recording=True)
    assert ended.startswith("stopped after 1 probe: no recorded candidate is left to replay (1 of the 4 valid "
                            "candidates was recorded; the other 3 were not measured"), ended
    assert converged_stop_line(1, True) == "converged after 1 simulated probe; the report's `search:` line says why it stopped"
    among = converged_sentence(1, 2, recorded=1, unrecorded=3)
    assert among.startswith("converged after 1 probe among the 1 recorded candidate: "), among


def test_compare_says_1_probe_of_a_study_stopped_after_one():
    from autotune.report.compare_caveats import _searches

    def study(search):
        return SimpleNamespace(document={"search": search}, run_dir="runs/one")

    stopped = study({"unfinished": {"probes": 1, "reason": "fewer than 3 probes succeeded"}})
    ended = study({"converged": {"probes": 1, "recorded": 1, "unrecorded": 3, "at_end_of_recording": True}})
    assert _searches([stopped, ended]) == [
        "Study 1 stopped before its search converged after 1 probe while fewer than 3 probes succeeded: a resumed run "
        "may still change its front and picks.",
        "Study 2 stopped after 1 probe with no recorded candidate left to replay, before its search converged (1 of "
        "the 4 valid candidates was recorded; the other 3 were not measured): its front is the recorded candidates' "
        "front only, and may lack points only a measured probe (--backend launch) would find."]


def test_a_replayed_file_of_one_record_and_a_workload_of_one_frame_are_said_in_the_singular():
    from autotune.report.inputs import measurements_text
    from autotune.report.pareto_json import workload_sentence

    assert measurements_text({"file": "m.jsonl", "records": 1, "sha256": "be740b63307c" * 5}) == (
        "m.jsonl (1 record, sha256 be740b63307c)")
    workload = {"samples": 256, "global_batch": 16, "frames": 1, "text_tokens": 128, "precision": "bf16"}
    assert "256 samples, global batch 16, 1 frame and 128 text tokens per sample" in workload_sentence(workload)
